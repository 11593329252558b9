// Names and values taken from a model file or a layer's JSON, made safe to quote in a message. Its
// own file: builds without model-file reading quote layer names from JSON configs too.
#include "printable.hpp"

#include <nlohmann/json.hpp>
#include <cstdio>
#include <string>

namespace recur::io {

std::string printable(const std::string& s, std::size_t max_bytes) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + static_cast<std::size_t>(len) <= s.size();
    for (int k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    const bool keep = valid && (c >= 0x20 || len > 1) && c != 0x7F;
    if (out.size() + (keep ? static_cast<std::size_t>(len) : 4) > max_bytes) {
      out += "...";  // never splits a character or an escape
      break;
    }
    if (keep) {
      out.append(s, i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

std::string excerpt(const nlohmann::json& v) {
  // Strings from the parser are valid UTF-8; `replace` keeps a value from elsewhere from throwing.
  return printable(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace recur::io
