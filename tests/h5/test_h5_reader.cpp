// SPDX-License-Identifier: Apache-2.0
// recur's HDF5 reader (core/src/io/hdf5_file.cpp) against libhdf5: every committed Keras file and
// files written here in each format libhdf5 can produce read the same through both; corrupt,
// truncated and hand-made hostile files give Error(io), never a crash, a hang or another error.
#include <hdf5.h>
#include <zip.h>

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "io/hdf5_file.hpp"
#include "recur/error.hpp"

namespace fs = std::filesystem;
using recur::Error;
using recur::io::H5File;

namespace {

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<char> zip_member(const std::string& path, const char* name) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (!z) return {};
  std::vector<char> out;
  zip_stat_t st;
  if (zip_stat(z, name, 0, &st) == 0) {
    zip_file_t* f = zip_fopen(z, name, 0);
    out.resize(static_cast<std::size_t>(st.size));
    if (!f || zip_fread(f, out.data(), st.size) != static_cast<zip_int64_t>(st.size)) out.clear();
    if (f) zip_fclose(f);
  }
  zip_close(z);
  return out;
}

// The committed Keras files: each .h5, and model.weights.h5 inside each .keras.
std::vector<std::pair<std::string, std::vector<char>>> fixtures() {
  std::vector<std::pair<std::string, std::vector<char>>> out;
  for (const char* dir : {"tests/keras/models", "tests/keras/graphs", "tests/cli/models", "examples/models"}) {
    const fs::path root = fs::path(RECUR_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory() && it->path().filename().string().rfind(".venv", 0) == 0) {
        it.disable_recursion_pending();
        continue;
      }
      const std::string ext = it->path().extension().string();
      if (it->is_regular_file() && (ext == ".h5" || ext == ".keras")) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      if (p.extension() == ".h5") out.emplace_back(p.string(), read_bytes(p.string()));
      else out.emplace_back(p.string() + ":model.weights.h5", zip_member(p.string(), "model.weights.h5"));
    }
  }
  return out;
}

// ----- libhdf5's view of a file -----

class Image {
 public:
  explicit Image(const std::vector<char>& bytes) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 16, 0);
    H5Pset_file_image(fapl, const_cast<char*>(bytes.data()), bytes.size());
    static int counter = 0;
    const std::string name = "h5-reader-test-" + std::to_string(++counter);
    f_ = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
  }
  ~Image() {
    if (f_ >= 0) H5Fclose(f_);
  }
  hid_t get() const { return f_; }

 private:
  hid_t f_ = -1;
};

std::string join(const std::string& group, const std::string& name) { return group == "/" ? "/" + name : group + "/" + name; }

