// SPDX-License-Identifier: Apache-2.0
#include "recur/initializers.hpp"

#include <Eigen/QR>
#include <algorithm>
#include <cmath>

#include "recur/error.hpp"
#include "recur/limits.hpp"

namespace recur {
namespace {
// stddev of a unit normal truncated at +-2, which Keras divides by so the variance comes out right
constexpr double kTruncatedNormalStd = 0.87962566103423978;

double truncated(Rng& rng) {
  for (;;) {
    const double v = rng.normal();
    if (v >= -2.0 && v <= 2.0) return v;
  }
}
}  // namespace

void compute_fans(const std::vector<Index>& shape, double& fan_in, double& fan_out) {
  if (shape.empty()) {
    fan_in = fan_out = 1.0;
  } else if (shape.size() == 1) {
    fan_in = fan_out = static_cast<double>(shape[0]);
  } else if (shape.size() == 2) {
    fan_in = static_cast<double>(shape[0]);
    fan_out = static_cast<double>(shape[1]);
  } else {
    double receptive = 1.0;
    for (std::size_t i = 0; i + 2 < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
    fan_in = static_cast<double>(shape[shape.size() - 2]) * receptive;
    fan_out = static_cast<double>(shape[shape.size() - 1]) * receptive;
  }
}

void initialize(const InitializerSpec& spec, Tensor& out, Rng& layer_rng) {
  Rng own(spec.seed ? *spec.seed : 0);
  Rng& rng = spec.seed ? own : layer_rng;
  float* d = out.data();
  const Index n = out.size();
  using K = InitializerSpec::Kind;
  switch (spec.kind) {
    case K::zeros:
      std::fill(d, d + n, 0.0f);
      return;
    case K::ones:
      std::fill(d, d + n, 1.0f);
      return;
    case K::constant:
      std::fill(d, d + n, static_cast<float>(spec.value));
      return;
    case K::random_uniform:
      for (Index i = 0; i < n; ++i)
        d[i] = static_cast<float>(spec.minval + (spec.maxval - spec.minval) * rng.uniform());
      return;
    case K::random_normal:
      for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(spec.mean + spec.stddev * rng.normal());
      return;
    case K::truncated_normal:
      for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(spec.mean + spec.stddev * truncated(rng));
      return;
    case K::variance_scaling: {
      double fan_in = 0, fan_out = 0;
      if (!spec.input_axes.empty() && !spec.output_axes.empty()) {
        const int rank = static_cast<int>(out.shape.size());
        auto product = [&](const std::vector<int>& axes, const char* which) {
          double p = 1.0;
          for (int a : axes) {
            const int ax = a < 0 ? a + rank : a;
            if (ax < 0 || ax >= rank)
              fail(Error::Code::invalid_argument, spec.name, ".", which, ": axis ", a, " is out of range for shape ",
                   shape_string(out.shape));
            p *= static_cast<double>(out.shape[static_cast<std::size_t>(ax)]);
          }
          return p;
        };
        fan_in = product(spec.input_axes, "input_axes");
        fan_out = product(spec.output_axes, "output_axes");
      } else {
        compute_fans(out.shape, fan_in, fan_out);
      }
      double denom = fan_in;
      if (spec.mode == InitializerSpec::Mode::fan_out) denom = fan_out;
      if (spec.mode == InitializerSpec::Mode::fan_avg) denom = (fan_in + fan_out) / 2.0;
      const double s = spec.scale / std::max(1.0, denom);
      switch (spec.distribution) {
        case InitializerSpec::Distribution::truncated_normal: {
          const double stddev = std::sqrt(s) / kTruncatedNormalStd;
          for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(stddev * truncated(rng));
          return;
        }
        case InitializerSpec::Distribution::untruncated_normal: {
          const double stddev = std::sqrt(s);
          for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(stddev * rng.normal());
          return;
        }
        case InitializerSpec::Distribution::uniform: {
          const double limit = std::sqrt(3.0 * s);
          for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(-limit + 2.0 * limit * rng.uniform());
          return;
        }
      }
      return;
    }
    case K::orthogonal: {
      if (out.shape.size() < 2)
        fail(Error::Code::invalid_argument, spec.name, ": the orthogonal initializer needs a rank-2 shape, got ",
             shape_string(out.shape));
      Index rows = 1;
      for (std::size_t i = 0; i + 1 < out.shape.size(); ++i) rows *= out.shape[i];
      const Index cols = out.shape.back();
      const Index big = std::max(rows, cols), small = std::min(rows, cols);
      // The QR's work is cubic in a size that is only linear in the config: checked before it starts.
      check_limit(Limit::init_work, static_cast<double>(big) * static_cast<double>(small) * static_cast<double>(small),
                  spec.name + ": the orthogonal initializer's QR of a " + std::to_string(big) + " x " + std::to_string(small) +
                      " matrix (multiply-adds)");
      Eigen::MatrixXd a(big, small);
      for (Index j = 0; j < small; ++j)
        for (Index i = 0; i < big; ++i) a(i, j) = rng.normal();
      Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
      Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(big, small);
      const Eigen::MatrixXd r = qr.matrixQR().topRows(small).triangularView<Eigen::Upper>();
      for (Index j = 0; j < small; ++j)
        if (r(j, j) < 0) q.col(j) = -q.col(j);  // Keras multiplies by sign(diag(R)) for a unique Q
      const Eigen::MatrixXd full = rows < cols ? Eigen::MatrixXd(q.transpose()) : q;
      for (Index i = 0; i < rows; ++i)
        for (Index j = 0; j < cols; ++j) d[i * cols + j] = static_cast<float>(spec.gain * full(i, j));
      return;
    }
    case K::identity: {
      if (out.shape.size() != 2)
        fail(Error::Code::invalid_argument, spec.name, ": the identity initializer needs a rank-2 shape, got ",
             shape_string(out.shape));
      out.value.setZero();
      const Index m = std::min(out.shape[0], out.shape[1]);
      for (Index i = 0; i < m; ++i) out.value(i, i) = static_cast<float>(spec.gain);
      return;
    }
  }
}

std::string shape_string(const std::vector<Index>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace recur
