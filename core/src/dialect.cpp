// SPDX-License-Identifier: Apache-2.0
#include "recur/dialect.hpp"

#include <cstdlib>
#include <string>

#include "recur/error.hpp"

namespace recur {

DialectInfo DialectInfo::latest(Dialect d) {
  DialectInfo info;
  info.dialect = d;
  if (d == Dialect::keras2) {
    info.major = 2;
    info.minor = 21;
    info.patch = 0;
  }
  return info;
}

DialectInfo DialectInfo::parse(Dialect d, std::string_view version) {
  DialectInfo info = latest(d);
  int parts[3] = {0, 0, 0};
  int count = 0;
  std::size_t pos = 0;
  while (count < 3 && pos <= version.size()) {
    std::size_t end = version.find('.', pos);
    if (end == std::string_view::npos) end = version.size();
    const std::string_view piece = version.substr(pos, end - pos);
    // Accept "3.13.0", "2.15.0-tf", "3.0.5rc1": read the leading digits of each piece.
    std::size_t digits = 0;
    while (digits < piece.size() && piece[digits] >= '0' && piece[digits] <= '9') ++digits;
    if (digits == 0 || digits > 6)
      fail(Error::Code::invalid_argument, "keras_version: '", version, "' is not a version like \"3.13.0\"");
    parts[count++] = std::atoi(std::string(piece.substr(0, digits)).c_str());
    if (digits < piece.size()) break;
    pos = end + 1;
  }
  if (count < 2 && !(count == 1 && version.find('.') == std::string_view::npos))
    fail(Error::Code::invalid_argument, "keras_version: '", version, "' is not a version like \"3.13.0\"");
  if (parts[0] != static_cast<int>(d))
    fail(Error::Code::invalid_argument, "keras_version: '", version, "' does not belong to the ",
         latest(d).name(), " dialect");
  info.major = parts[0];
  info.minor = parts[1];
  info.patch = parts[2];
  return info;
}

std::string DialectInfo::version() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace recur
