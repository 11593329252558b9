// SPDX-License-Identifier: Apache-2.0
// recur's HDF5 reader: the subset of the HDF5 file format (specification version 3) that h5py and
// libhdf5 write for Keras models, read from a copy of the whole file in memory. Every structure is
// read through a bounds-checked cursor, every traversal is bounded (depth limits, visited sets and
// a per-call budget of bytes read), and every size taken from the file is checked against the
// bytes the file actually holds before anything is allocated.
#include "hdf5_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sys/stat.h>

#include "recur/error.hpp"

namespace recur::io {
namespace {

using Code = Error::Code;

constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 28;       // one weight: 1 GiB of float32
constexpr std::uint64_t kMaxAttributeBytes = std::uint64_t(1) << 26;  // 64 MiB of config text
constexpr std::uint64_t kMaxFileBytes = std::uint64_t(4) << 30;       // the whole file is read into memory
constexpr std::uint64_t kUndef = ~std::uint64_t(0);                   // HDF5's undefined address
constexpr int kMaxRank = 32;                                          // HDF5's own limit

// Object header message types.
enum : unsigned {
  kNil = 0x00,
  kDataspace = 0x01,
  kLinkInfo = 0x02,
  kDatatype = 0x03,
  kFillOld = 0x04,
  kFill = 0x05,
  kLink = 0x06,
  kLayout = 0x08,
  kFilters = 0x0B,
  kAttribute = 0x0C,
  kContinuation = 0x10,
  kSymbolTable = 0x11,
  kAttributeInfo = 0x15,
};

std::string normalise(const std::string& path) { return path.empty() ? "/" : path; }

std::string num(std::uint64_t v) { return std::to_string(v); }

// floor(log2(n)), 0 for n == 0 (libhdf5's H5VM_log2_gen).
unsigned log2_floor(std::uint64_t n) {
  unsigned r = 0;
  while (n >>= 1) ++r;
  return r;
}

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kUndef / a) return kUndef;
  return a * b;
}

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) { return a > kUndef - b ? kUndef : a + b; }

struct DType {
  enum Kind { other, fixed, floating, string, vlen_string } kind = other;
  std::uint32_t size = 0;
  bool big_endian = false;
  bool is_signed = false;
  std::string unsupported;  // a numeric type recur cannot convert, and why
};

