// SPDX-License-Identifier: Apache-2.0
// Truncated, corrupt and hostile Keras model files through the C ABI (recur_model_open). Every
// file is built at test time in a private temp directory, either from scratch or by copying a
// model saved by real Keras (tests/cli/models) and breaking it with the HDF5 C API or libzip.
// Each failure must give a status, set *out to NULL, and give a printable message that names the
// file, the object inside it (where there is one) and the problem. Runs under ASan/UBSan/LSan
// in the sanitizer build.
#include <hdf5.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zip.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "c_api_test_util.hpp"
#include "keras_config_edit.hpp"


namespace {

namespace fs = std::filesystem;

const std::string kModels = RECUR_TEST_MODELS_DIR;

std::string model_file(const std::string& version, const std::string& name) {
  return kModels + "/" + version + "/" + name;
}

// ----- files -----

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

// A private directory under the system temp dir, removed with everything in it.
class Scratch {
 public:
  Scratch() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    dir_ = fs::temp_directory_path() / ("recur_malformed_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter++) + "_" + std::to_string(rd()));
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = path(name);
    write_bytes(p, bytes);
    return p;
  }
  std::string copy(const std::string& src, const std::string& name) const { return write(name, read_bytes(src)); }

 private:
  fs::path dir_;
};

long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// ----- open and check -----

// True if every byte is printable ASCII or part of a valid UTF-8 sequence of printable text.
::testing::AssertionResult is_printable(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + static_cast<std::size_t>(len) > s.size())
      return ::testing::AssertionFailure() << "byte " << int(c) << " at " << i << " is not UTF-8";
    if (len == 1 && (c < 0x20 || c == 0x7F) && c != '\n')
      return ::testing::AssertionFailure() << "control byte " << int(c) << " at " << i;
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) >> 6) != 0x2)
        return ::testing::AssertionFailure() << "bad UTF-8 continuation at " << i + static_cast<std::size_t>(k);
    i += static_cast<std::size_t>(len);
  }
  return ::testing::AssertionSuccess();
}

struct Opened {
  recur_status status;
  std::string message;
};

// Opens `path`; a success is closed at once. Checks *out is NULL after a failure.
Opened try_open(const std::string& path) {
  static int dummy;
  recur_model* m = reinterpret_cast<recur_model*>(&dummy);
  rt::prime_error();
  const recur_status s = recur_model_open(&m, path.c_str());
  Opened r{s, recur_last_error()};
  if (std::getenv("RECUR_TEST_TRACE")) std::fprintf(stderr, "open -> %d: %s\n", int(s), r.message.c_str());
  if (s == RECUR_OK) {
    EXPECT_NE(m, nullptr);
    recur_model_destroy(m);
  } else {
    EXPECT_EQ(m, nullptr) << "a failed recur_model_open must set *out to NULL: " << path;
  }
  return r;
}

// The open fails with `code`, and the message names the file and each of `needles`.
std::string expect_fails(const std::string& path, recur_status code, std::initializer_list<std::string> needles) {
  const Opened r = try_open(path);
  EXPECT_EQ(r.status, code) << "got " << recur_status_string(r.status) << ", want " << recur_status_string(code)
                            << "\n  message: " << r.message;
  EXPECT_NE(r.message.find(path), std::string::npos) << "the message does not name the file " << path << ": "
                                                     << r.message;
  for (const std::string& n : needles)
    EXPECT_NE(r.message.find(n), std::string::npos) << "the message does not mention \"" << n << "\": " << r.message;
  EXPECT_TRUE(is_printable(r.message)) << r.message;
  return r.message;
}

// ----- HDF5 editing -----

