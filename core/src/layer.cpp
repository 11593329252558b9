// SPDX-License-Identifier: Apache-2.0
#include "recur/layer.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "gpu/gpu_layer.hpp"
#include "recur/cancel.hpp"
#include "recur/log.hpp"
#include "recur/constraints.hpp"
#include "recur/error.hpp"
#include "recur/initializers.hpp"
#include "recur/limits.hpp"
#include "recur/regularizers.hpp"

namespace recur {
namespace {

const LayerConfig& validated(const LayerConfig& c) {
  c.validate();
  return c;
}

std::size_t checked_product(std::initializer_list<Index> dims, const char* what) {
  std::size_t total = 1;
  for (Index d : dims) {
    if (d < 0) fail(Error::Code::invalid_argument, what, ": negative dimension ", d);
    const auto ud = static_cast<std::size_t>(d);
    if (ud != 0 && total > (static_cast<std::size_t>(1) << 40) / ud) {
      std::string shown;
      for (Index x : dims) shown += (shown.empty() ? "" : ", ") + std::to_string(x);
      fail(Error::Code::invalid_argument, what, ": dimensions (", shown, ") are too large: their product is over 2^40 "
           "(1099511627776) entries; use a smaller batch or fewer timesteps");
    }
    total *= ud;
  }
  return total;
}

// Inputs with dropout applied: row r of the input belongs to sample r / T (or r % B, time-major).
std::vector<float> apply_row_mask(const float* x, Index rows, Index F, Index B, Index T, bool time_major,
                                  const RowMatrix& mask) {
  std::vector<float> out(static_cast<std::size_t>(rows * F));
  for (Index r = 0; r < rows; ++r) {
    const Index b = time_major ? r % B : r / T;
    for (Index j = 0; j < F; ++j) out[static_cast<std::size_t>(r * F + j)] = x[r * F + j] * mask(b, j);
  }
  return out;
}

thread_local SequenceWorkspace tls_workspace;

}  // namespace

Layer::Layer(LayerConfig config)
    : config_(std::move(config)), specs_(weight_specs(validated(config_))), cell_(config_) {
  rng_.reseed(config_.seed ? *config_.seed : Rng::entropy());
  // The initializers run on first use, and only if some weight was never set: a layer made from
  // a file or from weights never pays for an initializer whose result would be replaced.
  // Keras's own layouts live only packed in the cell (kernel, recurrent kernel): no second copy.
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    if (packed_only(i)) {
      Tensor t;
      t.shape = specs_[i].shape;
      weights_.push_back(std::move(t));
    } else {
      weights_.emplace_back(specs_[i].shape);
    }
  }
  given_.assign(weights_.size(), false);
  if (config_.stateful) stored_.emplace(config_.num_states(), config_.batch_size, config_.units);
}

void Layer::initialize_weight(std::size_t i, Tensor& w) {
  const InitializerSpec* specs[3] = {&config_.kernel_initializer, &config_.recurrent_initializer,
                                     &config_.bias_initializer};
  if (i < 2) {
    initialize(*specs[i], w, rng_);
    return;
  }
  const Index u = config_.units;
  const bool lstm = config_.kind == LayerKind::lstm || config_.kind == LayerKind::lstm_cell;
  if ((lstm || config_.kind == LayerKind::cudnn_lstm) && config_.unit_forget_bias) {
    // Keras calls the initializer twice around a block of ones (a seeded initializer therefore
    // repeats its prefix); CuDNNLSTM's ones are the recurrent forget block.
    const Index before = lstm ? u : 5 * u;
    Tensor head({before}), tail({2 * u});
    initialize(config_.bias_initializer, head, rng_);
    initialize(config_.bias_initializer, tail, rng_);
    float* d = w.data();
    std::copy(head.data(), head.data() + before, d);
    std::fill(d + before, d + before + u, 1.0f);
    std::copy(tail.data(), tail.data() + 2 * u, d + before + u);
  } else {
    initialize(config_.bias_initializer, w, rng_);
  }
}

void Layer::materialize() const {
  if (initialized_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(init_mutex_);
  if (initialized_.load(std::memory_order_relaxed)) return;
  if (init_error_) throw *init_error_;
  // Every initializer runs in Keras's order, so a seeded layer draws the same numbers whichever
  // weights were set; the results for set weights are dropped.
  Layer& self = const_cast<Layer&>(*this);
  try {
    for (std::size_t i = 0; i < weights_.size(); ++i) {
      Tensor value(specs_[i].shape);
      self.initialize_weight(i, value);
      if (!given_[i]) self.store_weight(i, value.data());
    }
  } catch (const Error& e) {
    init_error_ = e;
    throw;
  }
  self.refresh_cell();
  initialized_.store(true, std::memory_order_release);
}

void Layer::mark_given(std::size_t i) {
  if (initialized_.load(std::memory_order_acquire)) return;
  given_[i] = true;
  if (std::all_of(given_.begin(), given_.end(), [](bool g) { return g; }))
    initialized_.store(true, std::memory_order_release);
}

Layer::~Layer() = default;

bool Layer::packed_only(std::size_t i) const { return i < 2 && !config_.is_cudnn(); }

std::size_t Layer::weight_length(std::size_t i) const {
  weight_spec(i);
  std::size_t n = 1;
  for (Index d : specs_[i].shape) n *= static_cast<std::size_t>(d);
  return n;
}

void Layer::store_weight(std::size_t i, const float* data) {
  if (packed_only(i)) {
    if (i == 0)
      cell_.pack_kernel(data);
    else
      cell_.pack_recurrent(data);
    weights_[i].value.resize(0, 0);  // a Keras-layout copy made for weight(i) is stale now
  } else {
    std::memcpy(weights_[i].data(), data, weight_length(i) * sizeof(float));
  }
}

void Layer::refresh_cell() {
  if (config_.is_cudnn()) {
    cell_.set_params(cell_params(config_, weights_));
  } else {
    const float* b = config_.use_bias ? weights_[2].data() : nullptr;
    const bool two_biases = b && config_.is_gru() && config_.reset_after;
    cell_.set_biases(b, two_biases ? b + config_.gates() * config_.units : nullptr);
  }
  if (gpu_) gpu_->upload(cell_params(config_, keras_weights()));
}

std::vector<Tensor> Layer::keras_weights() const {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    if (!packed_only(i)) {
      out.push_back(weights_[i]);
      continue;
    }
    Tensor t(specs_[i].shape);
    if (i == 0)
      cell_.unpack_kernel(t.data());
    else
      cell_.unpack_recurrent(t.data());
    out.push_back(std::move(t));
  }
  return out;
}