std::vector<std::string> ref_children(hid_t f, const std::string& group) {
  H5G_info_t info;
  std::vector<std::string> out;
  if (H5Gget_info_by_name(f, group.c_str(), &info, H5P_DEFAULT) < 0) return out;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(f, group.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(f, group.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    out.push_back(name);
  }
  return out;
}

std::vector<std::string> ref_attr_names(hid_t f, const std::string& obj) {
  H5O_info_t info;
  std::vector<std::string> out;
  if (H5Oget_info_by_name(f, obj.c_str(), &info, H5P_DEFAULT) < 0) return out;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    const ssize_t len = H5Aget_name_by_idx(f, obj.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Aget_name_by_idx(f, obj.c_str(), H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    out.push_back(name);
  }
  return out;
}

// A string attribute as libhdf5 reads it (the reader's old implementation); `is_string` false for
// other types, with `count` its number of elements.
std::vector<std::string> ref_strings(hid_t f, const std::string& obj, const std::string& attr, bool& is_string,
                                     hssize_t& count) {
  std::vector<std::string> out;
  const hid_t a = H5Aopen_by_name(f, obj.c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT);
  const hid_t type = H5Aget_type(a), space = H5Aget_space(a);
  count = H5Sget_simple_extent_npoints(space);
  is_string = H5Tget_class(type) == H5T_STRING && H5Sget_simple_extent_ndims(space) <= 1;
  if (is_string && H5Tis_variable_str(type) > 0) {
    std::vector<char*> ptrs(static_cast<std::size_t>(count), nullptr);
    const hid_t mem = H5Tcopy(H5T_C_S1);
    H5Tset_size(mem, H5T_VARIABLE);
    H5Tset_cset(mem, H5Tget_cset(type));
    H5Aread(a, mem, ptrs.data());
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(mem, space, H5P_DEFAULT, ptrs.data());
    H5Tclose(mem);
  } else if (is_string) {
    const std::size_t width = H5Tget_size(type);
    std::vector<char> buf(width * static_cast<std::size_t>(count));
    H5Aread(a, type, buf.data());
    for (hssize_t i = 0; i < count; ++i) {
      const char* p = buf.data() + static_cast<std::size_t>(i) * width;
      out.emplace_back(p, strnlen(p, width));
    }
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(a);
  return out;
}

// What a file holds, as libhdf5 sees it: the paths the hostile tests then ask the reader for.
struct Manifest {
  std::vector<std::string> groups, datasets;
  std::vector<std::pair<std::string, std::string>> attrs;
};

// Walks the whole file through libhdf5 and through H5File, expecting the same everywhere.
struct Compare {
  hid_t f;
  const H5File& h;
  Manifest m;
  int values = 0;

  template <typename F>
  void guarded(const std::string& what, F&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    }
  }

  void object(const std::string& path) {
    for (const std::string& attr : ref_attr_names(f, path)) {
      m.attrs.emplace_back(path, attr);
      bool is_string = false;
      hssize_t count = 0;
      const auto want = ref_strings(f, path, attr, is_string, count);
      guarded(path + " @" + attr, [&] {
        EXPECT_TRUE(h.has_attribute(path, attr)) << path << " @" << attr;
        if (is_string) {
          EXPECT_EQ(h.attribute_strings(path, attr), want) << path << " @" << attr;
        } else if (count == 0) {
          EXPECT_TRUE(h.attribute_strings(path, attr).empty()) << path << " @" << attr;
        }
      });
    }
  }

  void dataset(const std::string& path) {
    m.datasets.push_back(path);
    const hid_t d = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
    const hid_t type = H5Dget_type(d), space = H5Dget_space(d);
    const H5T_class_t cls = H5Tget_class(type);
    const int rank = H5Sget_simple_extent_ndims(space);
    if ((cls == H5T_FLOAT || cls == H5T_INTEGER) && rank <= 4) {
      hsize_t dims[4] = {0, 0, 0, 0};
      H5Sget_simple_extent_dims(space, dims, nullptr);
      const hssize_t n = H5Sget_simple_extent_npoints(space);
      std::vector<float> want(static_cast<std::size_t>(n));
      EXPECT_GE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, want.data()), 0) << path;
      guarded(path, [&] {
        std::vector<std::int64_t> shape;
        const std::vector<float> got = h.read_floats(path, shape);
        ASSERT_EQ(shape.size(), static_cast<std::size_t>(rank)) << path;
        for (int i = 0; i < rank; ++i) EXPECT_EQ(shape[static_cast<std::size_t>(i)], static_cast<std::int64_t>(dims[i])) << path;
        ASSERT_EQ(got.size(), want.size()) << path;
        if (!got.empty() && std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0) {
          for (std::size_t i = 0; i < got.size(); ++i)
            EXPECT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0) << path << "[" << i << "]: " << got[i] << " vs " << want[i];
        }
        values += static_cast<int>(got.size());
      });
    }
    H5Sclose(space);
    H5Tclose(type);
    H5Dclose(d);
  }

  void group(const std::string& path, int depth) {
    m.groups.push_back(path);
    object(path);
    const auto names = ref_children(f, path);
    guarded(path, [&] {
      EXPECT_TRUE(h.exists(path));
      EXPECT_TRUE(h.is_group(path)) << path;
      EXPECT_FALSE(h.is_dataset(path)) << path;
      EXPECT_EQ(h.children(path), names) << path;
    });
    for (const std::string& name : names) {
      const std::string p = join(path, name);
      H5L_info_t li;
      if (H5Lget_info(f, p.c_str(), &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_HARD) continue;
      H5O_info_t info;
      if (H5Oget_info_by_name(f, p.c_str(), &info, H5P_DEFAULT) < 0) continue;
      if (info.type == H5O_TYPE_GROUP && depth < 64) {
        group(p, depth + 1);
      } else if (info.type == H5O_TYPE_DATASET) {
        guarded(p, [&] {
          EXPECT_TRUE(h.is_dataset(p)) << p;
          EXPECT_FALSE(h.is_group(p)) << p;
        });
        object(p);
        dataset(p);
      }
    }
  }
};

Manifest compare_file(const std::string& label, const std::vector<char>& bytes, int* values = nullptr) {
  SCOPED_TRACE(label);
  const Image img(bytes);
  EXPECT_GE(img.get(), 0) << "libhdf5 cannot open " << label;
  if (img.get() < 0) return {};
  try {
    const H5File h = H5File::open_image(bytes, label);
    Compare c{img.get(), h, {}};
    c.group("/", 0);
    if (values) *values += c.values;
    return c.m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": " << e.what();
  }
  return {};
}

// ----- files written here -----