struct DSpace {
  bool null = false;
  std::vector<std::uint64_t> dims;
  std::vector<std::uint64_t> max;  // empty when not stored
  std::uint64_t points() const {
    if (null) return 0;
    std::uint64_t n = 1;
    for (std::uint64_t d : dims) n = sat_mul(n, d);
    return n;
  }
};

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(man | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

// One element of a numeric type as float32, as libhdf5's conversion to H5T_NATIVE_FLOAT gives it.
float to_float(const std::uint8_t* p, const DType& t) {
  std::uint64_t v = 0;
  for (std::uint32_t k = 0; k < t.size; ++k)
    v |= std::uint64_t(p[t.big_endian ? t.size - 1 - k : k]) << (8 * k);
  if (t.kind == DType::fixed) {
    if (!t.is_signed) return static_cast<float>(v);
    const unsigned bits = 8 * t.size;
    std::int64_t s = bits == 64 ? static_cast<std::int64_t>(v)
                                : static_cast<std::int64_t>(v << (64 - bits)) >> (64 - bits);
    return static_cast<float>(s);
  }
  if (t.size == 4) {
    const std::uint32_t b = static_cast<std::uint32_t>(v);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (t.size == 8) {
    double d;
    std::memcpy(&d, &v, 8);
    if (d > static_cast<double>(FLT_MAX)) return INFINITY;
    if (d < -static_cast<double>(FLT_MAX)) return -INFINITY;
    return static_cast<float>(d);
  }
  return half_to_float(static_cast<std::uint16_t>(v));
}

}  // namespace

// ===== the reader =====

struct H5File::Parser {
  const H5File& f;
  std::string where;  // the object path named in messages
  const std::uint8_t* d;
  std::uint64_t n;
  std::uint64_t budget;  // bytes this call may still read: a small multiple of the file size

  Parser(const H5File& file, const std::string& path)
      : f(file),
        where(path),
        d(reinterpret_cast<const std::uint8_t*>(file.bytes_.data())),
        n(file.bytes_.size()),
        budget(16 * file.bytes_.size() + (std::uint64_t(1) << 20)) {}

  [[noreturn]] void bad(const std::string& problem) const { f.fail_at(where, problem); }

  void charge(std::uint64_t len, std::uint64_t overhead = 64) {
    const std::uint64_t cost = sat_add(len, overhead);
    if (cost > budget) bad("reading the file's structures takes far more work than its size allows (corrupt file)");
    budget -= cost;
  }

  // The absolute position of `len` bytes at file address `addr`, checked against the file.
  std::uint64_t at(std::uint64_t addr, std::uint64_t len, const std::string& what) {
    if (addr == kUndef) bad("undefined address for " + what);
    const std::uint64_t a = addr + f.base_;
    if (a < addr || a > n || len > n - a)
      bad("truncated " + what + " at offset " + num(addr) + " (" + num(len) + " bytes, the file has " + num(n) + ")");
    charge(len);
    return a;
  }

  // A bounds-checked cursor over [pos, end) of the file; what it reads counts against the budget.
  struct Cur {
    Parser* p;
    std::uint64_t pos, end;
    const char* what;
    void need(std::uint64_t k) const {
      if (k > end - pos) p->bad(std::string("truncated ") + what + " at offset " + num(pos - p->f.base_));
      p->charge(k, 1);
    }
    std::uint64_t u(int k) {
      need(static_cast<std::uint64_t>(k));
      std::uint64_t v = 0;
      for (int i = 0; i < k; ++i) v |= std::uint64_t(p->d[pos + static_cast<std::uint64_t>(i)]) << (8 * i);
      pos += static_cast<std::uint64_t>(k);
      return v;
    }
    unsigned u8() { return static_cast<unsigned>(u(1)); }
    unsigned u16() { return static_cast<unsigned>(u(2)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(u(4)); }
    std::uint64_t addr() {
      const int k = p->f.offset_size_;
      const std::uint64_t v = u(k);
      return (k == 8 ? v == kUndef : v == (std::uint64_t(1) << (8 * k)) - 1) ? kUndef : v;
    }
    std::uint64_t len() { return u(p->f.length_size_); }
    void skip(std::uint64_t k) {
      need(k);
      pos += k;
    }
    const std::uint8_t* bytes(std::uint64_t k) {
      need(k);
      const std::uint8_t* b = p->d + pos;
      pos += k;
      return b;
    }
    bool sig(const char* s) {
      need(4);
      const bool ok = std::memcmp(p->d + pos, s, 4) == 0;
      pos += 4;
      return ok;
    }
    std::uint64_t left() const { return end - pos; }
    Cur sub(std::uint64_t k, const char* w) {
      need(k);
      Cur c{p, pos, pos + k, w};
      pos += k;
      return c;
    }
  };

  Cur cur(std::uint64_t addr, std::uint64_t len, const char* what) {
    const std::uint64_t a = at(addr, len, what);
    return Cur{this, a, a + len, what};
  }
  // A cursor from `addr` to at most `len` bytes further, or the end of the file.
  Cur cur_upto(std::uint64_t addr, std::uint64_t len, const char* what) {
    const std::uint64_t a = at(addr, 0, what);
    const std::uint64_t l = std::min(len, n - a);
    return Cur{this, a, a + l, what};
  }

  // ----- object headers -----

  struct Msg {
    unsigned type, flags;
    std::uint64_t pos, size;
  };

  std::vector<Msg> header(std::uint64_t addr) {
    std::vector<Msg> out;
    Cur c = cur_upto(addr, 16, "object header");
    c.need(16);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> chunks;
    std::set<std::uint64_t> seen{c.pos};
    int version;
    bool crt = false;
    if (std::memcmp(d + c.pos, "OHDR", 4) == 0) {
      version = 2;
      c = cur_upto(addr, 4 + 1 + 1 + 16 + 4 + 8, "object header");
      c.skip(4);
      if (const unsigned v = c.u8(); v != 2) bad("unsupported object header version " + num(v) + " at offset " + num(addr));
      const unsigned flags = c.u8();
      if (flags & 0x20) c.skip(16);
      if (flags & 0x10) c.skip(4);
      crt = flags & 0x04;
      const std::uint64_t size0 = c.u(1 << (flags & 3));
      const std::uint64_t start = c.pos - f.base_;
      cur(start, sat_add(size0, 4), "object header");
      chunks.emplace_back(c.pos, size0);
    } else {
      version = d[c.pos];
      if (version != 1) bad("unsupported object header version " + num(static_cast<unsigned>(version)) + " at offset " + num(addr));
      c.skip(8);
      const std::uint64_t size = c.u32();
      cur(addr + 16, size, "object header");
      chunks.emplace_back(c.pos + 4, size);
    }
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (chunks.size() > 65536) bad("object header at offset " + num(addr) + " has too many continuation chunks");
      Cur m{this, chunks[i].first, chunks[i].first + chunks[i].second, "object header message"};
      charge(chunks[i].second);
      const std::uint64_t head = version == 1 ? 8 : crt ? 6 : 4;
      while (m.left() >= head) {
        unsigned type, mflags;
        std::uint64_t size;
        if (version == 1) {
          type = m.u16();
          size = m.u16();
          mflags = m.u8();
          m.skip(3);
        } else {
          type = m.u8();
          size = m.u16();
          mflags = m.u8();
          if (crt) m.skip(2);
        }
        m.need(size);
        if (type == kContinuation) {
          Cur cc{this, m.pos, m.pos + size, "object header continuation message"};
          const std::uint64_t caddr = cc.addr(), clen = cc.len();
          const std::uint64_t ca = at(caddr, clen, "object header continuation chunk");
          if (!seen.insert(ca).second)
            bad("object header continuation chunk at offset " + num(caddr) + " is reached twice (corrupt file)");
          if (version == 1) {
            chunks.emplace_back(ca, clen);
          } else {
            if (clen < 8 || std::memcmp(d + ca, "OCHK", 4) != 0)
              bad("bad object header continuation chunk at offset " + num(caddr));
            chunks.emplace_back(ca + 4, clen - 8);
          }
        } else if (type != kNil) {
          out.push_back(Msg{type, mflags, m.pos, size});
        }
        m.pos += size;
      }
    }
    return out;
  }

  static const Msg* find(const std::vector<Msg>& h, unsigned type) {
    for (const Msg& m : h)
      if (m.type == type) return &m;
    return nullptr;
  }
  static bool is_group(const std::vector<Msg>& h) { return find(h, kSymbolTable) || find(h, kLinkInfo); }
  static bool is_dataset(const std::vector<Msg>& h) {
    return !is_group(h) && find(h, kDatatype) && find(h, kDataspace) && find(h, kLayout);
  }

  // A message's body; a shared message (a committed datatype) is followed to the object header
  // that holds it.
  Cur body(const Msg& m, const char* what, int depth = 0) {
    Cur c{this, m.pos, m.pos + m.size, what};
    if (!(m.flags & 0x02)) return c;
    if (depth > 2) bad(std::string("shared ") + what + " refers to another shared message");
    const unsigned version = c.u8(), type = c.u8();
    std::uint64_t addr;
    if (version == 1) {
      c.skip(6);
      addr = c.addr();
    } else if (version == 2 || (version == 3 && type == 2)) {
      addr = c.addr();
    } else {
      bad(std::string("unsupported shared ") + what + " (shared message version " + num(version) + ", type " +
          num(type) + ")");
    }
    const std::vector<Msg> h = header(addr);
    const Msg* t = find(h, m.type);
    if (!t) bad(std::string("shared ") + what + " at offset " + num(addr) + " is missing");
    return body(*t, what, depth + 1);
  }

  // ----- datatypes and dataspaces -----

  DType dtype(Cur c, int depth = 0) {
    if (depth > 8) bad("datatype nested too deeply");
    const unsigned cv = c.u8();
    const unsigned cls = cv & 0x0F, version = cv >> 4;
    const std::uint32_t bits = c.u8() | (c.u8() << 8) | (c.u8() << 16);
    DType t;
    t.size = c.u32();
    if (version < 1 || version > 4) bad("unsupported HDF5 datatype version " + num(version));
    if (cls == 0) {
      t.kind = DType::fixed;
      t.big_endian = bits & 0x01;
      t.is_signed = bits & 0x08;
      const unsigned off = c.u16(), prec = c.u16();
      if ((t.size != 1 && t.size != 2 && t.size != 4 && t.size != 8) || off != 0 || prec != 8 * t.size)
        t.unsupported = "integer of " + num(t.size) + " bytes with " + num(prec) + " bits at bit " + num(off);
    } else if (cls == 1) {
      t.kind = DType::floating;
      const unsigned order = (bits & 0x01) | ((bits >> 5) & 0x02);
      t.big_endian = order == 1;
      const unsigned off = c.u16(), prec = c.u16(), eloc = c.u8(), esize = c.u8(), mloc = c.u8(), msize = c.u8();
      const std::uint32_t bias = c.u32();
      const bool ieee = off == 0 && mloc == 0 &&
                        ((t.size == 4 && prec == 32 && eloc == 23 && esize == 8 && msize == 23 && bias == 127) ||
                         (t.size == 8 && prec == 64 && eloc == 52 && esize == 11 && msize == 52 && bias == 1023) ||
                         (t.size == 2 && prec == 16 && eloc == 10 && esize == 5 && msize == 10 && bias == 15));
      if (order > 1) t.unsupported = "VAX-order floating point";
      else if (!ieee) t.unsupported = "floating point of " + num(t.size) + " bytes that is not IEEE 754";
    } else if (cls == 3) {
      t.kind = DType::string;
    } else if (cls == 9) {
      if ((bits & 0x0F) == 1) t.kind = DType::vlen_string;
      dtype(c, depth + 1);  // the base type, read for its checks only
      if (t.kind == DType::vlen_string && t.size != 4u + static_cast<unsigned>(f.offset_size_) + 4u)
        bad("variable-length string of " + num(t.size) + " bytes per element");
    }
    return t;
  }

  DSpace dspace(Cur c) {
    DSpace s;
    const unsigned version = c.u8(), rank = c.u8(), flags = c.u8();
    unsigned type = rank == 0 ? 0 : 1;
    if (version == 1) c.skip(5);
    else if (version == 2) type = c.u8();
    else bad("unsupported HDF5 dataspace version " + num(version));
    if (rank > kMaxRank) bad("a dataspace of rank " + num(rank));
    if (type > 2) bad("unsupported HDF5 dataspace type " + num(type));
    for (unsigned i = 0; i < rank; ++i) s.dims.push_back(c.len());
    if (flags & 1)
      for (unsigned i = 0; i < rank; ++i) s.max.push_back(c.len());
    if (type == 0) s.dims.clear();
    s.null = type == 2;
    return s;
  }

  // ----- global heap (variable-length strings) -----

  std::map<std::uint64_t, std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>>> gheaps;

  std::string gheap_string(std::uint64_t addr, std::uint32_t index, std::uint64_t len) {
    if (len == 0) return {};
    auto it = gheaps.find(addr);
    if (it == gheaps.end()) {
      if (gheaps.size() > 65536) bad("too many global heap collections");
      Cur h = cur(addr, 8 + static_cast<std::uint64_t>(f.length_size_), "global heap collection");
      if (!h.sig("GCOL")) bad("bad global heap collection signature at offset " + num(addr));
      if (const unsigned v = h.u8(); v != 1) bad("unsupported global heap version " + num(v) + " at offset " + num(addr));
      h.skip(3);
      const std::uint64_t size = h.len();
      if (size < h.pos - (addr + f.base_)) bad("global heap collection at offset " + num(addr) + " has a wrong size");
      Cur c = cur(addr, size, "global heap collection");
      c.skip(h.pos - c.pos);
      auto& objs = gheaps[addr];
      while (c.left() >= 8 + static_cast<std::uint64_t>(f.length_size_)) {
        const std::uint32_t idx = c.u16();
        c.skip(6);
        const std::uint64_t osize = c.len();
        if (idx == 0) break;  // the free space
        if (osize > c.left()) bad("global heap object " + num(idx) + " runs past its collection at offset " + num(addr));
        objs[idx] = {c.pos, osize};
        c.pos += std::min(c.left(), (osize + 7) & ~std::uint64_t(7));
      }
      it = gheaps.find(addr);
    }
    const auto o = it->second.find(index);
    if (o == it->second.end()) bad("global heap object " + num(index) + " is missing from the collection at offset " + num(addr));
    if (len > o->second.second)
      bad("variable-length string of " + num(len) + " bytes in a global heap object of " + num(o->second.second));
    const char* p = reinterpret_cast<const char*>(d + o->second.first);
    return std::string(p, strnlen(p, static_cast<std::size_t>(len)));
  }

  // ----- v2 B-trees -----

  void btree2(std::uint64_t addr, unsigned type, const std::function<void(Cur&)>& record) {
    Cur h = cur_upto(addr, 64, "v2 B-tree header");
    if (!h.sig("BTHD")) bad("bad v2 B-tree signature at offset " + num(addr));
    if (const unsigned v = h.u8(); v != 0) bad("unsupported v2 B-tree version " + num(v));
    if (const unsigned t = h.u8(); t != type) bad("v2 B-tree of type " + num(t) + " where type " + num(type) + " belongs");
    const std::uint64_t node_size = h.u32(), rsize = h.u16(), depth = h.u16();
    h.skip(2);
    const std::uint64_t root = h.addr(), root_nrec = h.u16();
    h.len();
    if (rsize == 0 || node_size < 10 + rsize || depth > 32) bad("corrupt v2 B-tree header at offset " + num(addr));
    std::vector<std::uint64_t> max_nrec(depth + 1), cum_max(depth + 1), cum_size(depth + 1, 0);
    max_nrec[0] = (node_size - 10) / rsize;
    cum_max[0] = max_nrec[0];
    const unsigned nrec_size = log2_floor(max_nrec[0]) / 8 + 1;
    for (std::uint64_t u = 1; u <= depth; ++u) {
      const std::uint64_t ptr = static_cast<std::uint64_t>(f.offset_size_) + nrec_size + (u > 1 ? cum_size[u - 1] : 0);
      if (node_size < 10 + ptr) bad("corrupt v2 B-tree header at offset " + num(addr));
      max_nrec[u] = (node_size - 10 - ptr) / (rsize + ptr);
      cum_max[u] = sat_add(sat_mul(max_nrec[u] + 1, cum_max[u - 1]), max_nrec[u]);
      cum_size[u] = std::min<unsigned>(8, log2_floor(cum_max[u]) / 8 + 1);
    }
    if (root == kUndef) return;
    std::set<std::uint64_t> seen;
    std::function<void(std::uint64_t, std::uint64_t, std::uint64_t)> node = [&](std::uint64_t a, std::uint64_t dep,
                                                                                std::uint64_t nrec) {
      if (nrec > max_nrec[dep]) bad("v2 B-tree node at offset " + num(a) + " holds too many records");
      if (!seen.insert(a).second) bad("v2 B-tree node at offset " + num(a) + " is reached twice (corrupt file)");
      Cur c = cur(a, node_size, "v2 B-tree node");
      if (!c.sig(dep == 0 ? "BTLF" : "BTIN")) bad("bad v2 B-tree node signature at offset " + num(a));
      c.skip(2);
      for (std::uint64_t i = 0; i < nrec; ++i) {
        Cur r = c.sub(rsize, "v2 B-tree record");
        record(r);
      }
      if (dep == 0) return;
      for (std::uint64_t i = 0; i <= nrec; ++i) {
        const std::uint64_t child = c.addr();
        const std::uint64_t cn = c.u(static_cast<int>(nrec_size));
        if (dep > 1) c.u(static_cast<int>(cum_size[dep - 1]));
        node(child, dep - 1, cn);
      }
    };
    node(root, depth, root_nrec);
  }

  // ----- fractal heaps (dense links and attributes) -----

  struct Heap {
    std::uint64_t addr = 0;
    unsigned id_len = 0, flags = 0, width = 0, off_bytes = 0, len_bytes = 0, max_dblock_rows = 0, first_row_bits = 0;
    std::uint64_t start_block = 0, max_direct = 0, huge_btree = kUndef;
    bool huge_direct = false;  // huge object IDs hold the address and length themselves
    struct Block {
      std::uint64_t heap_off, pos, size;
    };
    std::vector<Block> blocks;  // sorted by heap offset
    std::uint64_t row_size(unsigned r) const { return r == 0 ? start_block : start_block << (r - 1); }
  };

  Heap heap(std::uint64_t addr) {
    Heap hp;
    hp.addr = addr;
    Cur c = cur_upto(addr, 256, "fractal heap header");
    if (!c.sig("FRHP")) bad("bad fractal heap signature at offset " + num(addr));
    if (const unsigned v = c.u8(); v != 0) bad("unsupported fractal heap version " + num(v));
    hp.id_len = c.u16();
    const unsigned filter_len = c.u16();
    hp.flags = c.u8();
    const std::uint64_t max_man = c.u32();
    c.len();
    hp.huge_btree = c.addr();
    c.len();
    c.addr();
    for (int i = 0; i < 8; ++i) c.len();
    hp.width = c.u16();
    hp.start_block = c.len();
    hp.max_direct = c.len();
    const unsigned max_heap_bits = c.u16();
    c.u16();
    const std::uint64_t root = c.addr();
    const unsigned cur_rows = c.u16();
    if (filter_len != 0) bad("unsupported filtered fractal heap at offset " + num(addr));
    const auto pow2 = [](std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; };
    if (!pow2(hp.width) || !pow2(hp.start_block) || !pow2(hp.max_direct) || hp.max_direct < hp.start_block ||
        hp.max_direct > (std::uint64_t(1) << 32) || max_heap_bits == 0 || max_heap_bits > 64 || max_man == 0)
      bad("corrupt fractal heap header at offset " + num(addr));
    hp.off_bytes = (max_heap_bits + 7) / 8;
    hp.len_bytes = std::min((log2_floor(hp.max_direct) + 7) / 8, (log2_floor(max_man) + 7) / 8);
    hp.max_dblock_rows = log2_floor(hp.max_direct) - log2_floor(hp.start_block) + 2;
    hp.first_row_bits = log2_floor(hp.start_block) + log2_floor(hp.width);
    hp.huge_direct = hp.id_len >= 1u + static_cast<unsigned>(f.offset_size_ + f.length_size_);
    if (cur_rows > 64 || hp.first_row_bits > 63) bad("corrupt fractal heap header at offset " + num(addr));
    if (root == kUndef) return hp;
    std::set<std::uint64_t> seen;
    const std::uint64_t dblock_head = 4 + 1 + static_cast<std::uint64_t>(f.offset_size_) + hp.off_bytes + ((hp.flags & 2) ? 4 : 0);
    const auto direct = [&](std::uint64_t a, std::uint64_t heap_off, std::uint64_t size) {
      if (!seen.insert(a).second) bad("fractal heap block at offset " + num(a) + " is reached twice (corrupt file)");
      Cur b = cur(a, size, "fractal heap direct block");
      if (size < dblock_head || !b.sig("FHDB")) bad("bad fractal heap direct block signature or size at offset " + num(a));
      hp.blocks.push_back(Heap::Block{heap_off, b.pos - 4, size});
    };
    std::function<void(std::uint64_t, unsigned, std::uint64_t, int)> indirect = [&](std::uint64_t a, unsigned nrows,
                                                                                  std::uint64_t heap_off, int depth) {
      if (depth > 64) bad("fractal heap nested too deeply");
      if (!seen.insert(a).second) bad("fractal heap block at offset " + num(a) + " is reached twice (corrupt file)");
      Cur b = cur_upto(a, kUndef, "fractal heap indirect block");
      if (!b.sig("FHIB")) bad("bad fractal heap indirect block signature at offset " + num(a));
      b.skip(1 + static_cast<std::uint64_t>(f.offset_size_) + hp.off_bytes);
      std::uint64_t off = heap_off;
      for (unsigned r = 0; r < nrows; ++r) {
        if (r > 0 && log2_floor(hp.start_block) + r - 1 > 62) bad("corrupt fractal heap indirect block at offset " + num(a));
        const std::uint64_t rs = hp.row_size(r);
        for (unsigned col = 0; col < hp.width; ++col, off = sat_add(off, rs)) {
          const std::uint64_t child = b.addr();
          charge(16);
          if (child == kUndef) continue;
          if (r < hp.max_dblock_rows) {
            direct(child, off, rs);
          } else {
            const unsigned child_rows = log2_floor(rs) - hp.first_row_bits + 1;
            if (child_rows >= nrows) bad("corrupt fractal heap indirect block at offset " + num(a));
            indirect(child, child_rows, off, depth + 1);
          }
        }
      }
    };
    if (cur_rows == 0) direct(root, 0, hp.start_block);
    else indirect(root, cur_rows, 0, 0);
    std::sort(hp.blocks.begin(), hp.blocks.end(), [](const Heap::Block& x, const Heap::Block& y) { return x.heap_off < y.heap_off; });
    return hp;
  }

  // The bytes of the object a heap ID names, as a cursor.
  Cur heap_object(const Heap& hp, Cur id) {
    const unsigned first = id.u8();
    const unsigned kind = (first >> 4) & 3;
    if ((first >> 6) != 0) bad("unsupported fractal heap ID version in the heap at offset " + num(hp.addr));
    if (kind == 0) {
      const std::uint64_t off = id.u(static_cast<int>(hp.off_bytes)), len = id.u(static_cast<int>(hp.len_bytes));
      auto it = std::upper_bound(hp.blocks.begin(), hp.blocks.end(), off,
                                 [](std::uint64_t o, const Heap::Block& b) { return o < b.heap_off; });
      if (it == hp.blocks.begin()) bad("fractal heap object at heap offset " + num(off) + " is in no block");
      --it;
      const std::uint64_t in = off - it->heap_off;
      if (in >= it->size || len > it->size - in) bad("fractal heap object at heap offset " + num(off) + " is in no block");
      charge(len);
      return Cur{this, it->pos + in, it->pos + in + len, "fractal heap object"};
    }
    if (kind == 1) {
      // A huge object: its address and length are in the ID, or in the heap's v2 B-tree (type 1).
      if (hp.huge_direct) {
        const std::uint64_t a = id.addr(), l = id.len();
        return cur(a, l, "huge fractal heap object");
      }
      const std::uint64_t key = id.u(static_cast<int>(std::min<std::uint64_t>(8, id.left())));
      if (hp.huge_btree == kUndef) bad("huge fractal heap object without its B-tree");
      std::uint64_t haddr = kUndef, hlen = 0;
      bool found = false;
      btree2(hp.huge_btree, 1, [&](Cur& r) {
        const std::uint64_t a = r.addr(), l = r.len(), k = r.len();
        if (k == key && !found) {
          found = true;
          haddr = a;
          hlen = l;
        }
      });
      if (!found) bad("huge fractal heap object " + num(key) + " is missing");
      return cur(haddr, hlen, "huge fractal heap object");
    }
    if (kind == 2) {
      const std::uint64_t len = (first & 0x0F) + 1;
      id.need(len);
      return Cur{this, id.pos, id.pos + len, "tiny fractal heap object"};
    }
    bad("unsupported fractal heap ID type in the heap at offset " + num(hp.addr));
  }

  // ----- groups and links -----

  struct Link {
    std::string name;
    unsigned kind = 0;  // 0 hard, 1 soft, 64 external
    std::uint64_t addr = kUndef;
  };

  Link link_message(Cur c) {
    Link l;
    if (const unsigned v = c.u8(); v != 1) bad("unsupported link message version " + num(v));
    const unsigned flags = c.u8();
    if (flags & 0x08) l.kind = c.u8();
    if (flags & 0x04) c.skip(8);
    if (flags & 0x10) c.skip(1);
    const std::uint64_t len = c.u(1 << (flags & 3));
    const std::uint8_t* name = c.bytes(len);
    l.name.assign(reinterpret_cast<const char*>(name), static_cast<std::size_t>(len));
    if (l.kind == 0) l.addr = c.addr();
    return l;
  }

  void symbol_table(Cur stab, std::vector<Link>& out) {
    const std::uint64_t tree = stab.addr(), heap_addr = stab.addr();
    Cur h = cur(heap_addr, 8 + 2 * static_cast<std::uint64_t>(f.length_size_) + static_cast<std::uint64_t>(f.offset_size_),
                "local heap");
    if (!h.sig("HEAP")) bad("bad local heap signature at offset " + num(heap_addr));
    if (const unsigned v = h.u8(); v != 0) bad("unsupported local heap version " + num(v));
    h.skip(3);
    const std::uint64_t dsize = h.len();
    h.len();
    const std::uint64_t daddr = h.addr();
    const std::uint64_t dpos = at(daddr, dsize, "local heap data");
    const auto name_at = [&](std::uint64_t off) {
      if (off >= dsize) bad("link name offset " + num(off) + " is outside the local heap (" + num(dsize) + " bytes)");
      const char* p = reinterpret_cast<const char*>(d + dpos + off);
      return std::string(p, strnlen(p, static_cast<std::size_t>(dsize - off)));
    };
    std::set<std::uint64_t> seen;
    const std::uint64_t O = static_cast<std::uint64_t>(f.offset_size_), L = static_cast<std::uint64_t>(f.length_size_);
    std::function<void(std::uint64_t, int, int)> node = [&](std::uint64_t a, int level, int depth) {
      if (!seen.insert(a + f.base_).second) bad("group B-tree node at offset " + num(a) + " is reached twice (corrupt file)");
      if (depth > 64) bad("group B-tree nested too deeply");
      Cur c = cur_upto(a, kUndef, "group B-tree node");
      if (!c.sig("TREE")) bad("bad group B-tree node signature at offset " + num(a));
      if (const unsigned t = c.u8(); t != 0) bad("group B-tree node of type " + num(t) + " at offset " + num(a));
      const int lv = static_cast<int>(c.u8());
      const unsigned entries = c.u16();
      if (level >= 0 && lv != level) bad("group B-tree node at offset " + num(a) + " has the wrong level");
      c.skip(2 * O);
      charge(entries * (O + L));
      for (unsigned i = 0; i < entries; ++i) {
        c.skip(L);
        const std::uint64_t child = c.addr();
        if (lv > 0) {
          node(child, lv - 1, depth + 1);
          continue;
        }
        if (!seen.insert(child + f.base_).second) bad("symbol table node at offset " + num(child) + " is reached twice (corrupt file)");
        Cur s = cur_upto(child, kUndef, "symbol table node");
        if (!s.sig("SNOD")) bad("bad symbol table node signature at offset " + num(child));
        if (const unsigned v = s.u8(); v != 1) bad("unsupported symbol table node version " + num(v));
        s.skip(1);
        const unsigned count = s.u16();
        charge(count * (L + O + 24));
        for (unsigned k = 0; k < count; ++k) {
          Link l;
          l.name = name_at(s.len());
          l.addr = s.addr();
          const std::uint32_t cache = s.u32();
          s.skip(20);
          if (cache == 2) {
            l.kind = 1;
            l.addr = kUndef;
          }
          out.push_back(std::move(l));
        }
      }
    };
    node(tree, -1, 0);
  }

  std::vector<Link> links(const std::vector<Msg>& h) {
    std::vector<Link> out;
    if (const Msg* m = find(h, kSymbolTable)) symbol_table(body(*m, "symbol table message"), out);
    for (const Msg& m : h)
      if (m.type == kLink) out.push_back(link_message(body(m, "link message")));
    if (const Msg* m = find(h, kLinkInfo)) {
      Cur c = body(*m, "link info message");
      if (const unsigned v = c.u8(); v != 0) bad("unsupported link info message version " + num(v));
      const unsigned flags = c.u8();
      if (flags & 1) c.skip(8);
      const std::uint64_t heap_addr = c.addr(), names = c.addr();
      if (heap_addr != kUndef && names != kUndef) {
        const Heap hp = heap(heap_addr);
        btree2(names, 5, [&](Cur& r) {
          r.skip(4);
          out.push_back(link_message(heap_object(hp, r)));
          if (out.size() > 10000000) bad("too many links");
        });
      }
    }
    return out;
  }

  // The members of the group whose object header is at `addr`, read once per file.
  std::shared_ptr<const std::vector<Link>> group_links(std::uint64_t addr, const std::vector<Msg>& h);

  // The object header address of `path` (false when a member on the way is missing).
  bool resolve(const std::string& path, std::uint64_t& addr) {
    addr = f.root_;
    std::size_t pos = 0;
    int steps = 0;
    while (pos < path.size()) {
      std::size_t end = path.find('/', pos);
      if (end == std::string::npos) end = path.size();
      const std::string comp = path.substr(pos, end - pos);
      pos = end + 1;
      if (comp.empty() || comp == ".") continue;
      if (++steps > 4096) bad("the path is too deep");
      const std::vector<Msg> h = header(addr);
      if (!is_group(h)) return false;
      const auto ls = group_links(addr, h);
      const Link* hit = nullptr;
      for (const Link& l : *ls)
        if (l.name == comp) {
          hit = &l;
          break;
        }
      if (!hit) return false;
      if (hit->kind != 0) bad("unsupported link '" + printable(comp) + "' (soft or external links are not read)");
      addr = hit->addr;
    }
    return true;
  }

  // ----- attributes -----

  struct Attr {
    DType type;
    DSpace space;
    Cur data{nullptr, 0, 0, ""};
  };

  bool attribute_message(Cur c, const std::string& want, Attr* out) {
    const unsigned version = c.u8();
    if (version < 1 || version > 3) bad("unsupported attribute message version " + num(version));
    const unsigned flags = c.u8();
    const std::uint64_t nsz = c.u16(), tsz = c.u16(), ssz = c.u16();
    if (version == 3) c.skip(1);
    if (flags & 0x03) bad("unsupported shared datatype or dataspace in an attribute");
    const auto pad = [&](std::uint64_t k) { return version == 1 ? (k + 7) & ~std::uint64_t(7) : k; };
    Cur name = c.sub(pad(nsz), "attribute name");
    const char* np = reinterpret_cast<const char*>(name.bytes(nsz));
    if (std::string(np, strnlen(np, static_cast<std::size_t>(nsz))) != want) return false;
    Cur t = c.sub(pad(tsz), "attribute datatype");
    Cur s = c.sub(pad(ssz), "attribute dataspace");
    out->type = dtype(t);
    out->space = dspace(s);
    out->data = c;
    return true;
  }

  bool find_attribute(const std::vector<Msg>& h, const std::string& name, Attr* out) {
    for (const Msg& m : h)
      if (m.type == kAttribute && attribute_message(body(m, "attribute message"), name, out)) return true;
    const Msg* m = find(h, kAttributeInfo);
    if (!m) return false;
    Cur c = body(*m, "attribute info message");
    if (const unsigned v = c.u8(); v != 0) bad("unsupported attribute info message version " + num(v));
    const unsigned flags = c.u8();
    if (flags & 1) c.skip(2);
    const std::uint64_t heap_addr = c.addr(), names = c.addr();
    if (heap_addr == kUndef || names == kUndef) return false;
    const Heap hp = heap(heap_addr);
    bool found = false;
    btree2(names, 8, [&](Cur& r) {
      if (found) return;
      Cur id = r.sub(8, "attribute heap ID");
      if (r.u8() & 0x02) bad("unsupported shared attribute in dense storage");
      if (attribute_message(heap_object(hp, id), name, out)) found = true;
    });
    return found;
  }

  // ----- datasets -----

  struct Filter {
    unsigned id, flags;
    std::vector<std::uint32_t> cd;
  };

  std::vector<Filter> filters(const std::vector<Msg>& h) {
    std::vector<Filter> out;
    const Msg* m = find(h, kFilters);
    if (!m) return out;
    Cur c = body(*m, "filter pipeline message");
    const unsigned version = c.u8(), count = c.u8();
    if (version != 1 && version != 2) bad("unsupported filter pipeline message version " + num(version));
    if (count > 32) bad("a filter pipeline of " + num(count) + " filters");
    if (version == 1) c.skip(6);
    for (unsigned i = 0; i < count; ++i) {
      Filter fl;
      fl.id = c.u16();
      const std::uint64_t name_len = (version == 1 || fl.id >= 256) ? c.u16() : 0;
      fl.flags = c.u16();
      const unsigned nvals = c.u16();
      c.skip(version == 1 ? (name_len + 7) & ~std::uint64_t(7) : name_len);
      for (unsigned k = 0; k < nvals; ++k) fl.cd.push_back(c.u32());
      if (version == 1 && (nvals & 1)) c.skip(4);
      out.push_back(std::move(fl));
    }
    return out;
  }

  // Undoes the filters on one chunk; the result is exactly `chunk_bytes` long.
  std::vector<std::uint8_t> unfilter(Cur raw, std::uint32_t mask, std::uint64_t chunk_bytes, const std::vector<Filter>& fs) {
    std::vector<std::uint8_t> buf(d + raw.pos, d + raw.end);
    for (std::size_t i = fs.size(); i-- > 0;) {
      if (mask & (1u << i)) continue;
      const Filter& fl = fs[i];
      if (fl.id == 1) {
        std::vector<std::uint8_t> outb(static_cast<std::size_t>(chunk_bytes) + 8);
        z_stream z{};
        if (inflateInit(&z) != Z_OK) bad("zlib cannot start");
        z.next_in = buf.data();
        z.avail_in = static_cast<uInt>(std::min<std::size_t>(buf.size(), 0xFFFFFFFFu));
        z.next_out = outb.data();
        z.avail_out = static_cast<uInt>(std::min<std::size_t>(outb.size(), 0xFFFFFFFFu));
        const int rc = inflate(&z, Z_FINISH);
        const std::size_t got = outb.size() - z.avail_out;
        inflateEnd(&z);
        if (rc != Z_STREAM_END) bad("a deflated chunk is corrupt or larger than its declared " + num(chunk_bytes) + " bytes");
        outb.resize(got);
        buf.swap(outb);
      } else if (fl.id == 2) {
        const std::size_t es = fl.cd.empty() ? 1 : fl.cd[0];
        if (es > 1 && buf.size() >= es) {
          const std::size_t count = buf.size() / es;
          std::vector<std::uint8_t> outb(buf.size());
          for (std::size_t b = 0; b < es; ++b)
            for (std::size_t e = 0; e < count; ++e) outb[e * es + b] = buf[b * count + e];
          std::copy(buf.begin() + static_cast<std::ptrdiff_t>(count * es), buf.end(), outb.begin() + static_cast<std::ptrdiff_t>(count * es));
          buf.swap(outb);
        }
      } else if (fl.id == 3) {
        if (buf.size() < 4) bad("a Fletcher32 chunk shorter than its checksum");
        buf.resize(buf.size() - 4);
      } else {
        static const char* names[] = {"", "deflate", "shuffle", "fletcher32", "szip", "nbit", "scaleoffset"};
        bad("unsupported HDF5 filter " + num(fl.id) + (fl.id < 7 ? std::string(" (") + names[fl.id] + ")" : std::string()));
      }
    }
    if (buf.size() != chunk_bytes)
      bad("a chunk holds " + num(buf.size()) + " bytes after its filters, " + num(chunk_bytes) + " expected");
    return buf;
  }

  std::vector<float> dataset(const std::vector<Msg>& h, const DType& t, const std::vector<std::uint64_t>& dims,
                             const std::vector<std::uint64_t>& maxdims, std::uint64_t count) {
    const std::uint64_t es = t.size;
    const std::uint64_t cap = sat_add(sat_mul(n, 1100), std::uint64_t(1) << 20);
    if (sat_mul(count, 4) > cap || sat_mul(count, es) > cap)
      bad("the dataset declares " + num(count) + " values, more than a file of " + num(n) + " bytes can hold");
    // Unallocated storage reads as the fill value.
    float fill = 0.0f;
    const Msg* fm = find(h, kFill);
    Cur fc{this, 0, 0, ""};
    bool have_fill = false;
    if (fm) {
      Cur c = body(*fm, "fill value message");
      const unsigned version = c.u8();
      if (version == 1 || version == 2) {
        c.skip(2);
        const unsigned defined = c.u8();
        if (version == 1 || defined) {
          const std::uint64_t sz = c.u32();
          if (sz) fc = c.sub(sz, "fill value");
          have_fill = sz != 0;
        }
      } else if (version == 3) {
        if (c.u8() & 0x20) {
          const std::uint64_t sz = c.u32();
          fc = c.sub(sz, "fill value");
          have_fill = sz != 0;
        }
      } else {
        bad("unsupported fill value message version " + num(version));
      }
    } else if (const Msg* om = find(h, kFillOld)) {
      Cur c = body(*om, "fill value message");
      const std::uint64_t sz = c.u32();
      fc = c.sub(sz, "fill value");
      have_fill = sz != 0;
    }
    if (have_fill) {
      if (fc.left() != es) bad("a fill value of " + num(fc.left()) + " bytes for values of " + num(es));
      fill = to_float(d + fc.pos, t);
    }
    std::vector<float> out(static_cast<std::size_t>(count), fill);
    if (count == 0) return out;

    const Msg* lm = find(h, kLayout);
    Cur c = body(*lm, "data layout message");
    const unsigned version = c.u8();
    if (version < 1 || version > 4) bad("unsupported HDF5 data layout version " + num(version));
    unsigned cls;
    std::uint64_t addr = kUndef, size = 0;
    std::vector<std::uint64_t> chunk;
    unsigned idx = 0, cflags = 0, page_bits = 0;
    std::uint64_t single_size = 0;
    std::uint32_t single_mask = 0;
    Cur compact{this, 0, 0, ""};
    if (version < 3) {
      const unsigned ndims = c.u8();
      cls = c.u8();
      c.skip(5);
      if (cls != 0) addr = c.addr();
      std::uint64_t prod = 1;
      for (unsigned i = 0; i < ndims; ++i) {
        chunk.push_back(c.u32());
        prod = sat_mul(prod, chunk.back());
      }
      if (cls == 0) compact = c.sub(c.u32(), "compact data");
      if (cls == 1) size = prod;
      if (cls == 2) idx = 0;
    } else {
      cls = c.u8();
      if (cls == 0) {
        compact = c.sub(c.u16(), "compact data");
      } else if (cls == 1) {
        addr = c.addr();
        size = c.len();
      } else if (cls == 2) {
        if (version == 3) {
          const unsigned ndims = c.u8();
          addr = c.addr();
          for (unsigned i = 0; i < ndims; ++i) chunk.push_back(c.u32());
        } else {
          cflags = c.u8();
          const unsigned ndims = c.u8(), enc = c.u8();
          if (enc < 1 || enc > 8) bad("corrupt data layout message");
          for (unsigned i = 0; i < ndims; ++i) chunk.push_back(c.u(static_cast<int>(enc)));
          idx = c.u8();
          if (idx == 1 && (cflags & 2)) {
            single_size = c.len();
            single_mask = c.u32();
          } else if (idx == 3) {
            page_bits = c.u8();
          } else if (idx == 4) {
            c.skip(5);
          } else if (idx == 5) {
            c.skip(6);
          }
          addr = c.addr();
        }
      } else {
        bad(cls == 3 ? std::string("unsupported HDF5 virtual dataset") : "unsupported HDF5 data layout class " + num(cls));
      }
    }
    const std::uint64_t need = count * es;
    const auto convert_all = [&](std::uint64_t pos) {
      for (std::uint64_t i = 0; i < count; ++i) out[static_cast<std::size_t>(i)] = to_float(d + pos + i * es, t);
    };
    if (cls == 0) {
      if (compact.left() < need) bad("compact data of " + num(compact.left()) + " bytes for " + num(need));
      convert_all(compact.pos);
      return out;
    }
    if (cls == 1) {
      if (addr == kUndef) return out;  // never written
      if (size < need) bad("contiguous data of " + num(size) + " bytes for " + num(need));
      convert_all(at(addr, need, "dataset data"));
      return out;
    }
    if (cls != 2) bad("unsupported HDF5 data layout class " + num(cls));

    // Chunked: the chunk dimensions (the last is the element size), then the chunks through the index.
    const std::size_t rank = dims.size();
    if (chunk.size() != rank + 1 || rank == 0) bad("chunk dimensions of rank " + num(chunk.size()) + " for a dataset of rank " + num(rank));
    if (version < 4 && chunk[rank] != es) bad("chunks of " + num(chunk[rank]) + "-byte elements for a type of " + num(es));
    std::uint64_t chunk_elems = 1;
    for (std::size_t i = 0; i < rank; ++i) {
      if (chunk[i] == 0) bad("a chunk dimension of 0");
      chunk_elems = sat_mul(chunk_elems, chunk[i]);
    }
    const std::uint64_t chunk_bytes = sat_mul(chunk_elems, es);
    if (chunk_bytes > cap || chunk_bytes > 0xFFFFFFFFu) bad("chunks of " + num(chunk_bytes) + " bytes, more than the file can hold");
    const std::vector<Filter> fs = filters(h);
    // The chunk grid (over the maximum dimensions for the fixed-array and implicit indexes).
    const auto grid_of = [&](const std::vector<std::uint64_t>& ext) {
      std::vector<std::uint64_t> g(rank);
      for (std::size_t i = 0; i < rank; ++i) g[i] = ext[i] / chunk[i] + (ext[i] % chunk[i] != 0);
      return g;
    };
    std::set<std::uint64_t> done;
    std::uint64_t total = 0;
    const std::vector<std::uint64_t> gd = grid_of(dims);
    // Places one chunk (its first element at `off`) into the output.
    const auto place = [&](Cur raw, std::uint32_t mask, const std::vector<std::uint64_t>& off) {
      std::uint64_t lin = 0;
      for (std::size_t i = 0; i < rank; ++i) {
        if (off[i] % chunk[i] != 0) bad("a chunk at an offset that is not on the chunk grid");
        if (off[i] >= dims[i]) return;  // beyond the extent
        lin = lin * gd[i] + off[i] / chunk[i];
      }
      if (!done.insert(lin).second) bad("a chunk is stored twice");
      total = sat_add(total, chunk_bytes);
      if (total > 2 * cap) bad("the chunks hold more data than the file can");
      std::vector<std::uint8_t> un;
      const std::uint8_t* src;
      bool partial = false;
      for (std::size_t i = 0; i < rank; ++i) partial = partial || off[i] + chunk[i] > dims[i];
      if (fs.empty() || (partial && (cflags & 1))) {
        if (raw.left() < chunk_bytes) bad("a chunk of " + num(raw.left()) + " bytes, " + num(chunk_bytes) + " expected");
        src = d + raw.pos;
      } else {
        un = unfilter(raw, mask, chunk_bytes, fs);
        src = un.data();
      }
      std::vector<std::uint64_t> e(rank), i(rank, 0);
      for (std::size_t k = 0; k < rank; ++k) e[k] = std::min(chunk[k], dims[k] - off[k]);
      for (;;) {
        std::uint64_t o = 0, s = 0;
        for (std::size_t k = 0; k < rank; ++k) {
          o = o * dims[k] + off[k] + i[k];
          s = s * chunk[k] + i[k];
        }
        out[static_cast<std::size_t>(o)] = to_float(src + s * es, t);
        std::size_t k = rank;
        while (k > 0) {
          --k;
          if (++i[k] < e[k]) break;
          i[k] = 0;
          if (k == 0) return;
        }
      }
    };
    const auto offsets_of = [&](std::uint64_t linear, const std::vector<std::uint64_t>& g) {
      std::vector<std::uint64_t> off(rank);
      for (std::size_t k = rank; k-- > 0;) {
        off[k] = (linear % g[k]) * chunk[k];
        linear /= g[k];
      }
      return off;
    };
    if (addr == kUndef) return out;  // no chunk written
    const std::uint64_t O = static_cast<std::uint64_t>(f.offset_size_);
    if (version < 4) {
      // v1 B-tree (type 1): keys (chunk size, filter mask, offsets), children the chunks.
      std::set<std::uint64_t> seen;
      std::function<void(std::uint64_t, int, int)> node = [&](std::uint64_t a, int level, int depth) {
        if (!seen.insert(a + f.base_).second) bad("chunk B-tree node at offset " + num(a) + " is reached twice (corrupt file)");
        if (depth > 64) bad("chunk B-tree nested too deeply");
        Cur b = cur_upto(a, kUndef, "chunk B-tree node");
        if (!b.sig("TREE")) bad("bad chunk B-tree node signature at offset " + num(a));
        if (const unsigned ty = b.u8(); ty != 1) bad("chunk B-tree node of type " + num(ty) + " at offset " + num(a));
        const int lv = static_cast<int>(b.u8());
        const unsigned entries = b.u16();
        if (level >= 0 && lv != level) bad("chunk B-tree node at offset " + num(a) + " has the wrong level");
        b.skip(2 * O);
        for (unsigned k = 0; k < entries; ++k) {
          const std::uint64_t csize = b.u32();
          const std::uint32_t mask = b.u32();
          std::vector<std::uint64_t> off(rank);
          for (std::size_t q = 0; q < rank; ++q) off[q] = b.u(8);
          b.skip(8);
          const std::uint64_t child = b.addr();
          charge(64);
          if (lv > 0) node(child, lv - 1, depth + 1);
          else place(cur(child, csize, "chunk"), mask, off);
        }
      };
      node(addr, -1, 0);
      return out;
    }
    const std::vector<std::uint64_t> gmax = grid_of(maxdims.size() == rank ? maxdims : dims);
    std::uint64_t nchunks_max = 1;
    for (std::uint64_t x : gmax) nchunks_max = sat_mul(nchunks_max, x);
    if (idx == 1) {
      const bool filtered = cflags & 2;
      place(cur(addr, filtered ? single_size : chunk_bytes, "chunk"), filtered ? single_mask : 0, std::vector<std::uint64_t>(rank, 0));
    } else if (idx == 2) {
      if (!fs.empty()) bad("an implicit chunk index with filters");
      if (sat_mul(nchunks_max, chunk_bytes) > n) bad("the implicitly indexed chunks run past the end of the file");
      for (std::uint64_t k = 0; k < nchunks_max; ++k)
        place(cur(addr + k * chunk_bytes, chunk_bytes, "chunk"), 0, offsets_of(k, gmax));
    } else if (idx == 3) {
      Cur hh = cur_upto(addr, 64, "fixed array header");
      if (!hh.sig("FAHD")) bad("bad fixed array header signature at offset " + num(addr));
      hh.skip(1);
      const unsigned client = hh.u8(), esize = hh.u8(), pbits = hh.u8();
      const std::uint64_t nent = hh.len(), dblock = hh.addr();
      (void)page_bits;
      const bool filtered = client == 1;
      if (client > 1 || esize < O + (filtered ? 5 : 0) || (!filtered && esize != O) || esize > O + 12 || pbits > 32)
        bad("corrupt fixed array header at offset " + num(addr));
      if (nent != nchunks_max) bad("a fixed array of " + num(nent) + " chunks for " + num(nchunks_max));
      if (dblock == kUndef) return out;
      Cur db = cur_upto(dblock, kUndef, "fixed array data block");
      if (!db.sig("FADB")) bad("bad fixed array data block signature at offset " + num(dblock));
      db.skip(2 + O);
      const std::uint64_t page = std::uint64_t(1) << pbits;
      const bool paged = nent > page;
      std::vector<std::uint8_t> init;
      if (paged) {
        const std::uint64_t npages = (nent + page - 1) / page;
        const std::uint8_t* bm = db.bytes((npages + 7) / 8);
        init.assign(bm, bm + (npages + 7) / 8);
      }
      if (paged) db.skip(4);  // the bitmap's checksum
      if (sat_mul(nent, esize) > n) bad("a fixed array larger than the file");
      for (std::uint64_t k = 0; k < nent; ++k) {
        if (paged && k % page == 0 && k > 0) db.skip(4);
        if (paged && !((init[static_cast<std::size_t>(k / page / 8)] >> (7 - (k / page) % 8)) & 1)) {
          db.skip(std::min(page, nent - k) * esize);
          k += std::min(page, nent - k) - 1;
          continue;
        }
        Cur e = db.sub(esize, "fixed array element");
        const std::uint64_t ca = e.addr();
        std::uint64_t csize = chunk_bytes;
        std::uint32_t mask = 0;
        if (filtered) {
          csize = e.u(static_cast<int>(esize - O - 4));
          mask = e.u32();
        }
        if (ca != kUndef) place(cur(ca, csize, "chunk"), mask, offsets_of(k, gmax));
      }
    } else if (idx == 5) {
      const bool filtered = !fs.empty();
      const int size_len = static_cast<int>(std::min<unsigned>(8, 1 + (log2_floor(chunk_bytes) + 8) / 8));
      btree2(addr, filtered ? 11 : 10, [&](Cur& r) {
        const std::uint64_t ca = r.addr();
        std::uint64_t csize = chunk_bytes;
        std::uint32_t mask = 0;
        if (filtered) {
          csize = r.u(size_len);
          mask = r.u32();
        }
        std::vector<std::uint64_t> off(rank);
        for (std::size_t q = 0; q < rank; ++q) {
          off[q] = sat_mul(r.u(8), chunk[q]);
          if (off[q] == kUndef) bad("a chunk offset out of range");
        }
        place(cur(ca, csize, "chunk"), mask, off);
      });
    } else {
      bad("unsupported HDF5 chunk index type " + num(idx) + (idx == 4 ? " (extensible array)" : ""));
    }
    return out;
  }
};

struct H5File::Cache {
  std::mutex mu;
  std::map<std::uint64_t, std::shared_ptr<const std::vector<Parser::Link>>> links;
};

std::shared_ptr<const std::vector<H5File::Parser::Link>> H5File::Parser::group_links(std::uint64_t addr,
                                                                                   const std::vector<Msg>& h) {
  Cache& c = *f.cache_;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    const auto it = c.links.find(addr);
    if (it != c.links.end()) return it->second;
  }
  auto ls = std::make_shared<const std::vector<Link>>(links(h));
  std::lock_guard<std::mutex> lock(c.mu);
  c.links.emplace(addr, ls);
  return ls;
}