CellParams Layer::params() const {
  materialize();
  return cell_params(config_, keras_weights());
}

void Layer::set_num_threads(int num_threads) {
  if (num_threads < 0 || num_threads > kMaxThreads)
    fail(Error::Code::invalid_argument, "num_threads: expected 0 (one per core) to ", kMaxThreads, ", got ",
         num_threads);
  num_threads_ = num_threads;
}

void Layer::require_sequence_layer(const char* what) const {
  if (config_.is_cell())
    fail(Error::Code::state, what, ": ", kind_name(config_.kind),
         " is a cell, not a sequence layer; step it with the cell call");
}

void Layer::require_cell(const char* what) const {
  if (!config_.is_cell())
    fail(Error::Code::state, what, ": ", kind_name(config_.kind),
         " is a sequence layer, not a cell (GRUCell/LSTMCell/SimpleRNNCell)");
}

// ----- weights -----

const WeightSpec& Layer::weight_spec(std::size_t i) const {
  if (i >= specs_.size())
    fail(Error::Code::invalid_argument, "index: weight ", i, " does not exist; ", kind_name(config_.kind), " has ",
         specs_.size(), " weights");
  return specs_[i];
}

const Tensor& Layer::weight(std::size_t i) const {
  weight_spec(i);
  materialize();
  if (packed_only(i)) {
    // A Keras-layout copy, made on request and kept until the weight changes.
    std::lock_guard<std::mutex> lock(init_mutex_);
    Tensor& w = const_cast<Tensor&>(weights_[i]);
    if (w.value.size() == 0) {
      w = Tensor(specs_[i].shape);
      if (i == 0)
        cell_.unpack_kernel(w.data());
      else
        cell_.unpack_recurrent(w.data());
    }
  }
  return weights_[i];
}

std::size_t Layer::weights_size() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < specs_.size(); ++i) n += weight_length(i);
  return n;
}

void Layer::get_weight(std::size_t i, float* out, std::size_t len) const {
  weight_spec(i);
  if (!out) fail(Error::Code::invalid_argument, "out: is NULL");
  if (len != weight_length(i))
    fail(Error::Code::shape, "out: weight '", specs_[i].name, "' has shape ", shape_string(specs_[i].shape), " = ",
         weight_length(i), " floats, but the buffer holds ", len);
  materialize();
  if (!packed_only(i))
    std::memcpy(out, weights_[i].data(), len * sizeof(float));
  else if (i == 0)
    cell_.unpack_kernel(out);
  else
    cell_.unpack_recurrent(out);
}

void Layer::set_weight(std::size_t i, const float* data, std::size_t len, const std::int64_t* dims, int ndims) {
  const WeightSpec& spec = weight_spec(i);
  if (!data) fail(Error::Code::invalid_argument, "data: is NULL");
  if (dims) {
    // Keras weights have rank 1 or 2: read no more dims than that (ndims comes from the caller).
    if (ndims < 0 || ndims > 2)
      fail(Error::Code::shape, "weight '", spec.name, "' of ", kind_name(config_.kind), ": expected shape ",
           shape_string(spec.shape), ", got ndims = ", ndims, " (Keras weights have rank 1 or 2)");
    std::vector<Index> given(dims, dims + ndims);
    if (given != spec.shape)
      fail(Error::Code::shape, "weight '", spec.name, "' of ", kind_name(config_.kind), ": expected shape ",
           shape_string(spec.shape), ", got ", shape_string(given));
  }
  if (len != weight_length(i))
    fail(Error::Code::shape, "weight '", spec.name, "': expected ", weight_length(i), " floats for shape ",
         shape_string(spec.shape), ", got ", len);
  std::lock_guard<std::mutex> lock(mutex_);
  store_weight(i, data);
  mark_given(i);
  if (initialized_.load(std::memory_order_acquire)) refresh_cell();
}

void Layer::set_weights(const float* data, std::size_t len) {
  if (!data) fail(Error::Code::invalid_argument, "data: is NULL");
  const std::size_t total = weights_size();
  if (len != total) {
    std::string shapes;
    for (const auto& s : specs_) shapes += std::string(shapes.empty() ? "" : ", ") + s.name + " " + shape_string(s.shape);
    fail(Error::Code::shape, "weights: expected ", total, " floats (", shapes, "), got ", len);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    store_weight(i, data + offset);
    offset += weight_length(i);
    mark_given(i);
  }
  refresh_cell();
}

// ----- sequence layers -----

std::size_t Layer::output_size(Index batch, Index timesteps) const {
  return checked_product({batch, config_.return_sequences ? timesteps : 1, config_.units}, "output");
}

void Layer::check_states_arg(const float* states, std::size_t len, int num_given, Index batch,
                             const char* what) const {
  const int n = config_.num_states();
  if (num_given != n)
    fail(Error::Code::shape, what, ": ", kind_name(config_.kind), " has ", n, " state(s) (", n == 1 ? "h" : "h, c",
         ") but was passed ", num_given, " (Keras: \"Layer has ", n, " states but was passed ", num_given,
         " initial states\")");
  if (!states) fail(Error::Code::invalid_argument, what, ": is NULL");
  const std::size_t want = checked_product({n, batch, config_.units}, what);
  if (len != want)
    fail(Error::Code::shape, what, ": expected ", n, " tensor(s) of shape (", batch, ", ", config_.units, ") = ", want,
         " floats, got ", len);
}

int Layer::mask_count() const {
  if (config_.dialect.dialect == Dialect::keras2) return config_.gates();
  return config_.effective_implementation() == 1 ? config_.gates() : 1;
}

std::vector<RowMatrix> Layer::make_masks(int count, Index rows, Index cols, float rate) {
  std::vector<RowMatrix> masks;
  const float keep_scale = rate < 1.0f ? 1.0f / (1.0f - rate) : 0.0f;
  for (int m = 0; m < count; ++m) {
    RowMatrix mask(rows, cols);
    for (Index i = 0; i < mask.size(); ++i) mask.data()[i] = rng_.uniform() >= rate ? keep_scale : 0.0f;
    masks.push_back(std::move(mask));
  }
  return masks;
}

