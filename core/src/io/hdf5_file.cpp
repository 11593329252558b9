#include "hdf5_file.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "recur/error.hpp"

namespace recur::io {
namespace {

using Code = Error::Code;

constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 28;   // one weight: 1 GiB of float32
constexpr std::uint64_t kMaxAttributeBytes = std::uint64_t(1) << 26;  // 64 MiB of config text

// HDF5 prints its error stack to stderr by default; recur reports errors itself.
void silence_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

// Closes an HDF5 identifier of any kind when it leaves scope.
class Handle {
 public:
  explicit Handle(hid_t id = -1) : id_(id) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ < 0) return;
    switch (H5Iget_type(id_)) {
      case H5I_FILE: H5Fclose(id_); break;
      case H5I_GROUP: H5Gclose(id_); break;
      case H5I_DATASET: H5Dclose(id_); break;
      case H5I_ATTR: H5Aclose(id_); break;
      case H5I_DATATYPE: H5Tclose(id_); break;
      case H5I_DATASPACE: H5Sclose(id_); break;
      case H5I_GENPROP_LST: H5Pclose(id_); break;
      default: H5Oclose(id_); break;
    }
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
};

std::string normalise(const std::string& path) { return path.empty() ? "/" : path; }

}  // namespace

std::string printable(const std::string& s) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + static_cast<std::size_t>(len) <= s.size();
    for (int k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (valid && (c >= 0x20 || len > 1) && c != 0x7F) {
      out.append(s, i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
    if (out.size() > 400) {
      out += "...";
      break;
    }
  }
  return out;
}

H5File::H5File(hid_t file, std::string name, std::vector<char> image)
    : file_(file), name_(std::move(name)), image_(std::move(image)) {}

H5File::H5File(H5File&& other) noexcept
    : file_(other.file_), name_(std::move(other.name_)), image_(std::move(other.image_)) {
  other.file_ = -1;
}

H5File::~H5File() {
  if (file_ >= 0) H5Fclose(file_);
}

void H5File::fail_at(const std::string& path, const std::string& problem) const {
  // Absolute object paths, written as the model loader writes them ("file.h5: /a/b",
  // "x.keras: model.weights.h5:/a/b" for an image).
  const std::string p = path.empty() || path[0] != '/' ? "/" + path : path;
  fail(Code::io, name_, image_.empty() ? ": " : ":", printable(p), ": ", problem);
}

H5File H5File::open_path(const std::string& path) {
  silence_hdf5();
  if (H5Fis_hdf5(path.c_str()) <= 0) fail(Code::io, path, ": not an HDF5 file (or it cannot be read)");
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) fail(Code::io, path, ": HDF5 could not open the file");
  return H5File(f, path, {});
}

H5File H5File::open_image(std::vector<char> bytes, const std::string& display_name) {
  silence_hdf5();
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "\x89HDF\r\n\x1a\n", 8) != 0)
    fail(Code::io, display_name, ": not an HDF5 file (bad signature)");
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.ok() || H5Pset_fapl_core(fapl.get(), 1 << 16, 0) < 0 ||
      H5Pset_file_image(fapl.get(), bytes.data(), bytes.size()) < 0)
    fail(Code::io, display_name, ": HDF5 could not take the in-memory image");
  const std::string unique = "recur-image-" + std::to_string(reinterpret_cast<std::uintptr_t>(bytes.data()));
  const hid_t f = H5Fopen(unique.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) fail(Code::io, display_name, ": HDF5 could not open the image (corrupt or truncated)");
  return H5File(f, display_name, std::move(bytes));
}

bool H5File::exists(const std::string& path) const {
  const std::string p = normalise(path);
  if (p == "/") return true;
  // H5Lexists fails on a missing intermediate group, so check each prefix in turn.
  std::size_t pos = p[0] == '/' ? 1 : 0;
  while (pos <= p.size()) {
    std::size_t end = p.find('/', pos);
    if (end == std::string::npos) end = p.size();
    const std::string prefix = p.substr(0, end);
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (end == p.size()) break;
    pos = end + 1;
  }
  return H5Oexists_by_name(file_, p.c_str(), H5P_DEFAULT) > 0;
}

bool H5File::is_group(const std::string& path) const {
  if (!exists(path)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(file_, normalise(path).c_str(), &info, H5P_DEFAULT) < 0) return false;
  return info.type == H5O_TYPE_GROUP;
}