// ===== opening =====

H5File::H5File(std::vector<char> bytes, std::string name, bool in_memory)
    : name_(std::move(name)), bytes_(std::move(bytes)), in_memory_(in_memory), cache_(std::make_shared<Cache>()) {
  const auto* d = reinterpret_cast<const std::uint8_t*>(bytes_.data());
  const std::uint64_t n = bytes_.size();
  const auto refuse = [&](const std::string& why) { fail(Code::io, name_, ": ", why); };
  std::uint64_t sb = kUndef;
  for (std::uint64_t at = 0; at + 8 <= n; at = at == 0 ? 512 : at * 2)
    if (std::memcmp(d + at, "\x89HDF\r\n\x1a\n", 8) == 0) {
      sb = at;
      break;
    }
  if (sb == kUndef) refuse(in_memory_ ? "not an HDF5 file (bad signature)" : "not an HDF5 file (or it cannot be read)");
  const auto get = [&](std::uint64_t pos, int k) {
    if (pos > n || static_cast<std::uint64_t>(k) > n - pos) refuse("truncated HDF5 superblock");
    std::uint64_t v = 0;
    for (int i = 0; i < k; ++i) v |= std::uint64_t(d[pos + static_cast<std::uint64_t>(i)]) << (8 * i);
    return v;
  };
  const unsigned version = static_cast<unsigned>(get(sb + 8, 1));
  std::uint64_t p = 0;
  if (version <= 1) {
    offset_size_ = static_cast<int>(get(sb + 13, 1));
    length_size_ = static_cast<int>(get(sb + 14, 1));
    p = sb + (version == 0 ? 24 : 28);
  } else if (version <= 3) {
    offset_size_ = static_cast<int>(get(sb + 9, 1));
    length_size_ = static_cast<int>(get(sb + 10, 1));
    p = sb + 12;
  } else {
    refuse("unsupported HDF5 superblock version " + num(version));
  }
  for (int s : {offset_size_, length_size_})
    if (s != 2 && s != 4 && s != 8) refuse("unsupported HDF5 address or length size " + num(static_cast<unsigned>(s)));
  const int O = offset_size_;
  const auto undef = [&](std::uint64_t v) { return O == 8 ? v == kUndef : v == (std::uint64_t(1) << (8 * O)) - 1; };
  std::uint64_t base = get(p, O);
  p += static_cast<std::uint64_t>(O);
  std::uint64_t eof;
  if (version <= 1) {
    p += static_cast<std::uint64_t>(O);  // free-space info
    eof = get(p, O);
    p += 2 * static_cast<std::uint64_t>(O);  // end of file, driver info
    p += static_cast<std::uint64_t>(length_size_);  // root entry: link name offset
    root_ = get(p, O);
  } else {
    p += static_cast<std::uint64_t>(O);  // superblock extension
    eof = get(p, O);
    root_ = get(p + static_cast<std::uint64_t>(O), O);
  }
  // Addresses are relative to the superblock (after a user block, as libhdf5 reads them).
  (void)base;
  base_ = sb;
  if (undef(root_)) refuse("corrupt HDF5 superblock (no root group)");
  // (The end-of-file address counts the user block, as libhdf5 compares it.)
  if (!undef(eof) && eof > n)
    refuse("truncated HDF5 file (the superblock says " + num(eof) + " bytes, the file has " + num(n) + ")");
}