void Layer::call(const LayerCall& a) {
  materialize();
  require_sequence_layer("forward");
  const Index B = a.batch, T = a.timesteps, F = config_.input_size, u = config_.units;
  const int ns = config_.num_states();
  if (B <= 0) fail(Error::Code::invalid_argument, "batch: expected a positive batch size, got ", B);
  if (T <= 0) fail(Error::Code::invalid_argument, "timesteps: expected at least 1 timestep, got ", T);
  if (!a.input) fail(Error::Code::invalid_argument, "input: is NULL");
  const std::size_t in_len = checked_product({B, T, F}, "input");
  if (a.input_len != in_len)
    fail(Error::Code::shape, "input: expected ", in_len, " floats for shape ",
         config_.time_major ? "(T, B, F) = (" : "(B, T, F) = (", config_.time_major ? T : B, ", ",
         config_.time_major ? B : T, ", ", F, "), got ", a.input_len);
  if (a.mask) {
    if (config_.is_cudnn()) fail(Error::Code::unsupported, "mask: Masking is not supported for CuDNN RNNs.");
    if (a.mask_len != static_cast<std::size_t>(B * T))
      fail(Error::Code::shape, "mask: expected ", B * T, " values for shape ", config_.time_major ? "(T, B)" : "(B, T)",
           ", got ", a.mask_len);
  }
  if (!a.output) fail(Error::Code::invalid_argument, "output: is NULL");
  const std::size_t out_len = output_size(B, T);
  if (a.output_len != out_len)
    fail(Error::Code::shape, "output: expected ", out_len, " floats for shape ",
         config_.return_sequences ? (config_.time_major ? "(T, B, units)" : "(B, T, units)") : "(B, units)",
         ", got ", a.output_len);
  const bool has_initial = a.initial_state != nullptr || a.num_initial_states != 0;
  if (has_initial) check_states_arg(a.initial_state, a.initial_state_len, a.num_initial_states, B, "initial_state");
  const std::size_t state_len = checked_product({ns, B, u}, "final_state");
  if (a.final_state && a.final_state_len != state_len)
    fail(Error::Code::shape, "final_state: expected ", ns, " tensor(s) of shape (", B, ", ", u, ") = ", state_len,
         " floats, got ", a.final_state_len);
  if (config_.stateful && B != config_.batch_size)
    fail(Error::Code::shape, "batch: this stateful layer has batch size ", config_.batch_size,
         "; the input has batch ", B,
         " (Keras: \"If an RNN is stateful, the batch size of the input sequences must be the same as the batch "
         "size of the initial state\")");

  if (config_.activity_regularizer.active()) {
    check_regularization_cost(config_.activity_regularizer, config_.return_sequences ? B * T : B, u,
                              "activity_regularizer on the output");
    if (config_.return_state) check_regularization_cost(config_.activity_regularizer, B, u, "activity_regularizer on the states");
  }

  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  const bool dropout_on = a.training && (config_.dropout > 0.0f || config_.recurrent_dropout > 0.0f);
  if (config_.stateful || dropout_on || config_.activity_regularizer.active()) lock.lock();

  // Initial states: passed ones, the stored ones of a stateful layer, or zeros. They live in the
  // thread's workspace, so that steady-state calls allocate nothing.
  SequenceWorkspace& ws = tls_workspace;
  std::vector<RowMatrix>& states = ws.call_states;
  states.resize(static_cast<std::size_t>(ns));
  for (auto& st : states) st.setZero(B, u);
  bool use_passed = has_initial;
  if (config_.stateful && has_initial && config_.dialect.dialect == Dialect::keras2)
    use_passed = stored_->all_zero();  // Keras 2: stored non-zero states win over initial_state
  if (use_passed) {
    for (int s = 0; s < ns; ++s)
      std::memcpy(states[static_cast<std::size_t>(s)].data(), a.initial_state + static_cast<std::size_t>(s * B * u),
                  static_cast<std::size_t>(B * u) * sizeof(float));
  } else if (config_.stateful) {
    for (int s = 0; s < ns; ++s) states[static_cast<std::size_t>(s)] = stored_->tensor(s);
  }

  const Index rows = B * T;
  std::vector<float> batch_reversed;
  const float* input = cudnn_reversal(a.input, B, T, batch_reversed);

  // Dropout (training only): which masks, and how they are sampled, follows the dialect and path.
  std::vector<const float*>& inputs = ws.call_inputs;
  inputs.assign(1, input);
  std::vector<RowMatrix> recurrent_masks;
  ws.dropped.clear();
  if (dropout_on) {
    const float d = config_.dropout, rd = config_.recurrent_dropout;
    if (config_.keras2_fused_path()) {
      if (d >= 1.0f)
        fail(Error::Code::invalid_argument,
             "dropout: 1.0 in training mode fails in Keras 2's fused GRU/LSTM (tf.nn.dropout needs a rate in [0, 1))");
      if (d > 0.0f) {
        // A fresh mask for every timestep, shared by all gates (Keras 2 masks the whole 3-D input).
        const RowMatrix m = make_masks(1, rows, F, d)[0];
        ws.dropped.emplace_back(in_len);
        for (std::size_t i = 0; i < in_len; ++i) ws.dropped[0][i] = input[i] * m.data()[i];
        inputs = {ws.dropped[0].data()};
      }
    } else {
      if (d > 0.0f && d < 1.0f) {
        const int count = config_.effective_implementation() == 1 ? config_.gates() : 1;
        const std::vector<RowMatrix> masks = make_masks(count, B, F, d);
        inputs.clear();
        for (const auto& m : masks) {
          ws.dropped.push_back(apply_row_mask(input, rows, F, B, T, config_.time_major, m));
          inputs.push_back(ws.dropped.back().data());
        }
      }
      if (rd > 0.0f && rd < 1.0f) recurrent_masks = make_masks(config_.gates(), B, u, rd);
    }
  }

  SequenceJob job = sequence_job(B, T, a.mask, a.output);
  job.inputs = inputs.data();
  job.num_inputs = static_cast<int>(inputs.size());
  job.recurrent_masks = recurrent_masks.empty() ? nullptr : &recurrent_masks;
  job.states = states.data();
  if (gpu_)
    gpu::GpuBackend(*gpu_).run_sequence(cell_, job, ws);
  else
    cpu_backend().run_sequence(cell_, job, ws);
  throw_if_cancelled();  // before a stateful layer keeps the states

  if (a.final_state)
    for (int s = 0; s < ns; ++s)
      std::memcpy(a.final_state + static_cast<std::size_t>(s * B * u), states[static_cast<std::size_t>(s)].data(),
                  static_cast<std::size_t>(B * u) * sizeof(float));
  if (config_.stateful)
    for (int s = 0; s < ns; ++s) stored_->tensor(s) = states[static_cast<std::size_t>(s)];
  if (config_.activity_regularizer.active()) record_activity(a, states.data());
}

