// SPDX-License-Identifier: Apache-2.0
#include "recur/regularizers.hpp"

#include <algorithm>
#include <cmath>

#include "recur/error.hpp"
#include "recur/limits.hpp"

namespace recur {

float regularization_penalty(const RegularizerSpec& spec, const float* data, Index rows, Index cols) {
  const Index n = rows * cols;
  switch (spec.kind) {
    case RegularizerSpec::Kind::none:
      return 0.0f;
    case RegularizerSpec::Kind::l1l2: {
      // A factor of 0 skips its term entirely, as Keras does (so NaN weights do not leak into it).
      double total = 0.0;
      if (spec.l1 != 0.0f) {
        double s = 0.0;
        for (Index i = 0; i < n; ++i) s += std::fabs(static_cast<double>(data[i]));
        total += static_cast<double>(spec.l1) * s;
      }
      if (spec.l2 != 0.0f) {
        double s = 0.0;
        for (Index i = 0; i < n; ++i) s += static_cast<double>(data[i]) * data[i];
        total += static_cast<double>(spec.l2) * s;
      }
      return static_cast<float>(total);
    }
    case RegularizerSpec::Kind::orthogonal: {
      // factor * 0.5 * sum|off-diagonal of the Gram matrix of L2-normalised rows (or columns)| / pairs
      Eigen::Map<const RowMatrix> w(data, rows, cols);
      Eigen::MatrixXd x = w.cast<double>();
      if (!spec.rows_mode) x.transposeInPlace();
      for (Index i = 0; i < x.rows(); ++i) {
        const double norm = x.row(i).norm();
        if (norm > 0) x.row(i) /= norm;
      }
      const Index size = x.rows();
      if (size < 2) return 0.0f;
      // The Gram matrix x x^T a band of rows at a time (at most 2 MiB), never whole: it would be
      // size^2 doubles, for a weight or an output of size x cols floats.
      const Index band = std::clamp<Index>((Index(1) << 18) / size, 1, size);
      Eigen::MatrixXd gram;
      double off = 0.0;
      for (Index i0 = 0; i0 < size; i0 += band) {
        const Index b = std::min(band, size - i0);
        gram.noalias() = x.middleRows(i0, b) * x.transpose();
        for (Index r = 0; r < b; ++r) gram(r, i0 + r) = 0.0;  // the diagonal does not count
        off += gram.cwiseAbs().sum();
      }
      const double size_d = static_cast<double>(size);
      const double pairs = size_d * (size_d - 1.0) / 2.0;
      return static_cast<float>(spec.factor * 0.5 * off / pairs);
    }
  }
  return 0.0f;
}

void check_regularization_cost(const RegularizerSpec& spec, Index rows, Index cols, const std::string& what) {
  if (spec.kind != RegularizerSpec::Kind::orthogonal) return;
  const double size = static_cast<double>(spec.rows_mode ? rows : cols);
  check_limit(Limit::tensor_bytes, 4.0 * size * size,
              what + ": the orthogonal regularizer's " + std::to_string(spec.rows_mode ? rows : cols) + " x " +
                  std::to_string(spec.rows_mode ? rows : cols) + " product");
}

}  // namespace recur
