#include "recur/regularizers.hpp"

#include <cmath>

#include "recur/error.hpp"

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
      const Eigen::MatrixXd gram = x * x.transpose();
      const double size = static_cast<double>(x.rows());
      if (size < 2) return 0.0f;
      double off = 0.0;
      for (Index i = 0; i < gram.rows(); ++i)
        for (Index j = 0; j < gram.cols(); ++j)
          if (i != j) off += std::fabs(gram(i, j));
      const double pairs = size * (size - 1.0) / 2.0;
      return static_cast<float>(spec.factor * 0.5 * off / pairs);
    }
  }
  return 0.0f;
}

}  // namespace recur