void Layer::record_activity(const LayerCall& a, const RowMatrix* final_states) {
  // Keras regularises every flattened output of the call (states too with return_state) and, in
  // Keras 2 and Keras >= 3.14, divides each penalty by the size of the output's first axis.
  const bool divide = config_.dialect.dialect == Dialect::keras2 || config_.dialect.at_least(3, 14);
  const RegularizerSpec& reg = config_.activity_regularizer;
  const Index u = config_.units;
  activity_losses_.clear();
  const Index out_rows = config_.return_sequences ? a.batch * a.timesteps : a.batch;
  const Index first_axis = config_.return_sequences && config_.time_major ? a.timesteps : a.batch;
  float v = regularization_penalty(reg, a.output, out_rows, u);
  activity_losses_.push_back({"activity:output", divide ? v / static_cast<float>(first_axis) : v});
  if (config_.return_state) {
    for (int s = 0; s < config_.num_states(); ++s) {
      v = regularization_penalty(reg, final_states[s].data(), a.batch, u);
      activity_losses_.push_back(
          {s == 0 ? "activity:state_h" : "activity:state_c", divide ? v / static_cast<float>(a.batch) : v});
    }
  }
}

void Layer::call_state(State& state, const float* input, std::size_t input_len, Index timesteps,
                       const std::uint8_t* mask, std::size_t mask_len, float* output, std::size_t output_len) const {
  materialize();
  require_sequence_layer("forward_state");
  const Index B = state.batch(), T = timesteps, F = config_.input_size;
  if (state.num_states() != config_.num_states() || state.units() != config_.units)
    fail(Error::Code::shape, "state: holds ", state.num_states(), " tensor(s) of ", state.units(), " units; ",
         kind_name(config_.kind), " needs ", config_.num_states(), " of ", config_.units, " units");
  if (T <= 0) fail(Error::Code::invalid_argument, "timesteps: expected at least 1 timestep, got ", T);
  if (!input) fail(Error::Code::invalid_argument, "input: is NULL");
  const std::size_t in_len = checked_product({B, T, F}, "input");
  if (input_len != in_len)
    fail(Error::Code::shape, "input: expected ", in_len, " floats for ", B, " streams x ", T, " steps x ", F,
         " features, got ", input_len);
  if (mask) {
    if (config_.is_cudnn()) fail(Error::Code::unsupported, "mask: Masking is not supported for CuDNN RNNs.");
    if (mask_len != static_cast<std::size_t>(B * T))
      fail(Error::Code::shape, "mask: expected ", B * T, " values, got ", mask_len);
  }
  if (!output) fail(Error::Code::invalid_argument, "output: is NULL");
  const std::size_t out_len = output_size(B, T);
  if (output_len != out_len) fail(Error::Code::shape, "output: expected ", out_len, " floats, got ", output_len);
  std::vector<float> batch_reversed;
  const float* inputs[1] = {cudnn_reversal(input, B, T, batch_reversed)};
  SequenceJob job = sequence_job(B, T, mask, output);
  job.inputs = inputs;
  job.states = state.tensors();
  job.carried_output = &state.carried_output();
  if (gpu_) {
    gpu_->run_job(job, resident_state(state));
  } else {
    state.detach_device();
    cpu_backend().run_sequence(cell_, job, state.workspace());
  }
  throw_if_cancelled();
}

void Layer::call_state_device(State& state, const float* d_input, Index timesteps, const std::uint8_t* mask,
                              std::size_t mask_len, float* d_output) const {
  materialize();
  require_sequence_layer("forward_state");
  if (!gpu_) fail(Error::Code::state, "a device step needs the layer on a GPU");
  const Index B = state.batch(), T = timesteps;
  if (state.num_states() != config_.num_states() || state.units() != config_.units)
    fail(Error::Code::shape, "state: holds ", state.num_states(), " tensor(s) of ", state.units(), " units; ",
         kind_name(config_.kind), " needs ", config_.num_states(), " of ", config_.units, " units");
  if (T <= 0) fail(Error::Code::invalid_argument, "timesteps: expected at least 1 timestep, got ", T);
  if (mask && mask_len != static_cast<std::size_t>(B * T))
    fail(Error::Code::shape, "mask: expected ", B * T, " values, got ", mask_len);
  const std::string issue = device_call_issue();
  if (!issue.empty() || (mask && config_.is_cudnn())) fail(Error::Code::unsupported, "a device step: ", issue);
  const SequenceJob job = sequence_job(B, T, mask, nullptr);
  gpu_->run_device_resident(job, d_input, *resident_state(state), config_.return_sequences ? d_output : nullptr,
                            config_.return_sequences ? nullptr : d_output, nullptr);
  throw_if_cancelled();
}

SequenceJob Layer::sequence_job(Index B, Index T, const std::uint8_t* mask, float* output) const {
  SequenceJob job;
  job.batch = B;
  job.timesteps = T;
  job.time_major = config_.time_major;
  // Keras 2's CuDNN layers reverse axis 1, which for a time-major input is the batch axis, not
  // time (cudnn_reversal does that); the loop then runs forwards.
  job.go_backwards = config_.go_backwards && !(config_.is_cudnn() && config_.time_major);
  job.mask = mask;
  job.zero_output_for_mask = config_.zero_output_for_mask && !(config_.jax_masking && config_.unroll);
  job.unrolled_mask_quirk = config_.unroll && config_.go_backwards && !config_.jax_masking;
  // JAX's scan carries h as the previous output; its unrolled loop starts from zeros like TF's.
  job.output_starts_at_state = config_.jax_masking && !config_.unroll && mask;
  job.sequence_output = config_.return_sequences ? output : nullptr;
  job.threads = num_threads_;
  job.cancel = cancel_flag();
  job.deadline_ns = run_deadline_ns();
  job.last_output = config_.return_sequences ? nullptr : output;
  return job;
}

const float* Layer::cudnn_reversal(const float* input, Index B, Index T, std::vector<float>& storage) const {
  if (!(config_.is_cudnn() && config_.time_major && config_.go_backwards)) return input;
  const Index F = config_.input_size;
  storage.resize(static_cast<std::size_t>(T * B * F));
  for (Index t = 0; t < T; ++t)
    for (Index b = 0; b < B; ++b)
      std::memcpy(&storage[static_cast<std::size_t>((t * B + b) * F)], input + (t * B + (B - 1 - b)) * F,
                  static_cast<std::size_t>(F) * sizeof(float));
  return storage.data();
}

// ----- stateful -----