class H5Edit {
 public:
  explicit H5Edit(const std::string& path) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    f_ = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    EXPECT_GE(f_, 0) << "cannot open " << path;
  }
  ~H5Edit() {
    if (f_ >= 0) H5Fclose(f_);
  }
  H5Edit(const H5Edit&) = delete;
  H5Edit& operator=(const H5Edit&) = delete;

  bool exists(const std::string& p) const { return H5Lexists(f_, p.c_str(), H5P_DEFAULT) > 0; }
  void del(const std::string& p) { EXPECT_GE(H5Ldelete(f_, p.c_str(), H5P_DEFAULT), 0) << "delete " << p; }
  void del_attr(const std::string& obj, const std::string& name) {
    EXPECT_GE(H5Adelete_by_name(f_, obj.c_str(), name.c_str(), H5P_DEFAULT), 0) << obj << " @" << name;
  }

  std::string str_attr(const std::string& obj, const std::string& name) const {
    const hid_t a = H5Aopen_by_name(f_, obj.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << obj << " @" << name;
    const hid_t t = vlen_type();
    const hid_t ft = H5Aget_type(a);
    H5Tset_cset(t, H5Tget_cset(ft));  // HDF5 converts no strings between character sets
    H5Tclose(ft);
    char* p = nullptr;
    EXPECT_GE(H5Aread(a, t, &p), 0);
    std::string s = p ? p : "";
    H5free_memory(p);
    H5Tclose(t);
    H5Aclose(a);
    return s;
  }
  // A scalar variable-length string, as h5py writes str attributes.
  void set_str_attr(const std::string& obj, const std::string& name, const std::string& value) {
    if (H5Aexists_by_name(f_, obj.c_str(), name.c_str(), H5P_DEFAULT) > 0) del_attr(obj, name);
    const hid_t t = vlen_type(), sp = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate_by_name(f_, obj.c_str(), name.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << obj << " @" << name;
    const char* p = value.c_str();
    EXPECT_GE(H5Awrite(a, t, &p), 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
  }
  void set_str_list_attr(const std::string& obj, const std::string& name, const std::vector<std::string>& values) {
    if (H5Aexists_by_name(f_, obj.c_str(), name.c_str(), H5P_DEFAULT) > 0) del_attr(obj, name);
    const hsize_t n = values.size();
    const hid_t t = vlen_type(), sp = H5Screate_simple(1, &n, nullptr);
    const hid_t a = H5Acreate_by_name(f_, obj.c_str(), name.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << obj << " @" << name;
    std::vector<const char*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.c_str());
    EXPECT_GE(H5Awrite(a, t, ptrs.data()), 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
  }

  // A 1-D float64 attribute of n zeros (h5py writes an empty list this way).
  void set_num_attr(const std::string& obj, const std::string& name, hsize_t n) {
    if (H5Aexists_by_name(f_, obj.c_str(), name.c_str(), H5P_DEFAULT) > 0) del_attr(obj, name);
    const hid_t sp = H5Screate_simple(1, &n, nullptr);
    const hid_t a =
        H5Acreate_by_name(f_, obj.c_str(), name.c_str(), H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << obj << " @" << name;
    std::vector<double> zeros(static_cast<std::size_t>(n) + 1, 0.0);
    EXPECT_GE(H5Awrite(a, H5T_NATIVE_DOUBLE, zeros.data()), 0);
    H5Aclose(a);
    H5Sclose(sp);
  }

  std::vector<float> floats(const std::string& p, std::vector<hsize_t>& dims) const {
    const hid_t d = H5Dopen2(f_, p.c_str(), H5P_DEFAULT);
    EXPECT_GE(d, 0) << p;
    const hid_t sp = H5Dget_space(d);
    dims.assign(static_cast<std::size_t>(H5Sget_simple_extent_ndims(sp)), 0);
    H5Sget_simple_extent_dims(sp, dims.data(), nullptr);
    std::vector<float> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(sp)));
    EXPECT_GE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
    H5Sclose(sp);
    H5Dclose(d);
    return v;
  }
  void set_floats(const std::string& p, const std::vector<hsize_t>& dims, const std::vector<float>& data) {
    if (exists(p)) del(p);
    const hid_t sp = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t d = H5Dcreate2(f_, p.c_str(), H5T_IEEE_F32LE, sp, lcpl(), H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(d, 0) << p;
    if (!data.empty()) {
      EXPECT_GE(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
    }
    H5Dclose(d);
    H5Sclose(sp);
  }
  void set_strings(const std::string& p, const std::vector<std::string>& values) {
    if (exists(p)) del(p);
    const hsize_t n = values.size();
    const hid_t t = vlen_type(), sp = H5Screate_simple(1, &n, nullptr);
    const hid_t d = H5Dcreate2(f_, p.c_str(), t, sp, lcpl(), H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(d, 0) << p;
    std::vector<const char*> ptrs;
    for (const auto& v : values) ptrs.push_back(v.c_str());
    EXPECT_GE(H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), 0);
    H5Dclose(d);
    H5Sclose(sp);
    H5Tclose(t);
  }
  // A chunked dataset that declares `dims` but has no storage allocated (reading it would give
  // fill values, so a reader that trusts the declared size allocates it all).
  void set_unallocated(const std::string& p, const std::vector<hsize_t>& dims) {
    if (exists(p)) del(p);
    const hid_t sp = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    std::vector<hsize_t> chunk(dims.size(), 16);
    EXPECT_GE(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()), 0);
    EXPECT_GE(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_INCR), 0);
    const hid_t d = H5Dcreate2(f_, p.c_str(), H5T_IEEE_F32LE, sp, lcpl(), dcpl, H5P_DEFAULT);
    EXPECT_GE(d, 0) << p;
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(sp);
  }

 private:
  static hid_t vlen_type() {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
  }
  hid_t lcpl() {
    if (lcpl_ < 0) {
      lcpl_ = H5Pcreate(H5P_LINK_CREATE);
      H5Pset_create_intermediate_group(lcpl_, 1);
    }
    return lcpl_;
  }
  hid_t f_ = -1;
  hid_t lcpl_ = -1;

 public:
  // (declared last so the property list closes after use)
  struct LcplCloser {
    hid_t* id;
    ~LcplCloser() {
      if (*id >= 0) H5Pclose(*id);
    }
  } lcpl_closer_{&lcpl_};
};

// Copies an .h5 into the scratch dir and edits it.
std::string edited_h5(const Scratch& s, const std::string& src, const std::string& name,
                      const std::function<void(H5Edit&)>& edit) {
  const std::string p = s.copy(src, name);
  {
    H5Edit e(p);
    edit(e);
  }
  return p;
}

std::string replace_once(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << "\"" << from << "\" not found";
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

// ----- zip editing -----

using Members = std::vector<std::pair<std::string, std::string>>;

// The zip's members, and a zip written from them (stored, or deflated).
Members read_zip(const std::string& path) { return keras_edit::read_members(path); }
void write_zip(const std::string& path, const Members& members, bool deflate = false) {
  keras_edit::write_members(path, members, deflate);
}

std::string& member(Members& m, const std::string& name) {
  for (auto& [n, d] : m)
    if (n == name) return d;
  ADD_FAILURE() << "no member " << name;
  static std::string none;
  return none;
}

void drop_member(Members& m, const std::string& name) {
  for (auto it = m.begin(); it != m.end(); ++it)
    if (it->first == name) {
      m.erase(it);
      return;
    }
  ADD_FAILURE() << "no member " << name;
}

// A .keras copy whose parts are edited: `members` gets the zip's members to change.
std::string edited_keras(const Scratch& s, const std::string& src, const std::string& name,
                         const std::function<void(Members&)>& edit, bool deflate = false) {
  Members m = read_zip(src);
  edit(m);
  const std::string p = s.path(name);
  write_zip(p, m, deflate);
  return p;
}

// A .keras copy whose model.weights.h5 is edited with the HDF5 API.
std::string edited_keras_weights(const Scratch& s, const std::string& src, const std::string& name,
                                 const std::function<void(H5Edit&)>& edit) {
  return edited_keras(s, src, name, [&](Members& m) {
    std::string& w = member(m, "model.weights.h5");
    const std::string tmp = s.write(name + ".weights.h5", w);
    {
      H5Edit e(tmp);
      edit(e);
    }
    w = read_bytes(tmp);
  });
}

void put_u32(std::string& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Rewrites a member's declared uncompressed size in its local header and the central directory.
void patch_declared_size(std::string& zipbytes, const std::string& name, std::uint32_t size) {
  int patched = 0;
  for (std::size_t i = 0; i + 46 < zipbytes.size(); ++i) {
    if (zipbytes.compare(i, 4, "PK\x03\x04") == 0 && zipbytes.compare(i + 30, name.size(), name) == 0) {
      put_u32(zipbytes, i + 22, size);
      ++patched;
    } else if (zipbytes.compare(i, 4, "PK\x01\x02") == 0 && zipbytes.compare(i + 46, name.size(), name) == 0) {
      put_u32(zipbytes, i + 24, size);
      ++patched;
    }
  }
  EXPECT_EQ(patched, 2) << name;
}

const char* const kVersions[] = {"keras2", "keras3"};

}  // namespace

// ===== the file itself =====

TEST(ModelFilesMalformed, MissingFile) {
  Scratch s;
  for (const char* name : {"absent.keras", "absent.h5", "absent"})
    expect_fails(s.path(name), RECUR_ERR_IO, {"cannot open the file"});
  expect_fails(s.path("no_dir/x.keras"), RECUR_ERR_IO, {});
}

TEST(ModelFilesMalformed, EmptyFileAndDirectory) {
  Scratch s;
  for (const char* name : {"empty.keras", "empty.h5"}) expect_fails(s.write(name, ""), RECUR_ERR_IO, {"neither"});
  fs::create_directories(s.path("dir.keras"));
  expect_fails(s.path("dir.keras"), RECUR_ERR_IO, {});
}

TEST(ModelFilesMalformed, RandomBytes) {
  Scratch s;
  std::mt19937 rng(7);
  for (std::size_t size : {1u, 7u, 100u, 5000u, 70000u}) {
    std::string bytes(size, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    SCOPED_TRACE(size);
    expect_fails(s.write("random.keras", bytes), RECUR_ERR_IO, {});
    // The same bytes behind each signature: recur must not trust anything after it.
    if (size >= 8) {
      std::string h5 = std::string("\x89HDF\r\n\x1a\n", 8) + bytes;
      expect_fails(s.write("random.h5", h5), RECUR_ERR_IO, {"HDF5"});
      std::string pk = std::string("PK\x03\x04", 4) + bytes;
      expect_fails(s.write("random_pk.keras", pk), RECUR_ERR_IO, {"zip"});
    }
  }
}

TEST(ModelFilesMalformed, TruncatedH5AtManyOffsets) {
  Scratch s;
  for (const char* v : kVersions)
    for (const char* name : {"tokens.h5", "bigru.h5"}) {
      const std::string full = read_bytes(model_file(v, name));
      ASSERT_GT(full.size(), 1000u);
      for (int k = 0; k < 20; ++k) {
        const std::size_t cut = full.size() * static_cast<std::size_t>(k) / 20;
        SCOPED_TRACE(std::string(v) + "/" + name + " cut at " + std::to_string(cut));
        expect_fails(s.write("cut.h5", full.substr(0, cut)), RECUR_ERR_IO, {});
      }
      // One byte short.
      expect_fails(s.write("cut.h5", full.substr(0, full.size() - 1)), RECUR_ERR_IO, {});
    }
}

TEST(ModelFilesMalformed, TruncatedKerasAtManyOffsets) {
  Scratch s;
  for (const char* v : kVersions)
    for (const char* name : {"tokens.keras", "bigru.keras"}) {
      const std::string full = read_bytes(model_file(v, name));
      for (int k = 0; k < 20; ++k) {
        const std::size_t cut = full.size() * static_cast<std::size_t>(k) / 20;
        SCOPED_TRACE(std::string(v) + "/" + name + " cut at " + std::to_string(cut));
        expect_fails(s.write("cut.keras", full.substr(0, cut)), RECUR_ERR_IO, {});
      }
      expect_fails(s.write("cut.keras", full.substr(0, full.size() - 1)), RECUR_ERR_IO, {"zip"});
    }
}

TEST(ModelFilesMalformed, TruncatedWeightsInsideAValidZip) {
  Scratch s;
  for (const char* v : kVersions) {
    const Members orig = read_zip(model_file(v, "tokens.keras"));
    for (int k = 0; k < 20; ++k) {
      SCOPED_TRACE(std::string(v) + " weights cut at " + std::to_string(k) + "/20");
      const std::string p = edited_keras(s, model_file(v, "tokens.keras"), "cutw.keras", [&](Members& m) {
        std::string& w = member(m, "model.weights.h5");
        w.resize(w.size() * static_cast<std::size_t>(k) / 20);
      });
      expect_fails(p, RECUR_ERR_IO, {"model.weights.h5"});
    }
  }
}

// The byte ranges of the HDF5 global heap collections ("GCOL") of a file: where h5py keeps the
// variable-length strings (model_config, layer_names, weight_names).
std::vector<std::pair<std::size_t, std::size_t>> global_heaps(const std::string& file) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t pos = file.find("GCOL"); pos != std::string::npos; pos = file.find("GCOL", pos + 4)) {
    if (pos + 16 > file.size()) break;
    std::uint64_t size = 0;
    for (int i = 7; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(file[pos + 8 + static_cast<std::size_t>(i)]);
    out.emplace_back(pos, pos + static_cast<std::size_t>(std::min<std::uint64_t>(size, file.size() - pos)));
  }
  // The variable-length references into them (length u32, collection address u64, index u32),
  // stored in the attributes' raw data.
  const std::size_t heaps = out.size();
  for (std::size_t h = 0; h < heaps; ++h) {
    std::string addr(8, '\0');
    for (int i = 0; i < 8; ++i) addr[static_cast<std::size_t>(i)] = static_cast<char>((out[h].first >> (8 * i)) & 0xFF);
    for (std::size_t pos = file.find(addr); pos != std::string::npos; pos = file.find(addr, pos + 1))
      if (pos >= 4) out.emplace_back(pos - 4, pos + 12);
  }
  return out;
}

// libhdf5 1.10 crashed on garbage in a global heap collection (the variable-length strings of
// model_config, layer_names, weight_names); recur's own reader must refuse it cleanly.
TEST(ModelFilesMalformed, CorruptGlobalHeap) {
  Scratch s;
  std::mt19937 rng(5);
  int tried = 0;
  for (const char* v : kVersions) {
    const std::string full = read_bytes(model_file(v, "tokens.h5"));
    const auto heaps = global_heaps(full);
    EXPECT_FALSE(heaps.empty());
    for (const auto& [b, e] : heaps) {
      for (int k = 0; k < 24; ++k) {
        std::string bad = full;
        const std::size_t at = b + (e - b) * static_cast<std::size_t>(k) / 24;
        for (std::size_t i = at; i < at + 8 && i < e; ++i) bad[i] = static_cast<char>(rng());
        SCOPED_TRACE(std::string(v) + " global heap garbage at " + std::to_string(at));
        const std::string p = s.write("heap.h5", bad);
        const Opened r = try_open(p);
        ++tried;
        if (r.status != RECUR_OK) {
          EXPECT_EQ(r.status, RECUR_ERR_IO) << r.message;
          EXPECT_TRUE(is_printable(r.message)) << r.message;
        }
      }
    }
  }
  EXPECT_GT(tried, 24);
}

TEST(ModelFilesMalformed, CorruptBytesInsideH5) {
  // Overwrites 16-byte runs with garbage across the file. Where the run hits unused space the file
  // may still open; otherwise the open must fail cleanly.
  Scratch s;
  std::mt19937 rng(11);
  for (const char* v : kVersions) {
    const std::string full = read_bytes(model_file(v, "tokens.h5"));
    for (int k = 1; k < 80; ++k) {
      std::string bad = full;
      const std::size_t at = full.size() * static_cast<std::size_t>(k) / 80;
      for (std::size_t i = at; i < at + 16 && i < bad.size(); ++i) bad[i] = static_cast<char>(rng());
      SCOPED_TRACE(std::string(v) + " garbage at " + std::to_string(at));
      const std::string p = s.write("garbage.h5", bad);
      if (std::getenv("RECUR_TEST_TRACE")) std::fprintf(stderr, "garbage %s at %zu\n", v, at);
      const Opened r = try_open(p);
      if (r.status != RECUR_OK) {
        EXPECT_EQ(r.status, RECUR_ERR_IO) << r.message;
        EXPECT_NE(r.message.find(p), std::string::npos) << r.message;
        EXPECT_TRUE(is_printable(r.message)) << r.message;
      }
    }
  }
}

TEST(ModelFilesMalformed, ZipThatIsNotAKerasFile) {
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  for (const char* missing : {"metadata.json", "config.json", "model.weights.h5"}) {
    SCOPED_TRACE(missing);
    const std::string p = edited_keras(s, src, std::string("no_") + missing + ".keras",
                                       [&](Members& m) { drop_member(m, missing); });
    expect_fails(p, RECUR_ERR_IO, {missing, "no member"});
  }
  const std::string other = s.path("other.keras");
  write_zip(other, {{"readme.txt", "hello"}});
  expect_fails(other, RECUR_ERR_IO, {"metadata.json"});
  // An empty zip (only the end-of-central-directory record).
  expect_fails(s.write("empty_zip.keras", std::string("PK\x05\x06", 4) + std::string(18, '\0')), RECUR_ERR_IO, {});
  // model.weights.h5 that is not HDF5.
  const std::string p = edited_keras(s, src, "weights_not_h5.keras",
                                     [](Members& m) { member(m, "model.weights.h5") = "not hdf5 at all"; });
  expect_fails(p, RECUR_ERR_IO, {"model.weights.h5", "not an HDF5 file"});
  // A stored member whose bytes no longer match its CRC.
  std::string zb = read_bytes(src);
  const auto pos = zb.find("\"class_name\": \"Functional\"");
  ASSERT_NE(pos, std::string::npos);
  zb[pos + 1] = 'K';
  expect_fails(s.write("bad_crc.keras", zb), RECUR_ERR_IO, {"config.json"});
}

TEST(ModelFilesMalformed, Metadata) {
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  const struct {
    const char* name;
    std::string metadata;
    recur_status code;
    std::vector<std::string> needles;
  } cases[] = {
      {"no_version", R"({"date_saved": "2024-01-01"})", RECUR_ERR_IO, {"metadata.json", "keras_version"}},
      {"version_number", R"({"keras_version": 3})", RECUR_ERR_IO, {"metadata.json", "keras_version"}},
      {"old_version", R"({"keras_version": "1.2.2"})", RECUR_ERR_UNSUPPORTED, {"metadata.json", "1.2.2"}},
      {"empty_version", R"({"keras_version": ""})", RECUR_ERR_UNSUPPORTED, {"metadata.json", "keras_version"}},
      {"not_json", "keras_version = 3.0", RECUR_ERR_IO, {"metadata.json", "malformed JSON"}},
      {"array", R"(["keras_version", "3.0.0"])", RECUR_ERR_IO, {"metadata.json", "keras_version"}},
      {"empty", "", RECUR_ERR_IO, {"metadata.json"}},
      {"non_utf8_version", "{\"keras_version\": \"9\xff\xfe\"}", RECUR_ERR_IO, {"metadata.json"}},
      // A version that is not one: the file is corrupt, and the message names it.
      {"malformed_version", R"({"keras_version": "3.x"})", RECUR_ERR_IO,
       {"malformed_version.keras: metadata.json: keras_version: '3.x' is not a version"}},
      {"truncated_version", R"({"keras_version": "2."})", RECUR_ERR_IO, {"truncated_version.keras", "'2.'"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = edited_keras(s, src, std::string(c.name) + ".keras",
                                       [&](Members& m) { member(m, "metadata.json") = c.metadata; });
    const std::string msg = expect_fails(p, c.code, {});
    for (const auto& n : c.needles) EXPECT_NE(msg.find(n), std::string::npos) << n << " / " << msg;
  }
}

TEST(ModelFilesMalformed, ConfigJson) {
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  Members orig = read_zip(src);
  const std::string cfg = member(orig, "config.json");
  const struct {
    const char* name;
    std::string config;
    recur_status code;
    std::vector<std::string> needles;
  } cases[] = {
      {"malformed", cfg.substr(0, cfg.size() / 2), RECUR_ERR_IO, {"config.json", "malformed JSON"}},
      {"not_object", "[1, 2, 3]", RECUR_ERR_IO, {"model_config"}},
      {"no_config", R"({"class_name": "Functional"})", RECUR_ERR_IO, {"model_config"}},
      {"layers_not_list", R"({"class_name": "Sequential", "config": {"layers": {"a": 1}}})", RECUR_ERR_IO,
       {"model_config", "no layer list"}},
      {"layer_not_object", R"({"class_name": "Sequential", "config": {"layers": [42]}})", RECUR_ERR_IO,
       {"model_config", "layer 0"}},
      {"layer_no_config", R"({"class_name": "Sequential", "config": {"layers": [{"class_name": "GRU"}]}})",
       RECUR_ERR_IO, {"model_config", "layer 0"}},
      {"class_not_string", R"({"class_name": 5, "config": {"layers": []}})", RECUR_ERR_UNSUPPORTED, {"model class"}},
      {"custom_model", replace_once(cfg, "\"class_name\": \"Functional\"", "\"class_name\": \"MyModel\""),
       RECUR_ERR_UNSUPPORTED, {"MyModel", "Sequential"}},
      {"no_input_layer", R"({"class_name": "Functional", "config": {"layers": []}})", RECUR_ERR_IO,
       {"InputLayer"}},
      {"non_utf8", replace_once(cfg, "\"name\": \"gru\"", "\"name\": \"gr\xff\xfe\""), RECUR_ERR_IO,
       {"config.json", "malformed JSON"}},
      {"name_number", replace_once(cfg, "\"name\": \"gru\"", "\"name\": 17"), RECUR_ERR_IO, {"model_config"}},
      {"deep_nesting", std::string(100000, '[') + std::string(100000, ']'), RECUR_ERR_IO, {"nested deeper than 256"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = edited_keras(s, src, std::string(c.name) + ".keras",
                                       [&](Members& m) { member(m, "config.json") = c.config; });
    const std::string msg = expect_fails(p, c.code, {});
    for (const auto& n : c.needles) EXPECT_NE(msg.find(n), std::string::npos) << n << " / " << msg;
  }
}

// ===== legacy .h5 structure =====

TEST(ModelFilesMalformed, LegacyH5Structure) {
  Scratch s;
  for (const char* v : kVersions) {
    SCOPED_TRACE(v);
    const std::string src = model_file(v, "tokens.h5");
    const std::string sfx = std::string(v) == "keras2" ? ":0" : "";
    const std::string kernel = "/model_weights/gru/gru/gru_cell/kernel" + sfx;

    expect_fails(edited_h5(s, src, "weights_only.h5", [](H5Edit& e) { e.del_attr("/", "model_config"); }),
                 RECUR_ERR_IO, {"model_config", "weights-only"});
    // A save_weights file: the groups at the root.
    {
      const std::string p = s.path("save_weights.h5");
      const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      H5Fclose(f);
      H5Edit e(p);
      e.set_str_list_attr("/", "layer_names", {"gru"});
      e.set_floats("/gru/gru/gru_cell/kernel:0", {4, 15}, std::vector<float>(60, 0.5f));
      e.set_str_list_attr("/gru", "weight_names", {"gru/gru_cell/kernel:0"});
    }
    expect_fails(s.path("save_weights.h5"), RECUR_ERR_IO, {"weights-only"});

    expect_fails(edited_h5(s, src, "no_version.h5",
                           [](H5Edit& e) {
                             e.del_attr("/", "keras_version");
                             e.del_attr("/model_weights", "keras_version");
                           }),
                 RECUR_ERR_UNSUPPORTED, {"keras_version"});
    expect_fails(edited_h5(s, src, "v122.h5", [](H5Edit& e) { e.set_str_attr("/", "keras_version", "1.2.2"); }),
                 RECUR_ERR_UNSUPPORTED, {"1.2.2"});
    expect_fails(edited_h5(s, src, "v3colon.h5", [](H5Edit& e) { e.set_str_attr("/", "keras_version", "3:15.1"); }),
                 RECUR_ERR_IO, {"v3colon.h5: /: keras_version: '3:15.1' is not a version"});
    expect_fails(edited_h5(s, src, "cfg_bad.h5", [](H5Edit& e) { e.set_str_attr("/", "model_config", "{\"class"); }),
                 RECUR_ERR_IO, {"/model_config", "malformed JSON"});
    expect_fails(edited_h5(s, src, "cfg_custom.h5",
                           [](H5Edit& e) {
                             e.set_str_attr("/", "model_config",
                                            replace_once(e.str_attr("/", "model_config"),
                                                         "\"class_name\": \"Functional\"", "\"class_name\": \"Custom\""));
                           }),
                 RECUR_ERR_UNSUPPORTED, {"Custom"});
    // model_config as numbers, not a string.
    expect_fails(edited_h5(s, src, "cfg_number.h5", [](H5Edit& e) { e.set_num_attr("/", "model_config", 2); }),
                 RECUR_ERR_IO, {"model_config", "not a string"});
    expect_fails(edited_h5(s, src, "no_layer_names.h5", [](H5Edit& e) { e.del_attr("/model_weights", "layer_names"); }),
                 RECUR_ERR_IO, {"/model_weights", "layer_names"});
    expect_fails(edited_h5(s, src, "no_group.h5", [](H5Edit& e) { e.del("/model_weights/gru"); }), RECUR_ERR_IO,
                 {"/model_weights/gru", "missing the weights of layer 'gru'", "disagree"});
    expect_fails(edited_h5(s, src, "not_listed.h5",
                           [](H5Edit& e) {
                             e.set_str_list_attr("/model_weights", "layer_names", {"ids", "embedding", "lstm", "dense"});
                           }),
                 RECUR_ERR_IO, {"/model_weights/gru", "disagree"});
    expect_fails(edited_h5(s, src, "no_weight_names.h5",
                           [](H5Edit& e) { e.del_attr("/model_weights/gru", "weight_names"); }),
                 RECUR_ERR_IO, {"/model_weights/gru", "weight_names"});
    expect_fails(edited_h5(s, src, "no_dataset.h5", [&](H5Edit& e) { e.del(kernel); }), RECUR_ERR_IO,
                 {kernel, "missing dataset"});
    expect_fails(edited_h5(s, src, "dangling.h5",
                           [&](H5Edit& e) {
                             e.set_str_list_attr("/model_weights/gru", "weight_names",
                                                 {"gru/gru_cell/kernel" + sfx, "gru/gru_cell/nothing" + sfx,
                                                  "gru/gru_cell/bias" + sfx});
                           }),
                 RECUR_ERR_IO, {"/model_weights/gru/gru/gru_cell/nothing" + sfx, "missing dataset"});
    // weight_names naming a group, not a dataset.
    expect_fails(edited_h5(s, src, "names_group.h5",
                           [&](H5Edit& e) {
                             e.set_str_list_attr("/model_weights/gru", "weight_names",
                                                 {"gru", "gru/gru_cell", "gru/gru_cell/bias" + sfx});
                           }),
                 RECUR_ERR_IO, {"/model_weights/gru/gru", "missing dataset"});
    // Too few / too many weights for the layer.
    expect_fails(edited_h5(s, src, "two_names.h5",
                           [&](H5Edit& e) {
                             e.set_str_list_attr("/model_weights/gru", "weight_names",
                                                 {"gru/gru_cell/kernel" + sfx, "gru/gru_cell/bias" + sfx});
                           }),
                 RECUR_ERR_IO, {"gru", "2 weight(s)", "needs 3"});
    expect_fails(edited_h5(s, src, "dup_names.h5",
                           [&](H5Edit& e) {
                             const std::string k = "gru/gru_cell/kernel" + sfx;
                             e.set_str_list_attr("/model_weights/gru", "weight_names",
                                                 {k, "gru/gru_cell/recurrent_kernel" + sfx, "gru/gru_cell/bias" + sfx, k});
                           }),
                 RECUR_ERR_IO, {"gru", "4 weight(s)", "needs 3"});
    // weight_names as a number array; as an empty number array (h5py's empty list).
    expect_fails(edited_h5(s, src, "names_numeric.h5",
                           [&](H5Edit& e) { e.set_num_attr("/model_weights/gru", "weight_names", 3); }),
                 RECUR_ERR_IO, {"/model_weights/gru", "weight_names", "not a string"});
    expect_fails(edited_h5(s, src, "names_empty.h5",
                           [&](H5Edit& e) { e.set_num_attr("/model_weights/gru", "weight_names", 0); }),
                 RECUR_ERR_IO, {"gru", "0 weight(s)", "needs 3"});
  }
}

// ===== weights: values, shapes, types =====

TEST(ModelFilesMalformed, WeightValuesShapesAndTypes) {
  Scratch s;
  for (const char* v : kVersions) {
    SCOPED_TRACE(v);
    const std::string sfx = std::string(v) == "keras2" ? ":0" : "";
    const std::string kernel = "/model_weights/gru/gru/gru_cell/kernel" + sfx;
    const struct {
      const char* file;     // inside the .keras
      std::string h5_path;  // inside the .h5
      std::string keras_path;
    } targets[] = {{"gru", kernel, "/layers/gru/cell/vars/0"},
                   {"dense", "/model_weights/dense/dense/bias" + sfx, "/layers/dense/vars/1"},
                   {"embedding", "/model_weights/embedding/embedding/embeddings" + sfx, "/layers/embedding/vars/0"}};
    for (const auto& t : targets) {
      SCOPED_TRACE(t.file);
      struct Edit {
        const char* name;
        std::function<void(H5Edit&, const std::string&)> apply;
        std::vector<std::string> needles;
      };
      const std::vector<Edit> edits = {
          {"nan",
           [](H5Edit& e, const std::string& p) {
             std::vector<hsize_t> d;
             auto x = e.floats(p, d);
             x[x.size() / 2] = std::nanf("");
             e.set_floats(p, d, x);
           },
           {"non-finite"}},
          {"inf",
           [](H5Edit& e, const std::string& p) {
             std::vector<hsize_t> d;
             auto x = e.floats(p, d);
             x.back() = -INFINITY;
             e.set_floats(p, d, x);
           },
           {"non-finite"}},
          {"shape",
           [](H5Edit& e, const std::string& p) {
             std::vector<hsize_t> d;
             auto x = e.floats(p, d);
             d.back() += 1;
             std::size_t n = 1;
             for (auto k : d) n *= k;
             x.resize(n, 0.1f);
             e.set_floats(p, d, x);
           },
           {"shape", "does not fit"}},
          {"rank3",
           [](H5Edit& e, const std::string& p) {
             std::vector<hsize_t> d;
             auto x = e.floats(p, d);
             d.insert(d.begin(), 1);
             e.set_floats(p, d, x);
           },
           {"shape", "does not fit"}},
          {"rank5", [](H5Edit& e, const std::string& p) { e.set_floats(p, {1, 1, 1, 1, 2}, {1.0f, 2.0f}); },
           {"rank"}},
          {"empty", [](H5Edit& e, const std::string& p) { e.set_floats(p, {0}, {}); }, {"shape"}},
          {"scalar", [](H5Edit& e, const std::string& p) { e.set_floats(p, {}, {1.0f}); }, {"shape"}},
          {"string", [](H5Edit& e, const std::string& p) { e.set_strings(p, {"0.5", "0.25"}); }, {"numeric"}},
          {"huge_2e40", [](H5Edit& e, const std::string& p) { e.set_unallocated(p, {1u << 20, 1u << 20}); },
           {"declares"}},
          {"huge_2e28", [](H5Edit& e, const std::string& p) { e.set_unallocated(p, {1u << 14, 1u << 14}); },
           {"declares"}},
          {"group", [](H5Edit& e, const std::string& p) {
             e.del(p);
             e.set_floats(p + "/inner", {1}, {1.0f});
           },
           {"missing dataset"}},
      };
      for (const Edit& ed : edits) {
        SCOPED_TRACE(ed.name);
        const long rss0 = max_rss_kib();
        const std::string ph = edited_h5(s, model_file(v, "tokens.h5"), std::string(ed.name) + ".h5",
                                         [&](H5Edit& e) { ed.apply(e, t.h5_path); });
        const std::string mh = expect_fails(ph, RECUR_ERR_IO, {t.h5_path});
        for (const auto& n : ed.needles) EXPECT_NE(mh.find(n), std::string::npos) << n << " / " << mh;
        const std::string pk = edited_keras_weights(s, model_file(v, "tokens.keras"), std::string(ed.name) + ".keras",
                                                    [&](H5Edit& e) { ed.apply(e, t.keras_path); });
        const std::string mk = expect_fails(pk, RECUR_ERR_IO, {"model.weights.h5:" + t.keras_path});
        for (const auto& n : ed.needles) EXPECT_NE(mk.find(n), std::string::npos) << n << " / " << mk;
        // Declared sizes are checked before anything is allocated.
        EXPECT_LT(max_rss_kib() - rss0, 200 * 1024) << "peak memory grew by " << (max_rss_kib() - rss0) << " KiB";
      }
    }
  }
}

TEST(ModelFilesMalformed, HugeStringAttribute) {
  Scratch s;
  // A 65 MiB model_config (stored as a variable-length string: the file really holds it).
  const std::string big = "{\"class_name\": \"Sequential\", \"config\": {\"layers\": []}, \"pad\": \"" +
                          std::string((std::size_t(65) << 20), 'x') + "\"}";
  const std::string p = edited_h5(s, model_file("keras3", "tokens.h5"), "big_attr.h5",
                                  [&](H5Edit& e) { e.set_str_attr("/", "model_config", big); });
  expect_fails(p, RECUR_ERR_IO, {"model_config", "64 MiB"});
}

TEST(ModelFilesMalformed, NonUtf8Names) {
  Scratch s;
  const std::string bad = "gr\xff\xfe\x01u";
  // In weight_names: the message shows the bytes escaped.
  const std::string p1 = edited_h5(s, model_file("keras2", "tokens.h5"), "nonutf8_weight.h5", [&](H5Edit& e) {
    e.set_str_list_attr("/model_weights/gru", "weight_names",
                        {bad + "/kernel:0", "gru/gru_cell/recurrent_kernel:0", "gru/gru_cell/bias:0"});
  });
  expect_fails(p1, RECUR_ERR_IO, {"gr\\xFF\\xFE\\x01u/kernel:0", "missing dataset"});
  // In layer_names and as the group name.
  const std::string p2 = edited_h5(s, model_file("keras2", "tokens.h5"), "nonutf8_layer.h5", [&](H5Edit& e) {
    e.set_str_list_attr("/model_weights", "layer_names", {"ids", "embedding", bad, "lstm", "dense"});
  });
  expect_fails(p2, RECUR_ERR_IO, {"/model_weights/gru", "disagree"});
  // In the model config of an .h5 (raw bytes in the JSON text).
  const std::string p3 = edited_h5(s, model_file("keras3", "tokens.h5"), "nonutf8_config.h5", [&](H5Edit& e) {
    e.set_str_attr("/", "model_config",
                   replace_once(e.str_attr("/", "model_config"), "\"name\": \"gru\"", "\"name\": \"" + bad + "\""));
  });
  expect_fails(p3, RECUR_ERR_IO, {"model_config", "malformed JSON"});
  // A JSON-escaped control character in a layer name reaches the messages escaped.
  const std::string p4 = edited_h5(s, model_file("keras3", "tokens.h5"), "ctl_name.h5", [&](H5Edit& e) {
    std::string cfg = e.str_attr("/", "model_config");
    // Renamed everywhere the config names it, so only the weights (still under "gru") disagree.
    for (std::size_t at = cfg.find("\"gru\""); at != std::string::npos; at = cfg.find("\"gru\"", at + 1))
      cfg.replace(at, 5, "\"g\\u0001ru\\u00e9\"");
    e.set_str_attr("/", "model_config", cfg);
  });
  expect_fails(p4, RECUR_ERR_IO, {"g\\x01ru\xc3\xa9", "disagree"});
  // A zip member name that is not UTF-8 (and no config.json).
  const std::string p5 = edited_keras(s, model_file("keras3", "tokens.keras"), "nonutf8_member.keras",
                                      [&](Members& m) { m[1].first = "config\xff.json"; });
  expect_fails(p5, RECUR_ERR_IO, {"config.json"});
}

TEST(ModelFilesMalformed, ConfigAndWeightsDisagree) {
  Scratch s;
  const struct {
    const char* name;
    const char* from;
    const char* to;
    std::string h5_obj2;   // keras2 .h5 dataset named
    std::string keras_obj;  // .keras object named
  } cases[] = {
      {"embedding", "\"output_dim\": 4", "\"output_dim\": 5", "/model_weights/embedding/embedding/embeddings",
       "model.weights.h5:/layers/embedding/vars/0"},
      {"embedding_rows", "\"input_dim\": 20", "\"input_dim\": 21", "/model_weights/embedding/embedding/embeddings",
       "model.weights.h5:/layers/embedding/vars/0"},
      {"gru", "\"units\": 5", "\"units\": 6", "/model_weights/gru/gru/gru_cell/kernel",
       "model.weights.h5:/layers/gru/cell/vars/0"},
      {"dense", "\"units\": 2", "\"units\": 3", "/model_weights/dense/dense/kernel",
       "model.weights.h5:/layers/dense/vars/0"},
      {"dense_nobias", "\"units\": 2, \"activation\": \"softmax\", \"use_bias\": true",
       "\"units\": 2, \"activation\": \"softmax\", \"use_bias\": false", "/model_weights/dense", "dense"},
  };
  for (const char* v : kVersions)
    for (const auto& c : cases) {
      SCOPED_TRACE(std::string(v) + " " + c.name);
      const std::string ph = edited_h5(s, model_file(v, "tokens.h5"), std::string(c.name) + ".h5", [&](H5Edit& e) {
        e.set_str_attr("/", "model_config", replace_once(e.str_attr("/", "model_config"), c.from, c.to));
      });
      expect_fails(ph, RECUR_ERR_IO, {c.h5_obj2});
      const std::string pk = edited_keras(s, model_file(v, "tokens.keras"), std::string(c.name) + ".keras",
                                          [&](Members& m) {
                                            std::string& cfg = member(m, "config.json");
                                            cfg = replace_once(cfg, c.from, c.to);
                                          });
      expect_fails(pk, RECUR_ERR_IO, {c.keras_obj});
    }
}

TEST(ModelFilesMalformed, KerasWeightsStructure) {
  Scratch s;
  for (const char* v : kVersions) {
    SCOPED_TRACE(v);
    const std::string src = model_file(v, "tokens.keras");
    expect_fails(edited_keras_weights(s, src, "no_gru.keras", [](H5Edit& e) { e.del("/layers/gru"); }), RECUR_ERR_IO,
                 {"model.weights.h5:/layers/gru", "missing", "disagree"});
    expect_fails(edited_keras_weights(s, src, "no_layers.keras", [](H5Edit& e) { e.del("/layers"); }), RECUR_ERR_IO,
                 {"model.weights.h5:/layers/embedding", "missing"});
    expect_fails(edited_keras_weights(s, src, "no_dense.keras", [](H5Edit& e) { e.del("/layers/dense"); }),
                 RECUR_ERR_IO, {"model.weights.h5:/layers/dense", "missing"});
    expect_fails(edited_keras_weights(s, src, "no_var1.keras", [](H5Edit& e) { e.del("/layers/gru/cell/vars/1"); }),
                 RECUR_ERR_IO, {"gru", "1 weight(s)", "needs 3"});
    expect_fails(edited_keras_weights(s, src, "no_vars.keras", [](H5Edit& e) { e.del("/layers/gru/cell/vars"); }),
                 RECUR_ERR_IO, {"gru", "0 weight(s)", "needs 3"});
    expect_fails(edited_keras_weights(s, src, "extra_var.keras",
                                      [](H5Edit& e) {
                                        std::vector<hsize_t> d;
                                        auto x = e.floats("/layers/gru/cell/vars/2", d);
                                        e.set_floats("/layers/gru/cell/vars/3", d, x);
                                      }),
                 RECUR_ERR_IO, {"gru", "4 weight(s)", "needs 3"});
    expect_fails(edited_keras_weights(s, src, "many_vars.keras",
                                      [](H5Edit& e) {
                                        for (int i = 0; i < 100; ++i)
                                          e.set_floats("/layers/dense/vars/" + std::to_string(i), {1}, {1.0f});
                                      }),
                 RECUR_ERR_IO, {"model.weights.h5:/layers/dense/vars/", "more or larger weights"});
    expect_fails(edited_keras_weights(s, src, "emb_two_vars.keras",
                                      [](H5Edit& e) { e.set_floats("/layers/embedding/vars/1", {1}, {1.0f}); }),
                 RECUR_ERR_IO, {"embedding", "2 weight(s)", "needs 1"});
    // The layer group is a dataset.
    expect_fails(edited_keras_weights(s, src, "gru_dataset.keras",
                                      [](H5Edit& e) {
                                        e.del("/layers/gru");
                                        e.set_floats("/layers/gru", {1}, {1.0f});
                                      }),
                 RECUR_ERR_IO, {"model.weights.h5:/layers/gru", "missing"});
  }
}

TEST(ModelFilesMalformed, HugeDeclaredZipMemberSizes) {
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  const std::string good = read_bytes(src);
  struct Case {
    const char* member;
    std::uint32_t size;
    std::vector<std::string> needles;
  };
  for (const Case& c : {Case{"metadata.json", 0x7FFFFFF0u, {"metadata.json", "more than"}},
                        Case{"config.json", 0x40000000u, {"config.json", "more than"}},
                        Case{"model.weights.h5", 0xF0000000u, {"model.weights.h5"}},
                        Case{"config.json", 0x03FFFFFFu, {"config.json"}},
                        Case{"config.json", 10u, {"config.json"}}}) {
    SCOPED_TRACE(std::string(c.member) + " declared " + std::to_string(c.size));
    std::string bad = good;
    patch_declared_size(bad, c.member, c.size);
    const long rss0 = max_rss_kib();
    const std::string msg = expect_fails(s.write("huge_member.keras", bad), RECUR_ERR_IO, {});
    for (const auto& n : c.needles) EXPECT_NE(msg.find(n), std::string::npos) << n << " / " << msg;
    EXPECT_LT(max_rss_kib() - rss0, 200 * 1024) << "peak memory grew by " << (max_rss_kib() - rss0) << " KiB";
  }
  // The same for a deflated archive: a declared size larger than what inflates.
  const std::string deflated = edited_keras(s, src, "deflated.keras", [](Members&) {}, true);
  EXPECT_EQ(try_open(deflated).status, RECUR_OK) << recur_last_error();
  for (std::uint32_t size : {0xF0000000u, 100u}) {
    std::string bad = read_bytes(deflated);
    patch_declared_size(bad, "model.weights.h5", size);
    const long rss0 = max_rss_kib();
    expect_fails(s.write("deflated_bad.keras", bad), RECUR_ERR_IO, {"model.weights.h5"});
    EXPECT_LT(max_rss_kib() - rss0, 200 * 1024) << "peak memory grew by " << (max_rss_kib() - rss0) << " KiB";
  }
}

TEST(ModelFilesMalformed, CudnnBiasLayouts) {
  Scratch s;
  // Keras 2 .h5: a CuDNN-layout GRU bias (6u) for a GRU(reset_after=False) layer.
  const std::string p2 = edited_h5(s, model_file("keras2", "tokens.h5"), "cudnn_k2.h5", [](H5Edit& e) {
    e.set_str_attr("/", "model_config",
                   replace_once(e.str_attr("/", "model_config"), "\"reset_after\": true", "\"reset_after\": false"));
    e.set_floats("/model_weights/gru/gru/gru_cell/bias:0", {30}, std::vector<float>(30, 0.1f));
  });
  expect_fails(p2, RECUR_ERR_IO, {"CuDNNGRU is not compatible with GRU(reset_after=False)", "gru"});
  // Keras 2 .h5, reset_after=True but the bias is 2-D with the wrong shape.
  const std::string p2b = edited_h5(s, model_file("keras2", "tokens.h5"), "bias2d_k2.h5", [](H5Edit& e) {
    e.set_floats("/model_weights/gru/gru/gru_cell/bias:0", {3, 15}, std::vector<float>(45, 0.1f));
  });
  expect_fails(p2b, RECUR_ERR_IO, {"/model_weights/gru/gru/gru_cell/bias:0", "shape"});
  // Keras 2 .h5: an LSTM bias of odd length.
  const std::string p2c = edited_h5(s, model_file("keras2", "tokens.h5"), "lstm_bias_k2.h5", [](H5Edit& e) {
    e.set_floats("/model_weights/lstm/lstm/lstm_cell/bias:0", {7}, std::vector<float>(7, 0.1f));
  });
  expect_fails(p2c, RECUR_ERR_IO, {"/model_weights/lstm/lstm/lstm_cell/bias:0", "shape"});
  // Keras 3 .h5: no conversion at all, so a CuDNN-shaped bias is a shape error.
  const std::string p3 = edited_h5(s, model_file("keras3", "tokens.h5"), "cudnn_k3.h5", [](H5Edit& e) {
    e.set_floats("/model_weights/gru/gru/gru_cell/bias", {30}, std::vector<float>(30, 0.1f));
  });
  const std::string m3 = expect_fails(p3, RECUR_ERR_IO, {"/model_weights/gru/gru/gru_cell/bias", "shape", "(30,)"});
  EXPECT_EQ(m3.find("compatible"), std::string::npos) << m3;
  // Keras 3 LSTM with a CuDNN-shaped (8u) bias.
  const std::string p3b = edited_h5(s, model_file("keras3", "tokens.h5"), "cudnn_lstm_k3.h5", [](H5Edit& e) {
    e.set_floats("/model_weights/lstm/lstm/lstm_cell/bias", {24}, std::vector<float>(24, 0.1f));
  });
  expect_fails(p3b, RECUR_ERR_IO, {"/model_weights/lstm/lstm/lstm_cell/bias", "shape"});
}

TEST(ModelFilesMalformed, HostileConfigSizes) {
  // Sizes the config declares are bounded before the layers allocate anything.
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  const struct {
    const char* name;
    const char* from;
    const char* to;
  } cases[] = {
      {"emb_huge", "\"input_dim\": 20", "\"input_dim\": 2000000000"},
      {"emb_negative", "\"input_dim\": 20", "\"input_dim\": -20"},
      {"emb_float", "\"output_dim\": 4", "\"output_dim\": 1e300"},
      {"emb_string", "\"output_dim\": 4", "\"output_dim\": \"4\""},
      {"emb_mask_zero_number", "\"mask_zero\": true", "\"mask_zero\": 1"},
      {"gru_huge", "\"units\": 5", "\"units\": 100000"},
      {"gru_negative", "\"units\": 5", "\"units\": -5"},
      {"gru_string", "\"units\": 5", "\"units\": \"five\""},
      {"dense_huge", "\"units\": 2", "\"units\": 2147483647"},
      {"dense_int64", "\"units\": 2", "\"units\": 30000000000"},
      {"dense_uint64", "\"units\": 2", "\"units\": 18446744073709551615"},
      {"dense_float", "\"units\": 2", "\"units\": 1e30"},
      {"gru_float", "\"units\": 5", "\"units\": 1e30"},
      {"gru_big_float", "\"units\": 5", "\"units\": 4e9"},
      {"dense_use_bias_string", "\"units\": 2, \"activation\": \"softmax\", \"use_bias\": true",
       "\"units\": 2, \"activation\": \"softmax\", \"use_bias\": \"yes\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const long rss0 = max_rss_kib();
    const std::string p = edited_keras(s, src, std::string(c.name) + ".keras", [&](Members& m) {
      std::string& cfg = member(m, "config.json");
      cfg = replace_once(cfg, c.from, c.to);
    });
    // A layer the config makes impossible does not fail the open (by design: the other layers stay
    // usable); the model is then not runnable and says why, naming the layer.
    recur_model* m = nullptr;
    const recur_status st = recur_model_open(&m, p.c_str());
    if (st == RECUR_OK) {
      recur_model_info info;
      info.version = RECUR_MODEL_INFO_VERSION;
      ASSERT_RECUR_OK(recur_model_get_info(m, &info));
      EXPECT_EQ(info.runnable, 0);
      const std::string why = info.unsupported;
      EXPECT_TRUE(why.find("gru") != std::string::npos || why.find("embedding") != std::string::npos ||
                  why.find("dense") != std::string::npos)
          << why;
      EXPECT_TRUE(is_printable(why)) << why;
      const float x[6] = {1, 2, 3, 4, 5, 6};
      float y[64];
      EXPECT_RECUR_ERR(recur_model_run(m, x, 6, 1, 6, nullptr, 0, y, 64), RECUR_ERR_UNSUPPORTED, "cannot run");
      recur_model_destroy(m);
    } else {
      EXPECT_EQ(m, nullptr);
      EXPECT_NE(std::string(recur_last_error()).find(p), std::string::npos) << recur_last_error();
    }
    EXPECT_LT(max_rss_kib() - rss0, 200 * 1024) << "peak memory grew by " << (max_rss_kib() - rss0) << " KiB";
  }
  // Many layers, each within the per-weight limit, together far beyond any sane model.
  std::string layers = R"({"class_name": "InputLayer", "config": {"name": "in", "batch_shape": [null, 4, 8192]}})";
  for (int i = 0; i < 64; ++i)
    layers += R"(, {"class_name": "Dense", "config": {"name": "d)" + std::to_string(i) +
              R"(", "units": 8192, "activation": "linear"}})";
  const std::string cfg = R"({"class_name": "Sequential", "config": {"name": "big", "layers": [)" + layers + "]}}";
  const long rss0 = max_rss_kib();
  const std::string p = edited_keras(s, src, "many_big.keras", [&](Members& m) { member(m, "config.json") = cfg; });
  expect_fails(p, RECUR_ERR_IO, {});
  // Refused from the size of the weights file, before the layers allocate.
  EXPECT_LT(max_rss_kib() - rss0, 100 * 1024) << "peak memory grew by " << (max_rss_kib() - rss0) << " KiB";
}

// ===== the library is fine afterwards =====

TEST(ModelFilesMalformed, WellFormedFilesStillOpenAfterFailures) {
  Scratch s;
  expect_fails(s.write("junk.h5", std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\x01')), RECUR_ERR_IO, {});
  expect_fails(s.write("junk.keras", std::string("PK\x03\x04", 4) + std::string(100, '\x01')), RECUR_ERR_IO, {});
  for (const char* v : kVersions)
    for (const char* name : {"tokens.h5", "tokens.keras", "bigru.h5", "bigru.keras", "binone.h5", "binone.keras"}) {
      SCOPED_TRACE(std::string(v) + "/" + name);
      recur_model* m = nullptr;
      ASSERT_RECUR_OK(recur_model_open(&m, model_file(v, name).c_str()));
      recur_model_info info;
      info.version = RECUR_MODEL_INFO_VERSION;
      EXPECT_RECUR_OK(recur_model_get_info(m, &info));
      EXPECT_GT(info.num_layers, 0);
      recur_model_destroy(m);
    }
}

TEST(ModelFilesMalformed, RepeatedFailedOpensDoNotGrowMemory) {
  Scratch s;
  std::vector<std::string> broken;
  broken.push_back(s.write("cut.h5", read_bytes(model_file("keras3", "tokens.h5")).substr(0, 20000)));
  broken.push_back(s.write("cut.keras", read_bytes(model_file("keras3", "tokens.keras")).substr(0, 20000)));
  broken.push_back(edited_h5(s, model_file("keras2", "tokens.h5"), "nan.h5", [](H5Edit& e) {
    std::vector<hsize_t> d;
    auto x = e.floats("/model_weights/lstm/lstm/lstm_cell/kernel:0", d);
    x[3] = std::nanf("");
    e.set_floats("/model_weights/lstm/lstm/lstm_cell/kernel:0", d, x);
  }));
  broken.push_back(edited_keras_weights(s, model_file("keras3", "bigru.keras"), "nogroup.keras",
                                        [](H5Edit& e) { e.del("/layers/bidirectional/backward_layer"); }));
  broken.push_back(edited_keras(s, model_file("keras3", "tokens.keras"), "nometa.keras",
                                [](Members& m) { drop_member(m, "metadata.json"); }));
  // Warm up (first-use allocations of HDF5 and libzip), then measure.
  for (const auto& p : broken) EXPECT_NE(try_open(p).status, RECUR_OK) << p;
  [[maybe_unused]] const long rss0 = max_rss_kib();  // read only outside ASan
  for (int i = 0; i < 100; ++i)
    for (const auto& p : broken) ASSERT_NE(try_open(p).status, RECUR_OK) << p;
#if !defined(__SANITIZE_ADDRESS__)
  // (Under ASan the freed memory sits in its quarantine, so the peak grows anyway; LeakSanitizer
  // checks for leaks at exit instead.)
  EXPECT_LT(max_rss_kib() - rss0, 32 * 1024) << "peak memory grew by " << (max_rss_kib() - rss0) << " KiB";
#endif
  // HDF5 leaves no file open behind.
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

// ===== hostile graphs: cycles, dangling references, shapes that do not connect, huge shapes =====

namespace {

// A functional config.json with the given layers, inputs and outputs (weights of the tokens model
// stay in the file; the configs below fail before any is read, or have no weights).
std::string graph_config(const std::string& layers, const std::string& inputs, const std::string& outputs) {
  return R"({"class_name": "Functional", "config": {"name": "g", "layers": [)" + layers + R"(], "input_layers": )" +
         inputs + R"(, "output_layers": )" + outputs + "}}";
}

std::string k3_ref(const std::string& layer, int node = 0, int tensor = 0) {
  return R"({"class_name": "__keras_tensor__", "config": {"shape": [null, null, 3], "dtype": "float32", "keras_history": [")" +
         layer + "\", " + std::to_string(node) + ", " + std::to_string(tensor) + "]}}";
}

std::string k3_layer(const std::string& cls, const std::string& name, const std::string& cfg, const std::string& args) {
  return R"({"module": "keras.layers", "class_name": ")" + cls + R"(", "config": {"name": ")" + name + "\"" +
         (cfg.empty() ? "" : ", " + cfg) + R"(}, "inbound_nodes": [{"args": [)" + args + R"(], "kwargs": {}}]})";
}

const std::string kInput =
    R"({"module": "keras.layers", "class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, null, 3], "dtype": "float32"}, "inbound_nodes": []})";

}  // namespace

TEST(ModelFilesMalformed, HostileGraphs) {
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  const struct {
    const char* name;
    std::string config;
    recur_status code;
    std::vector<std::string> needles;
  } cases[] = {
      {"cycle",
       graph_config(kInput + ", " + k3_layer("Add", "a", "", "[" + k3_ref("x") + ", " + k3_ref("b") + "]") + ", " +
                        k3_layer("Activation", "b", R"("activation": "tanh")", k3_ref("a")),
                    R"([["x", 0, 0]])", R"([["b", 0, 0]])"),
       RECUR_ERR_IO, {"cycle", "layer '"}},
      {"self_loop",
       graph_config(kInput + ", " + k3_layer("Activation", "a", R"("activation": "tanh")", k3_ref("a")),
                    R"([["x", 0, 0]])", R"([["a", 0, 0]])"),
       RECUR_ERR_IO, {"cycle", "'a'"}},
      {"dangling_layer",
       graph_config(kInput + ", " + k3_layer("Activation", "a", R"("activation": "tanh")", k3_ref("ghost")),
                    R"([["x", 0, 0]])", R"([["a", 0, 0]])"),
       RECUR_ERR_IO, {"'ghost'", "does not have"}},
      {"dangling_call",
       graph_config(kInput + ", " + k3_layer("Activation", "a", R"("activation": "tanh")", k3_ref("x", 7)),
                    R"([["x", 0, 0]])", R"([["a", 0, 0]])"),
       RECUR_ERR_IO, {"call 7", "'x'"}},
      {"dangling_tensor",
       graph_config(kInput + ", " + k3_layer("Activation", "a", R"("activation": "tanh")", k3_ref("x", 0, 5)),
                    R"([["x", 0, 0]])", R"([["a", 0, 0]])"),
       RECUR_ERR_IO, {"output 5", "'x'"}},
      {"dangling_output", graph_config(kInput, R"([["x", 0, 0]])", R"([["nowhere", 0, 0]])"), RECUR_ERR_IO,
       {"'nowhere'"}},
      {"input_not_input",
       graph_config(kInput + ", " + k3_layer("Activation", "a", R"("activation": "tanh")", k3_ref("x")),
                    R"([["a", 0, 0]])", R"([["a", 0, 0]])"),
       RECUR_ERR_IO, {"input_layers", "not an InputLayer"}},
      {"duplicate_names",
       graph_config(kInput + ", " + k3_layer("Activation", "x", R"("activation": "tanh")", k3_ref("x")),
                    R"([["x", 0, 0]])", R"([["x", 0, 0]])"),
       RECUR_ERR_IO, {"two layers", "'x'"}},
      {"bad_history",
       graph_config(kInput + ", " + k3_layer("Activation", "a", R"("activation": "tanh")",
                                            R"({"class_name": "__keras_tensor__", "config": {"keras_history": [1, "x"]}})"),
                    R"([["x", 0, 0]])", R"([["a", 0, 0]])"),
       RECUR_ERR_IO, {"tensor reference"}},
      {"huge_input_shape",
       graph_config(R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, 99999999999999999999, 3]}, "inbound_nodes": []})",
                    R"([["x", 0, 0]])", R"([["x", 0, 0]])"),
       RECUR_ERR_IO, {"dimension", "InputLayer"}},
      {"negative_input_shape",
       graph_config(R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, -4, 3]}, "inbound_nodes": []})",
                    R"([["x", 0, 0]])", R"([["x", 0, 0]])"),
       RECUR_ERR_IO, {"dimension"}},
      {"deep_rank",
       graph_config(R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null,1,1,1,1,1,1,1,1,1,1]}, "inbound_nodes": []})",
                    R"([["x", 0, 0]])", R"([["x", 0, 0]])"),
       RECUR_ERR_IO, {"batch shape"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = edited_keras(s, src, std::string(c.name) + ".keras",
                                       [&](Members& m) { member(m, "config.json") = c.config; });
    const std::string msg = expect_fails(p, c.code, {});
    for (const auto& n : c.needles) EXPECT_NE(msg.find(n), std::string::npos) << n << " / " << msg;
  }

  // Layers whose connected shapes do not fit open, but the model says why and refuses to run.
  const struct {
    const char* name;
    std::string config;
    const char* needle;
  } unrunnable[] = {
      {"add_shapes",
       graph_config(kInput + ", " +
                        R"({"class_name": "InputLayer", "config": {"name": "y", "batch_shape": [null, null, 5]}, "inbound_nodes": []}, )" +
                        k3_layer("Add", "a", "", "[" + k3_ref("x") + ", " + k3_ref("y") + "]"),
                    R"([["x", 0, 0], ["y", 0, 0]])", R"([["a", 0, 0]])"),
       "broadcast"},
      {"repeat_on_sequence",
       graph_config(kInput + ", " + k3_layer("RepeatVector", "r", R"("n": 3)", k3_ref("x")), R"([["x", 0, 0]])",
                    R"([["r", 0, 0]])"),
       "RepeatVector"},
      {"reshape_mismatch",
       graph_config(R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, 4, 3]}, "inbound_nodes": []}, )" +
                        k3_layer("Reshape", "r", R"("target_shape": [5, 5])", k3_ref("x")),
                    R"([["x", 0, 0]])", R"([["r", 0, 0]])"),
       "Reshape"},
      {"huge_repeat",
       graph_config(R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, 3]}, "inbound_nodes": []}, )" +
                        k3_layer("RepeatVector", "r", R"("n": 1073741824)", k3_ref("x")) + ", " +
                        k3_layer("RepeatVector", "r2", R"("n": 1073741824)", k3_ref("x")),
                    R"([["x", 0, 0]])", R"([["r", 0, 0]])"),
       nullptr},
  };
  for (const auto& c : unrunnable) {
    SCOPED_TRACE(c.name);
    const std::string p = edited_keras(s, src, std::string(c.name) + ".keras",
                                       [&](Members& m) { member(m, "config.json") = c.config; });
    recur_model* m = nullptr;
    const recur_status st = recur_model_open(&m, p.c_str());
    if (!c.needle) {
      // Steps far past the timesteps limit: refused when the model opens (since 0.8).
      EXPECT_EQ(st, RECUR_ERR_LIMIT);
      EXPECT_NE(std::string(recur_last_error()).find("timesteps limit"), std::string::npos) << recur_last_error();
      ASSERT_EQ(m, nullptr);
      ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TIMESTEPS, uint64_t(1) << 31));
      ASSERT_EQ(recur_model_open(&m, p.c_str()), RECUR_OK) << recur_last_error();
      ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TIMESTEPS, 0));
    }
    ASSERT_EQ(st == RECUR_OK || !c.needle, true) << recur_last_error();
    recur_model_info info;
    info.version = RECUR_MODEL_INFO_VERSION;
    ASSERT_RECUR_OK(recur_model_get_info(m, &info));
    if (c.needle) {
      EXPECT_EQ(info.runnable, 0);
      EXPECT_NE(std::string(info.unsupported).find(c.needle), std::string::npos) << info.unsupported;
    } else {
      // A declared output far larger than memory: asking its size or running fails clearly.
      size_t n = 0;
      const int32_t ts[1] = {0};
      const recur_status rs = recur_model_outputs_length(m, 1 << 20, ts, 1, &n);
      if (rs == RECUR_OK) {
        std::vector<float> x(size_t(3) << 20);
        float y[1];
        // Its tensors together are over run_bytes: refused before the output buffer is looked at.
        EXPECT_RECUR_ERR(recur_model_run_inputs(m, 1 << 20, ts, 1, x.data(), x.size(), nullptr, 0, y, 1),
                         RECUR_ERR_LIMIT, "limit of");
      } else {
        EXPECT_EQ(rs, RECUR_ERR_SHAPE) << recur_last_error();
      }
    }
    recur_model_destroy(m);
  }
}

