// SPDX-License-Identifier: Apache-2.0
// recur.hpp: a header-only C++17 wrapper over the C ABI in recur.h: RAII handles, exceptions
// instead of status codes, std::vector in and out. It adds no symbols to the library and works
// with any librecur of the same major version.
//
// Errors: every failing call throws recur::Error, carrying the recur_status and the library's
// message (read on the failing thread, inside the wrapper call).
// Ownership: Layer, State, Model, ModelState and RunOptions own their handle; they are movable,
// not copyable. Input is a view: the data it points at must outlive the call it is passed to.
// Threads: the rules of recur.h apply (forward_state on one Layer from many threads, each with
// its own State, is safe).
#ifndef RECUR_RECUR_HPP
#define RECUR_RECUR_HPP

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "recur/recur.h"

namespace recur {
// Users write recur::Model, recur::Layer, ...; the inline namespace gives this header's classes
// link names of their own. The library's internal C++ core also lives in namespace recur, and a
// static librecur.a carries its symbols: without it, a wrapper class's inline members and the
// core class of the same name would be one symbol to the linker, and it would keep either.
inline namespace wrapper {

class Error : public std::runtime_error {
 public:
  Error(recur_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  recur_status status() const noexcept { return status_; }

 private:
  recur_status status_;
};

namespace detail {
inline void check(recur_status status) {
  if (status != RECUR_OK) throw Error(status, recur_last_error());
}
}  // namespace detail

// The constructor arguments of a layer; fields as in recur_layer_options (strings must outlive
// the create call).
struct Options : recur_layer_options {
  Options() { detail::check(recur_layer_options_init(this, RECUR_LAYER_OPTIONS_VERSION)); }
};

// Where something runs and why (recur_device_info with owned strings).
struct Device {
  std::string requested, backend, path, reason, device_name;
};

namespace detail {
inline Device device_of(const recur_device_info& i) {
  return Device{i.requested, i.backend, i.path, i.reason, i.device_name};
}
inline recur_device_info device_info() {
  recur_device_info i{};
  i.version = RECUR_DEVICE_INFO_VERSION;
  return i;
}
}  // namespace detail

// Usable CUDA devices (0 without plugin, driver or GPU), and whether `device` can run now.
inline int device_count() {
  std::int32_t n = 0;
  detail::check(recur_device_count(&n));
  return n;
}
inline void check_device(const std::string& device) { detail::check(recur_device_check(device.c_str())); }

class State;

class Layer {
 public:
  explicit Layer(const Options& options) { detail::check(recur_layer_create(&handle_, &options)); }
  // From the JSON Keras writes for the layer ({"class_name": ..., "config": {...}}).
  static Layer from_json(const std::string& json, int input_size = 0, int dialect = RECUR_DIALECT_AUTO,
                         const char* keras_version = nullptr) {
    recur_layer* h = nullptr;
    detail::check(recur_layer_create_from_json(&h, json.c_str(), input_size, dialect, keras_version));
    return Layer(h);
  }
  explicit Layer(recur_layer* owned) noexcept : handle_(owned) {}
  Layer(Layer&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Layer& operator=(Layer&& other) noexcept {
    if (this != &other) {
      recur_layer_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;
  ~Layer() { recur_layer_destroy(handle_); }

  recur_layer* get() const noexcept { return handle_; }

  recur_layer_info info() const {
    recur_layer_info i{};
    i.version = RECUR_LAYER_INFO_VERSION;
    detail::check(recur_layer_get_info(handle_, &i));
    return i;
  }

  struct Result {
    std::vector<float> output;  // (B, T, units) with return_sequences, else (B, units)
    std::vector<float> states;  // final h (and c), each (B, units), concatenated
  };

  // A Keras call: input (B, T, F), optional (B, T) mask and initial states ([h] or [h, c]).
  Result forward(const std::vector<float>& input, int batch, int timesteps,
                 const std::vector<std::uint8_t>& mask = {}, const std::vector<float>& initial_state = {},
                 bool training = false) {
    const recur_layer_info i = info();
    Result r;
    std::size_t out_len = 0;
    detail::check(recur_layer_output_length(handle_, batch, timesteps, &out_len));
    r.output.resize(out_len);
    r.states.resize(static_cast<std::size_t>(i.num_states) * static_cast<std::size_t>(batch) *
                    static_cast<std::size_t>(i.units));
    detail::check(recur_layer_forward(handle_, input.data(), input.size(), batch, timesteps,
                                      mask.empty() ? nullptr : mask.data(), mask.size(),
                                      initial_state.empty() ? nullptr : initial_state.data(), initial_state.size(),
                                      initial_state.empty() ? 0 : i.num_states, training ? 1 : 0, r.output.data(),
                                      r.output.size(), r.states.data(), r.states.size()));
    return r;
  }

  // Streams `state` through `timesteps` steps; writes into `output` without allocating.
  inline void forward_state(State& state, const float* input, std::size_t input_len, int timesteps, float* output,
                            std::size_t output_len) const;
  // One step for many streams as one batch: input (sum of their batches, F), output likewise.
  inline void forward_states(const std::vector<State*>& states, const float* input, std::size_t input_len,
                             float* output, std::size_t output_len) const;

  // "cpu", "cuda", "cuda:N" or "auto"; throws Error (UNSUPPORTED) for a GPU that cannot run.
  void set_device(const std::string& device) { detail::check(recur_layer_set_device(handle_, device.c_str())); }
  Device device() const {
    recur_device_info i = detail::device_info();
    detail::check(recur_layer_get_device(handle_, &i));
    return detail::device_of(i);
  }

  std::vector<float> weight(int index) const {
    std::int64_t dims[2] = {0, 0};
    std::int32_t nd = 0;
    detail::check(recur_layer_weight_shape(handle_, index, dims, &nd));
    std::vector<float> w(static_cast<std::size_t>(nd == 2 ? dims[0] * dims[1] : dims[0]));
    detail::check(recur_layer_get_weight(handle_, index, w.data(), w.size()));
    return w;
  }
  void set_weight(int index, const std::vector<float>& values) {
    detail::check(recur_layer_set_weight(handle_, index, values.data(), values.size(), nullptr, 0));
  }

 private:
  recur_layer* handle_ = nullptr;
};

class State {
 public:
  State(const Layer& layer, int batch) { detail::check(recur_state_create(&handle_, layer.get(), batch)); }
  State(State&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  State& operator=(State&& other) noexcept {
    if (this != &other) {
      recur_state_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() { recur_state_destroy(handle_); }

  recur_state* get() const noexcept { return handle_; }
  void reset() { detail::check(recur_state_reset(handle_)); }
  void set_device(const std::string& device) { detail::check(recur_state_set_device(handle_, device.c_str())); }
  Device device() const {
    recur_device_info i = detail::device_info();
    detail::check(recur_state_get_device(handle_, &i));
    return detail::device_of(i);
  }

 private:
  recur_state* handle_ = nullptr;
};

inline void Layer::forward_state(State& state, const float* input, std::size_t input_len, int timesteps,
                                 float* output, std::size_t output_len) const {
  detail::check(recur_layer_forward_state(handle_, state.get(), input, input_len, timesteps, nullptr, 0, output,
                                          output_len));
}

inline void Layer::forward_states(const std::vector<State*>& states, const float* input, std::size_t input_len,
                                  float* output, std::size_t output_len) const {
  std::vector<recur_state*> handles;
  handles.reserve(states.size());
  for (State* s : states) handles.push_back(s ? s->get() : nullptr);
  detail::check(recur_layer_forward_states(handle_, handles.data(), static_cast<std::int32_t>(handles.size()), input,
                                           input_len, nullptr, 0, output, output_len));
}

// ---- models by name (since 0.6) ----

enum class DType : std::int32_t {
  float32 = RECUR_DTYPE_FLOAT32,
  int32 = RECUR_DTYPE_INT32,
  int64 = RECUR_DTYPE_INT64,
  string = RECUR_DTYPE_STRING  // since 0.7
};

// A model input or output as the model declares it: dims batch first, -1 where the run decides.
struct TensorInfo {
  std::string name;     // an output's name selects it in run(); "name:k" where a Keras 3 layer's
                        // outputs share one name
  std::vector<std::int64_t> dims;
  bool token_ids = false;  // inputs: integer ids (give int32/int64 to keep them exact)
  bool sequence = false;   // inputs: has a timesteps axis (dims[1]), which masks address
  bool strings = false;    // inputs: texts (Keras dtype "string"; give std::string or const char*; since 0.7)
};

// One named input: a view of the caller's row-major data (float, int32_t or int64_t) and its dims,
// with an optional (B, T) mask. Nothing is copied; the data must outlive the call.
class Input {
 public:
  Input(std::string name, const float* data, std::size_t length, std::vector<std::int64_t> dims)
      : Input(std::move(name), DType::float32, data, length, std::move(dims)) {}
  Input(std::string name, const std::int32_t* data, std::size_t length, std::vector<std::int64_t> dims)
      : Input(std::move(name), DType::int32, data, length, std::move(dims)) {}
  Input(std::string name, const std::int64_t* data, std::size_t length, std::vector<std::int64_t> dims)
      : Input(std::move(name), DType::int64, data, length, std::move(dims)) {}
  template <typename T>
  Input(std::string name, const std::vector<T>& data, std::vector<std::int64_t> dims)
      : Input(std::move(name), data.data(), data.size(), std::move(dims)) {}
  // Texts for a string input (since 0.7): NUL-terminated UTF-8, row-major over dims.
  Input(std::string name, const char* const* texts, std::size_t length, std::vector<std::int64_t> dims)
      : Input(std::move(name), DType::string, texts, length, std::move(dims)) {}
  // The strings must outlive the call; the Input holds pointers to them.
  Input(std::string name, const std::vector<std::string>& texts, std::vector<std::int64_t> dims)
      : Input(std::move(name), DType::string, nullptr, texts.size(), std::move(dims)) {
    pointers_ = std::make_shared<std::vector<const char*>>();
    for (const std::string& t : texts) pointers_->push_back(t.c_str());
    data_ = pointers_->data();
  }

  Input& mask(const std::uint8_t* mask, std::size_t length) {
    mask_ = mask;
    mask_length_ = length;
    return *this;
  }
  Input& mask(const std::vector<std::uint8_t>& m) { return mask(m.data(), m.size()); }

  // The C descriptor; valid while this Input lives.
  recur_tensor tensor() const {
    recur_tensor t;
    detail::check(recur_tensor_init(&t, RECUR_TENSOR_VERSION));
    t.name = name_.c_str();
    t.dtype = static_cast<std::int32_t>(dtype_);
    t.data = data_;
    t.length = length_;
    if (dims_.size() > RECUR_MAX_RANK)
      throw Error(RECUR_ERR_SHAPE, "recur::Input '" + name_ + "': rank " + std::to_string(dims_.size()) +
                                       " is above RECUR_MAX_RANK (" + std::to_string(RECUR_MAX_RANK) + ")");
    t.rank = static_cast<std::int32_t>(dims_.size());
    for (std::size_t i = 0; i < dims_.size(); ++i) t.dims[i] = dims_[i];
    t.mask = mask_;
    t.mask_length = mask_length_;
    return t;
  }

 private:
  Input(std::string name, DType dtype, const void* data, std::size_t length, std::vector<std::int64_t> dims)
      : name_(std::move(name)), dtype_(dtype), data_(data), length_(length), dims_(std::move(dims)) {}
  std::string name_;
  DType dtype_;
  const void* data_;
  std::size_t length_;
  std::vector<std::int64_t> dims_;
  const std::uint8_t* mask_ = nullptr;
  std::size_t mask_length_ = 0;
  std::shared_ptr<std::vector<const char*>> pointers_;  // texts given as std::string
};

// An output run() allocated: floats and dims.
struct Tensor {
  std::string name;
  std::vector<float> data;
  std::vector<std::int64_t> dims;
};

// An output into the caller's buffer (no allocation): run_into() fills dims and length.
struct OutputBuffer {
  std::string name;
  float* data = nullptr;
  std::size_t capacity = 0;  // floats
  std::vector<std::int64_t> dims;
  std::size_t length = 0;
};

// Cancels runs and steps from another thread: cancel() makes every call using these options
// throw Error(RECUR_ERR_CANCELLED) within a timestep; reset() makes them usable again.
class RunOptions {
 public:
  RunOptions() { detail::check(recur_run_options_create(&handle_)); }
  RunOptions(RunOptions&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  RunOptions& operator=(RunOptions&& other) noexcept {
    if (this != &other) {
      recur_run_options_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  RunOptions(const RunOptions&) = delete;
  RunOptions& operator=(const RunOptions&) = delete;
  ~RunOptions() { recur_run_options_destroy(handle_); }

  void cancel() { detail::check(recur_run_options_cancel(handle_)); }
  void reset() { detail::check(recur_run_options_reset(handle_)); }
  bool cancelled() const {
    std::int32_t c = 0;
    detail::check(recur_run_options_is_cancelled(handle_, &c));
    return c != 0;
  }
  recur_run_options* get() const noexcept { return handle_; }

 private:
  recur_run_options* handle_ = nullptr;
};

namespace detail {
inline std::vector<recur_tensor> tensors_of(const std::vector<Input>& inputs) {
  std::vector<recur_tensor> t;
  t.reserve(inputs.size());
  for (const Input& i : inputs) t.push_back(i.tensor());
  return t;
}
inline recur_output output_of(const std::string& name, float* data, std::size_t capacity) {
  recur_output o;
  check(recur_output_init(&o, RECUR_OUTPUT_VERSION));
  o.name = name.c_str();
  o.data = data;
  o.capacity = capacity;
  return o;
}
inline std::vector<std::int64_t> dims_of(const recur_output& o) { return std::vector<std::int64_t>(o.dims, o.dims + o.rank); }

// Asks `shapes` for the outputs' sizes, allocates them, then runs `run`.
template <typename Shapes, typename Run>
std::vector<Tensor> allocate_and_run(const std::vector<Input>& inputs, const std::vector<std::string>& names, Shapes shapes,
                                     Run run) {
  const std::vector<recur_tensor> in = tensors_of(inputs);
  std::vector<recur_output> out;
  for (const std::string& n : names) out.push_back(output_of(n, nullptr, 0));
  check(shapes(in.data(), static_cast<std::int32_t>(in.size()), out.data(), static_cast<std::int32_t>(out.size())));
  std::vector<Tensor> result(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    result[k].name = names[k];
    result[k].data.resize(out[k].length);
    out[k].data = result[k].data.data();
    out[k].capacity = out[k].length;
  }
  check(run(in.data(), static_cast<std::int32_t>(in.size()), out.data(), static_cast<std::int32_t>(out.size())));
  for (std::size_t k = 0; k < names.size(); ++k) result[k].dims = dims_of(out[k]);
  return result;
}

template <typename Run>
void run_into(const std::vector<Input>& inputs, std::vector<OutputBuffer>& outputs, Run run) {
  const std::vector<recur_tensor> in = tensors_of(inputs);
  std::vector<recur_output> out;
  for (const OutputBuffer& b : outputs) out.push_back(output_of(b.name, b.data, b.capacity));
  check(run(in.data(), static_cast<std::int32_t>(in.size()), out.data(), static_cast<std::int32_t>(out.size())));
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    outputs[k].dims = dims_of(out[k]);
    outputs[k].length = out[k].length;
  }
}
}  // namespace detail

class Model {
 public:
  explicit Model(const std::string& path) { detail::check(recur_model_open(&handle_, path.c_str())); }
  // From a file image in memory (copied); `name` stands for the file in messages.
  static Model from_memory(const void* data, std::size_t length, const std::string& name = "") {
    recur_model* h = nullptr;
    detail::check(recur_model_open_memory(&h, data, length, name.empty() ? nullptr : name.c_str()));
    return Model(h);
  }
  explicit Model(recur_model* owned) noexcept : handle_(owned) {}
  Model(Model&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Model& operator=(Model&& other) noexcept {
    if (this != &other) {
      recur_model_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model() { recur_model_destroy(handle_); }

  recur_model_info info() const {
    recur_model_info i{};
    i.version = RECUR_MODEL_INFO_VERSION;
    detail::check(recur_model_get_info(handle_, &i));
    return i;
  }
  // The recurrent layer `name` with the file's weights, as an independent Layer.
  Layer layer(const std::string& name) const {
    recur_layer* h = nullptr;
    detail::check(recur_model_get_layer(handle_, name.c_str(), &h));
    return Layer(h);
  }
  // Moves the whole chain to "cpu", "cuda", "cuda:N" or "auto".
  void set_device(const std::string& device) { detail::check(recur_model_set_device(handle_, device.c_str())); }
  // layer_index -1: the model; else that layer.
  Device device(int layer_index = -1) const {
    recur_device_info i = detail::device_info();
    detail::check(recur_model_get_device(handle_, layer_index, &i));
    return detail::device_of(i);
  }
  // Runs the whole chain: input (B, T, input_size), optional (B, T) mask.
  std::vector<float> run(const std::vector<float>& input, int batch, int timesteps,
                         const std::vector<std::uint8_t>& mask = {}) const {
    std::size_t n = 0;
    detail::check(recur_model_output_length(handle_, batch, timesteps, &n));
    std::vector<float> out(n);
    detail::check(recur_model_run(handle_, input.data(), input.size(), batch, timesteps,
                                  mask.empty() ? nullptr : mask.data(), mask.size(), out.data(), out.size()));
    return out;
  }

  recur_model* get() const noexcept { return handle_; }

  // The model's inputs and outputs, in the file's order.
  std::vector<TensorInfo> inputs() const {
    std::int32_t n = 0;
    detail::check(recur_model_num_inputs(handle_, &n));
    std::vector<TensorInfo> out;
    for (std::int32_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      std::int32_t rank = 0, ids = 0, seq = 0, dtype = 0;
      std::int64_t dims[RECUR_MAX_RANK];
      detail::check(recur_model_input(handle_, i, &name, &rank, dims, &ids));
      detail::check(recur_model_input_sequence(handle_, i, &seq));
      detail::check(recur_model_input_dtype(handle_, i, &dtype));
      out.push_back(TensorInfo{name, std::vector<std::int64_t>(dims, dims + rank), ids != 0, seq != 0,
                               dtype == RECUR_DTYPE_STRING});
    }
    return out;
  }
  std::vector<TensorInfo> outputs() const {
    std::int32_t n = 0;
    detail::check(recur_model_num_outputs(handle_, &n));
    std::vector<TensorInfo> out;
    for (std::int32_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      std::int32_t rank = 0;
      std::int64_t dims[RECUR_MAX_RANK];
      detail::check(recur_model_output(handle_, i, &name, &rank, dims));
      out.push_back(TensorInfo{name, std::vector<std::int64_t>(dims, dims + rank), false, rank >= 3, false});
    }
    // Outputs of one Keras 3 layer share its name: "name:k" selects each.
    std::vector<std::string> keras_names;
    for (const TensorInfo& t : out) keras_names.push_back(t.name);
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::size_t same = 0, before = 0;
      for (std::size_t j = 0; j < out.size(); ++j)
        if (keras_names[j] == keras_names[i]) {
          if (j < i) ++before;
          ++same;
        }
      if (same > 1) out[i].name += ":" + std::to_string(before);
    }
    return out;
  }
  std::vector<std::string> output_names() const {
    std::vector<std::string> names;
    for (const TensorInfo& t : outputs()) names.push_back(t.name);
    return names;
  }

  // Runs on named inputs and returns the outputs asked for (all of them when `outputs` is empty),
  // in that order. options: null, or RunOptions another thread may cancel.
  std::vector<Tensor> run(const std::vector<Input>& inputs, std::vector<std::string> outputs = {},
                          const RunOptions* options = nullptr) const {
    if (outputs.empty()) outputs = output_names();
    recur_model* h = handle_;
    const recur_run_options* o = options ? options->get() : nullptr;
    return detail::allocate_and_run(
        inputs, outputs,
        [h](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
          return recur_model_output_shapes(h, in, ni, out, no);
        },
        [h, o](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
          return recur_model_run_named(h, in, ni, out, no, o);
        });
  }
  // The same into the caller's buffers, allocating nothing for the outputs.
  void run_into(const std::vector<Input>& inputs, std::vector<OutputBuffer>& outputs,
                const RunOptions* options = nullptr) const {
    recur_model* h = handle_;
    const recur_run_options* o = options ? options->get() : nullptr;
    detail::run_into(inputs, outputs, [h, o](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
      return recur_model_run_named(h, in, ni, out, no, o);
    });
  }
  // The dims each requested output would have for these inputs.
  std::vector<std::vector<std::int64_t>> output_shapes(const std::vector<Input>& inputs,
                                                       const std::vector<std::string>& outputs) const {
    const std::vector<recur_tensor> in = detail::tensors_of(inputs);
    std::vector<recur_output> out;
    for (const std::string& n : outputs) out.push_back(detail::output_of(n, nullptr, 0));
    detail::check(recur_model_output_shapes(handle_, in.data(), static_cast<std::int32_t>(in.size()), out.data(),
                                            static_cast<std::int32_t>(out.size())));
    std::vector<std::vector<std::int64_t>> dims;
    for (const recur_output& o : out) dims.push_back(detail::dims_of(o));
    return dims;
  }
  bool stateful() const {
    std::int32_t s = 0;
    detail::check(recur_model_is_stateful(handle_, &s));
    return s != 0;
  }
  void reset_states() { detail::check(recur_model_reset_states(handle_)); }

 private:
  recur_model* handle_ = nullptr;
};

// A stream through a model (recur_model_state): feed the sequence a few steps at a time.
class ModelState {
 public:
  ModelState(const Model& model, int batch) { detail::check(recur_model_state_create(&handle_, model.get(), batch)); }
  ModelState(ModelState&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ModelState& operator=(ModelState&& other) noexcept {
    if (this != &other) {
      recur_model_state_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ModelState(const ModelState&) = delete;
  ModelState& operator=(const ModelState&) = delete;
  ~ModelState() { recur_model_state_destroy(handle_); }

  recur_model_state* get() const noexcept { return handle_; }
  void reset() { detail::check(recur_model_state_reset(handle_)); }

  // Everything the stream carries to its next step as bytes (recur_model_state_save, since 0.9);
  // load() takes them into a state of the same model and batch, all or nothing.
  std::vector<unsigned char> save() const {
    std::size_t n = 0;
    detail::check(recur_model_state_save(handle_, nullptr, 0, &n));
    std::vector<unsigned char> bytes(n);
    detail::check(recur_model_state_save(handle_, bytes.data(), bytes.size(), &n));
    bytes.resize(n);
    return bytes;
  }
  void load(const std::vector<unsigned char>& bytes) {
    detail::check(recur_model_state_load(handle_, bytes.data(), bytes.size()));
  }

  // The next steps: every sequence input holds the same number of steps (dims[1]). Returns the
  // outputs asked for (names as Model::outputs() gives them), in that order.
  std::vector<Tensor> step(const std::vector<Input>& inputs, const std::vector<std::string>& outputs,
                           const RunOptions* options = nullptr) {
    recur_model_state* h = handle_;
    const recur_run_options* o = options ? options->get() : nullptr;
    return detail::allocate_and_run(
        inputs, outputs,
        [h](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
          return recur_model_state_output_shapes(h, in, ni, out, no);
        },
        [h, o](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
          return recur_model_state_step_named(h, in, ni, out, no, o);
        });
  }
  void step_into(const std::vector<Input>& inputs, std::vector<OutputBuffer>& outputs, const RunOptions* options = nullptr) {
    recur_model_state* h = handle_;
    const recur_run_options* o = options ? options->get() : nullptr;
    detail::run_into(inputs, outputs, [h, o](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
      return recur_model_state_step_named(h, in, ni, out, no, o);
    });
  }

  // Many states of one model stepped in one call, as one batch (recur_model_states_step_named,
  // since 0.8): the inputs and outputs hold the rows of every state one after another in the
  // order of `states`.
  static std::vector<Tensor> step_many(const std::vector<ModelState*>& states, const std::vector<Input>& inputs,
                                       const std::vector<std::string>& outputs, const RunOptions* options = nullptr) {
    std::vector<recur_model_state*> hs;
    hs.reserve(states.size());
    for (ModelState* s : states) hs.push_back(s ? s->handle_ : nullptr);
    const std::int32_t n = static_cast<std::int32_t>(hs.size());
    recur_model_state* const* h = hs.data();
    const recur_run_options* o = options ? options->get() : nullptr;
    return detail::allocate_and_run(
        inputs, outputs,
        [h, n](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
          return recur_model_states_output_shapes(h, n, in, ni, out, no);
        },
        [h, n, o](const recur_tensor* in, std::int32_t ni, recur_output* out, std::int32_t no) {
          return recur_model_states_step_named(h, n, in, ni, out, no, o);
        });
  }

 private:
  recur_model_state* handle_ = nullptr;
};

// The process-wide log (recur_set_log_callback): `sink` hears what recur decided and why, at
// `min_level` (a recur_log_level) and above, from any thread, possibly several at once. An empty
// function turns logging off. The sink must not call set_log_callback; exceptions it throws are
// dropped (they cannot cross the C ABI).
using LogSink = std::function<void(int level, const std::string& message)>;

namespace detail {
struct LogSlot {
  std::mutex mutex;
  std::unique_ptr<LogSink> sink;
};
inline LogSlot& log_slot() {
  static LogSlot* slot = new LogSlot;  // never destroyed: a message may come during exit
  return *slot;
}
inline void log_trampoline(void* user_data, std::int32_t level, const char* message) {
  try {
    (*static_cast<LogSink*>(user_data))(level, message);
  } catch (...) {
  }
}
}  // namespace detail

inline void set_log_callback(LogSink sink, int min_level = RECUR_LOG_INFO) {
  detail::LogSlot& slot = detail::log_slot();
  std::lock_guard<std::mutex> lock(slot.mutex);
  std::unique_ptr<LogSink> next = sink ? std::make_unique<LogSink>(std::move(sink)) : nullptr;
  detail::check(next ? recur_set_log_callback(detail::log_trampoline, next.get(), min_level)
                     : recur_set_log_callback(nullptr, nullptr, 0));
  slot.sink = std::move(next);  // the old sink is no longer called once the C call returned
}

inline std::string version() { return recur_version_string(); }

}  // namespace wrapper
}  // namespace recur

#endif  // RECUR_RECUR_HPP
