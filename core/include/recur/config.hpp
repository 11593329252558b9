// SPDX-License-Identifier: Apache-2.0
// LayerConfig: every constructor argument of a Keras recurrent layer or cell, resolved to plain
// values. Built from options or from Keras JSON, validated once at creation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "recur/activations.hpp"
#include "recur/dialect.hpp"
#include "recur/specs.hpp"

namespace recur {

enum class LayerKind { gru, lstm, cudnn_gru, cudnn_lstm, gru_cell, lstm_cell, simple_rnn, simple_rnn_cell };

// The Keras class name: "GRU", "CuDNNLSTM", "GRUCell", "SimpleRNN", ...
const char* kind_name(LayerKind kind);

struct LayerConfig {
  LayerKind kind = LayerKind::gru;
  DialectInfo dialect;
  std::string name;
  bool trainable = true;

  int units = 0;
  int input_size = 0;  // F: Keras learns it at build time; recur needs it to create the weights
  ActivationFn activation;
  ActivationFn recurrent_activation;  // GRU and LSTM only (SimpleRNN has none)
  bool use_bias = true;
  bool reset_after = true;  // GRU only
  int implementation = 2;   // as requested; see effective_implementation() (SimpleRNN: ignored, as Keras 2 does)
  bool unit_forget_bias = true;  // LSTM and CuDNNLSTM only
  float dropout = 0.0f;
  float recurrent_dropout = 0.0f;

  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool time_major = false;  // Keras 2 only
  bool unroll = false;
  bool zero_output_for_mask = false;
  // Keras 3 on JAX (and numpy): a masked step carries the previous state h, so steps before the
  // first valid one output h0, and unroll=True ignores zero_output_for_mask.
  bool jax_masking = false;
  int batch_size = 0;  // fixed batch of a stateful layer; 0 = not known

  InitializerSpec kernel_initializer;
  InitializerSpec recurrent_initializer;
  InitializerSpec bias_initializer;
  RegularizerSpec kernel_regularizer;
  RegularizerSpec recurrent_regularizer;
  RegularizerSpec bias_regularizer;
  RegularizerSpec activity_regularizer;
  ConstraintSpec kernel_constraint;
  ConstraintSpec recurrent_constraint;
  ConstraintSpec bias_constraint;

  std::optional<std::uint64_t> seed;  // dropout masks and unseeded initializers

  // The defaults of `kind` in `dialect` (tf.keras v2 layers for Keras 2).
  static LayerConfig defaults(LayerKind kind, const DialectInfo& dialect);

  bool is_cell() const {
    return kind == LayerKind::gru_cell || kind == LayerKind::lstm_cell || kind == LayerKind::simple_rnn_cell;
  }
  bool is_cudnn() const { return kind == LayerKind::cudnn_gru || kind == LayerKind::cudnn_lstm; }
  bool is_gru() const {
    return kind == LayerKind::gru || kind == LayerKind::gru_cell || kind == LayerKind::cudnn_gru;
  }
  bool is_lstm() const {
    return kind == LayerKind::lstm || kind == LayerKind::lstm_cell || kind == LayerKind::cudnn_lstm;
  }
  // SimpleRNN: h' = activation((x@K + b) + h@U), one block of units, one state.
  bool is_simple_rnn() const { return kind == LayerKind::simple_rnn || kind == LayerKind::simple_rnn_cell; }
  int gates() const { return is_simple_rnn() ? 1 : (is_gru() ? 3 : 4); }
  int num_states() const { return is_lstm() ? 2 : 1; }
  // Keras forces implementation 1 when recurrent_dropout is set (Keras 2, and Keras 3 >= 3.8).
  int effective_implementation() const { return recurrent_dropout > 0.0f ? 1 : implementation; }
  // Keras 2's fused GRU/LSTM path (`_could_use_gpu_kernel`): taken on CPU too, and it changes how
  // input dropout is sampled (a fresh mask per timestep).
  bool keras2_fused_path() const;

  // Throws Error naming the first field that is out of range or not valid for this kind/dialect.
  void validate() const;
};

}  // namespace recur
