// SPDX-License-Identifier: Apache-2.0
#include "recur/constraints.hpp"

#include <algorithm>
#include <cmath>

#include "recur/error.hpp"

namespace recur {
namespace {
constexpr float kEpsilon = 1e-7f;  // backend.epsilon()
}

void apply_constraint(const ConstraintSpec& spec, Tensor& w, Dialect dialect, const char* field) {
  if (!spec.active()) return;
  float* d = w.data();
  const Index n = w.size();
  if (spec.kind == ConstraintSpec::Kind::non_neg) {
    for (Index i = 0; i < n; ++i) {
      if (dialect == Dialect::keras2)
        d[i] = d[i] * (d[i] >= 0.0f ? 1.0f : 0.0f);  // w * cast(w >= 0): keeps -0.0 and NaN
      else
        d[i] = std::isnan(d[i]) ? d[i] : std::max(d[i], 0.0f);
    }
    return;
  }
  // Norm constraints reduce over `axis`; view the tensor as (rows, cols) with rank 1 as (n,).
  const int rank = static_cast<int>(w.shape.size());
  bool reduce[2] = {false, false};
  for (int a : spec.axis) {
    const int ax = a < 0 ? a + rank : a;
    if (ax < 0 || ax >= rank)
      fail(Error::Code::invalid_argument, field, ": constraint axis ", a, " is out of range for a weight of shape ",
           shape_string(w.shape));
    reduce[ax] = true;
  }
  const Index rows = rank == 2 ? w.shape[0] : w.shape[0];
  const Index cols = rank == 2 ? w.shape[1] : 1;
  // Index (i, j) of the element; the norm group is the coordinates not reduced.
  auto group_of = [&](Index i, Index j) -> Index {
    if (reduce[0] && (rank == 1 || reduce[1])) return 0;
    if (reduce[0]) return j;  // per column
    if (rank == 2 && reduce[1]) return i;  // per row
    return i * cols + j;
  };
  const Index groups = (reduce[0] && (rank == 1 || reduce[1])) ? 1 : (reduce[0] ? cols : (reduce[1] ? rows : n));
  std::vector<double> sq(static_cast<std::size_t>(groups), 0.0);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) {
      const double v = d[i * cols + j];
      sq[static_cast<std::size_t>(group_of(i, j))] += v * v;
    }
  std::vector<float> scale(sq.size());
  for (std::size_t g = 0; g < sq.size(); ++g) {
    const float norm = static_cast<float>(std::sqrt(sq[g]));
    float desired = norm;
    switch (spec.kind) {
      case ConstraintSpec::Kind::max_norm:
        desired = std::min(std::max(norm, 0.0f), spec.max_value);
        break;
      case ConstraintSpec::Kind::unit_norm:
        desired = 1.0f;
        break;
      case ConstraintSpec::Kind::min_max_norm:
        desired = spec.rate * std::min(std::max(norm, spec.min_value), spec.max_value) + (1.0f - spec.rate) * norm;
        break;
      default:
        break;
    }
    scale[g] = desired / (kEpsilon + norm);
  }
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) d[i * cols + j] *= scale[static_cast<std::size_t>(group_of(i, j))];
}

}  // namespace recur
