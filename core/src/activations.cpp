// SPDX-License-Identifier: Apache-2.0
#include "recur/activations.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "io/printable.hpp"
#include "recur/error.hpp"

namespace recur {
namespace {

struct NameEntry {
  const char* name;
  Activation kind;
  // accepted by tf.keras / tf-keras activations.get (its functions plus the module globals
  // leaky_relu, log_softmax, relu6 and silu that tf_keras/activations.py adds for deserialize())
  bool keras2;
  bool keras3;  // accepted by keras 3 activations.get
};

// Aliases come after the canonical name so that activation_name finds the canonical one first.
constexpr NameEntry kNames[] = {
    {"linear", Activation::linear, true, true},
    {"tanh", Activation::tanh, true, true},
    {"sigmoid", Activation::sigmoid, true, true},
    {"hard_sigmoid", Activation::hard_sigmoid, true, true},
    {"relu", Activation::relu, true, true},
    {"relu6", Activation::relu6, true, true},
    {"leaky_relu", Activation::leaky_relu, true, true},
    {"elu", Activation::elu, true, true},
    {"selu", Activation::selu, true, true},
    {"celu", Activation::celu, false, true},
    {"softplus", Activation::softplus, true, true},
    {"softsign", Activation::softsign, true, true},
    {"exponential", Activation::exponential, true, true},
    {"silu", Activation::silu, true, true},
    {"swish", Activation::silu, true, true},
    {"hard_silu", Activation::hard_silu, false, true},
    {"hard_swish", Activation::hard_silu, false, true},
    {"gelu", Activation::gelu, true, true},
    {"mish", Activation::mish, true, true},
    {"log_sigmoid", Activation::log_sigmoid, false, true},
    {"sparse_plus", Activation::sparse_plus, false, true},
    {"squareplus", Activation::squareplus, false, true},
    {"tanh_shrink", Activation::tanh_shrink, false, true},
    {"hard_tanh", Activation::hard_tanh, false, true},
    {"soft_shrink", Activation::soft_shrink, false, true},
    {"hard_shrink", Activation::hard_shrink, false, true},
    {"sparse_sigmoid", Activation::sparse_sigmoid, false, true},
    {"softmax", Activation::softmax, true, true},
    {"log_softmax", Activation::log_softmax, true, true},
    {"sparsemax", Activation::sparsemax, false, true},
};

constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;
constexpr float kSeluScale = 1.0507009873554804934193349852946f;

float softplus(float x) {
  // Same thresholds as TensorFlow's Softplus kernel, which both dialects use on CPU.
  const float threshold = std::log(std::numeric_limits<float>::epsilon()) + 2.0f;
  if (x > -threshold) return x;
  if (x < threshold) return std::exp(x);
  return std::log1p(std::exp(x));
}

float hard_sigmoid(float x, HardSigmoid form) {
  switch (form) {
    case HardSigmoid::keras2: {
      float y = x * 0.2f;  // two ops, as Keras 2 writes them; -ffp-contract=off keeps them apart
      y = y + 0.5f;
      return std::min(std::max(y, 0.0f), 1.0f);
    }
    case HardSigmoid::keras3_0: {
      float y = x / 6.0f;
      y = y + 0.5f;
      return std::min(std::max(y, 0.0f), 1.0f);
    }
    case HardSigmoid::keras3:
      break;
  }
  return std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f;
}

float scalar(Activation a, HardSigmoid hs, float x) {
  switch (a) {
    case Activation::linear: return x;
    case Activation::tanh: return std::tanh(x);
    case Activation::sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case Activation::hard_sigmoid: return hard_sigmoid(x, hs);
    case Activation::relu: return x > 0.0f ? x : 0.0f;
    case Activation::relu6: return std::min(std::max(x, 0.0f), 6.0f);
    case Activation::leaky_relu: return x >= 0.0f ? x : 0.2f * x;
    case Activation::elu: return x > 0.0f ? x : std::expm1(x);
    case Activation::selu: return x > 0.0f ? kSeluScale * x : kSeluScale * (kSeluAlpha * std::expm1(x));
    case Activation::celu: return std::max(x, 0.0f) + std::min(0.0f, std::expm1(x));
    case Activation::softplus: return softplus(x);
    case Activation::softsign: return x / (1.0f + std::fabs(x));
    case Activation::exponential: return std::exp(x);
    case Activation::silu: return x * (1.0f / (1.0f + std::exp(-x)));
    case Activation::hard_silu: return x * hard_sigmoid(x, HardSigmoid::keras3);
    case Activation::gelu: return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)));
    case Activation::mish: return x * std::tanh(softplus(x));
    case Activation::log_sigmoid: return -softplus(-x);
    case Activation::sparse_plus:
      if (x <= -1.0f) return 0.0f;
      if (x >= 1.0f) return x;
      return (x + 1.0f) * (x + 1.0f) / 4.0f;
    case Activation::squareplus: return (x + std::sqrt(x * x + 4.0f)) / 2.0f;
    case Activation::tanh_shrink: return x - std::tanh(x);
    case Activation::hard_tanh: return std::min(std::max(x, -1.0f), 1.0f);
    case Activation::soft_shrink: return x > 0.5f ? x - 0.5f : (x < -0.5f ? x + 0.5f : 0.0f);
    case Activation::hard_shrink: return std::fabs(x) > 0.5f ? x : 0.0f;
    case Activation::sparse_sigmoid:
      if (x <= -1.0f) return 0.0f;
      if (x >= 1.0f) return 1.0f;
      return 0.5f * (x + 1.0f);
    case Activation::softmax:
    case Activation::log_softmax:
    case Activation::sparsemax:
      break;
  }
  return x;
}