void Layer::set_keras_backend(const std::string& backend) {
  if (backend != "tensorflow" && backend != "jax")
    fail(Error::Code::invalid_argument, "backend: expected \"tensorflow\" or \"jax\", got \"", backend, "\"");
  if (backend == "jax" && config_.dialect.dialect == Dialect::keras2)
    fail(Error::Code::unsupported, "backend: \"jax\" is a Keras 3 backend; this layer is Keras 2");
  config_.jax_masking = backend == "jax";
}

void Layer::reset_states() {
  require_sequence_layer("reset_states");
  if (!config_.stateful) fail(Error::Code::state, "reset_states: Layer must be stateful.");
  std::lock_guard<std::mutex> lock(mutex_);
  stored_->reset();
}

void Layer::reset_states(const float* states, std::size_t len, int num_given) {
  require_sequence_layer("reset_states");
  if (!config_.stateful) fail(Error::Code::state, "reset_states: Layer must be stateful.");
  const int n = config_.num_states();
  if (num_given != n)
    fail(Error::Code::shape, "states: Layer ", config_.name.empty() ? kind_name(config_.kind) : config_.name.c_str(),
         " expects ", n, " states, but it received ", num_given, " state values.");
  std::lock_guard<std::mutex> lock(mutex_);
  if (!states) fail(Error::Code::invalid_argument, "states: is NULL");
  const std::size_t want = static_cast<std::size_t>(stored_->size());
  if (len != want)
    fail(Error::Code::shape, "states: State is incompatible with layer ",
         config_.name.empty() ? kind_name(config_.kind) : config_.name.c_str(), ": expected ", n, " x shape=(",
         config_.batch_size, ", ", config_.units, ") = ", want, " floats but found ", len);
  stored_->set(states, len, num_given, "states");
}

void Layer::get_states(float* out, std::size_t len) const {
  require_sequence_layer("get_states");
  if (!config_.stateful) fail(Error::Code::state, "get_states: Layer must be stateful.");
  std::lock_guard<std::mutex> lock(mutex_);
  stored_->get(out, len);
}

// ----- cells -----

std::vector<RowMatrix> Layer::cached_masks(std::vector<RowMatrix>& cache, bool& cached, Index batch, bool training,
                                           float rate, int count, Index cols, const char* what) {
  if (batch <= 0) fail(Error::Code::invalid_argument, "batch: expected a positive batch size, got ", batch);
  if (rate <= 0.0f) return {};
  // The batch is all the caller gives: bounded like a state's, or a small call could ask for GiBs.
  check_limit(Limit::batch, static_cast<double>(batch), std::string("batch (") + what + " mask)");
  check_limit(Limit::state_bytes, 4.0 * count * static_cast<double>(batch) * static_cast<double>(cols),
              std::string(what) + " masks: " + std::to_string(count) + " of (" + std::to_string(batch) + ", " +
                  std::to_string(cols) + ")");
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached) {
    if (cache.front().rows() != batch)
      fail(Error::Code::shape, "batch: the cached ", what, " mask was made for batch ", cache.front().rows(), ", not ",
           batch, "; reset the ", what, " mask first");
    return cache;
  }
  // Keras 2 caches ones when asked outside training; Keras 3 always samples.
  if (config_.dialect.dialect == Dialect::keras2 && !training)
    cache.assign(static_cast<std::size_t>(count), RowMatrix::Ones(batch, cols));
  else
    cache = make_masks(count, batch, cols, rate);
  cached = true;
  return cache;
}

std::vector<RowMatrix> Layer::dropout_mask(Index batch, bool training) {
  materialize();
  return cached_masks(dropout_cache_, dropout_cached_, batch, training, config_.dropout, mask_count(),
                      config_.input_size, "dropout");
}

std::vector<RowMatrix> Layer::recurrent_dropout_mask(Index batch, bool training) {
  materialize();
  return cached_masks(recurrent_dropout_cache_, recurrent_dropout_cached_, batch, training, config_.recurrent_dropout,
                      config_.gates(), config_.units, "recurrent dropout");
}

void Layer::reset_dropout_mask() {
  std::lock_guard<std::mutex> lock(mutex_);
  dropout_cache_.clear();
  dropout_cached_ = false;
}

void Layer::reset_recurrent_dropout_mask() {
  std::lock_guard<std::mutex> lock(mutex_);
  recurrent_dropout_cache_.clear();
  recurrent_dropout_cached_ = false;
}

void Layer::cell_call(const float* input, std::size_t input_len, Index batch, const float* states,
                      std::size_t states_len, int num_given, bool training, float* output, std::size_t output_len,
                      float* new_states, std::size_t new_states_len) {
  materialize();
  require_cell("cell_call");
  const Index B = batch, F = config_.input_size, u = config_.units;
  const int ns = config_.num_states();
  if (B <= 0) fail(Error::Code::invalid_argument, "batch: expected a positive batch size, got ", B);
  if (!input) fail(Error::Code::invalid_argument, "input: is NULL");
  if (input_len != checked_product({B, F}, "input"))
    fail(Error::Code::shape, "input: expected (B, F) = (", B, ", ", F, ") = ", B * F, " floats, got ", input_len);
  check_states_arg(states, states_len, num_given, B, "states");
  if (!output) fail(Error::Code::invalid_argument, "output: is NULL");
  if (output_len != static_cast<std::size_t>(B * u))
    fail(Error::Code::shape, "output: expected (B, units) = (", B, ", ", u, ") = ", B * u, " floats, got ", output_len);
  if (new_states && new_states_len != static_cast<std::size_t>(ns * B * u))
    fail(Error::Code::shape, "new_states: expected ", ns, " x (", B, ", ", u, ") = ", ns * B * u, " floats, got ",
         new_states_len);
  check_regularization_cost(config_.activity_regularizer, B, u, "activity_regularizer on the output and states");

  std::vector<std::vector<float>> dropped;
  std::vector<const float*> inputs{input};
  std::vector<RowMatrix> rec_masks;
  const float d = config_.dropout, rd = config_.recurrent_dropout;
  if (training && d > 0.0f && d < 1.0f) {
    const std::vector<RowMatrix> masks = dropout_mask(B, training);
    const std::size_t used = config_.effective_implementation() == 1 ? masks.size() : 1;  // impl 2 uses mask 0
    inputs.clear();
    for (std::size_t m = 0; m < used; ++m) {
      dropped.push_back(apply_row_mask(input, B, F, B, 1, false, masks[m]));
      inputs.push_back(dropped.back().data());
    }
  }
  if (training && rd > 0.0f && rd < 1.0f) rec_masks = recurrent_dropout_mask(B, training);

  std::vector<RowMatrix> in(static_cast<std::size_t>(ns)), out(static_cast<std::size_t>(ns));
  for (int s = 0; s < ns; ++s)
    in[static_cast<std::size_t>(s)] = Eigen::Map<const RowMatrix>(states + s * B * u, B, u);
  if (gpu_) {
    // One timestep of the layer loop: the kernel route with T = 1.
    SequenceJob job;
    job.inputs = inputs.data();
    job.num_inputs = static_cast<int>(inputs.size());
    job.batch = B;
    job.timesteps = 1;
    job.recurrent_masks = rec_masks.empty() ? nullptr : &rec_masks;
    job.states = in.data();
    job.last_output = output;
    gpu_->run_job(job, nullptr);
    out = std::move(in);
  } else {
    RowMatrix xp;
    StepWorkspace ws;
    cell_.project(inputs.data(), static_cast<int>(inputs.size()), B, xp);
    cell_.step(xp.data(), xp.cols(), B, in.data(), out.data(), rec_masks.empty() ? nullptr : &rec_masks, ws);
    std::memcpy(output, out[0].data(), static_cast<std::size_t>(B * u) * sizeof(float));
  }
  if (new_states)
    for (int s = 0; s < ns; ++s)
      std::memcpy(new_states + s * B * u, out[static_cast<std::size_t>(s)].data(),
                  static_cast<std::size_t>(B * u) * sizeof(float));
  if (config_.activity_regularizer.active()) {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool divide = config_.dialect.dialect == Dialect::keras2 || config_.dialect.at_least(3, 14);
    activity_losses_.clear();
    // A cell returns (output, new_states): Keras regularises every flattened piece.
    const float* pieces[3] = {output, out[0].data(), ns > 1 ? out[1].data() : nullptr};
    const char* names[3] = {"activity:output", "activity:state_h", "activity:state_c"};
    for (int i = 0; i <= ns; ++i) {
      const float v = regularization_penalty(config_.activity_regularizer, pieces[i], B, u);
      activity_losses_.push_back({names[i], divide ? v / static_cast<float>(B) : v});
    }
  }
}