H5File::H5File(H5File&& other) noexcept
    : name_(std::move(other.name_)),
      bytes_(std::move(other.bytes_)),
      in_memory_(other.in_memory_),
      base_(other.base_),
      root_(other.root_),
      offset_size_(other.offset_size_),
      length_size_(other.length_size_),
      cache_(std::move(other.cache_)) {}

H5File::~H5File() = default;

void H5File::fail_at(const std::string& path, const std::string& problem) const {
  // Absolute object paths, written as the model loader writes them ("file.h5: /a/b",
  // "x.keras: model.weights.h5:/a/b" for an image).
  const std::string p = path.empty() || path[0] != '/' ? "/" + path : path;
  fail(Code::io, name_, in_memory_ ? ":" : ": ", printable(p), ": ", problem);
}

H5File H5File::open_path(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    fail(Code::io, path, ": not an HDF5 file (or it cannot be read)");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes)
    fail(Code::io, path, ": the file is larger than 4 GiB, more than recur reads");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes(static_cast<std::size_t>(st.st_size));
  if (!in || !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    fail(Code::io, path, ": not an HDF5 file (or it cannot be read)");
  return H5File(std::move(bytes), path, false);
}

H5File H5File::open_image(std::vector<char> bytes, const std::string& display_name) {
  if (bytes.size() > kMaxFileBytes) fail(Code::io, display_name, ": the file is larger than 4 GiB, more than recur reads");
  return H5File(std::move(bytes), display_name, true);
}