void softmax_row(float* row, Eigen::Index n, bool log) {
  float mx = -std::numeric_limits<float>::infinity();
  for (Eigen::Index j = 0; j < n; ++j) mx = std::max(mx, row[j]);
  float sum = 0.0f;
  for (Eigen::Index j = 0; j < n; ++j) sum += std::exp(row[j] - mx);
  if (log) {
    const float lse = std::log(sum);
    for (Eigen::Index j = 0; j < n; ++j) row[j] = row[j] - mx - lse;
  } else {
    for (Eigen::Index j = 0; j < n; ++j) row[j] = std::exp(row[j] - mx) / sum;
  }
}

// Keras 3's TensorFlow-backend sparsemax, as written there: the support is
// sorted_j - (cumsum_j - 1) / j > 0, and tau sums the cumulative sums over the whole support
// (not only the last one), so its outputs differ from the textbook projection.
void sparsemax_row(float* row, Eigen::Index n) {
  std::vector<float> sorted(row, row + n);
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  float cumsum = 0.0f, support_cumsum = 0.0f, k = 0.0f;
  for (Eigen::Index j = 0; j < n; ++j) {
    cumsum += sorted[static_cast<std::size_t>(j)];
    if (sorted[static_cast<std::size_t>(j)] - (cumsum - 1.0f) / static_cast<float>(j + 1) > 0.0f) {
      support_cumsum += cumsum;
      k += 1.0f;
    }
  }
  const float tau = (support_cumsum - 1.0f) / k;
  for (Eigen::Index j = 0; j < n; ++j) row[j] = std::max(row[j] - tau, 0.0f);
}

}  // namespace

ActivationFn parse_activation(std::string_view name, const DialectInfo& dialect, std::string_view field) {
  ActivationFn fn;
  fn.hard_sigmoid = dialect.dialect == Dialect::keras2
                        ? HardSigmoid::keras2
                        : (dialect.at_least(3, 1) ? HardSigmoid::keras3 : HardSigmoid::keras3_0);
  if (name.empty() || name == "None") {
    fn.kind = Activation::linear;
    return fn;
  }
  for (const auto& e : kNames) {
    if (name != e.name) continue;
    const bool ok = dialect.dialect == Dialect::keras2 ? e.keras2 : e.keras3;
    if (!ok)
      fail(Error::Code::invalid_argument, field, ": activation '", name, "' is not accepted by ",
           dialect.name(), " (it exists in the other dialect)");
    fn.kind = e.kind;
    return fn;
  }
  std::string known;
  for (const auto& e : kNames) {
    if (dialect.dialect == Dialect::keras2 ? !e.keras2 : !e.keras3) continue;
    if (!known.empty()) known += ", ";
    known += e.name;
  }
  fail(Error::Code::invalid_argument, field, ": unknown activation '", io::printable(std::string(name)), "'; ", dialect.name(),
       " accepts: ", known);
}

std::string activation_name(Activation a, Dialect dialect) {
  if (a == Activation::silu && dialect == Dialect::keras2) return "swish";
  for (const auto& e : kNames)
    if (e.kind == a) return e.name;
  return "linear";
}

void apply_activation(const ActivationFn& fn, float* data, Eigen::Index rows, Eigen::Index cols) {
  const Eigen::Index n = rows * cols;
  Eigen::Map<Eigen::ArrayXf> v(data, n);
  switch (fn.kind) {
    case Activation::linear:
      return;
    case Activation::tanh:
      // Eigen's vectorised float tanh is the same rational approximation TensorFlow uses on CPU.
      v = v.tanh();
      return;
    case Activation::sigmoid:
      v = v.logistic();
      return;
    case Activation::softmax:
    case Activation::log_softmax:
      for (Eigen::Index r = 0; r < rows; ++r) softmax_row(data + r * cols, cols, fn.kind == Activation::log_softmax);
      return;
    case Activation::sparsemax:
      for (Eigen::Index r = 0; r < rows; ++r) sparsemax_row(data + r * cols, cols);
      return;
    default:
      for (Eigen::Index i = 0; i < n; ++i) data[i] = scalar(fn.kind, fn.hard_sigmoid, data[i]);
      return;
  }
}

namespace {
void scalar_activation(int activation, int hard_sigmoid, float* x, cpu::KIndex rows, cpu::KIndex cols) {
  ActivationFn fn;
  fn.kind = static_cast<Activation>(activation);
  fn.hard_sigmoid = static_cast<HardSigmoid>(hard_sigmoid);
  apply_activation(fn, x, rows, cols);
}
}  // namespace

cpu::ActSpec act_spec(const ActivationFn& fn) {
  cpu::ActSpec a;
  a.activation = static_cast<int>(fn.kind);
  a.hard_sigmoid = static_cast<int>(fn.hard_sigmoid);
  a.scalar = scalar_activation;
  switch (fn.kind) {
    case Activation::linear: a.kind = cpu::ActSpec::linear; break;
    case Activation::tanh: a.kind = cpu::ActSpec::tanh; break;
    case Activation::sigmoid: a.kind = cpu::ActSpec::sigmoid; break;
    case Activation::relu: a.kind = cpu::ActSpec::relu; break;
    case Activation::hard_sigmoid:
      switch (fn.hard_sigmoid) {
        case HardSigmoid::keras2: a.kind = cpu::ActSpec::hard_sigmoid_keras2; break;
        case HardSigmoid::keras3_0: a.kind = cpu::ActSpec::hard_sigmoid_keras3_0; break;
        case HardSigmoid::keras3: a.kind = cpu::ActSpec::hard_sigmoid_keras3; break;
      }
      break;
    default: a.kind = cpu::ActSpec::other; break;
  }
  a.rowwise = fn.kind == Activation::softmax || fn.kind == Activation::log_softmax || fn.kind == Activation::sparsemax;
  return a;
}

}  // namespace recur