std::string k3_op(const std::string& cls, const std::string& name, const std::string& cfg, const std::string& args) {
  return R"({"module": "keras.src.ops.numpy", "class_name": ")" + cls + R"(", "config": {"name": ")" + name + "\"" +
         (cfg.empty() ? "" : ", " + cfg) + R"(}, "name": ")" + name + R"(", "inbound_nodes": [{"args": [)" + args +
         R"(], "kwargs": {}}]})";
}

// The axes of Keras ops (keras.ops.concatenate, expand_dims, sum) are integers checked against the
// rank before use: a float axis once reached a float-to-int conversion (undefined), and an axis out
// of range indexed past a shape.
TEST(ModelFilesMalformed, KerasOpAxesAreChecked) {
  Scratch s;
  const std::string src = model_file("keras3", "tokens.keras");
  const std::string two_inputs =
      R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, 4, 3]}, "inbound_nodes": []}, )"
      R"({"class_name": "InputLayer", "config": {"name": "y", "batch_shape": [null, 4, 2]}, "inbound_nodes": []}, )";
  const std::string xy = "[" + k3_ref("x") + ", " + k3_ref("y") + "]";
  auto concat = [&](const std::string& axis) {
    return graph_config(two_inputs + k3_op("Concatenate", "c", R"("axis": )" + axis, xy), R"([["x", 0, 0], ["y", 0, 0]])",
                        R"([["c", 0, 0]])");
  };
  auto unary = [&](const char* cls, const std::string& cfg) {
    return graph_config(two_inputs + k3_op(cls, "c", cfg, k3_ref("x")), R"([["x", 0, 0], ["y", 0, 0]])", R"([["c", 0, 0]])");
  };
  auto layer = [&](const char* cls, const std::string& cfg) {
    return graph_config(two_inputs + k3_layer(cls, "c", cfg, k3_ref("x")), R"([["x", 0, 0], ["y", 0, 0]])",
                        R"([["c", 0, 0]])");
  };
  const struct {
    const char* name;
    std::string config;
    const char* needle;
  } cases[] = {
      {"concat_float_axis", concat("-1.0856e308"), "axis: expected an integer"},
      {"concat_past_rank", concat("3"), "out of range"},
      {"concat_before_rank", concat("-4"), "out of range"},
      {"concat_wrapping_axis", concat("4294967298"), "out of range"},  // 2^32 + 2 must not pass as 2
      {"concat_batch_axis", concat("0"), "batch axis"},
      {"concat_other_axis_differs", concat("1"), "differ outside axis"},
      {"expand_dims_float_axis", unary("ExpandDims", R"("axis": 2.5)"), "axis: expected an integer"},
      {"sum_wrapping_axis", unary("Sum", R"("axis": [4294967297])"), "axis: expected an integer or a list of integers"},
      {"sum_float_axis", unary("Sum", R"("axis": 1e300)"), "axis: expected an integer or a list of integers"},
      {"mean_repeated_axis", unary("Mean", R"("axis": [1, -2])"), "repeats axis 1"},
      {"squeeze_repeated_axis", unary("Squeeze", R"("axis": [2, 2])"), "repeats axis 2"},
      // The LayerNormalization layer's axes too (Keras: "Duplicate axis", "Invalid axis").
      {"layer_norm_repeated_axis", layer("LayerNormalization", R"("axis": [-1, 2], "center": false, "scale": false)"),
       "LayerNormalization: axis [-1,2] repeats axis 2"},
      {"layer_norm_past_rank", layer("LayerNormalization", R"("axis": 3, "center": false, "scale": false)"),
       "LayerNormalization: axis 3 of a rank-3 tensor"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = edited_keras(s, src, std::string(c.name) + ".keras",
                                       [&](Members& m) { member(m, "config.json") = c.config; });
    recur_model* m = nullptr;
    ASSERT_RECUR_OK(recur_model_open(&m, p.c_str()));
    recur_model_info info;
    info.version = RECUR_MODEL_INFO_VERSION;
    ASSERT_RECUR_OK(recur_model_get_info(m, &info));
    EXPECT_EQ(info.runnable, 0);
    EXPECT_NE(std::string(info.unsupported).find(c.needle), std::string::npos) << info.unsupported;
    recur_model_destroy(m);
  }

  // In range, the same op runs: [x, y] joined along the features.
  const std::string p = edited_keras(s, src, "concat_features.keras", [&](Members& m) { member(m, "config.json") = concat("-1"); });
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, p.c_str()));
  const int32_t ts[2] = {4, 4};
  size_t in_len = 0, out_len = 0;
  ASSERT_RECUR_OK(recur_model_inputs_length(m, 1, ts, 2, &in_len));
  ASSERT_RECUR_OK(recur_model_outputs_length(m, 1, ts, 2, &out_len));
  ASSERT_EQ(in_len, 20u);
  ASSERT_EQ(out_len, 20u);
  std::vector<float> in(in_len), out(out_len, -7.0f), want;
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  for (size_t t = 0; t < 4; ++t) {
    want.insert(want.end(), in.begin() + 3 * t, in.begin() + 3 * t + 3);
    want.insert(want.end(), in.begin() + 12 + 2 * t, in.begin() + 12 + 2 * t + 2);
  }
  ASSERT_RECUR_OK(recur_model_run_inputs(m, 1, ts, 2, in.data(), in.size(), nullptr, 0, out.data(), out.size()));
  EXPECT_EQ(out, want);
  recur_model_destroy(m);

  // A Mean over two distinct axes divides by both sizes once: (1, 4, 3) -> (1,), the mean of all 12.
  const std::string pm = edited_keras(s, src, "mean_two_axes.keras", [&](Members& mm) {
    member(mm, "config.json") =
        graph_config(two_inputs + k3_op("Mean", "c", R"("axis": [1, 2])", k3_ref("x")), R"([["x", 0, 0], ["y", 0, 0]])", R"([["c", 0, 0]])");
  });
  m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, pm.c_str()));
  ASSERT_RECUR_OK(recur_model_outputs_length(m, 1, ts, 2, &out_len));
  ASSERT_EQ(out_len, 1u);
  float mean = -7.0f;
  ASSERT_RECUR_OK(recur_model_run_inputs(m, 1, ts, 2, in.data(), in.size(), nullptr, 0, &mean, 1));
  EXPECT_FLOAT_EQ(mean, 5.5f);  // the mean of 0..11
  recur_model_destroy(m);
}

