// SPDX-License-Identifier: Apache-2.0
#include "recur/config.hpp"

#include <cmath>

#include "recur/cpu_kernels.hpp"
#include "recur/error.hpp"
#include "recur/limits.hpp"

namespace recur {

const char* kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::gru: return "GRU";
    case LayerKind::lstm: return "LSTM";
    case LayerKind::cudnn_gru: return "CuDNNGRU";
    case LayerKind::cudnn_lstm: return "CuDNNLSTM";
    case LayerKind::gru_cell: return "GRUCell";
    case LayerKind::lstm_cell: return "LSTMCell";
    case LayerKind::simple_rnn: return "SimpleRNN";
    case LayerKind::simple_rnn_cell: return "SimpleRNNCell";
  }
  return "?";
}

LayerConfig LayerConfig::defaults(LayerKind kind, const DialectInfo& dialect) {
  LayerConfig c;
  c.kind = kind;
  c.dialect = dialect;
  c.activation = parse_activation("tanh", dialect, "activation");
  c.recurrent_activation = parse_activation("sigmoid", dialect, "recurrent_activation");
  c.kernel_initializer.kind = InitializerSpec::Kind::variance_scaling;
  c.kernel_initializer.name = "glorot_uniform";
  c.kernel_initializer.scale = 1.0;
  c.kernel_initializer.mode = InitializerSpec::Mode::fan_avg;
  c.kernel_initializer.distribution = InitializerSpec::Distribution::uniform;
  c.recurrent_initializer.kind = InitializerSpec::Kind::orthogonal;
  c.recurrent_initializer.name = "orthogonal";
  c.bias_initializer.kind = InitializerSpec::Kind::zeros;
  c.bias_initializer.name = "zeros";
  return c;
}

bool LayerConfig::keras2_fused_path() const {
  if (dialect.dialect != Dialect::keras2) return false;
  if (kind != LayerKind::gru && kind != LayerKind::lstm) return false;
  return activation.kind == Activation::tanh && recurrent_activation.kind == Activation::sigmoid &&
         recurrent_dropout == 0.0f && !unroll && use_bias && (kind != LayerKind::gru || reset_after);
}

void LayerConfig::validate() const {
  const char* cls = kind_name(kind);
  const bool k3 = dialect.dialect == Dialect::keras3;
  if (units <= 0)
    fail(Error::Code::invalid_argument, "units: expected a positive integer, got ", units, " (", cls, ")");
  if (input_size <= 0)
    fail(Error::Code::invalid_argument, "input_size: expected a positive integer (the size of the last ",
         "input axis), got ", input_size, " (", cls, ")");
  if (is_cudnn() && k3)
    fail(Error::Code::unsupported, cls, ": Keras 3 has no CuDNN layers; use the Keras 2 dialect");
  if (time_major && k3)
    fail(Error::Code::unsupported,
         "time_major: Keras 3 removed this argument (it raises \"Unrecognized keyword arguments passed to ", cls,
         ": {'time_major': True}\"); use the Keras 2 dialect or batch-major inputs");
  if (std::isnan(dropout) || std::isnan(recurrent_dropout))
    fail(Error::Code::invalid_argument, "dropout/recurrent_dropout: expected a rate in [0, 1], got NaN");
  if (implementation != 1 && implementation != 2)
    fail(Error::Code::invalid_argument, "implementation: expected 1 or 2, got ", implementation);
  if (!is_gru() && !reset_after)
    fail(Error::Code::invalid_argument, "reset_after: is a GRU argument, not ", is_lstm() ? "an " : "a ", cls,
         " argument");
  if (is_simple_rnn() && !unit_forget_bias)
    fail(Error::Code::invalid_argument, "unit_forget_bias: is an LSTM argument, not a ", cls, " argument");
  if (is_cudnn()) {
    if (activation.kind != Activation::tanh || recurrent_activation.kind != Activation::sigmoid)
      fail(Error::Code::invalid_argument, cls, ": activations are fixed to tanh/sigmoid and cannot be set");
    if (dropout != 0.0f || recurrent_dropout != 0.0f)
      fail(Error::Code::invalid_argument, cls, ": has no dropout or recurrent_dropout argument");
    if (!use_bias) fail(Error::Code::invalid_argument, cls, ": has no use_bias argument (it always has a bias)");
    if (unroll) fail(Error::Code::invalid_argument, cls, ": has no unroll argument");
    if (zero_output_for_mask)
      fail(Error::Code::invalid_argument, cls, ": has no zero_output_for_mask argument (masks are not supported)");
    if (kind == LayerKind::cudnn_gru && !reset_after)
      fail(Error::Code::invalid_argument, cls, ": is always reset_after=True");
  }
  if (is_cell()) {
    if (return_sequences || return_state || go_backwards || stateful || time_major || unroll || zero_output_for_mask)
      fail(Error::Code::invalid_argument, cls,
           ": return_sequences, return_state, go_backwards, stateful, time_major, unroll and zero_output_for_mask "
           "are RNN layer arguments, not cell arguments");
  }
  if (stateful && batch_size <= 0)
    fail(Error::Code::invalid_argument,
         "batch_size: a stateful layer needs to know its batch size (Keras: \"If a RNN is stateful, it needs to "
         "know its batch size. Specify the batch size of your input tensors\"), got ", batch_size);
  if (batch_size < 0) fail(Error::Code::invalid_argument, "batch_size: expected >= 0, got ", batch_size);
  // Checked before anything is allocated, so a hostile config cannot ask for unbounded memory.
  check_limit(Limit::units, units, std::string("units (") + cls + ")");
  // Charged as the CPU kernels hold them: each gate's columns padded to whole panels. A layer of
  // few units holds (and streams every step) up to 32 times its Keras size; charging Keras's size
  // let a 786 KB layer under a 1 MiB limit hold 25 MB.
  const cpu::KernelSet& kernels = cpu::cpu_kernels();
  const double g = gates(), u = units, f = input_size, up = double(kernels.panels(units)) * kernels.nr;
  std::string what = "weights: units=" + std::to_string(units) + " and input_size=" + std::to_string(input_size);
  if (up > u)
    what += std::string(" (each gate held padded to ") + std::to_string(static_cast<long long>(up)) + " columns by the " +
            kernels.name + " kernels)";
  check_limit(Limit::weight_bytes, 4.0 * (f * g * up + u * g * up + 2 * g * up), what);
  if (stateful) {
    check_limit(Limit::batch, batch_size, "batch_size (stateful)");
    check_limit(Limit::state_bytes, 4.0 * (num_states() + 1) * double(batch_size) * u,
                "states: batch_size=" + std::to_string(batch_size) + " and units=" + std::to_string(units));
  }
}

}  // namespace recur
