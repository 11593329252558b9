// SPDX-License-Identifier: Apache-2.0
// Initializer, regularizer and constraint settings, as Keras configs describe them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace recur {

struct InitializerSpec {
  enum class Kind {
    zeros, ones, constant, random_uniform, random_normal, truncated_normal,
    variance_scaling,  // glorot_*, he_*, lecun_* are variance_scaling with fixed settings
    orthogonal, identity,
  };
  enum class Mode { fan_in, fan_out, fan_avg };
  enum class Distribution { truncated_normal, untruncated_normal, uniform };

  Kind kind = Kind::zeros;
  std::string name = "zeros";  // the Keras name it came from, for messages and configs
  double value = 0.0;          // constant
  double minval = -0.05, maxval = 0.05;  // random_uniform
  double mean = 0.0, stddev = 0.05;      // random_normal, truncated_normal
  double scale = 1.0;                     // variance_scaling
  Mode mode = Mode::fan_in;
  Distribution distribution = Distribution::truncated_normal;
  double gain = 1.0;                      // orthogonal, identity
  // Keras >= 3.15 variance_scaling: axes whose sizes multiply into fan_in / fan_out (both set, or
  // both empty for the usual rank-based rule).
  std::vector<int> input_axes, output_axes;
  std::optional<std::uint64_t> seed;      // a seeded initializer returns the same values each call
};

struct RegularizerSpec {
  enum class Kind { none, l1l2, orthogonal };
  Kind kind = Kind::none;
  float l1 = 0.0f, l2 = 0.0f;  // l1l2
  float factor = 0.01f;        // orthogonal
  bool rows_mode = true;       // orthogonal: "rows" or "columns"
  bool active() const { return kind != Kind::none; }
};

struct ConstraintSpec {
  enum class Kind { none, max_norm, non_neg, unit_norm, min_max_norm };
  Kind kind = Kind::none;
  float max_value = 2.0f, min_value = 0.0f, rate = 1.0f;
  std::vector<int> axis{0};
  bool active() const { return kind != Kind::none; }
};

}  // namespace recur