// An InputLayer may declare a zero-size axis: its tensors are empty and flow through the graph as
// such (a fuzzed model made an output of one, and copying it read from a NULL pointer).
TEST(ModelFilesMalformed, ZeroSizeAxesRunAsEmptyTensors) {
  Scratch s;
  const std::string config = graph_config(
      R"({"class_name": "InputLayer", "config": {"name": "x", "batch_shape": [null, 3, 0]}, "inbound_nodes": []}, )"
      R"({"class_name": "InputLayer", "config": {"name": "z", "batch_shape": [null, 3, 2]}, "inbound_nodes": []}, )"
      R"({"class_name": "InputLayer", "config": {"name": "e", "batch_shape": [null, 0]}, "inbound_nodes": []}, )" +
          k3_layer("Concatenate", "c", R"("axis": -1)", "[" + k3_ref("x") + ", " + k3_ref("z") + "]") + ", " +
          k3_layer("RepeatVector", "r", R"("n": 2)", k3_ref("e")),
      R"([["x", 0, 0], ["z", 0, 0], ["e", 0, 0]])", R"([["x", 0, 0], ["c", 0, 0], ["r", 0, 0]])");
  const std::string p = edited_keras(s, model_file("keras3", "tokens.keras"), "zero_axes.keras",
                                     [&](Members& m) { member(m, "config.json") = config; });
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, p.c_str()));
  const int32_t ts[3] = {3, 3, 1};
  size_t in_len = 0, out_len = 0;
  ASSERT_RECUR_OK(recur_model_inputs_length(m, 2, ts, 3, &in_len));
  ASSERT_RECUR_OK(recur_model_outputs_length(m, 2, ts, 3, &out_len));
  EXPECT_EQ(in_len, 12u);   // x: 2 x 3 x 0, z: 2 x 3 x 2, e: 2 x 0
  EXPECT_EQ(out_len, 12u);  // x, concat(x, z) = z, and 2 x 2 x 0
  int64_t dims[RECUR_MAX_RANK];
  int32_t rank = 0;
  ASSERT_RECUR_OK(recur_model_output_dims(m, 0, 2, ts, 3, dims, &rank));
  EXPECT_EQ(std::vector<int64_t>(dims, dims + rank), (std::vector<int64_t>{2, 3, 0}));
  ASSERT_RECUR_OK(recur_model_output_dims(m, 2, 2, ts, 3, dims, &rank));
  EXPECT_EQ(std::vector<int64_t>(dims, dims + rank), (std::vector<int64_t>{2, 2, 0}));
  std::vector<float> in(in_len), out(out_len, -7.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.25f * static_cast<float>(i) - 1.0f;
  ASSERT_RECUR_OK(recur_model_run_inputs(m, 2, ts, 3, in.data(), in.size(), nullptr, 0, out.data(), out.size()));
  EXPECT_EQ(out, in);  // the only non-empty output is z, and the only non-empty input is z
  recur_model_destroy(m);
}