// ===== queries =====

bool H5File::exists(const std::string& path) const {
  Parser p(*this, normalise(path));
  std::uint64_t addr;
  return p.resolve(path, addr);
}

bool H5File::is_group(const std::string& path) const {
  Parser p(*this, normalise(path));
  std::uint64_t addr;
  return p.resolve(path, addr) && Parser::is_group(p.header(addr));
}

bool H5File::is_dataset(const std::string& path) const {
  Parser p(*this, normalise(path));
  std::uint64_t addr;
  return p.resolve(path, addr) && Parser::is_dataset(p.header(addr));
}

std::vector<std::string> H5File::children(const std::string& group) const {
  Parser p(*this, normalise(group));
  std::uint64_t addr;
  if (!p.resolve(group, addr)) fail_at(group, "expected a group");
  const auto h = p.header(addr);
  if (!Parser::is_group(h)) fail_at(group, "expected a group");
  const auto links = p.group_links(addr, h);
  if (links->size() > 100000) fail_at(group, "too many members (" + std::to_string(links->size()) + ")");
  std::vector<std::string> names;
  names.reserve(links->size());
  for (const auto& l : *links) names.push_back(l.name);
  std::sort(names.begin(), names.end());
  return names;
}

bool H5File::has_attribute(const std::string& object, const std::string& attr) const {
  Parser p(*this, normalise(object));
  std::uint64_t addr;
  if (!p.resolve(object, addr)) return false;
  Parser::Attr a;
  return p.find_attribute(p.header(addr), attr, &a);
}