// ----- losses and constraints -----

std::vector<Loss> Layer::losses() const { return collect_losses(true); }

std::vector<std::string> Layer::loss_names() const {
  std::vector<std::string> names;
  for (Loss& l : collect_losses(false)) names.push_back(std::move(l.name));
  return names;
}

std::vector<Loss> Layer::collect_losses(bool values) const {
  materialize();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Loss> out = activity_losses_;
  // Keras 3 reports weight penalties for trainable weights only.
  if (config_.dialect.dialect == Dialect::keras3 && !config_.trainable) return out;
  const RegularizerSpec* regs[3] = {&config_.kernel_regularizer, &config_.recurrent_regularizer,
                                    &config_.bias_regularizer};
  std::vector<std::size_t> penalized;
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    if (!regs[i]->active()) continue;
    penalized.push_back(i);
    // Checked on the shapes, before any weight is unpacked into the Keras layout.
    const std::vector<Index>& shape = specs_[i].shape;
    if (values)
      check_regularization_cost(*regs[i], shape.size() == 2 ? shape[0] : 1, shape.size() == 2 ? shape[1] : shape[0],
                                std::string(specs_[i].name) + "_regularizer");
  }
  if (!values || penalized.empty()) {
    for (std::size_t i : penalized) out.push_back({specs_[i].name, 0.0f});
    return out;
  }
  const std::vector<Tensor> keras = keras_weights();
  for (std::size_t i : penalized) {
    const Tensor& w = keras[i];
    out.push_back({specs_[i].name, regularization_penalty(*regs[i], w.data(), w.value.rows(), w.value.cols())});
  }
  return out;
}

void Layer::apply_constraints() {
  materialize();
  std::lock_guard<std::mutex> lock(mutex_);
  const ConstraintSpec* specs[3] = {&config_.kernel_constraint, &config_.recurrent_constraint, &config_.bias_constraint};
  const char* fields[3] = {"kernel_constraint", "recurrent_constraint", "bias_constraint"};
  // Constrain copies and commit only when every constraint succeeded, so a failing one (e.g. an
  // axis the weight does not have) leaves all weights unchanged.
  std::vector<Tensor> updated = keras_weights();
  for (std::size_t i = 0; i < updated.size(); ++i)
    apply_constraint(*specs[i], updated[i], config_.dialect.dialect, fields[i]);
  for (std::size_t i = 0; i < updated.size(); ++i) store_weight(i, updated[i].data());
  refresh_cell();
}

// ----- precision -----

void Layer::set_precision(Precision precision) {
  materialize();
  if (gpu_ && precision != Precision::float32)
    fail(Error::Code::unsupported, "precision \"", precision_name(precision), "\": layer '", config_.name,
         "' runs on ", placement_.backend, " and the GPU runs float32 only; move it to the CPU first (device \"cpu\")");
  std::lock_guard<std::mutex> lock(mutex_);
  cell_.set_precision(precision);
}

// ----- devices -----

void Layer::set_device(const DeviceRequest& request) {
  materialize();
  Placement p;
  p.requested = request.to_string();
  std::shared_ptr<gpu::GpuLayer> twin;
  auto place_on_gpu = [&](int ordinal) {
    if (cell_.precision() != Precision::float32)
      fail(Error::Code::unsupported, "layer '", config_.name, "' has precision \"", precision_name(cell_.precision()),
           "\" and the GPU runs float32 only; set the precision to \"float32\" first");
    twin = std::make_shared<gpu::GpuLayer>(config_, ordinal);
    twin->upload(params());
    p.backend = "cuda:" + std::to_string(ordinal);
    p.ordinal = ordinal;
    p.path = twin->path().cudnn ? "cudnn" : "kernel";
    p.reason = twin->path().reason;
    p.device_name = gpu::device_name(ordinal);
  };
  switch (request.kind) {
    case DeviceRequest::Kind::cpu: break;
    case DeviceRequest::Kind::cuda: place_on_gpu(request.ordinal); break;
    case DeviceRequest::Kind::automatic:
      if (gpu_device_count() > 0) {
        try {
          place_on_gpu(0);
        } catch (const Error& e) {
          twin.reset();
          p = Placement{};
          p.requested = "auto";
          p.reason = std::string("auto: the GPU could not take the layer (") + e.what() + "), so it runs on the CPU";
        }
      } else {
        p.reason = "auto: " + gpu::plugin().why + "; the layer runs on the CPU";
      }
      break;
  }
  if (request.kind == DeviceRequest::Kind::cpu) p.reason = "the CPU backend was asked for";
  const bool fell_back = request.kind == DeviceRequest::Kind::automatic && !twin;
  log::write(fell_back ? log::Level::warning : log::Level::info, "layer '", config_.name, "' (", kind_name(config_.kind),
             "): device ", p.requested, " -> ", p.backend.empty() ? "cpu" : p.backend, ", route ",
             p.path.empty() ? "cpu" : p.path, ": ", p.reason);
  std::lock_guard<std::mutex> lock(mutex_);
  gpu_ = std::move(twin);
  placement_ = std::move(p);
}

