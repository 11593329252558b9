// SPDX-License-Identifier: Apache-2.0
#include "npy.hpp"

#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "io/printable.hpp"

namespace recur_cli {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

// Text from a file, fit to quote in a message: control and invalid UTF-8 bytes become \xNN, and
// it is cut after max_bytes ("..." follows), so a megabyte dtype string makes a short message.
std::string quote(const std::string& s, std::size_t max_bytes = 200) { return recur::io::printable(s, max_bytes); }

// Every message is quoted as a whole too: names of .npz members come from the file.
[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw NpyError(quote(name + ": " + what, 2048));
}

bool host_little_endian() {
  const std::uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

// A Python literal value of the header dict.
struct Value {
  enum Kind { string, boolean, tuple } kind = string;
  std::string s;
  bool b = false;
  std::vector<std::int64_t> ints;
};

// Parses the header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class DictParser {
 public:
  DictParser(const std::string& text, const std::string& name) : t_(text), name_(name) {}

  std::vector<std::pair<std::string, Value>> parse() {
    std::vector<std::pair<std::string, Value>> items;
    ws();
    expect('{');
    for (;;) {
      ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      std::string key = quoted();
      ws();
      expect(':');
      ws();
      Value v = value(key);
      items.emplace_back(std::move(key), std::move(v));
      ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      expect('}');
      break;
    }
    ws();
    if (i_ != t_.size()) bad("unexpected text after the dict");
    return items;
  }

 private:
  [[noreturn]] void bad(const std::string& what) {
    fail(name_, "bad .npy header dict (" + what + " at offset " + std::to_string(i_) + "): " + quote(t_));
  }
  char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted key or string");
    ++i_;
    std::string s;
    while (i_ < t_.size() && t_[i_] != q) {
      if (t_[i_] == '\\') bad("escape sequences are not supported");
      s += t_[i_++];
    }
    if (i_ >= t_.size()) bad("unterminated string");
    ++i_;
    return s;
  }
  Value value(const std::string& key) {
    Value v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = Value::string;
      v.s = quoted();
    } else if (t_.compare(i_, 4, "True") == 0) {
      v.kind = Value::boolean;
      v.b = true;
      i_ += 4;
    } else if (t_.compare(i_, 5, "False") == 0) {
      v.kind = Value::boolean;
      i_ += 5;
    } else if (c == '(') {
      v.kind = Value::tuple;
      ++i_;
      for (;;) {
        ws();
        if (peek() == ')') {
          ++i_;
          break;
        }
        if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("expected a non-negative integer in '" + quote(key) + "'");
        std::uint64_t n = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
          n = n * 10 + static_cast<std::uint64_t>(peek() - '0');
          if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() / 10)) bad("dimension too large (at most " + std::to_string(std::numeric_limits<std::int64_t>::max() / 10) + ")");
          ++i_;
        }
        if (peek() == 'L') ++i_;  // Python 2 long
        v.ints.push_back(static_cast<std::int64_t>(n));
        ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(')');
        break;
      }
    } else if (c == '[') {
      bad("structured dtypes (a list descr) are not supported");
    } else {
      bad("unsupported value for '" + quote(key) + "'");
    }
    return v;
  }

  const std::string& t_;
  const std::string& name_;
  std::size_t i_ = 0;
};

enum class Kind { f, i, u, b };
struct Dtype {
  Kind kind;
  int size;
};

