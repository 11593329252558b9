// SPDX-License-Identifier: Apache-2.0
// JSON values quoted in messages. Its own file: builds without model-file reading quote layer
// configs too.
#include "printable.hpp"

#include <nlohmann/json.hpp>
#include <string>

namespace recur::io {

std::string excerpt(const nlohmann::json& v) {
  // Strings from the parser are valid UTF-8; `replace` keeps a value from elsewhere from throwing.
  return printable(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace recur::io
