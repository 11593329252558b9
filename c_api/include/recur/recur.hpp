// recur.hpp: a header-only C++17 wrapper over the C ABI in recur.h: RAII handles, exceptions
// instead of status codes, std::vector in and out. It adds no symbols to the library and works
// with any librecur of the same major version.
//
// Errors: every failing call throws recur::Error, carrying the recur_status and the library's
// message (read on the failing thread, inside the wrapper call).
// Ownership: Layer, State and Model own their handle; they are movable, not copyable.
// Threads: the rules of recur.h apply (forward_state on one Layer from many threads, each with
// its own State, is safe).
#ifndef RECUR_RECUR_HPP
#define RECUR_RECUR_HPP

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "recur/recur.h"

namespace recur {

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

class Model {
 public:
  explicit Model(const std::string& path) { detail::check(recur_model_open(&handle_, path.c_str())); }
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

 private:
  recur_model* handle_ = nullptr;
};

inline std::string version() { return recur_version_string(); }

}  // namespace recur

#endif  // RECUR_RECUR_HPP
