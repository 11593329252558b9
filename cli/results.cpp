// SPDX-License-Identifier: Apache-2.0
#include "results.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

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

}  // namespace

std::string format_value(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

std::string text_of(const NamedArrays& arrays) {
  std::string out;
  for (const auto& [name, a] : arrays) {
    out += name + ": " + shape_string(a.shape) + "\n";
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