Placement Layer::placement() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return placement_;
}

void Layer::place_state(State& state) const {
  if (gpu_) resident_state(state);
  else state.detach_device();
}

gpu::DeviceState* Layer::resident_state(State& state) const { return state.resident_on(gpu_->ordinal()); }

void Layer::call_states(State* const* states, std::size_t count, const float* input, std::size_t input_len,
                        const std::uint8_t* mask, std::size_t mask_len, float* output, std::size_t output_len) const {
  materialize();
  require_sequence_layer("forward_states");
  const Index F = config_.input_size, u = config_.units;
  const int ns = config_.num_states();
  const Index rows = stream_rows(states, count);
  if (!input) fail(Error::Code::invalid_argument, "input: is NULL");
  if (input_len != static_cast<std::size_t>(rows * F))
    fail(Error::Code::shape, "input: expected ", rows * F, " floats for ", rows, " stream rows x ", F,
         " features, got ", input_len);
  if (mask) {
    if (config_.is_cudnn()) fail(Error::Code::unsupported, "mask: Masking is not supported for CuDNN RNNs.");
    if (mask_len != static_cast<std::size_t>(rows))
      fail(Error::Code::shape, "mask: expected ", rows, " values (one per stream row), got ", mask_len);
  }
  if (!output) fail(Error::Code::invalid_argument, "output: is NULL");
  if (output_len != static_cast<std::size_t>(rows * u))
    fail(Error::Code::shape, "output: expected ", rows * u, " floats (", rows, " stream rows x ", u, " units), got ",
         output_len);

  if (config_.is_cudnn() && config_.time_major && config_.go_backwards) {
    // Keras 2's CuDNN time_major + go_backwards reverses each call's batch axis: per stream.
    std::size_t row = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const Index b = states[i]->batch();
      call_state(*states[i], input + row * F, static_cast<std::size_t>(b * F), 1, nullptr, 0, output + row * u,
                 static_cast<std::size_t>(b * u));
      row += static_cast<std::size_t>(b);
    }
    return;
  }
  if (gpu_) {
    step_rows_on_gpu(states, count, rows, input, mask, output, RECUR_GPU_MEMORY_HOST, nullptr);
    return;
  }

  // CPU: gather the streams into one batch so the step is one GEMM, then scatter back.
  std::vector<RowMatrix> batch_states(static_cast<std::size_t>(ns), RowMatrix(rows, u));
  RowMatrix carried(rows, u);
  Index r = 0;
  for (std::size_t i = 0; i < count; ++i) {
    State& st = *states[i];
    st.detach_device();
    const Index b = st.batch();
    for (int s = 0; s < ns; ++s) batch_states[static_cast<std::size_t>(s)].middleRows(r, b) = st.tensor(s);
    carried.middleRows(r, b) = st.carried_output();
    r += b;
  }
  std::vector<float> batch_reversed;
  const float* inputs[1] = {cudnn_reversal(input, rows, 1, batch_reversed)};
  SequenceJob job = sequence_job(rows, 1, mask, nullptr);
  job.sequence_output = nullptr;
  job.last_output = output;
  job.inputs = inputs;
  job.states = batch_states.data();
  job.carried_output = &carried;
  SequenceWorkspace& ws = tls_workspace;
  cpu_backend().run_sequence(cell_, job, ws);
  r = 0;
  for (std::size_t i = 0; i < count; ++i) {
    State& st = *states[i];
    const Index b = st.batch();
    for (int s = 0; s < ns; ++s) st.tensor(s) = batch_states[static_cast<std::size_t>(s)].middleRows(r, b);
    st.carried_output() = carried.middleRows(r, b);
    r += b;
  }
}

// The rows of `count` states of this layer's shape together (the list and each state checked).
Index Layer::stream_rows(State* const* states, std::size_t count) const {
  if (!states) fail(Error::Code::invalid_argument, "states: is NULL");
  if (count == 0) fail(Error::Code::invalid_argument, "num_states: expected at least 1 state, got 0");
  const int ns = config_.num_states();
  Index rows = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const State* st = states[i];
    if (!st) fail(Error::Code::invalid_argument, "states[", i, "]: is NULL");
    if (st->num_states() != ns || st->units() != config_.units)
      fail(Error::Code::shape, "states[", i, "]: holds ", st->num_states(), " tensor(s) of ", st->units(), " units; ",
           kind_name(config_.kind), " needs ", ns, " of ", config_.units, " units");
    rows += st->batch();
  }
  return rows;
}

// Each row of the batch points into its stream's resident buffer; the plugin gathers and scatters
// them on the device, so the step is one batch.
void Layer::step_rows_on_gpu(State* const* states, std::size_t count, Index rows, const float* input,
                             const std::uint8_t* mask, float* output, int memory, void* stream) const {
  const Index u = config_.units;
  const int ns = config_.num_states();
  std::vector<float*> h(static_cast<std::size_t>(rows)), c, carried(static_cast<std::size_t>(rows));
  if (ns == 2) c.resize(static_cast<std::size_t>(rows));
  // Keras 3 on JAX: a masked row repeats h itself. The step's output is then h (a valid row's new h,
  // a masked row's kept one), so a row's carried output can be its h, read and written back as the
  // same value. With zero_output_for_mask a masked row's output is 0, whatever came before.
  const SequenceJob job = sequence_job(rows, 1, mask, nullptr);
  const bool carry_h = job.output_starts_at_state && !job.zero_output_for_mask;
  std::size_t r = 0;
  for (std::size_t i = 0; i < count; ++i) {
    gpu::DeviceState* d = resident_state(*states[i]);
    const Index b = states[i]->batch();
    float* const hs = d->states();  // (each a call into the plugin: once per state, not per row)
    float* const cs = d->carried();
    for (Index j = 0; j < b; ++j, ++r) {
      h[r] = hs + j * u;
      if (ns == 2) c[r] = hs + b * u + j * u;
      carried[r] = carry_h ? h[r] : cs + j * u;
    }
  }
  recur_gpu_step_rows step{};
  step.rows = rows;
  step.h_rows = h.data();
  step.c_rows = ns == 2 ? c.data() : nullptr;
  step.carried_rows = carried.data();
  step.input = input;
  step.mask = mask;
  step.zero_output_for_mask = job.zero_output_for_mask;
  step.output = output;
  step.memory = memory;
  step.stream = stream;
  gpu_->step_rows(step);
}