class Writer {
 public:
  Writer(const std::string& path, H5F_libver_t low, H5F_libver_t high, hsize_t userblock = 0) : path_(path) {
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, low, high);
    const hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    if (userblock) H5Pset_userblock(fcpl, userblock);
    f_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fcpl);
    H5Pclose(fapl);
  }
  ~Writer() { close(); }
  void close() {
    if (f_ >= 0) H5Fclose(f_);
    f_ = -1;
  }
  hid_t get() const { return f_; }

  void group(const std::string& p) { H5Gclose(H5Gcreate2(f_, p.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)); }

  // A dataset of `file_type` written from floats, with `dcpl` (H5P_DEFAULT: contiguous).
  void floats(const std::string& p, const std::vector<hsize_t>& dims, hid_t file_type, hid_t dcpl = H5P_DEFAULT,
              bool write = true, const std::vector<hsize_t>& maxdims = {}) {
    const hid_t sp = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxdims.empty() ? nullptr : maxdims.data());
    const hid_t d = H5Dcreate2(f_, p.c_str(), file_type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    EXPECT_GE(d, 0) << p;
    if (write) {
      hsize_t n = 1;
      for (hsize_t x : dims) n *= x;
      std::vector<float> v(n);
      for (hsize_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37) % 101) - 50.0f + 0.25f * static_cast<float>(i % 3);
      EXPECT_GE(H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0) << p;
    }
    H5Dclose(d);
    H5Sclose(sp);
  }
  // `edge`: a value just above FLT_MAX that rounds to it. libhdf5's hardware conversion (from
  // native-order doubles) gives inf, as recur does; its software conversion (big-endian) gives 2^127.
  void doubles(const std::string& p, hid_t file_type, bool edge) {
    const hsize_t dims[1] = {6};
    const double v[6] = {0.1, -1e-40, 1e39, -1e39, edge ? 3.4028235677973366e38 : 1e-46, 1.0 / 3.0};
    const hid_t sp = H5Screate_simple(1, dims, nullptr);
    const hid_t d = H5Dcreate2(f_, p.c_str(), file_type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Sclose(sp);
  }
  void ints(const std::string& p, hid_t file_type) {
    const hsize_t dims[2] = {2, 3};
    const long long v[6] = {-5, 0, 7, 100, -128, 127};
    const hid_t sp = H5Screate_simple(2, dims, nullptr);
    const hid_t d = H5Dcreate2(f_, p.c_str(), file_type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
    H5Dclose(d);
    H5Sclose(sp);
  }

  void vlen_attr(const std::string& obj, const std::string& name, const std::vector<std::string>& v, bool scalar) {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    const hsize_t n = v.size();
    const hid_t sp = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
    std::vector<const char*> ptrs;
    for (const auto& s : v) ptrs.push_back(s.c_str());
    const hid_t a = H5Acreate_by_name(f_, obj.c_str(), name.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << obj << " @" << name;
    const char* none = "";
    H5Awrite(a, t, ptrs.empty() ? static_cast<const void*>(&none) : ptrs.data());
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
  }
  void fixed_attr(const std::string& obj, const std::string& name, const std::vector<std::string>& v, std::size_t width,
                  H5T_str_t pad, bool scalar) {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, width);
    H5Tset_strpad(t, pad);
    const hsize_t n = v.size();
    const hid_t sp = scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
    std::vector<char> buf(width * v.size(), pad == H5T_STR_SPACEPAD ? ' ' : '\0');
    for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(buf.data() + i * width, v[i].data(), std::min(width, v[i].size()));
    const hid_t a = H5Acreate_by_name(f_, obj.c_str(), name.c_str(), t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << obj << " @" << name;
    H5Awrite(a, t, buf.data());
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
  }
  void empty_float_attr(const std::string& obj, const std::string& name) {
    const hsize_t n = 0;
    const hid_t sp = H5Screate_simple(1, &n, nullptr);
    const hid_t a = H5Acreate_by_name(f_, obj.c_str(), name.c_str(), H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Aclose(a);
    H5Sclose(sp);
  }

 private:
  std::string path_;
  hid_t f_ = -1;
};

hid_t chunked(const std::vector<hsize_t>& chunk, bool deflate, bool shuffle, H5D_alloc_time_t alloc = H5D_ALLOC_TIME_DEFAULT) {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  if (shuffle) H5Pset_shuffle(dcpl);
  if (deflate) H5Pset_deflate(dcpl, 6);
  if (alloc != H5D_ALLOC_TIME_DEFAULT) H5Pset_alloc_time(dcpl, alloc);
  return dcpl;
}

// Everything the reader should read, in one file; `latest` adds what only new formats hold.
void populate(Writer& w, bool latest) {
  w.group("/compact");
  w.group("/compact/a");
  w.group("/compact/b");
  w.group("/dense");
  for (int i = 0; i < 100; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "m%03d", (i * 37) % 100);
    if (i % 2) w.group(std::string("/dense/") + name);
    else w.floats(std::string("/dense/") + name, {2}, H5T_IEEE_F32LE);
  }
  w.group("/attrs");
  for (int i = 0; i < 100; ++i) w.vlen_attr("/attrs", "name" + std::to_string(i), {"value " + std::to_string(i)}, true);
  w.vlen_attr("/", "model_config", {"{\"class_name\": \"Sequential\"}"}, true);
  w.vlen_attr("/", "layer_names", {"gru", "dense", "", "\xc3\xa9t\xc3\xa9"}, false);
  w.vlen_attr("/", "empty_vlen_list", {}, false);
  w.fixed_attr("/", "fixed_scalar", {"keras_version"}, 20, H5T_STR_NULLTERM, true);
  w.fixed_attr("/", "fixed_nullpad", {"a", "bb", "cccc"}, 4, H5T_STR_NULLPAD, false);
  w.fixed_attr("/", "fixed_spacepad", {"x", "yz"}, 5, H5T_STR_SPACEPAD, false);
  w.empty_float_attr("/", "weight_names");
  if (latest) w.fixed_attr("/attrs", "big", {std::string(100000, 'q')}, 100000, H5T_STR_NULLPAD, true);

  w.group("/data");
  const hid_t compact = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_layout(compact, H5D_COMPACT);
  w.floats("/data/compact", {3, 4}, H5T_IEEE_F32LE, compact);
  H5Pclose(compact);
  w.floats("/data/contiguous", {5, 7}, H5T_IEEE_F32LE);
  w.floats("/data/rank4", {2, 3, 2, 2}, H5T_IEEE_F32LE);
  w.floats("/data/empty", {0}, H5T_IEEE_F32LE);
  {
    const hid_t sp = H5Screate(H5S_SCALAR);
    const float v = 2.5f;
    const hid_t d = H5Dcreate2(w.get(), "/data/scalar", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v);
    H5Dclose(d);
    H5Sclose(sp);
  }
  struct C {
    const char* name;
    std::vector<hsize_t> dims, chunk;
    bool deflate, shuffle;
    std::vector<hsize_t> maxdims;
    H5D_alloc_time_t alloc;
  };
  const hsize_t U = H5S_UNLIMITED;
  for (const C& c : std::vector<C>{
           {"chunked", {10, 7}, {4, 3}, false, false, {}, H5D_ALLOC_TIME_DEFAULT},
           {"chunked_deflate", {10, 7}, {4, 3}, true, false, {}, H5D_ALLOC_TIME_DEFAULT},
           {"chunked_shuffle_deflate", {33, 5}, {8, 5}, true, true, {}, H5D_ALLOC_TIME_DEFAULT},
           {"single_chunk", {6, 5}, {6, 5}, false, false, {}, H5D_ALLOC_TIME_DEFAULT},
           {"single_chunk_deflate", {6, 5}, {6, 5}, true, true, {}, H5D_ALLOC_TIME_DEFAULT},
           {"implicit", {9, 4}, {2, 3}, false, false, {}, H5D_ALLOC_TIME_EARLY},
           {"fixed_max", {9, 4}, {2, 3}, false, false, {20, 8}, H5D_ALLOC_TIME_DEFAULT},
           {"paged_fixed_array", {2500}, {1}, false, false, {}, H5D_ALLOC_TIME_DEFAULT},
           {"btree2", {9, 4}, {2, 3}, false, false, {U, U}, H5D_ALLOC_TIME_DEFAULT},
           {"btree2_deflate", {9, 4}, {2, 3}, true, true, {U, U}, H5D_ALLOC_TIME_DEFAULT},
           {"rank3", {3, 4, 5}, {2, 2, 2}, true, false, {}, H5D_ALLOC_TIME_DEFAULT},
       }) {
    const hid_t dcpl = chunked(c.chunk, c.deflate, c.shuffle, c.alloc);
    w.floats(std::string("/data/") + c.name, c.dims, H5T_IEEE_F32LE, dcpl, true, c.maxdims);
    H5Pclose(dcpl);
  }
  {
    // Chunks only partly written: the rest reads as the fill value.
    const hid_t dcpl = chunked({4}, true, false);
    const float fill = -7.5f;
    H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill);
    w.floats("/data/chunked_unwritten", {10}, H5T_IEEE_F32LE, dcpl, false);
    H5Pclose(dcpl);
    const hid_t d = H5Dopen2(w.get(), "/data/chunked_unwritten", H5P_DEFAULT);
    const hsize_t start = 4, count = 3;
    const hid_t fsp = H5Dget_space(d);
    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    const hid_t msp = H5Screate_simple(1, &count, nullptr);
    const float v[3] = {1, 2, 3};
    H5Dwrite(d, H5T_NATIVE_FLOAT, msp, fsp, H5P_DEFAULT, v);
    H5Sclose(msp);
    H5Sclose(fsp);
    H5Dclose(d);
  }
  {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const float fill = 2.5f;
    H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill);
    w.floats("/data/unwritten_fill", {3, 2}, H5T_IEEE_F32LE, dcpl, false);
    H5Pclose(dcpl);
    w.floats("/data/unwritten", {4}, H5T_IEEE_F64LE, H5P_DEFAULT, false);
  }
  w.floats("/data/f32be", {3, 3}, H5T_IEEE_F32BE);
  w.floats("/data/f64le", {3, 3}, H5T_IEEE_F64LE);
  w.floats("/data/f64be", {3, 3}, H5T_IEEE_F64BE);
  w.doubles("/data/f64_rounding", H5T_IEEE_F64LE, true);
  w.doubles("/data/f64be_rounding", H5T_IEEE_F64BE, false);
  {
    const hid_t half = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(half, 15, 10, 5, 0, 10);
    H5Tset_size(half, 2);
    H5Tset_ebias(half, 15);
    w.floats("/data/f16", {2, 4}, half);
    H5Tclose(half);
  }
  for (const auto& [name, t] : std::vector<std::pair<const char*, hid_t>>{{"i8", H5T_STD_I8LE},
                                                                         {"u8", H5T_STD_U8LE},
                                                                         {"i16be", H5T_STD_I16BE},
                                                                         {"u16", H5T_STD_U16LE},
                                                                         {"i32", H5T_STD_I32LE},
                                                                         {"i32be", H5T_STD_I32BE},
                                                                         {"i64", H5T_STD_I64LE},
                                                                         {"i64be", H5T_STD_I64BE},
                                                                         {"u64be", H5T_STD_U64BE}})
    w.ints(std::string("/data/") + name, t);
  // Deep nesting.
  std::string deep;
  for (int i = 0; i < 24; ++i) {
    deep += "/g";
    w.group(deep);
  }
  w.floats(deep + "/leaf", {1}, H5T_IEEE_F32LE);
}