Dtype parse_dtype(const std::string& descr, const std::string& name) {
  if (descr.size() < 2) fail(name, "unsupported dtype '" + quote(descr) + "'");
  const char order = descr[0];
  const std::string rest = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail(name, "unsupported dtype '" + quote(descr) + "' (expected a byte-order character)");
  const char k = rest[0];
  int size = 0;
  try {
    std::size_t used = 0;
    size = std::stoi(rest.substr(1), &used);
    if (used != rest.size() - 1) size = 0;
  } catch (...) {
    size = 0;
  }
  if (k == 'c') fail(name, "unsupported dtype '" + quote(descr) + "' (complex numbers)");
  if (k == 'O') fail(name, "unsupported dtype '" + quote(descr) + "' (object arrays)");
  if (k == 'U' || k == 'S' || k == 'a' || k == 'V')
    fail(name, "unsupported dtype '" + quote(descr) + "' (strings or raw bytes)");
  if (k == 'M' || k == 'm') fail(name, "unsupported dtype '" + quote(descr) + "' (dates and times)");
  Dtype d{Kind::f, size};
  if (k == 'f' && (size == 2 || size == 4 || size == 8)) d.kind = Kind::f;
  else if (k == 'i' && (size == 1 || size == 2 || size == 4 || size == 8)) d.kind = Kind::i;
  else if (k == 'u' && (size == 1 || size == 2 || size == 4 || size == 8)) d.kind = Kind::u;
  else if (k == 'b' && size == 1) d.kind = Kind::b;
  else fail(name, "unsupported dtype '" + quote(descr) + "'");
  if (size > 1) {
    const bool little = order == '<' || (order == '=' && host_little_endian());
    if (!little) fail(name, "big-endian dtype '" + quote(descr) + "' is not supported (save with '<' byte order)");
  }
  return d;
}

template <typename T>
T load_le(const unsigned char* p) {
  unsigned char tmp[sizeof(T)];
  if (host_little_endian()) {
    std::memcpy(tmp, p, sizeof(T));
  } else {
    for (std::size_t i = 0; i < sizeof(T); ++i) tmp[i] = p[sizeof(T) - 1 - i];
  }
  T v;
  std::memcpy(&v, tmp, sizeof(T));
  return v;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1u, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

float convert(const unsigned char* p, const Dtype& d) {
  switch (d.kind) {
    case Kind::f:
      if (d.size == 2) return half_to_float(load_le<std::uint16_t>(p));
      if (d.size == 4) return load_le<float>(p);
      return static_cast<float>(load_le<double>(p));
    case Kind::i:
      if (d.size == 1) return static_cast<float>(static_cast<std::int8_t>(p[0]));
      if (d.size == 2) return static_cast<float>(load_le<std::int16_t>(p));
      if (d.size == 4) return static_cast<float>(load_le<std::int32_t>(p));
      return static_cast<float>(load_le<std::int64_t>(p));
    case Kind::u:
      if (d.size == 1) return static_cast<float>(p[0]);
      if (d.size == 2) return static_cast<float>(load_le<std::uint16_t>(p));
      if (d.size == 4) return static_cast<float>(load_le<std::uint32_t>(p));
      return static_cast<float>(load_le<std::uint64_t>(p));
    case Kind::b:
      return p[0] ? 1.0f : 0.0f;
  }
  return 0.0f;
}

// An integer element exactly (uint64 is read by the caller, which checks its range).
std::int64_t integer_value(const unsigned char* p, const Dtype& d) {
  if (d.kind == Kind::i) {
    if (d.size == 1) return static_cast<std::int8_t>(p[0]);
    if (d.size == 2) return load_le<std::int16_t>(p);
    if (d.size == 4) return load_le<std::int32_t>(p);
    return load_le<std::int64_t>(p);
  }
  if (d.size == 1) return p[0];
  if (d.size == 2) return load_le<std::uint16_t>(p);
  return load_le<std::uint32_t>(p);
}

std::string read_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) fail(path, "read error");
  return ss.str();
}

std::string zip_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string m = zip_error_strerror(&e);
  zip_error_fini(&e);
  return m;
}

}  // namespace

std::string dtype_name(const std::string& descr) {
  if (descr.size() < 2) return descr;
  const char k = descr[1];
  const std::string bits = std::to_string(8 * std::atoi(descr.c_str() + 2));
  if (k == 'f') return "float" + bits;
  if (k == 'i') return "int" + bits;
  if (k == 'u') return "uint" + bits;
  if (k == 'b') return "bool";
  return descr;
}