void Layer::call_states_device(void* stream, State* const* states, std::size_t count, const float* d_input,
                               const std::uint8_t* mask, std::size_t mask_len, float* d_output) const {
  materialize();
  require_sequence_layer("forward_states_device");
  if (!gpu_)
    fail(Error::Code::state, "forward_states_device: ", kind_name(config_.kind),
         " runs on the CPU; place it on a GPU first (recur_layer_set_device(layer, \"cuda\"))");
  const Index rows = stream_rows(states, count);
  if (!d_input) fail(Error::Code::invalid_argument, "d_input: is NULL");
  if (!d_output) fail(Error::Code::invalid_argument, "d_output: is NULL");
  if (mask) {
    if (config_.is_cudnn()) fail(Error::Code::unsupported, "mask: Masking is not supported for CuDNN RNNs.");
    if (mask_len != static_cast<std::size_t>(rows))
      fail(Error::Code::shape, "mask: expected ", rows, " values (one per stream row), got ", mask_len);
  }
  const std::string issue = device_call_issue();
  if (!issue.empty()) fail(Error::Code::unsupported, "forward_states_device: ", issue);
  if (count == 1) {
    // One state holding every stream's rows is already one slab on the device: the step runs on
    // its buffer directly, with no gather, scatter or per-row pointers.
    const SequenceJob job = sequence_job(rows, 1, mask, nullptr);
    gpu_->run_device_resident(job, d_input, *resident_state(*states[0]), nullptr, d_output, stream);
    return;
  }
  step_rows_on_gpu(states, count, rows, d_input, mask, d_output, RECUR_GPU_MEMORY_DEVICE, stream);
}

std::string Layer::device_call_issue() const {
  if (config_.is_cudnn() && config_.time_major && config_.go_backwards)
    return "Keras 2's CuDNN time_major + go_backwards reverses the batch axis; run it with host buffers";
  return "";
}

void Layer::call_device(void* stream, const float* d_input, Index B, Index T, const std::uint8_t* mask,
                        std::size_t mask_len, const float* d_initial_state, int num_initial_states, float* d_output,
                        float* d_final_state) {
  materialize();
  require_sequence_layer("forward_device");
  if (!gpu_)
    fail(Error::Code::state, "forward_device: ", kind_name(config_.kind),
         " runs on the CPU; place it on a GPU first (recur_layer_set_device(layer, \"cuda\"))");
  if (B <= 0) fail(Error::Code::invalid_argument, "batch: expected a positive batch size, got ", B);
  if (T <= 0) fail(Error::Code::invalid_argument, "timesteps: expected at least 1 timestep, got ", T);
  if (!d_input) fail(Error::Code::invalid_argument, "d_input: is NULL");
  if (!d_output) fail(Error::Code::invalid_argument, "d_output: is NULL");
  checked_product({B, T, config_.input_size}, "d_input");
  if (mask) {
    if (config_.is_cudnn()) fail(Error::Code::unsupported, "mask: Masking is not supported for CuDNN RNNs.");
    if (mask_len != static_cast<std::size_t>(B * T))
      fail(Error::Code::shape, "mask: expected ", B * T, " values, got ", mask_len);
  }
  if (d_initial_state || num_initial_states != 0) {
    if (num_initial_states != config_.num_states())
      fail(Error::Code::shape, "initial_state: ", kind_name(config_.kind), " has ", config_.num_states(),
           " state(s) but was passed ", num_initial_states);
    if (!d_initial_state) fail(Error::Code::invalid_argument, "d_initial_state: is NULL");
  }
  if (config_.stateful && B != config_.batch_size)
    fail(Error::Code::shape, "batch: this stateful layer has batch size ", config_.batch_size, "; the input has batch ",
         B);
  const std::string issue = device_call_issue();
  if (!issue.empty()) fail(Error::Code::unsupported, "forward_device: ", issue);
  const int ns = config_.num_states();
  const std::int64_t state_floats = ns * B * config_.units;
  const SequenceJob job = sequence_job(B, T, mask, nullptr);
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (config_.stateful) lock.lock();
  if (!d_initial_state && !d_final_state && !config_.stateful) {
    // Zero states in, none out: the plugin zeroes its own scratch, with no allocation or copy here.
    gpu_->run_device(stream, job, d_input, nullptr, config_.return_sequences ? d_output : nullptr,
                     config_.return_sequences ? nullptr : d_output);
    return;
  }
  // The states live in a buffer of recur's: the caller's initial and final state buffers may be
  // absent or the same memory.
  gpu::DeviceBuffer states(gpu_->ordinal(), state_floats);
  if (d_initial_state) {
    char err[512] = {0};
    const int rc = gpu_->table().copy2d(gpu_->ordinal(), d_initial_state, state_floats, states.data(), state_floats, 1,
                                       state_floats, err, sizeof err);
    if (rc != RECUR_GPU_OK) gpu::raise(rc, err, "copying initial_state");
  } else {
    std::vector<float> host(static_cast<std::size_t>(state_floats), 0.0f);
    if (config_.stateful)
      for (int s = 0; s < ns; ++s)
        std::memcpy(host.data() + s * B * config_.units, stored_->tensor(s).data(),
                    static_cast<std::size_t>(B * config_.units) * sizeof(float));
    states.upload(0, host.data(), state_floats);
  }
  gpu_->run_device(stream, job, d_input, states.data(), config_.return_sequences ? d_output : nullptr,
                   config_.return_sequences ? nullptr : d_output);
  if (d_final_state) {
    char err[512] = {0};
    const int rc = gpu_->table().copy2d(gpu_->ordinal(), states.data(), state_floats, d_final_state, state_floats, 1,
                                       state_floats, err, sizeof err);
    if (rc != RECUR_GPU_OK) gpu::raise(rc, err, "copying final_state");
  }
  if (config_.stateful) {
    std::vector<float> host(static_cast<std::size_t>(state_floats));
    states.download(0, host.data(), state_floats);
    for (int s = 0; s < ns; ++s)
      std::memcpy(stored_->tensor(s).data(), host.data() + s * B * config_.units,
                  static_cast<std::size_t>(B * config_.units) * sizeof(float));
  }
}

}  // namespace recur