struct Written {
  std::string name;
  std::vector<char> bytes;
};

const std::vector<Written>& written() {
  static const std::vector<Written> files = [] {
    std::vector<Written> out;
    const fs::path dir = fs::temp_directory_path() / ("recur-h5-reader-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    struct V {
      const char* name;
      H5F_libver_t low, high;
      hsize_t userblock;
    };
    for (const V& v : {V{"earliest", H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST, 0},
                       V{"v18", H5F_LIBVER_V18, H5F_LIBVER_V18, 0},
                       V{"latest", H5F_LIBVER_LATEST, H5F_LIBVER_LATEST, 0},
                       V{"userblock", H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST, 1024}}) {
      const std::string p = (dir / (std::string(v.name) + ".h5")).string();
      {
        Writer w(p, v.low, v.high, v.userblock);
        populate(w, v.low != H5F_LIBVER_EARLIEST);
      }
      out.push_back({v.name, read_bytes(p)});
    }
    fs::remove_all(dir);
    return out;
  }();
  return files;
}

const Written& written(const std::string& name) {
  for (const Written& w : written())
    if (w.name == name) return w;
  throw std::runtime_error("no written file " + name);
}

// ----- hostile inputs -----

// Asks the reader for what `m` names (about 60 of its objects, spread over the file) and whatever
// the file's own groups name, expecting values or Error(io) and nothing else. Returns how many
// calls succeeded.
int exercise(const std::vector<char>& bytes, const Manifest& m) {
  const std::size_t stride = std::max<std::size_t>(1, (m.groups.size() + m.attrs.size() + m.datasets.size()) / 60);
  int ok = 0;
  const auto guarded = [&](auto&& fn) {
    try {
      fn();
      ++ok;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::io) << e.what();
      EXPECT_NE(std::string(e.what()).find("hostile.h5"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a recur::Error: " << e.what();
    }
  };
  std::unique_ptr<H5File> h;
  guarded([&] { h = std::make_unique<H5File>(H5File::open_image(bytes, "hostile.h5")); });
  if (!h) return ok;
  for (std::size_t i = 0; i < m.groups.size(); i += stride) guarded([&] { h->children(m.groups[i]); });
  for (std::size_t i = 0; i < m.attrs.size(); i += stride) guarded([&] {
    if (h->has_attribute(m.attrs[i].first, m.attrs[i].second)) h->attribute_strings(m.attrs[i].first, m.attrs[i].second);
  });
  for (std::size_t i = 0; i < m.datasets.size(); i += stride) guarded([&] {
    std::vector<std::int64_t> shape;
    h->read_floats(m.datasets[i], shape);
  });
  // The file's own tree, as far as it reads.
  int budget = 100;
  std::function<void(const std::string&, int)> walk = [&](const std::string& g, int depth) {
    std::vector<std::string> names;
    guarded([&] { names = h->children(g); });
    for (const auto& nm : names) {
      if (--budget < 0 || depth > 50) return;
      const std::string p = join(g, nm);
      bool group = false, dataset = false;
      guarded([&] {
        group = h->is_group(p);
        dataset = h->is_dataset(p);
      });
      if (group) walk(p, depth + 1);
      if (dataset) guarded([&] {
        std::vector<std::int64_t> shape;
        h->read_floats(p, shape);
      });
    }
  };
  walk("/", 0);
  return ok;
}

// The superblock's end-of-file address set to the file's new size, so that a truncated file gets
// past the superblock and its structures are cut instead.
void patch_eof(std::vector<char>& b, std::size_t base = 0) {
  if (b.size() < base + 48) return;
  const unsigned version = static_cast<unsigned char>(b[base + 8]);
  const std::size_t at = version == 0 ? base + 40 : version == 1 ? base + 44 : base + 28;
  const std::uint64_t eof = b.size() - base;
  if (at + 8 <= b.size()) std::memcpy(&b[at], &eof, 8);
}

std::vector<std::pair<std::string, std::vector<char>>> hostile_sources() {
  std::vector<std::pair<std::string, std::vector<char>>> out;
  const fs::path src(RECUR_SOURCE_DIR);
  out.emplace_back("keras2/binone.h5", read_bytes((src / "tests/cli/models/keras2/binone.h5").string()));
  out.emplace_back("keras3/binone.keras", zip_member((src / "tests/cli/models/keras3/binone.keras").string(), "model.weights.h5"));
  out.emplace_back("keras3/binone.h5", read_bytes((src / "tests/cli/models/keras3/binone.h5").string()));
  for (const char* w : {"earliest", "latest", "v18"}) out.emplace_back(w, written(w).bytes);
  return out;
}

}  // namespace