bool is_zip_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char sig[4] = {0};
  return f.read(sig, 4) && std::memcmp(sig, "PK\x03\x04", 4) == 0;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

Array parse_npy(const std::string& bytes, const std::string& name) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "PK\x03\x04", 4) == 0)
    fail(name, "is a zip archive (an .npz?), not a .npy file");
  if (bytes.size() < kMagicLen || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0)
    fail(name, "not a .npy file (bad magic; expected \\x93NUMPY)");
  if (bytes.size() < kMagicLen + 2) fail(name, "truncated header (no version)");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) fail(name, "unsupported .npy format version " + std::to_string(major));
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = kMagicLen + 2 + len_bytes;
  if (bytes.size() < prefix) fail(name, "truncated header (no header length)");
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  std::uint64_t hlen = 0;
  for (std::size_t i = 0; i < len_bytes; ++i) hlen |= static_cast<std::uint64_t>(u[8 + i]) << (8 * i);
  if (hlen > kMaxNpyHeader)
    fail(name, "header of " + std::to_string(hlen) + " bytes exceeds the limit of " + std::to_string(kMaxNpyHeader));
  if (bytes.size() - prefix < hlen)
    fail(name, "truncated header (declares " + std::to_string(hlen) + " bytes, the file holds " +
                   std::to_string(bytes.size() - prefix) + ")");
  std::string header = bytes.substr(prefix, static_cast<std::size_t>(hlen));
  if (major < 3)
    for (char c : header)
      if (static_cast<unsigned char>(c) >= 0x80) fail(name, "bad .npy header (non-ASCII byte in a version 1/2 header)");
  while (!header.empty() && (header.back() == '\n' || header.back() == ' ' || header.back() == '\0')) header.pop_back();

  const auto items = DictParser(header, name).parse();
  std::set<std::string> seen;
  const Value *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto& kv : items) {
    if (!seen.insert(kv.first).second) fail(name, "bad .npy header dict (duplicate key '" + quote(kv.first) + "')");
    if (kv.first == "descr") descr = &kv.second;
    else if (kv.first == "fortran_order") fortran = &kv.second;
    else if (kv.first == "shape") shape = &kv.second;
    else fail(name, "bad .npy header dict (unexpected key '" + quote(kv.first) + "')");
  }
  if (!descr || !fortran || !shape)
    fail(name, "bad .npy header dict (it needs the keys 'descr', 'fortran_order' and 'shape')");
  if (descr->kind != Value::string) fail(name, "bad .npy header dict ('descr' must be a string)");
  if (fortran->kind != Value::boolean) fail(name, "bad .npy header dict ('fortran_order' must be True or False)");
  if (shape->kind != Value::tuple) fail(name, "bad .npy header dict ('shape' must be a tuple)");
  if (fortran->b) fail(name, "fortran_order is True; only C-order arrays are supported (save np.ascontiguousarray(a))");
  const Dtype dt = parse_dtype(descr->s, name);

  const std::uint64_t data_bytes = bytes.size() - prefix - hlen;
  std::uint64_t count = 1;
  for (std::int64_t d : shape->ints) {
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / 16 / static_cast<std::uint64_t>(d))
      fail(name, "declared shape " + shape_string(shape->ints) + " is too large (its product must stay below " +
                     std::to_string(std::numeric_limits<std::uint64_t>::max() / 16) + " entries)");
    count *= static_cast<std::uint64_t>(d);
  }
  const std::uint64_t need = count * static_cast<std::uint64_t>(dt.size);
  if (need > data_bytes)
    fail(name, "truncated data: shape " + shape_string(shape->ints) + " of " + descr->s + " needs " +
                   std::to_string(need) + " bytes, the file holds " + std::to_string(data_bytes));
  if (need < data_bytes)
    fail(name, "shape/length mismatch: shape " + shape_string(shape->ints) + " of " + descr->s + " needs " +
                   std::to_string(need) + " bytes, the file holds " + std::to_string(data_bytes));

  Array a;
  a.shape = shape->ints;
  a.dtype = descr->s;
  a.data.resize(static_cast<std::size_t>(count));
  const unsigned char* p = u + prefix + hlen;
  for (std::size_t i = 0; i < a.data.size(); ++i) a.data[i] = convert(p + i * static_cast<std::size_t>(dt.size), dt);
  if (dt.kind == Kind::i || dt.kind == Kind::u) {
    a.ints.resize(a.data.size());
    for (std::size_t i = 0; i < a.ints.size(); ++i) {
      const unsigned char* e = p + i * static_cast<std::size_t>(dt.size);
      if (dt.kind == Kind::u && dt.size == 8) {
        const std::uint64_t v = load_le<std::uint64_t>(e);
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) && a.int_overflow == SIZE_MAX) {
          a.int_overflow = i;
          a.int_overflow_value = v;
        }
        a.ints[i] = static_cast<std::int64_t>(v);
      } else {
        a.ints[i] = integer_value(e, dt);
      }
    }
  }
  return a;
}