bool H5File::is_dataset(const std::string& path) const {
  if (!exists(path)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name(file_, normalise(path).c_str(), &info, H5P_DEFAULT) < 0) return false;
  return info.type == H5O_TYPE_DATASET;
}

std::vector<std::string> H5File::children(const std::string& group) const {
  if (!is_group(group)) fail_at(group, "expected a group");
  Handle g(H5Gopen2(file_, normalise(group).c_str(), H5P_DEFAULT));
  if (!g.ok()) fail_at(group, "the group cannot be opened");
  H5G_info_t info;
  if (H5Gget_info(g.get(), &info) < 0) fail_at(group, "the group cannot be read");
  if (info.nlinks > 100000) fail_at(group, "too many members (" + std::to_string(info.nlinks) + ")");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0 || len > 65536) fail_at(group, "a member name cannot be read");
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(g.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    names.push_back(std::move(name));
  }
  return names;
}

bool H5File::has_attribute(const std::string& object, const std::string& attr) const {
  if (!exists(object)) return false;
  return H5Aexists_by_name(file_, normalise(object).c_str(), attr.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> H5File::attribute_strings(const std::string& object, const std::string& attr) const {
  if (!has_attribute(object, attr)) fail_at(object, "missing the attribute '" + attr + "'");
  Handle a(H5Aopen_by_name(file_, normalise(object).c_str(), attr.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  if (!a.ok()) fail_at(object, "the attribute '" + attr + "' cannot be opened");
  Handle type(H5Aget_type(a.get()));
  Handle space(H5Aget_space(a.get()));
  if (!type.ok() || !space.ok()) fail_at(object, "the attribute '" + attr + "' cannot be read");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 1) fail_at(object, "the attribute '" + attr + "' is not a string or a list of strings");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0 || static_cast<std::uint64_t>(count) > 1000000)
    fail_at(object, "the attribute '" + attr + "' has an unreasonable size");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_STRING) {
    if (count == 0) return {};  // h5py writes an empty list as an empty float array
    fail_at(object, "the attribute '" + attr + "' is not a string");
  }
  std::vector<std::string> out;
  const auto n = static_cast<std::size_t>(count);
  if (H5Tis_variable_str(type.get()) > 0) {
    std::vector<char*> ptrs(n, nullptr);
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    if (H5Aread(a.get(), mem.get(), ptrs.data()) < 0)
      fail_at(object, "the attribute '" + attr + "' cannot be read");
    std::uint64_t total = 0;
    for (char* p : ptrs) {
      std::string s = p ? std::string(p, strnlen(p, kMaxAttributeBytes)) : std::string();
      total += s.size();
      out.push_back(std::move(s));
    }
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
    if (total >= kMaxAttributeBytes) fail_at(object, "the attribute '" + attr + "' is larger than 64 MiB");
    return out;
  }
  const std::size_t width = H5Tget_size(type.get());
  if (width == 0 || static_cast<std::uint64_t>(width) * n > kMaxAttributeBytes)
    fail_at(object, "the attribute '" + attr + "' is larger than 64 MiB");
  std::vector<char> buf(width * n);
  if (H5Aread(a.get(), type.get(), buf.data()) < 0) fail_at(object, "the attribute '" + attr + "' cannot be read");
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = buf.data() + i * width;
    out.emplace_back(p, strnlen(p, width));
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
  if (!is_dataset(path)) fail_at(path, "missing dataset");
  Handle d(H5Dopen2(file_, normalise(path).c_str(), H5P_DEFAULT));
  if (!d.ok()) fail_at(path, "the dataset cannot be opened");
  Handle type(H5Dget_type(d.get()));
  Handle space(H5Dget_space(d.get()));
  if (!type.ok() || !space.ok()) fail_at(path, "the dataset cannot be read");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) fail_at(path, "expected a numeric dataset");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 4) fail_at(path, "expected a dataset of rank <= 4");
  hsize_t dims[4] = {0, 0, 0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  std::uint64_t n = 1;
  shape.clear();
  for (int i = 0; i < rank; ++i) {
    if (dims[i] > max_elements || n * dims[i] > max_elements) {
      std::string declared;
      for (int k = 0; k < rank; ++k) declared += (k ? ", " : "") + std::to_string(dims[k]);
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
  std::vector<float> data(static_cast<std::size_t>(n));
  if (n > 0 && H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
    fail_at(path, "the dataset's data cannot be read (truncated or corrupt file)");
  return data;
}

}  // namespace recur::io