TEST(H5Reader, CommittedKerasFilesReadAsLibhdf5ReadsThem) {
  const auto files = fixtures();
  ASSERT_GT(files.size(), 100u) << "the committed .h5/.keras files were not found under " << RECUR_SOURCE_DIR;
  int values = 0, objects = 0;
  for (const auto& [name, bytes] : files) {
    ASSERT_FALSE(bytes.empty()) << name;
    const Manifest m = compare_file(name, bytes, &values);
    objects += static_cast<int>(m.groups.size() + m.datasets.size() + m.attrs.size());
  }
  std::printf("[ note     ] %zu files, %d groups/datasets/attributes, %d float values compared\n", files.size(), objects, values);
}

TEST(H5Reader, WrittenFilesReadAsLibhdf5ReadsThem) {
  for (const Written& w : written()) {
    int values = 0;
    const Manifest m = compare_file(w.name, w.bytes, &values);
    EXPECT_GT(m.datasets.size(), 80u) << w.name;
    EXPECT_GT(m.attrs.size(), 100u) << w.name;
  }
}

TEST(H5Reader, WrittenFileFormats) {
  // Which structures each written file holds, so the comparison above covers them.
  const auto has = [](const std::vector<char>& b, const char* sig) {
    return std::search(b.begin(), b.end(), sig, sig + 4) != b.end();
  };
  const auto& earliest = written("earliest").bytes;
  EXPECT_EQ(earliest[8], 0) << "superblock version";
  EXPECT_TRUE(has(earliest, "TREE") && has(earliest, "SNOD") && has(earliest, "HEAP") && has(earliest, "GCOL"));
  EXPECT_FALSE(has(earliest, "OHDR"));
  const auto& latest = written("latest").bytes;
  EXPECT_EQ(latest[8], 3) << "superblock version";
  for (const char* sig : {"OHDR", "FRHP", "FHDB", "BTHD", "BTLF", "FAHD", "FADB", "GCOL"}) EXPECT_TRUE(has(latest, sig)) << sig;
  EXPECT_EQ(written("v18").bytes[8], 2) << "superblock version";
  EXPECT_EQ(written("userblock").bytes[1024 + 8], 0) << "superblock after the user block";

  // A few values known here rather than through libhdf5.
  const H5File h = H5File::open_image(latest, "latest.h5");
  std::vector<std::int64_t> shape;
  EXPECT_EQ(h.read_floats("/data/unwritten_fill", shape), std::vector<float>(6, 2.5f));
  EXPECT_EQ(h.read_floats("/data/unwritten", shape), std::vector<float>(4, 0.0f));
  EXPECT_EQ(h.read_floats("/data/chunked_unwritten", shape),
            (std::vector<float>{-7.5f, -7.5f, -7.5f, -7.5f, 1, 2, 3, -7.5f, -7.5f, -7.5f}));
  EXPECT_EQ(h.read_floats("/data/i64be", shape), (std::vector<float>{-5, 0, 7, 100, -128, 127}));
  const auto r = h.read_floats("/data/f64be_rounding", shape);
  EXPECT_EQ(r[0], 0.1f);
  EXPECT_EQ(r[2], INFINITY);
  EXPECT_EQ(r[3], -INFINITY);
  EXPECT_EQ(h.read_floats("/data/scalar", shape), std::vector<float>{2.5f});
  EXPECT_TRUE(shape.empty());
  EXPECT_EQ(h.attribute_strings("/", "layer_names"), (std::vector<std::string>{"gru", "dense", "", "\xc3\xa9t\xc3\xa9"}));
  EXPECT_EQ(h.attribute_string("/", "fixed_scalar"), "keras_version");
  EXPECT_EQ(h.attribute_strings("/", "fixed_nullpad"), (std::vector<std::string>{"a", "bb", "cccc"}));
  EXPECT_EQ(h.attribute_strings("/", "fixed_spacepad"), (std::vector<std::string>{"x    ", "yz   "}));
  EXPECT_TRUE(h.attribute_strings("/", "weight_names").empty());
  EXPECT_TRUE(h.attribute_strings("/", "empty_vlen_list").empty());
  EXPECT_EQ(h.attribute_string("/attrs", "name57"), "value 57");
  EXPECT_EQ(h.attribute_string("/attrs", "big"), std::string(100000, 'q'));
  EXPECT_EQ(h.children("/dense").size(), 100u);
  EXPECT_FALSE(h.has_attribute("/attrs", "name100"));
  EXPECT_FALSE(h.exists("/dense/nope"));
  EXPECT_FALSE(h.exists("/dense/m000/below_a_dataset"));
  EXPECT_TRUE(h.is_dataset("/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/g/leaf"));

  // Messages name the file and the object, and keep the phrases callers look for.
  const auto message = [&](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::io);
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
  };
  EXPECT_NE(message([&] { h.read_floats("/data/nope", shape); }).find("latest.h5:/data/nope: missing dataset"), std::string::npos);
  EXPECT_NE(message([&] { h.read_floats("/data/contiguous", shape, 10); }).find("more values than its layer has room for"),
            std::string::npos);
  EXPECT_NE(message([&] { h.attribute_string("/", "nope"); }).find("missing the attribute 'nope'"), std::string::npos);
  EXPECT_NE(message([&] { h.children("/data/contiguous"); }).find("expected a group"), std::string::npos);
  EXPECT_NE(message([&] { H5File::open_image(std::vector<char>(100, 'x'), "junk.h5"); }).find("junk.h5: not an HDF5 file"),
            std::string::npos);
  EXPECT_NE(message([&] { H5File::open_path("/nonexistent/file.h5"); }).find("not an HDF5 file"), std::string::npos);
}