Array read_npy(const std::string& path) { return parse_npy(read_file(path), path); }

Array read_text_lines(const std::string& path) {
  const std::string text = read_file(path);
  if (text.empty()) fail(path, "the file holds no lines (one text per line; an empty text is an empty line)");
  const std::size_t bad = recur::io::utf8_error_at(text.data(), text.size());
  if (bad != std::string::npos) {
    const std::size_t line = static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(bad), '\n')) + 1;
    fail(path, "line " + std::to_string(line) + ": not valid UTF-8 at byte " + std::to_string(bad) + "; texts must be UTF-8");
  }
  Array a;
  a.is_text = true;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::size_t stop = end;
    if (stop > start && text[stop - 1] == '\r') --stop;
    const std::string line = text.substr(start, stop - start);
    if (line.find('\0') != std::string::npos)
      fail(path, "line " + std::to_string(a.texts.size() + 1) + ": holds a NUL byte, which a text cannot carry");
    a.texts.push_back(line);
    start = end + 1;
  }
  a.shape = {static_cast<std::int64_t>(a.texts.size())};
  return a;
}

std::string encode_npy(const Array& a) {
  std::uint64_t count = 1;
  for (std::int64_t d : a.shape) {
    if (d < 0) throw NpyError("encode_npy: negative dimension in shape " + shape_string(a.shape));
    count *= static_cast<std::uint64_t>(d);
  }
  if (count != a.data.size())
    throw NpyError("encode_npy: shape " + shape_string(a.shape) + " holds " + std::to_string(count) +
                   " values, the array has " + std::to_string(a.data.size()));
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_string(a.shape) + ", }";
  const std::size_t base = kMagicLen + 2 + 2;
  std::size_t total = base + dict.size() + 1;
  const std::size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  const std::size_t hlen = dict.size();
  if (hlen > 65535) throw NpyError("encode_npy: shape " + shape_string(a.shape) + " makes the header too long");
  out += static_cast<char>(hlen & 0xff);
  out += static_cast<char>((hlen >> 8) & 0xff);
  out += dict;
  const std::size_t start = out.size();
  out.resize(start + a.data.size() * 4);
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    unsigned char b[4];
    std::memcpy(b, &a.data[i], 4);
    if (!host_little_endian()) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
    std::memcpy(&out[start + i * 4], b, 4);
  }
  return out;
}

void write_npy(const std::string& path, const Array& a) {
  const std::string bytes = encode_npy(a);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) fail(path, std::string("cannot create: ") + std::strerror(errno));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) fail(path, "write error");
}

