// SPDX-License-Identifier: Apache-2.0
// Keras dialects: Keras 2 (tf.keras / tf-keras) and Keras 3 differ in formulas and defaults.
#pragma once

#include <string>
#include <string_view>

namespace recur {

enum class Dialect { keras2 = 2, keras3 = 3 };

// A dialect plus the Keras release it follows, for the few formulas that changed inside a major
// version (Keras 3.0.x hard_sigmoid, activity-regularizer batch scaling before 3.14).
struct DialectInfo {
  Dialect dialect = Dialect::keras3;
  int major = 3;
  int minor = 15;
  int patch = 1;

  // Newest release recur follows for each dialect.
  static DialectInfo latest(Dialect d);
  // Parses "2.15.0", "3.13", "3.0.5"; the major version must agree with `d`.
  static DialectInfo parse(Dialect d, std::string_view version);

  bool at_least(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
  std::string version() const;
  const char* name() const { return dialect == Dialect::keras2 ? "Keras 2" : "Keras 3"; }
};

}  // namespace recur
