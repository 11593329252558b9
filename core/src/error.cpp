// SPDX-License-Identifier: Apache-2.0
#include "recur/error.hpp"

#include "io/printable.hpp"

namespace recur::detail {

std::string bounded_message(const std::string& message) { return io::printable(message, kMaxMessageBytes); }

}  // namespace recur::detail