NamedArrays read_npz(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory");
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (!za) fail(path, "not a readable .npz (zip) archive: " + zip_message(err));
  std::unique_ptr<zip_t, void (*)(zip_t*)> guard(za, [](zip_t* z) { zip_discard(z); });
  const zip_int64_t n = zip_get_num_entries(za, 0);
  NamedArrays out;
  std::set<std::string> names;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t zs;
    zip_stat_init(&zs);
    if (zip_stat_index(za, static_cast<zip_uint64_t>(i), 0, &zs) != 0 || !(zs.valid & ZIP_STAT_NAME) ||
        !(zs.valid & ZIP_STAT_SIZE))
      fail(path, "cannot read the entry " + std::to_string(i) + ": " + zip_strerror(za));
    const std::string member = zs.name;
    if (!member.empty() && member.back() == '/') continue;  // a directory entry
    if (member.size() < 5 || member.compare(member.size() - 4, 4, ".npy") != 0)
      fail(path, "member '" + quote(member) + "' is not a .npy file");
    if (zs.size > kMaxNpzMember)
      fail(path + ":" + quote(member), "declares " + std::to_string(zs.size) + " bytes, more than the limit of " +
                                    std::to_string(kMaxNpzMember));
    const std::string name = member.substr(0, member.size() - 4);
    if (!names.insert(name).second) fail(path, "duplicate member '" + quote(member) + "'");
    zip_file_t* zf = zip_fopen_index(za, static_cast<zip_uint64_t>(i), 0);
    if (!zf) fail(path + ":" + quote(member), std::string("cannot open the member: ") + zip_strerror(za));
    // Grow the buffer as data really arrives: the declared size is only an upper bound, so a tiny
    // archive cannot make the tool allocate kMaxNpzMember bytes up front.
    std::string bytes;
    zip_uint64_t got = 0;
    while (got < zs.size) {
      const zip_uint64_t step = std::min<zip_uint64_t>(zs.size - got, zip_uint64_t(1) << 20);
      bytes.resize(static_cast<std::size_t>(got + step));
      const zip_int64_t r = zip_fread(zf, &bytes[got], step);
      if (r <= 0) break;
      got += static_cast<zip_uint64_t>(r);
    }
    bytes.resize(static_cast<std::size_t>(got));
    zip_error_t* ze = zip_file_get_error(zf);
    const std::string zerr = zip_error_code_zip(ze) == ZIP_ER_OK ? "" : std::string(" (") + zip_error_strerror(ze) + ")";
    zip_fclose(zf);
    if (got != zs.size)
      fail(path + ":" + quote(member), "the archive declares " + std::to_string(zs.size) + " bytes for this member but holds " +
                                    std::to_string(got) + zerr + ": the .npz is truncated or damaged; write it again " +
                                    "(numpy.savez, or recur's -o/--states-out)");
    out.emplace_back(name, parse_npy(bytes, path + ":" + quote(member)));
  }
  return out;
}

void write_npz(const std::string& path, const NamedArrays& arrays) {
  std::vector<std::string> buffers;
  buffers.reserve(arrays.size());
  std::set<std::string> names;
  for (const auto& kv : arrays) {
    if (kv.first.empty() || !names.insert(kv.first).second)
      throw NpyError(path + ": empty or duplicate member name '" + quote(kv.first) + "'");
    buffers.push_back(encode_npy(kv.second));
  }
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!za) fail(path, "cannot create the archive: " + zip_message(err));
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    zip_source_t* src = zip_source_buffer(za, buffers[i].data(), buffers[i].size(), 0);
    if (!src) {
      const std::string m = zip_strerror(za);
      zip_discard(za);
      fail(path, "cannot add '" + arrays[i].first + ".npy': " + m);
    }
    const zip_int64_t idx = zip_file_add(za, (arrays[i].first + ".npy").c_str(), src, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
      const std::string m = zip_strerror(za);
      zip_source_free(src);
      zip_discard(za);
      fail(path, "cannot add '" + arrays[i].first + ".npy': " + m);
    }
    zip_set_file_compression(za, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  }
  if (zip_close(za) != 0) {
    const std::string m = zip_strerror(za);
    zip_discard(za);
    fail(path, "cannot write the archive: " + m);
  }
}

}  // namespace recur_cli