std::vector<std::string> H5File::attribute_strings(const std::string& object, const std::string& attr) const {
  Parser p(*this, normalise(object));
  std::uint64_t addr;
  Parser::Attr a;
  if (!p.resolve(object, addr) || !p.find_attribute(p.header(addr), attr, &a))
    fail_at(object, "missing the attribute '" + attr + "'");
  if (a.space.dims.size() > 1) fail_at(object, "the attribute '" + attr + "' is not a string or a list of strings");
  const std::uint64_t count = a.space.points();
  if (count > 1000000) fail_at(object, "the attribute '" + attr + "' has an unreasonable size");
  std::vector<std::string> out;
  if (a.type.kind != DType::string && a.type.kind != DType::vlen_string) {
    if (count == 0) return {};  // h5py writes an empty list as an empty float array
    fail_at(object, "the attribute '" + attr + "' is not a string");
  }
  const std::uint64_t width = a.type.size;
  if (a.type.kind == DType::vlen_string) {
    if (a.data.left() < count * width) fail_at(object, "the attribute '" + attr + "' is truncated");
    std::uint64_t total = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t len = a.data.u32();
      const std::uint64_t heap = a.data.addr();
      const std::uint32_t index = a.data.u32();
      total += len;
      if (total >= kMaxAttributeBytes) fail_at(object, "the attribute '" + attr + "' is larger than 64 MiB");
      out.push_back(p.gheap_string(heap, index, len));
    }
    return out;
  }
  if (width == 0 || width * count > kMaxAttributeBytes)
    fail_at(object, "the attribute '" + attr + "' is larger than 64 MiB");
  if (a.data.left() < count * width) fail_at(object, "the attribute '" + attr + "' is truncated");
  for (std::uint64_t i = 0; i < count; ++i) {
    const char* s = reinterpret_cast<const char*>(a.data.bytes(width));
    out.emplace_back(s, strnlen(s, static_cast<std::size_t>(width)));
  }
  return out;
}

