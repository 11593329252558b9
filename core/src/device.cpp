// SPDX-License-Identifier: Apache-2.0
#include "recur/device.hpp"

#include <cctype>

#include "gpu/runtime.hpp"
#include "recur/error.hpp"

namespace recur {

DeviceRequest DeviceRequest::parse(std::string_view text, const char* what) {
  DeviceRequest r;
  auto bad = [&]() {
    fail(Error::Code::invalid_argument, what, ": expected \"cpu\", \"cuda\", \"cuda:N\" (N = 0, 1, ...) or \"auto\", got \"",
         std::string(text), "\"");
  };
  if (text == "cpu") return r;
  if (text == "auto") {
    r.kind = Kind::automatic;
    return r;
  }
  if (text.substr(0, 4) != "cuda") bad();
  r.kind = Kind::cuda;
  if (text.size() == 4) return r;
  if (text[4] != ':' || text.size() == 5 || text.size() > 9) bad();
  int n = 0;
  for (char ch : text.substr(5)) {
    if (!std::isdigit(static_cast<unsigned char>(ch))) bad();
    n = n * 10 + (ch - '0');
  }
  r.ordinal = n;
  return r;
}

std::string DeviceRequest::to_string() const {
  switch (kind) {
    case Kind::cpu: return "cpu";
    case Kind::automatic: return "auto";
    case Kind::cuda: break;
  }
  return "cuda:" + std::to_string(ordinal);
}

int gpu_device_count() noexcept {
  try {
    return gpu::plugin().device_count;
  } catch (...) {
    return 0;
  }
}

void check_device(const DeviceRequest& request) {
  if (request.kind == DeviceRequest::Kind::cuda) gpu::require_device(request.ordinal);
}

}  // namespace recur
