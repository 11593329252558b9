// SPDX-License-Identifier: Apache-2.0
// A small, portable, seedable generator: the same seed gives the same numbers on every platform
// and standard library (std::*_distribution does not promise that).
#pragma once

#include <cstdint>

namespace recur {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) { reseed(seed); }
  void reseed(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                 // [0, 1)
  double normal();                  // N(0, 1)
  static std::uint64_t entropy();   // a seed for unseeded layers

 private:
  std::uint64_t s_[4];
  bool have_spare_ = false;
  double spare_ = 0.0;
};

}  // namespace recur
