// SPDX-License-Identifier: Apache-2.0
#include "results.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "io/printable.hpp"

namespace recur_cli {
namespace {

std::size_t count_of(const std::vector<std::int64_t>& shape, std::size_t from) {
  std::size_t n = 1;
  for (std::size_t a = from; a < shape.size(); ++a) n *= static_cast<std::size_t>(shape[a]);
  return n;
}

// The values of axis `axis` onward from flat offset `off`, nested like the dims.
void append_nested(std::string& out, const Array& a, std::size_t axis, std::size_t off) {
  if (axis == a.shape.size()) {
    const float v = a.data[off];
    out += std::isfinite(v) ? format_value(v) : "null";
    return;
  }
  const std::size_t step = count_of(a.shape, axis + 1);
  out += '[';
  for (std::int64_t i = 0; i < a.shape[axis]; ++i) {
    if (i) out += ", ";
    append_nested(out, a, axis + 1, off + static_cast<std::size_t>(i) * step);
  }
  out += ']';
}

// Cuts `s` to at most `max_bytes` bytes without splitting a character (s is valid UTF-8 here).
std::string cut(const std::string& s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(s[end]) >> 6) == 0x2) --end;
  return s.substr(0, end);
}

std::string safe_file_name(const std::string& name, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const std::size_t len = recur::io::utf8_char_at(name.data() + i, name.size() - i);
    const auto c = static_cast<unsigned char>(name[i]);
    if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7F || std::string("/\\:*?\"<>|").find(static_cast<char>(c)) != std::string::npos))) {
      out += '_';
      i += len ? len : 1;
    } else {
      out.append(name, i, len);
      i += len;
    }
  }
  for (char& ch : out) {  // leading dots: no "." / ".." / hidden file
    if (ch != '.') break;
    ch = '_';
  }
  for (std::size_t k = out.size(); k-- > 0 && (out[k] == '.' || out[k] == ' ');) out[k] = '_';  // Windows drops them
  std::string stem = out.substr(0, out.find('.'));
  for (char& ch : stem) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  static const std::set<std::string> kDevices = {"CON",  "PRN",  "AUX",  "NUL",  "COM1", "COM2", "COM3", "COM4",
                                                 "COM5", "COM6", "COM7", "COM8", "COM9", "LPT1", "LPT2", "LPT3",
                                                 "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9"};
  if (kDevices.count(stem)) out = "_" + out;
  out = cut(out, max_bytes);
  return out.empty() ? std::string("output") : out;
}

std::string folded(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> safe_file_names(const std::vector<std::string>& names, std::size_t max_bytes) {
  max_bytes = std::max<std::size_t>(max_bytes, 16);  // room for a number
  std::vector<std::string> out;
  std::set<std::string> used;  // folded
  for (const std::string& name : names) {
    const std::string base = safe_file_name(name, max_bytes);
    std::string pick = base;
    for (int k = 1; used.count(folded(pick)); ++k) {
      const std::string suffix = "_" + std::to_string(k);
      pick = cut(base, max_bytes - suffix.size()) + suffix;
    }
    used.insert(folded(pick));
    out.push_back(pick);
  }
  return out;
}

std::string format_value(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

std::string text_of(const NamedArrays& arrays) {
  std::string out;
  for (const auto& [name, a] : arrays) {
    // Names come from the model file: escaped, so none moves the cursor or starts a line.
    out += recur::io::printable(name) + ": " + shape_string(a.shape) + "\n";
    if (a.shape.empty()) {  // a scalar
      if (!a.data.empty()) out += "  " + format_value(a.data[0]) + "\n";
      continue;
    }
    const std::size_t width = a.shape.size() == 1 ? 1 : static_cast<std::size_t>(a.shape.back());
    const std::size_t lead = a.shape.size() == 1 ? a.shape.size() : a.shape.size() - 1;  // axes in the index
    if (width == 0) continue;
    // Indices padded to the widest, so the values line up.
    std::vector<std::string> indices;
    std::size_t widest = 0;
    for (std::size_t row = 0; row * width < a.data.size(); ++row) {
      // The row's index over the leading axes.
      std::string index;
      std::size_t rest = row;
      for (std::size_t ax = lead; ax-- > 0;) {
        const std::size_t n = static_cast<std::size_t>(a.shape[ax]);
        index = std::to_string(rest % n) + (index.empty() ? "" : ", ") + index;
        rest /= n;
      }
      indices.push_back("[" + index + "]");
      widest = std::max(widest, indices.back().size());
    }
    for (std::size_t row = 0; row < indices.size(); ++row) {
      out += "  " + indices[row] + std::string(widest - indices[row].size(), ' ') + " ";
      for (std::size_t c = 0; c < width; ++c) out += " " + format_value(a.data[row * width + c]);
      out += "\n";
    }
  }
  return out;
}

std::string json_of(const NamedArrays& arrays) {
  std::string out = "{";
  bool first = true;
  for (const auto& [name, a] : arrays) {
    if (!first) out += ", ";
    first = false;
    // Names come from the model file: invalid UTF-8 is replaced, not thrown on.
    out += nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ": {\"dims\": [";
    for (std::size_t d = 0; d < a.shape.size(); ++d) out += (d ? ", " : "") + std::to_string(a.shape[d]);
    out += "], \"values\": ";
    if (a.data.size() == count_of(a.shape, 0)) append_nested(out, a, 0, 0);
    else out += "[]";
    out += "}";
  }
  return out + "}";
}

}  // namespace recur_cli
