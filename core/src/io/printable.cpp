// Names and values taken from a model file, made safe to quote in a message (hdf5_file.hpp). Its
// own file: builds without model-file reading quote layer names from JSON configs too.
#include <cstdio>
#include <string>

#include "hdf5_file.hpp"

namespace recur::io {

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

}  // namespace recur::io