TEST(H5Reader, UnsupportedStructuresAreRefusedByName) {
  const fs::path p = fs::temp_directory_path() / ("recur-h5-unsupported-" + std::to_string(::getpid()) + ".h5");
  {
    Writer w(p.string(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    const hid_t dcpl = chunked({2, 3}, false, false);
    w.floats("/extensible", {9, 4}, H5T_IEEE_F32LE, dcpl, true, {H5S_UNLIMITED, 4});
    H5Pclose(dcpl);
    w.floats("/target", {2}, H5T_IEEE_F32LE);
    H5Lcreate_soft("/target", w.get(), "/soft", H5P_DEFAULT, H5P_DEFAULT);
    H5Lcreate_external("other.h5", "/x", w.get(), "/external", H5P_DEFAULT, H5P_DEFAULT);
  }
  const H5File h = H5File::open_image(read_bytes(p.string()), "u.h5");
  fs::remove(p);
  std::vector<std::int64_t> shape;
  for (const auto& [path, needle] : std::vector<std::pair<std::string, std::string>>{
           {"/extensible", "unsupported HDF5 chunk index"}, {"/soft", "unsupported link"}, {"/external", "unsupported link"}}) {
    try {
      h.read_floats(path, shape);
      ADD_FAILURE() << path << " read";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::io);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(h.children("/"), (std::vector<std::string>{"extensible", "external", "soft", "target"}));
}

TEST(H5Reader, TruncatedFilesFailCleanly) {
  const auto t0 = std::chrono::steady_clock::now();
  int tried = 0;
  for (const auto& [name, bytes] : hostile_sources()) {
    const Manifest m = compare_file(name, bytes);
    for (int k = 0; k < 40; ++k) {
      const std::size_t cut = bytes.size() * static_cast<std::size_t>(k) / 40 + static_cast<std::size_t>(k % 7);
      if (cut >= bytes.size()) continue;
      SCOPED_TRACE(name + " cut at " + std::to_string(cut));
      std::vector<char> b(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
      exercise(b, m);  // as cut: the superblock's end-of-file address refuses it
      patch_eof(b);
      exercise(b, m);  // past the superblock: the structures themselves are cut
      tried += 2;
    }
  }
  std::printf("[ note     ] %d truncated files in %.1f s\n", tried,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST(H5Reader, CorruptBytesFailCleanly) {
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937 rng(20261124);
  int tried = 0, opened = 0;
  for (const auto& [name, bytes] : hostile_sources()) {
    const Manifest m = compare_file(name, bytes);
    for (int k = 0; k < 50; ++k) {
      std::vector<char> b = bytes;
      const std::size_t at = rng() % b.size();
      const int how = k % 4;
      if (how == 0) b[at] = static_cast<char>(0xFF);
      else if (how == 1) b[at] = static_cast<char>(b[at] ^ (1 << (rng() % 8)));
      else if (how == 2) b[at] = static_cast<char>(rng());
      else for (std::size_t i = at; i < at + 8 && i < b.size(); ++i) b[i] = static_cast<char>(0xFF);  // an undefined address
      SCOPED_TRACE(name + " byte " + std::to_string(at) + " mode " + std::to_string(how));
      opened += exercise(b, m) > 0;
      ++tried;
    }
  }
  std::printf("[ note     ] %d corrupt files (%d opened) in %.1f s\n", tried, opened,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

namespace {

std::size_t find_sig(const std::vector<char>& b, const char* sig, std::size_t from = 0) {
  const auto it = std::search(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(), sig, sig + std::strlen(sig));
  return it == b.end() ? std::string::npos : static_cast<std::size_t>(it - b.begin());
}
void put64(std::vector<char>& b, std::size_t at, std::uint64_t v) { std::memcpy(&b[at], &v, 8); }
std::uint64_t get64(const std::vector<char>& b, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, &b[at], 8);
  return v;
}

// Opens and reads everything; expects Error(io) somewhere with `needle` (when given) in it.
void expect_refused(const std::vector<char>& b, const Manifest& m, const std::string& needle) {
  std::string all;
  try {
    const H5File h = H5File::open_image(b, "hostile.h5");
    for (const auto& g : m.groups) try {
        h.children(g);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Error::Code::io);
        all += e.what() + std::string("\n");
      }
    for (const auto& [o, a] : m.attrs) try {
        h.attribute_strings(o, a);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Error::Code::io);
        all += e.what() + std::string("\n");
      }
    for (const auto& d : m.datasets) try {
        std::vector<std::int64_t> shape;
        h.read_floats(d, shape);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), Error::Code::io);
        all += e.what() + std::string("\n");
      }
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::io);
    all += e.what();
  }
  EXPECT_NE(all.find(needle), std::string::npos) << "want \"" << needle << "\" in:\n" << all;
}

}  // namespace

TEST(H5Reader, HandMadeHostileStructures) {
  const std::vector<char>& good = written("earliest").bytes;
  const Manifest m = compare_file("earliest", good);
  // The root object header (v1): its first message becomes a continuation to its own chunk.
  {
    std::vector<char> b = good;
    const std::uint64_t root = get64(b, 64);
    const std::size_t msg = static_cast<std::size_t>(root) + 16;
    std::uint32_t hsize;
    std::memcpy(&hsize, &b[static_cast<std::size_t>(root) + 8], 4);
    b[msg] = 0x10;
    b[msg + 1] = 0;
    b[msg + 2] = 16;
    b[msg + 3] = 0;
    put64(b, msg + 8, root + 16);
    put64(b, msg + 16, hsize);
    expect_refused(b, m, "reached twice");
  }
  // A group B-tree node whose child is itself.
  {
    std::vector<char> b = good;
    const std::size_t tree = find_sig(b, "TREE");
    ASSERT_NE(tree, std::string::npos);
    b[tree + 5] = 1;  // level 1: its children are nodes
    put64(b, tree + 24 + 8, tree);
    expect_refused(b, m, "B-tree node");
  }
  // A dataset declaring far more values than the file holds.
  {
    Writer w((fs::temp_directory_path() / "recur-h5-huge.h5").string(), H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST);
    w.floats("/x", {12345}, H5T_IEEE_F32LE);
    w.close();
    const std::vector<char> small = read_bytes((fs::temp_directory_path() / "recur-h5-huge.h5").string());
    fs::remove(fs::temp_directory_path() / "recur-h5-huge.h5");
    const Manifest mx{{"/"}, {"/x"}, {}};
    for (const std::uint64_t declared : {std::uint64_t(1) << 40, std::uint64_t(1) << 27, std::uint64_t(12346)}) {
      std::vector<char> b = small;
      std::string le(8, '\0');
      std::uint64_t v = 12345;
      std::memcpy(le.data(), &v, 8);
      const auto at = std::search(b.begin(), b.end(), le.begin(), le.end());
      ASSERT_NE(at, b.end());
      put64(b, static_cast<std::size_t>(at - b.begin()), declared);
      expect_refused(b, mx, declared == 12346 ? "contiguous data of" : "declares");
    }
  }
  // A global heap collection whose size runs past the file, or is too small for its objects.
  for (const std::uint64_t size : {std::uint64_t(1) << 62, std::uint64_t(24), std::uint64_t(0)}) {
    std::vector<char> b = good;
    const std::size_t g = find_sig(b, "GCOL");
    ASSERT_NE(g, std::string::npos);
    put64(b, g + 8, size);
    expect_refused(b, m, "global heap");
  }
  // Every fractal heap, v2 B-tree and object header signature of the latest-format file pointed
  // at the start of the file: each is refused by name.
  const std::vector<char>& latest = written("latest").bytes;
  const Manifest ml = compare_file("latest", latest);
  for (const char* sig : {"FRHP", "FHDB", "BTHD", "BTLF", "FAHD", "FADB", "OHDR", "GCOL"}) {
    std::vector<char> b = latest;
    for (std::size_t at = find_sig(b, sig); at != std::string::npos; at = find_sig(b, sig, at + 4)) b[at] = 'X';
    SCOPED_TRACE(sig);
    expect_refused(b, ml, std::string(sig) == "OHDR" ? "unsupported object header version" : "signature");
  }
}