std::string H5File::attribute_string(const std::string& object, const std::string& attr) const {
  const std::vector<std::string> v = attribute_strings(object, attr);
  if (v.size() != 1) fail_at(object, "the attribute '" + attr + "' should hold one string");
  return v[0];
}

std::vector<float> H5File::read_floats(const std::string& path, std::vector<std::int64_t>& shape,
                                       std::uint64_t max_elements) const {
  max_elements = std::min(max_elements, kMaxElements);
  Parser p(*this, normalise(path));
  std::uint64_t addr;
  if (!p.resolve(path, addr)) fail_at(path, "missing dataset");
  const auto h = p.header(addr);
  if (!Parser::is_dataset(h)) fail_at(path, "missing dataset");
  const DType type = p.dtype(p.body(*Parser::find(h, kDatatype), "datatype message"));
  const DSpace space = p.dspace(p.body(*Parser::find(h, kDataspace), "dataspace message"));
  if (type.kind != DType::fixed && type.kind != DType::floating) fail_at(path, "expected a numeric dataset");
  if (!type.unsupported.empty()) fail_at(path, "unsupported HDF5 numeric type: " + type.unsupported);
  const std::size_t rank = space.dims.size();
  if (rank > 5) fail_at(path, "expected a dataset of rank <= 5");  // ConvLSTM3D kernels have 5 axes
  const std::uint64_t* dims = space.dims.data();
  std::uint64_t n = space.null ? 0 : 1;
  shape.clear();
  for (std::size_t i = 0; i < rank; ++i) {
    if (dims[i] > max_elements || n * dims[i] > max_elements) {
      std::string declared;
      for (std::size_t k = 0; k < rank; ++k) declared += (k ? ", " : "") + std::to_string(dims[k]);
      if (max_elements < kMaxElements)
        fail_at(path, "the dataset declares shape (" + declared + "), more values than its layer has room for (" +
                          std::to_string(max_elements) + " left): the file holds more or larger weights than the "
                          "config needs");
      fail_at(path, "the dataset declares shape (" + declared + "), more than the " + std::to_string(kMaxElements) +
                        " elements recur accepts");
    }
    n *= dims[i];
    shape.push_back(static_cast<std::int64_t>(dims[i]));
  }
  return p.dataset(h, type, space.dims, space.max, n);
}

}  // namespace recur::io
