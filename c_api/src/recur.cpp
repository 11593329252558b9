// SPDX-License-Identifier: Apache-2.0
// The C ABI: argument checks that need no math, handle bookkeeping, and the mapping of core
// exceptions to status codes. Every entry point is noexcept; nothing throws across the boundary.
#include "recur/recur.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "recur/cpu_kernels.hpp"
#include "recur/device.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/layer.hpp"
#include "recur/limits.hpp"
#include "recur/log.hpp"
#include "recur/cancel.hpp"
#include "recur/model.hpp"

namespace {

// The strings recur_device_info points at. Every distinct placement a handle has reported is
// kept until its next set_device or its destruction, so pointers one thread holds stay valid
// while another thread queries again (a state can move between devices between two queries).
// The set stays small: one entry per distinct (backend, path, reason) the handle has shown.
class PlacementCache {
 public:
  const recur::Placement& keep(recur::Placement p) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& k : kept_)
      if (k->requested == p.requested && k->backend == p.backend && k->path == p.path && k->reason == p.reason &&
          k->device_name == p.device_name && k->ordinal == p.ordinal)
        return *k;
    kept_.push_back(std::make_unique<recur::Placement>(std::move(p)));
    return *kept_.back();
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<recur::Placement>> kept_;
};

}  // namespace

struct recur_layer {
  std::unique_ptr<recur::Layer> impl;
  mutable PlacementCache placements;  // filled by queries on a const handle
};

struct recur_state {
  std::unique_ptr<recur::State> impl;
  mutable PlacementCache placements;
};

struct recur_model {
  std::unique_ptr<recur::Model> impl;
  mutable PlacementCache placements;
};

struct recur_model_state {
  std::unique_ptr<recur::ModelStream> impl;
};

struct recur_run_options {
  std::atomic<bool> cancelled{false};
  std::atomic<double> timeout_s{0.0};  // each call's own deadline, seconds from its start (0: none)
};

namespace {

using recur::Error;

thread_local std::string tls_error;

// Live handles, so a call on a destroyed handle is reported instead of touching freed memory.
class Registry {
 public:
  void add(const void* p) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    live_.insert(p);
  }
  bool remove(const void* p) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    return live_.erase(p) != 0;
  }
  bool contains(const void* p) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return live_.count(p) != 0;
  }
  // The index of the first of p[0..n) that is not live (n when all are), under one lock.
  template <typename T>
  std::size_t first_missing(const T* const* p, std::size_t n) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    for (std::size_t i = 0; i < n; ++i)
      if (p[i] && !live_.count(p[i])) return i;
    return n;
  }
  std::uint64_t size() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    return live_.size();
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_set<const void*> live_;
};

// Never destroyed: handles may be destroyed during static destruction or from finalizers at
// exit, after a function-local static registry would already be gone.
Registry& layers() {
  static Registry* r = new Registry;
  return *r;
}
Registry& states() {
  static Registry* r = new Registry;
  return *r;
}
Registry& models() {
  static Registry* r = new Registry;
  return *r;
}
Registry& model_states() {
  static Registry* r = new Registry;
  return *r;
}
Registry& run_options() {
  static Registry* r = new Registry;
  return *r;
}

recur_status set_error(recur_status status, const std::string& message) {
  tls_error = message;
  return status;
}

recur_status map_code(Error::Code code) {
  switch (code) {
    case Error::Code::invalid_argument: return RECUR_ERR_INVALID_ARGUMENT;
    case Error::Code::shape: return RECUR_ERR_SHAPE;
    case Error::Code::unsupported: return RECUR_ERR_UNSUPPORTED;
    case Error::Code::parse: return RECUR_ERR_PARSE;
    case Error::Code::state: return RECUR_ERR_STATE;
    case Error::Code::io: return RECUR_ERR_IO;
    case Error::Code::limit: return RECUR_ERR_LIMIT;
    case Error::Code::cancelled: return RECUR_ERR_CANCELLED;
  }
  return RECUR_ERR_INTERNAL;
}

template <typename F>
recur_status guarded(F&& body) noexcept {
  try {
    body();
    return RECUR_OK;
  } catch (const Error& e) {
    return set_error(map_code(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(RECUR_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return set_error(RECUR_ERR_INTERNAL, recur::detail::bounded_message(std::string("internal error: ") + e.what()));
  } catch (...) {
    return set_error(RECUR_ERR_INTERNAL, "internal error: unknown exception");
  }
}

recur::Layer& layer_of(const recur_layer* l, const char* fn) {
  if (!l) recur::fail(Error::Code::invalid_argument, fn, ": layer is NULL");
  if (!layers().contains(l)) recur::fail(Error::Code::state, fn, ": layer is not a live handle (destroyed?)");
  return *l->impl;
}

const recur::Model& model_of(const recur_model* m, const char* fn) {
  if (!m) recur::fail(Error::Code::invalid_argument, fn, ": model is NULL");
  if (!models().contains(m)) recur::fail(Error::Code::state, fn, ": model is not a live handle (destroyed?)");
  return *m->impl;
}

// For the calls that change a model (set_device); everything else only reads it.
recur::Model& mutable_model_of(recur_model* m, const char* fn) {
  model_of(m, fn);
  return *m->impl;
}

recur::State& state_of(const recur_state* s, const char* fn) {
  if (!s) recur::fail(Error::Code::invalid_argument, fn, ": state is NULL");
  if (!states().contains(s)) recur::fail(Error::Code::state, fn, ": state is not a live handle (destroyed?)");
  return *s->impl;
}

template <typename T>
void require(const T* p, const char* fn, const char* name) {
  if (!p) recur::fail(Error::Code::invalid_argument, fn, ": ", name, " is NULL");
}

std::int32_t positive(std::int32_t v, const char* fn, const char* name) {
  if (v <= 0) recur::fail(Error::Code::invalid_argument, fn, ": ", name, " must be positive, got ", v);
  return v;
}

recur::Dialect dialect_of(std::int32_t d, const char* field) {
  switch (d) {
    case RECUR_DIALECT_AUTO:
    case RECUR_DIALECT_KERAS3: return recur::Dialect::keras3;
    case RECUR_DIALECT_KERAS2: return recur::Dialect::keras2;
    default: recur::fail(Error::Code::invalid_argument, field, ": expected RECUR_DIALECT_AUTO (0), KERAS2 (2) or KERAS3 (3), got ", d);
  }
}

bool flag(std::int32_t v, bool fallback, const char* field) {
  if (v == RECUR_DEFAULT) return fallback;
  if (v != 0 && v != 1) recur::fail(Error::Code::invalid_argument, field, ": expected 0, 1 or RECUR_DEFAULT, got ", v);
  return v == 1;
}

recur::LayerConfig config_from_options(const recur_layer_options& o) {
  using recur::LayerKind;
  LayerKind kind;
  switch (o.type) {
    case RECUR_LAYER_GRU: kind = LayerKind::gru; break;
    case RECUR_LAYER_LSTM: kind = LayerKind::lstm; break;
    case RECUR_LAYER_CUDNN_GRU: kind = LayerKind::cudnn_gru; break;
    case RECUR_LAYER_CUDNN_LSTM: kind = LayerKind::cudnn_lstm; break;
    case RECUR_LAYER_GRU_CELL: kind = LayerKind::gru_cell; break;
    case RECUR_LAYER_LSTM_CELL: kind = LayerKind::lstm_cell; break;
    case RECUR_LAYER_SIMPLE_RNN: kind = LayerKind::simple_rnn; break;
    case RECUR_LAYER_SIMPLE_RNN_CELL: kind = LayerKind::simple_rnn_cell; break;
    default:
      recur::fail(Error::Code::invalid_argument, "type: expected a recur_layer_type (1..8), got ", o.type);
  }
  const recur::Dialect d = dialect_of(o.dialect, "dialect");
  const recur::DialectInfo info =
      o.keras_version ? recur::DialectInfo::parse(d, o.keras_version) : recur::DialectInfo::latest(d);
  recur::LayerConfig c = recur::LayerConfig::defaults(kind, info);
  const bool cudnn = c.is_cudnn();
  if (c.is_simple_rnn()) {
    // Keras's SimpleRNN/SimpleRNNCell have none of these arguments and reject them ("Keyword argument
    // not understood" in Keras 2, "Unrecognized keyword arguments" in Keras 3), except that Keras 2
    // drops `implementation` with a deprecation warning.
    const char* cls = recur::kind_name(kind);
    if (o.recurrent_activation)
      recur::fail(Error::Code::invalid_argument, "recurrent_activation: ", cls,
                  " has no recurrent_activation argument (leave it NULL)");
    if (o.reset_after != RECUR_DEFAULT)
      recur::fail(Error::Code::invalid_argument, "reset_after: ", cls,
                  " has no reset_after argument (leave it RECUR_DEFAULT)");
    if (o.unit_forget_bias != RECUR_DEFAULT)
      recur::fail(Error::Code::invalid_argument, "unit_forget_bias: ", cls,
                  " has no unit_forget_bias argument (leave it RECUR_DEFAULT)");
    if (o.implementation != RECUR_DEFAULT && d == recur::Dialect::keras3)
      recur::fail(Error::Code::invalid_argument, "implementation: Keras 3's ", cls,
                  " has no implementation argument (leave it RECUR_DEFAULT)");
  }
  if (o.name) c.name = o.name;
  c.units = o.units;
  c.input_size = o.input_size;
  if (o.activation) {
    if (cudnn) recur::fail(Error::Code::invalid_argument, "activation: CuDNN layers have no activation argument");
    c.activation = recur::parse_activation(o.activation, info, "activation");
  }
  if (o.recurrent_activation) {
    if (cudnn)
      recur::fail(Error::Code::invalid_argument, "recurrent_activation: CuDNN layers have no recurrent_activation argument");
    c.recurrent_activation = recur::parse_activation(o.recurrent_activation, info, "recurrent_activation");
  }
  c.use_bias = flag(o.use_bias, true, "use_bias");
  c.reset_after = flag(o.reset_after, true, "reset_after");
  if (o.implementation != RECUR_DEFAULT) c.implementation = o.implementation;
  // Keras 2's SimpleRNN drops its implementation argument (after the range check below).
  if (c.is_simple_rnn() && c.implementation != 1 && c.implementation != 2)
    recur::fail(Error::Code::invalid_argument, "implementation: expected 1 or 2, got ", c.implementation);
  if (c.is_simple_rnn()) c.implementation = 2;
  c.unit_forget_bias = flag(o.unit_forget_bias, true, "unit_forget_bias");
  if (std::isnan(o.dropout) || std::isnan(o.recurrent_dropout))
    recur::fail(Error::Code::invalid_argument, "dropout/recurrent_dropout: expected a rate in [0, 1], got NaN");
  c.dropout = std::min(1.0f, std::max(0.0f, o.dropout));  // Keras clips rates into [0, 1]
  c.recurrent_dropout = std::min(1.0f, std::max(0.0f, o.recurrent_dropout));
  c.return_sequences = flag(o.return_sequences, false, "return_sequences");
  c.return_state = flag(o.return_state, false, "return_state");
  c.go_backwards = flag(o.go_backwards, false, "go_backwards");
  c.stateful = flag(o.stateful, false, "stateful");
  c.time_major = flag(o.time_major, false, "time_major");
  c.unroll = flag(o.unroll, false, "unroll");
  c.zero_output_for_mask = flag(o.zero_output_for_mask, false, "zero_output_for_mask");
  c.batch_size = o.batch_size;
  c.trainable = flag(o.trainable, true, "trainable");
  if (o.kernel_initializer)
    c.kernel_initializer = recur::parse_initializer_text(o.kernel_initializer, info, "kernel_initializer");
  if (o.recurrent_initializer)
    c.recurrent_initializer = recur::parse_initializer_text(o.recurrent_initializer, info, "recurrent_initializer");
  if (o.bias_initializer)
    c.bias_initializer = recur::parse_initializer_text(o.bias_initializer, info, "bias_initializer");
  if (o.kernel_regularizer)
    c.kernel_regularizer = recur::parse_regularizer_text(o.kernel_regularizer, info, "kernel_regularizer");
  if (o.recurrent_regularizer)
    c.recurrent_regularizer = recur::parse_regularizer_text(o.recurrent_regularizer, info, "recurrent_regularizer");
  if (o.bias_regularizer) c.bias_regularizer = recur::parse_regularizer_text(o.bias_regularizer, info, "bias_regularizer");
  if (o.activity_regularizer)
    c.activity_regularizer = recur::parse_regularizer_text(o.activity_regularizer, info, "activity_regularizer");
  // Keras 3's SimpleRNN takes activity_regularizer but never hands it on: the layer has none.
  if (kind == LayerKind::simple_rnn && d == recur::Dialect::keras3) c.activity_regularizer = {};
  if (o.kernel_constraint) c.kernel_constraint = recur::parse_constraint_text(o.kernel_constraint, info, "kernel_constraint");
  if (o.recurrent_constraint)
    c.recurrent_constraint = recur::parse_constraint_text(o.recurrent_constraint, info, "recurrent_constraint");
  if (o.bias_constraint) c.bias_constraint = recur::parse_constraint_text(o.bias_constraint, info, "bias_constraint");
  if (o.seed < -1) recur::fail(Error::Code::invalid_argument, "seed: expected >= 0 or -1 (random), got ", o.seed);
  if (o.seed >= 0) c.seed = static_cast<std::uint64_t>(o.seed);
  return c;
}

recur_layer* register_layer(recur::LayerConfig config) {
  auto handle = std::make_unique<recur_layer>();
  handle->impl = std::make_unique<recur::Layer>(std::move(config));
  layers().add(handle.get());
  return handle.release();
}

std::int32_t layer_type(recur::LayerKind k) {
  switch (k) {
    case recur::LayerKind::gru: return RECUR_LAYER_GRU;
    case recur::LayerKind::lstm: return RECUR_LAYER_LSTM;
    case recur::LayerKind::cudnn_gru: return RECUR_LAYER_CUDNN_GRU;
    case recur::LayerKind::cudnn_lstm: return RECUR_LAYER_CUDNN_LSTM;
    case recur::LayerKind::gru_cell: return RECUR_LAYER_GRU_CELL;
    case recur::LayerKind::lstm_cell: return RECUR_LAYER_LSTM_CELL;
    case recur::LayerKind::simple_rnn: return RECUR_LAYER_SIMPLE_RNN;
    case recur::LayerKind::simple_rnn_cell: return RECUR_LAYER_SIMPLE_RNN_CELL;
  }
  return 0;
}

recur::DeviceRequest device_request(const char* device, const char* fn) {
  require(device, fn, "device");
  return recur::DeviceRequest::parse(device, (std::string(fn) + ": device").c_str());
}

void require_device_info(const recur_device_info* info, const char* fn) {
  require(info, fn, "info");
  if (info->version != RECUR_DEVICE_INFO_VERSION)
    recur::fail(Error::Code::unsupported, fn, ": info->version must be RECUR_DEVICE_INFO_VERSION (",
                RECUR_DEVICE_INFO_VERSION, "), got ", info->version);
}

void fill_device_info(const recur::Placement& p, recur_device_info* info) {
  info->requested = p.requested.c_str();
  info->backend = p.backend.c_str();
  info->path = p.path.c_str();
  info->reason = p.reason.c_str();
  info->device_name = p.device_name.c_str();
}

void copy_masks(const std::vector<recur::RowMatrix>& masks, float* out, std::size_t out_len, std::int32_t* count,
                const char* fn) {
  std::size_t total = 0;
  for (const auto& m : masks) total += static_cast<std::size_t>(m.size());
  if (out) {
    if (out_len != total)
      recur::fail(Error::Code::shape, fn, ": out must hold ", masks.size(), " mask(s) = ", total, " floats, got ",
                  out_len);
    std::size_t off = 0;
    for (const auto& m : masks) {
      std::memcpy(out + off, m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
      off += static_cast<std::size_t>(m.size());
    }
  }
  *count = static_cast<std::int32_t>(masks.size());
}

// The cores of num_states live, distinct state handles (one state twice would alias its tensors).
// Thousands of streams per call are the use: one registry lock and one sort, no hash per state.
std::vector<recur::State*> distinct_states(recur_state* const* states, int32_t num_states, const char* fn) {
  positive(num_states, fn, "num_states");
  require(states, fn, "states");
  const std::size_t n = static_cast<std::size_t>(num_states);
  for (std::size_t i = 0; i < n; ++i)
    if (!states[i]) recur::fail(Error::Code::invalid_argument, fn, ": states[", i, "] is NULL");
  const std::size_t dead = ::states().first_missing(states, n);  // the parameter hides the registry's name
  if (dead < n) recur::fail(Error::Code::state, fn, ": states[", dead, "] is not a live handle (destroyed?)");
  std::vector<std::pair<const recur_state*, std::size_t>> sorted(n);
  for (std::size_t i = 0; i < n; ++i) sorted[i] = {states[i], i};
  std::sort(sorted.begin(), sorted.end());
  // The repeat with the lowest index, named with the state's first index.
  std::size_t first = n, again = n;
  for (std::size_t k = 1, group = 0; k < n; ++k) {
    if (sorted[k].first != sorted[k - 1].first) {
      group = k;
      continue;
    }
    if (sorted[k].second < again) {
      again = sorted[k].second;
      first = sorted[group].second;
    }
  }
  if (again < n)
    recur::fail(Error::Code::invalid_argument, fn, ": states[", first, "] and states[", again,
                "] are the same state (each stream may appear once per call)");
  std::vector<recur::State*> impls(n);
  for (std::size_t i = 0; i < n; ++i) impls[i] = states[i]->impl.get();
  return impls;
}
}  // namespace

extern "C" {

uint32_t recur_version_number(void) { return RECUR_VERSION_NUMBER; }

const char* recur_version_string(void) {
#define RECUR_STR2(x) #x
#define RECUR_STR(x) RECUR_STR2(x)
  return RECUR_STR(RECUR_VERSION_MAJOR) "." RECUR_STR(RECUR_VERSION_MINOR) "." RECUR_STR(RECUR_VERSION_PATCH);
}

const char* recur_status_string(recur_status status) {
  switch (status) {
    case RECUR_OK: return "ok";
    case RECUR_ERR_INVALID_ARGUMENT: return "invalid argument";
    case RECUR_ERR_SHAPE: return "shape mismatch";
    case RECUR_ERR_UNSUPPORTED: return "unsupported";
    case RECUR_ERR_PARSE: return "parse error";
    case RECUR_ERR_STATE: return "invalid state";
    case RECUR_ERR_OUT_OF_MEMORY: return "out of memory";
    case RECUR_ERR_IO: return "i/o error";
    case RECUR_ERR_LIMIT: return "over a resource limit";
    case RECUR_ERR_CANCELLED: return "cancelled";
    case RECUR_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* recur_last_error(void) { return tls_error.c_str(); }

recur_status recur_layer_options_init(recur_layer_options* opts, uint32_t version) {
  return guarded([&] {
    require(opts, "recur_layer_options_init", "opts");
    if (version != RECUR_LAYER_OPTIONS_VERSION)
      recur::fail(Error::Code::unsupported, "recur_layer_options_init: version ", version,
                  " is not known to this library (", RECUR_LAYER_OPTIONS_VERSION, ")");
    std::memset(opts, 0, sizeof *opts);
    opts->version = version;
    opts->dialect = RECUR_DIALECT_AUTO;
    for (std::int32_t* f : {&opts->use_bias, &opts->reset_after, &opts->implementation, &opts->unit_forget_bias,
                            &opts->return_sequences, &opts->return_state, &opts->go_backwards, &opts->stateful,
                            &opts->time_major, &opts->unroll, &opts->zero_output_for_mask, &opts->trainable})
      *f = RECUR_DEFAULT;
    opts->seed = -1;
  });
}

recur_status recur_layer_create(recur_layer** out, const recur_layer_options* opts) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_layer_create", "out");
    require(opts, "recur_layer_create", "opts");
    if (opts->version != RECUR_LAYER_OPTIONS_VERSION)
      recur::fail(Error::Code::unsupported, "recur_layer_create: opts->version ", opts->version,
                  " is not known (call recur_layer_options_init first)");
    *out = register_layer(config_from_options(*opts));
  });
}

recur_status recur_layer_create_from_json(recur_layer** out, const char* json, int32_t input_size, int32_t dialect,
                                          const char* keras_version) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_layer_create_from_json", "out");
    require(json, "recur_layer_create_from_json", "json");
    std::optional<recur::Dialect> d;
    if (dialect != RECUR_DIALECT_AUTO) d = dialect_of(dialect, "dialect");
    std::optional<std::string_view> version;
    if (keras_version) version = keras_version;
    *out = register_layer(recur::parse_layer_json(json, input_size, d, version));
  });
}

void recur_layer_destroy(recur_layer* layer) {
  if (layer && layers().remove(layer)) delete layer;
}

recur_status recur_layer_get_info(const recur_layer* layer, recur_layer_info* info) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_info");
    require(info, "recur_layer_get_info", "info");
    if (info->version != RECUR_LAYER_INFO_VERSION)
      recur::fail(Error::Code::unsupported, "recur_layer_get_info: info->version must be RECUR_LAYER_INFO_VERSION (",
                  RECUR_LAYER_INFO_VERSION, "), got ", info->version);
    const recur::LayerConfig& c = l.config();
    info->type = layer_type(c.kind);
    info->dialect = c.dialect.dialect == recur::Dialect::keras2 ? RECUR_DIALECT_KERAS2 : RECUR_DIALECT_KERAS3;
    info->units = c.units;
    info->input_size = c.input_size;
    info->num_states = c.num_states();
    info->num_weights = static_cast<int32_t>(l.num_weights());
    info->return_sequences = c.return_sequences;
    info->return_state = c.return_state;
    info->go_backwards = c.go_backwards;
    info->stateful = c.stateful;
    info->time_major = c.time_major;
    info->batch_size = c.batch_size;
    info->implementation = c.is_simple_rnn() ? 0 : c.effective_implementation();
    info->reset_after = c.is_gru() && c.reset_after;
  });
}

recur_status recur_layer_output_length(const recur_layer* layer, int32_t batch, int32_t timesteps, size_t* out_len) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_output_length");
    require(out_len, "recur_layer_output_length", "out_len");
    *out_len = l.output_size(positive(batch, "recur_layer_output_length", "batch"),
                             positive(timesteps, "recur_layer_output_length", "timesteps"));
  });
}

recur_status recur_layer_forward(recur_layer* layer, const float* input, size_t input_len, int32_t batch,
                                 int32_t timesteps, const uint8_t* mask, size_t mask_len, const float* initial_state,
                                 size_t initial_state_len, int32_t num_initial_states, int32_t training, float* output,
                                 size_t output_len, float* final_state, size_t final_state_len) {
  return guarded([&] {
    recur::Layer& l = layer_of(layer, "recur_layer_forward");
    recur::LayerCall call;
    call.input = input;
    call.input_len = input_len;
    call.batch = batch;
    call.timesteps = timesteps;
    call.mask = mask;
    call.mask_len = mask_len;
    call.initial_state = initial_state;
    call.initial_state_len = initial_state_len;
    call.num_initial_states = num_initial_states;
    call.training = training != 0;
    call.output = output;
    call.output_len = output_len;
    call.final_state = final_state;
    call.final_state_len = final_state_len;
    l.call(call);
  });
}

recur_status recur_layer_reset_states(recur_layer* layer) {
  return guarded([&] { layer_of(layer, "recur_layer_reset_states").reset_states(); });
}

recur_status recur_layer_set_states(recur_layer* layer, const float* values, size_t len, int32_t num_states) {
  return guarded([&] { layer_of(layer, "recur_layer_set_states").reset_states(values, len, num_states); });
}

recur_status recur_layer_get_states(const recur_layer* layer, float* out, size_t len) {
  return guarded([&] { layer_of(layer, "recur_layer_get_states").get_states(out, len); });
}

recur_status recur_layer_get_initial_state(const recur_layer* layer, int32_t batch, float* out, size_t len) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_initial_state");
    positive(batch, "recur_layer_get_initial_state", "batch");
    require(out, "recur_layer_get_initial_state", "out");
    const std::size_t want = static_cast<std::size_t>(l.num_states()) * static_cast<std::size_t>(batch) *
                             static_cast<std::size_t>(l.config().units);
    if (len != want)
      recur::fail(Error::Code::shape, "recur_layer_get_initial_state: out must hold ", l.num_states(), " x (", batch,
                  ", ", l.config().units, ") = ", want, " floats, got ", len);
    std::fill(out, out + len, 0.0f);
  });
}

recur_status recur_state_create(recur_state** out, const recur_layer* layer, int32_t batch) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_state_create", "out");
    const recur::Layer& l = layer_of(layer, "recur_state_create");
    positive(batch, "recur_state_create", "batch");
    auto handle = std::make_unique<recur_state>();
    handle->impl = std::make_unique<recur::State>(l.num_states(), batch, l.config().units);
    l.place_state(*handle->impl);
    states().add(handle.get());
    *out = handle.release();
  });
}

void recur_state_destroy(recur_state* state) {
  if (state && states().remove(state)) delete state;
}

recur_status recur_state_shape(const recur_state* state, int32_t* num_states, int32_t* batch, int32_t* units) {
  return guarded([&] {
    const recur::State& s = state_of(state, "recur_state_shape");
    if (num_states) *num_states = s.num_states();
    if (batch) *batch = static_cast<int32_t>(s.batch());
    if (units) *units = s.units();
  });
}

recur_status recur_state_get(const recur_state* state, float* out, size_t len) {
  return guarded([&] { state_of(state, "recur_state_get").get(out, len); });
}

recur_status recur_state_set(recur_state* state, const float* values, size_t len, int32_t num_states) {
  return guarded([&] { state_of(state, "recur_state_set").set(values, len, num_states, "values"); });
}

recur_status recur_state_reset(recur_state* state) {
  return guarded([&] { state_of(state, "recur_state_reset").reset(); });
}

recur_status recur_layer_forward_state(const recur_layer* layer, recur_state* state, const float* input,
                                       size_t input_len, int32_t timesteps, const uint8_t* mask, size_t mask_len,
                                       float* output, size_t output_len) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_forward_state");
    recur::State& s = state_of(state, "recur_layer_forward_state");
    l.call_state(s, input, input_len, timesteps, mask, mask_len, output, output_len);
  });
}

recur_status recur_cell_call(recur_layer* cell, const float* input, size_t input_len, int32_t batch,
                             const float* states_in, size_t states_len, int32_t num_states, int32_t training,
                             float* output, size_t output_len, float* new_states, size_t new_states_len) {
  return guarded([&] {
    layer_of(cell, "recur_cell_call")
        .cell_call(input, input_len, batch, states_in, states_len, num_states, training != 0, output, output_len,
                   new_states, new_states_len);
  });
}

recur_status recur_cell_get_dropout_mask(recur_layer* cell, int32_t batch, int32_t training, float* out,
                                         size_t out_len, int32_t* count) {
  return guarded([&] {
    recur::Layer& l = layer_of(cell, "recur_cell_get_dropout_mask");
    require(count, "recur_cell_get_dropout_mask", "count");
    if (!l.config().is_cell())
      recur::fail(Error::Code::state, "recur_cell_get_dropout_mask: the layer is not a cell");
    copy_masks(l.dropout_mask(batch, training != 0), out, out_len, count, "recur_cell_get_dropout_mask");
  });
}

recur_status recur_cell_get_recurrent_dropout_mask(recur_layer* cell, int32_t batch, int32_t training, float* out,
                                                   size_t out_len, int32_t* count) {
  return guarded([&] {
    recur::Layer& l = layer_of(cell, "recur_cell_get_recurrent_dropout_mask");
    require(count, "recur_cell_get_recurrent_dropout_mask", "count");
    if (!l.config().is_cell())
      recur::fail(Error::Code::state, "recur_cell_get_recurrent_dropout_mask: the layer is not a cell");
    copy_masks(l.recurrent_dropout_mask(batch, training != 0), out, out_len, count,
               "recur_cell_get_recurrent_dropout_mask");
  });
}

recur_status recur_cell_reset_dropout_mask(recur_layer* cell) {
  return guarded([&] {
    recur::Layer& l = layer_of(cell, "recur_cell_reset_dropout_mask");
    if (!l.config().is_cell()) recur::fail(Error::Code::state, "recur_cell_reset_dropout_mask: the layer is not a cell");
    l.reset_dropout_mask();
  });
}

recur_status recur_cell_reset_recurrent_dropout_mask(recur_layer* cell) {
  return guarded([&] {
    recur::Layer& l = layer_of(cell, "recur_cell_reset_recurrent_dropout_mask");
    if (!l.config().is_cell())
      recur::fail(Error::Code::state, "recur_cell_reset_recurrent_dropout_mask: the layer is not a cell");
    l.reset_recurrent_dropout_mask();
  });
}

recur_status recur_layer_num_weights(const recur_layer* layer, int32_t* count) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_num_weights");
    require(count, "recur_layer_num_weights", "count");
    *count = static_cast<int32_t>(l.num_weights());
  });
}

recur_status recur_layer_weight_shape(const recur_layer* layer, int32_t index, int64_t* dims, int32_t* ndims) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_weight_shape");
    require(dims, "recur_layer_weight_shape", "dims");
    require(ndims, "recur_layer_weight_shape", "ndims");
    if (index < 0) recur::fail(Error::Code::invalid_argument, "recur_layer_weight_shape: index ", index, " is negative");
    const recur::WeightSpec& s = l.weight_spec(static_cast<std::size_t>(index));
    for (std::size_t i = 0; i < s.shape.size(); ++i) dims[i] = s.shape[i];
    *ndims = static_cast<int32_t>(s.shape.size());
  });
}

recur_status recur_layer_weight_name(const recur_layer* layer, int32_t index, const char** name) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_weight_name");
    require(name, "recur_layer_weight_name", "name");
    if (index < 0) recur::fail(Error::Code::invalid_argument, "recur_layer_weight_name: index ", index, " is negative");
    *name = l.weight_spec(static_cast<std::size_t>(index)).name;
  });
}

recur_status recur_layer_get_weight(const recur_layer* layer, int32_t index, float* out, size_t len) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_weight");
    if (index < 0) recur::fail(Error::Code::invalid_argument, "recur_layer_get_weight: index ", index, " is negative");
    l.get_weight(static_cast<std::size_t>(index), out, len);
  });
}

recur_status recur_layer_set_weight(recur_layer* layer, int32_t index, const float* data, size_t len,
                                    const int64_t* dims, int32_t ndims) {
  return guarded([&] {
    recur::Layer& l = layer_of(layer, "recur_layer_set_weight");
    if (index < 0) recur::fail(Error::Code::invalid_argument, "recur_layer_set_weight: index ", index, " is negative");
    l.set_weight(static_cast<std::size_t>(index), data, len, dims, ndims);
  });
}

recur_status recur_layer_weights_length(const recur_layer* layer, size_t* len) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_weights_length");
    require(len, "recur_layer_weights_length", "len");
    *len = l.weights_size();
  });
}

recur_status recur_layer_get_weights(const recur_layer* layer, float* out, size_t len) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_weights");
    require(out, "recur_layer_get_weights", "out");
    if (len != l.weights_size())
      recur::fail(Error::Code::shape, "recur_layer_get_weights: out must hold ", l.weights_size(), " floats, got ", len);
    std::size_t off = 0;
    for (std::size_t i = 0; i < l.num_weights(); ++i) {
      const std::size_t n = l.weight_length(i);
      l.get_weight(i, out + off, n);
      off += n;
    }
  });
}

recur_status recur_layer_set_weights(recur_layer* layer, const float* data, size_t len) {
  return guarded([&] { layer_of(layer, "recur_layer_set_weights").set_weights(data, len); });
}

recur_status recur_layer_get_losses(const recur_layer* layer, float* out, size_t out_len, int32_t* count) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_losses");
    require(count, "recur_layer_get_losses", "count");
    if (!out) {  // a count query: the names say how many, without computing the penalties
      *count = static_cast<int32_t>(l.loss_names().size());
      return;
    }
    const std::vector<recur::Loss> losses = l.losses();
    if (out && out_len < losses.size())
      recur::fail(Error::Code::shape, "recur_layer_get_losses: out holds ", out_len, " floats but there are ",
                  losses.size(), " losses");
    for (std::size_t i = 0; out && i < losses.size(); ++i) out[i] = losses[i].value;
    *count = static_cast<int32_t>(losses.size());
  });
}

recur_status recur_layer_loss_name(const recur_layer* layer, int32_t index, const char** name) {
  // Loss names come from a fixed set, so the returned pointers are static: no per-layer storage
  // that concurrent readers could race on.
  static const char* const kNames[] = {"activity:output", "activity:state_h", "activity:state_c", "kernel",
                                       "recurrent_kernel", "bias"};
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_loss_name");
    require(name, "recur_layer_loss_name", "name");
    const std::vector<std::string> names = l.loss_names();  // the penalties are not needed
    if (index < 0 || static_cast<std::size_t>(index) >= names.size())
      recur::fail(Error::Code::invalid_argument, "recur_layer_loss_name: index ", index, " is out of range (",
                  names.size(), " losses)");
    *name = nullptr;
    for (const char* known : kNames)
      if (names[static_cast<std::size_t>(index)] == known) *name = known;
    if (!*name) throw std::logic_error("unknown loss name " + names[static_cast<std::size_t>(index)]);
  });
}

recur_status recur_layer_apply_constraints(recur_layer* layer) {
  return guarded([&] { layer_of(layer, "recur_layer_apply_constraints").apply_constraints(); });
}

recur_status recur_model_open(recur_model** out, const char* path) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_model_open", "out");
    require(path, "recur_model_open", "path");
    auto handle = std::make_unique<recur_model>();
    handle->impl = std::make_unique<recur::Model>(recur::Model::open(path));
    models().add(handle.get());
    *out = handle.release();
  });
}

void recur_model_destroy(recur_model* model) {
  if (model && models().remove(model)) delete model;
}

recur_status recur_model_get_info(const recur_model* model, recur_model_info* info) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_get_info");
    require(info, "recur_model_get_info", "info");
    if (info->version != RECUR_MODEL_INFO_VERSION)
      recur::fail(Error::Code::unsupported, "recur_model_get_info: info->version must be RECUR_MODEL_INFO_VERSION (",
                  RECUR_MODEL_INFO_VERSION, "), got ", info->version);
    info->dialect = m.dialect().dialect == recur::Dialect::keras2 ? RECUR_DIALECT_KERAS2 : RECUR_DIALECT_KERAS3;
    info->keras_version = m.keras_version().c_str();
    info->num_layers = static_cast<int32_t>(m.num_layers());
    info->runnable = m.unsupported().empty();
    info->unsupported = m.unsupported().c_str();
    info->input_size = m.input_size();
    info->takes_token_ids = m.takes_token_ids();
    info->output_size = m.output_size();
    info->returns_sequences = m.returns_sequences();
    info->num_outputs = m.num_outputs();
  });
}

recur_status recur_model_layer(const recur_model* model, int32_t index, const char** name, const char** class_name,
                               const char** config_json, int32_t* input_size, int32_t* output_size,
                               int32_t* recurrent) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_layer");
    if (index < 0 || static_cast<std::size_t>(index) >= m.layers().size())
      recur::fail(Error::Code::invalid_argument, "recur_model_layer: index ", index, " is out of range (the model has ",
                  m.layers().size(), " layers)");
    const recur::ModelLayerInfo& l = m.layers()[static_cast<std::size_t>(index)];
    if (name) *name = l.name.c_str();
    if (class_name) *class_name = l.class_name.c_str();
    if (config_json) *config_json = l.config_json.c_str();
    if (input_size) *input_size = l.input_size;
    if (output_size) *output_size = l.output_size;
    if (recurrent) *recurrent = l.recurrent;
  });
}

recur_status recur_model_get_layer(const recur_model* model, const char* name, recur_layer** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_get_layer");
    require(name, "recur_model_get_layer", "name");
    require(out, "recur_model_get_layer", "out");
    auto handle = std::make_unique<recur_layer>();
    handle->impl = m.recurrent_layer(name);
    layers().add(handle.get());
    *out = handle.release();
  });
}

recur_status recur_model_output_length(const recur_model* model, int32_t batch, int32_t timesteps, size_t* out_len) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_output_length");
    require(out_len, "recur_model_output_length", "out_len");
    *out_len = m.output_length(batch, timesteps);
  });
}

recur_status recur_model_run(const recur_model* model, const float* input, size_t input_len, int32_t batch,
                             int32_t timesteps, const uint8_t* mask, size_t mask_len, float* output,
                             size_t output_len) {
  return guarded([&] {
    model_of(model, "recur_model_run").run(input, input_len, batch, timesteps, mask, mask_len, output, output_len);
  });
}

recur_status recur_device_count(int32_t* count) {
  return guarded([&] {
    require(count, "recur_device_count", "count");
    *count = recur::gpu_device_count();
  });
}

recur_status recur_device_check(const char* device) {
  return guarded([&] { recur::check_device(device_request(device, "recur_device_check")); });
}

recur_status recur_layer_set_device(recur_layer* layer, const char* device) {
  return guarded([&] {
    recur::Layer& l = layer_of(layer, "recur_layer_set_device");
    l.set_device(device_request(device, "recur_layer_set_device"));
    layer->placements.clear();
  });
}

recur_status recur_layer_get_device(const recur_layer* layer, recur_device_info* info) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_device");
    require_device_info(info, "recur_layer_get_device");
    fill_device_info(layer->placements.keep(l.placement()), info);
  });
}

recur_status recur_state_set_device(recur_state* state, const char* device) {
  return guarded([&] {
    recur::State& s = state_of(state, "recur_state_set_device");
    s.set_device(device_request(device, "recur_state_set_device"));
    state->placements.clear();
  });
}

recur_status recur_state_get_device(const recur_state* state, recur_device_info* info) {
  return guarded([&] {
    const recur::State& s = state_of(state, "recur_state_get_device");
    require_device_info(info, "recur_state_get_device");
    fill_device_info(state->placements.keep(s.placement()), info);
  });
}


recur_status recur_layer_forward_states(const recur_layer* layer, recur_state* const* states, int32_t num_states,
                                        const float* input, size_t input_len, const uint8_t* mask, size_t mask_len,
                                        float* output, size_t output_len) {
  return guarded([&] {
    static const char* const fn = "recur_layer_forward_states";
    const recur::Layer& l = layer_of(layer, fn);
    const std::vector<recur::State*> impls = distinct_states(states, num_states, fn);
    l.call_states(impls.data(), impls.size(), input, input_len, mask, mask_len, output, output_len);
  });
}

recur_status recur_layer_forward_states_device(const recur_layer* layer, void* cuda_stream, recur_state* const* states,
                                               int32_t num_states, const float* d_input, const uint8_t* mask,
                                               size_t mask_len, float* d_output) {
  return guarded([&] {
    static const char* const fn = "recur_layer_forward_states_device";
    const recur::Layer& l = layer_of(layer, fn);
    // First, so a caller on the CPU learns that, not which device pointer it got wrong.
    if (!l.gpu_layer())
      recur::fail(Error::Code::state, fn, ": the layer runs on the CPU (", l.placement().reason,
                  "); move it to a GPU with recur_layer_set_device first");
    require(d_input, fn, "d_input");
    require(d_output, fn, "d_output");
    const std::vector<recur::State*> impls = distinct_states(states, num_states, fn);
    l.call_states_device(cuda_stream, impls.data(), impls.size(), d_input, mask, mask_len, d_output);
  });
}

recur_status recur_layer_forward_device(recur_layer* layer, void* cuda_stream, const float* d_input, int32_t batch,
                                        int32_t timesteps, const uint8_t* mask, size_t mask_len,
                                        const float* d_initial_state, int32_t num_initial_states, float* d_output,
                                        float* d_final_state) {
  return guarded([&] {
    static const char* const fn = "recur_layer_forward_device";
    recur::Layer& l = layer_of(layer, fn);
    // First, so a caller on the CPU learns that, not which device pointer it got wrong.
    if (!l.gpu_layer())
      recur::fail(Error::Code::state, fn, ": the layer runs on the CPU (", l.placement().reason,
                  "); move it to a GPU with recur_layer_set_device first");
    require(d_input, fn, "d_input");
    require(d_output, fn, "d_output");
    l.call_device(cuda_stream, d_input, positive(batch, fn, "batch"), positive(timesteps, fn, "timesteps"), mask,
                  mask_len, d_initial_state, num_initial_states, d_output, d_final_state);
  });
}

recur_status recur_model_set_device(recur_model* model, const char* device) {
  return guarded([&] {
    recur::Model& m = mutable_model_of(model, "recur_model_set_device");
    m.set_device(device_request(device, "recur_model_set_device"));
    model->placements.clear();
  });
}

recur_status recur_model_get_device(const recur_model* model, int32_t layer_index, recur_device_info* info) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_get_device");
    require_device_info(info, "recur_model_get_device");
    if (layer_index < -1 || (layer_index >= 0 && static_cast<std::size_t>(layer_index) >= m.num_layers()))
      recur::fail(Error::Code::invalid_argument, "recur_model_get_device: layer_index ", layer_index,
                  " is out of range (-1 for the model, or a layer index below ", m.num_layers(), ")");
    fill_device_info(model->placements.keep(layer_index < 0 ? m.placement() : m.layer_placement(layer_index)), info);
  });
}

// ----- CPU threads and kernels -----

recur_status recur_layer_set_num_threads(recur_layer* layer, int32_t num_threads) {
  return guarded([&] { layer_of(layer, "recur_layer_set_num_threads").set_num_threads(num_threads); });
}

recur_status recur_layer_get_num_threads(const recur_layer* layer, int32_t* num_threads) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_num_threads");
    require(num_threads, "recur_layer_get_num_threads", "num_threads");
    *num_threads = l.num_threads();
  });
}

recur_status recur_model_set_num_threads(recur_model* model, int32_t num_threads) {
  return guarded([&] { mutable_model_of(model, "recur_model_set_num_threads").set_num_threads(num_threads); });
}

recur_status recur_model_get_num_threads(const recur_model* model, int32_t* num_threads) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_get_num_threads");
    require(num_threads, "recur_model_get_num_threads", "num_threads");
    *num_threads = m.num_threads();
  });
}

const char* recur_cpu_kernels(void) { return recur::cpu::cpu_kernels().name; }


/* ---- models as graphs (0.4) ---- */

}  // extern "C": the helpers below return C++ types

namespace {

recur::ModelStream& stream_of(const recur_model_state* s, const char* fn) {
  if (!s) recur::fail(Error::Code::invalid_argument, fn, ": state is NULL");
  if (!model_states().contains(s)) recur::fail(Error::Code::state, fn, ": state is not a live handle (destroyed?)");
  return *s->impl;
}

// The streams of a many-state call: each a live handle, each once (the core checks the model).
std::vector<recur::ModelStream*> streams_of(const recur_model_state* const* states, int32_t n, const char* fn) {
  if (n < 1) recur::fail(Error::Code::invalid_argument, fn, ": num_states must be at least 1, got ", n);
  if (!states) recur::fail(Error::Code::invalid_argument, fn, ": states is NULL with num_states = ", n);
  std::vector<recur::ModelStream*> out(static_cast<std::size_t>(n));
  std::vector<std::pair<const recur_model_state*, int32_t>> seen(out.size());
  for (int32_t i = 0; i < n; ++i) {
    if (!states[i]) recur::fail(Error::Code::invalid_argument, fn, ": states[", i, "] is NULL");
    seen[static_cast<std::size_t>(i)] = {states[i], i};
  }
  const std::size_t gone = model_states().first_missing(states, out.size());
  if (gone < out.size()) recur::fail(Error::Code::state, fn, ": states[", gone, "] is not a live handle (destroyed?)");
  // Repeats found by sorting: no allocation per state.
  std::sort(seen.begin(), seen.end());
  for (std::size_t k = 1; k < seen.size(); ++k)
    if (seen[k].first == seen[k - 1].first)
      recur::fail(Error::Code::invalid_argument, fn, ": states[", seen[k - 1].second, "] and states[", seen[k].second,
                  "] are the same state (each stream may appear once per call)");
  for (int32_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = states[i]->impl.get();
  return out;
}

std::vector<recur::Index> timesteps_of(const recur::Model& m, const int32_t* timesteps, int32_t n, const char* fn) {
  const std::size_t want = m.inputs().size();
  if (n < 0 || static_cast<std::size_t>(n) != want)
    recur::fail(Error::Code::invalid_argument, fn, ": num_timesteps must be the number of inputs (", want, "), got ", n);
  if (n > 0 && !timesteps) recur::fail(Error::Code::invalid_argument, fn, ": timesteps is NULL");
  std::vector<recur::Index> out;
  for (int32_t i = 0; i < n; ++i) out.push_back(timesteps[i]);
  return out;
}

void fill_dims(const std::vector<recur::Index>& d, int32_t* rank, int64_t* dims) {
  if (rank) *rank = static_cast<int32_t>(d.size());
  if (dims) {
    for (int i = 0; i < RECUR_MAX_RANK; ++i) dims[i] = 0;
    for (std::size_t i = 0; i < d.size() && i < RECUR_MAX_RANK; ++i) dims[i] = d[i];
  }
}

}  // namespace

extern "C" {

recur_status recur_model_open_memory(recur_model** out, const void* data, size_t len, const char* name) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_model_open_memory", "out");
    auto handle = std::make_unique<recur_model>();
    handle->impl = std::make_unique<recur::Model>(recur::Model::open_memory(data, len, name ? name : ""));
    models().add(handle.get());
    *out = handle.release();
  });
}

recur_status recur_model_num_inputs(const recur_model* model, int32_t* count) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_num_inputs");
    require(count, "recur_model_num_inputs", "count");
    *count = static_cast<int32_t>(m.inputs().size());
  });
}

recur_status recur_model_num_outputs(const recur_model* model, int32_t* count) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_num_outputs");
    require(count, "recur_model_num_outputs", "count");
    *count = static_cast<int32_t>(m.outputs().size());
  });
}

recur_status recur_model_input(const recur_model* model, int32_t index, const char** name, int32_t* rank, int64_t* dims,
                               int32_t* token_ids) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_input");
    if (index < 0 || static_cast<std::size_t>(index) >= m.inputs().size())
      recur::fail(Error::Code::invalid_argument, "recur_model_input: index ", index, " is out of range (the model has ",
                  m.inputs().size(), " inputs)");
    const recur::ModelTensorInfo& t = m.inputs()[static_cast<std::size_t>(index)];
    if (name) *name = t.name.c_str();
    fill_dims(t.dims, rank, dims);
    if (token_ids) *token_ids = t.token_ids;
  });
}

recur_status recur_model_input_dtype(const recur_model* model, int32_t index, int32_t* dtype) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_input_dtype");
    require(dtype, "recur_model_input_dtype", "dtype");
    if (index < 0 || static_cast<std::size_t>(index) >= m.inputs().size())
      recur::fail(Error::Code::invalid_argument, "recur_model_input_dtype: index ", index, " is out of range (the model has ",
                  m.inputs().size(), " inputs)");
    const recur::ModelTensorInfo& t = m.inputs()[static_cast<std::size_t>(index)];
    *dtype = t.strings ? RECUR_DTYPE_STRING : t.token_ids ? RECUR_DTYPE_INT64 : RECUR_DTYPE_FLOAT32;
  });
}

recur_status recur_model_output(const recur_model* model, int32_t index, const char** name, int32_t* rank, int64_t* dims) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_output");
    if (index < 0 || static_cast<std::size_t>(index) >= m.outputs().size())
      recur::fail(Error::Code::invalid_argument, "recur_model_output: index ", index, " is out of range (the model has ",
                  m.outputs().size(), " outputs)");
    const recur::ModelTensorInfo& t = m.outputs()[static_cast<std::size_t>(index)];
    if (name) *name = t.name.c_str();
    fill_dims(t.dims, rank, dims);
  });
}

recur_status recur_model_output_dims(const recur_model* model, int32_t index, int32_t batch, const int32_t* timesteps,
                                     int32_t num_timesteps, int64_t* dims, int32_t* rank) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_output_dims");
    require(dims, "recur_model_output_dims", "dims");
    if (index < 0 || static_cast<std::size_t>(index) >= m.outputs().size())
      recur::fail(Error::Code::invalid_argument, "recur_model_output_dims: index ", index, " is out of range (the model has ",
                  m.outputs().size(), " outputs)");
    const auto all = m.output_dims(batch, timesteps_of(m, timesteps, num_timesteps, "recur_model_output_dims"));
    fill_dims(all[static_cast<std::size_t>(index)], rank, dims);
  });
}

recur_status recur_model_outputs_length(const recur_model* model, int32_t batch, const int32_t* timesteps,
                                        int32_t num_timesteps, size_t* out_len) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_outputs_length");
    require(out_len, "recur_model_outputs_length", "out_len");
    *out_len = m.outputs_length(batch, timesteps_of(m, timesteps, num_timesteps, "recur_model_outputs_length"));
  });
}

recur_status recur_model_inputs_length(const recur_model* model, int32_t batch, const int32_t* timesteps,
                                       int32_t num_timesteps, size_t* in_len) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_inputs_length");
    require(in_len, "recur_model_inputs_length", "in_len");
    *in_len = m.inputs_length(batch, timesteps_of(m, timesteps, num_timesteps, "recur_model_inputs_length"));
  });
}

recur_status recur_model_run_inputs(const recur_model* model, int32_t batch, const int32_t* timesteps,
                                    int32_t num_timesteps, const float* inputs, size_t inputs_len, const uint8_t* masks,
                                    size_t masks_len, float* outputs, size_t outputs_len) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_run_inputs");
    m.run_inputs(batch, timesteps_of(m, timesteps, num_timesteps, "recur_model_run_inputs"), inputs, inputs_len, masks,
                 masks_len, outputs, outputs_len);
  });
}

recur_status recur_model_input_sequence(const recur_model* model, int32_t index, int32_t* sequence) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_input_sequence");
    require(sequence, "recur_model_input_sequence", "sequence");
    if (index < 0 || static_cast<std::size_t>(index) >= m.inputs().size())
      recur::fail(Error::Code::invalid_argument, "recur_model_input_sequence: index ", index,
                  " is out of range (the model has ", m.inputs().size(), " inputs)");
    *sequence = m.inputs()[static_cast<std::size_t>(index)].sequence;
  });
}

recur_status recur_model_num_stateful_layers(const recur_model* model, int32_t* count) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_num_stateful_layers");
    require(count, "recur_model_num_stateful_layers", "count");
    *count = static_cast<int32_t>(m.stateful_layers().size());
  });
}

recur_status recur_model_stateful_layer(const recur_model* model, int32_t index, const char** name, int32_t* num_states,
                                        int32_t* batch, int32_t* units) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_stateful_layer");
    const std::vector<std::string>& names = m.stateful_layers();
    if (index < 0 || static_cast<std::size_t>(index) >= names.size())
      recur::fail(Error::Code::invalid_argument, "recur_model_stateful_layer: index ", index,
                  " is out of range (the model has ", names.size(), " stateful layers)");
    const recur::Layer& l = m.stateful_layer(names[static_cast<std::size_t>(index)]);
    if (name) *name = names[static_cast<std::size_t>(index)].c_str();
    if (num_states) *num_states = l.num_states();
    if (batch) *batch = l.config().batch_size;
    if (units) *units = l.config().units;
  });
}

recur_status recur_model_is_stateful(const recur_model* model, int32_t* stateful) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_is_stateful");
    require(stateful, "recur_model_is_stateful", "stateful");
    *stateful = m.stateful();
  });
}

recur_status recur_model_reset_states(recur_model* model) {
  return guarded([&] { mutable_model_of(model, "recur_model_reset_states").reset_states(); });
}

recur_status recur_model_states_length(const recur_model* model, const char* layer, size_t* len) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_states_length");
    require(layer, "recur_model_states_length", "layer");
    require(len, "recur_model_states_length", "len");
    *len = m.states_length(layer);
  });
}

recur_status recur_model_get_states(const recur_model* model, const char* layer, float* out, size_t len) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_get_states");
    require(layer, "recur_model_get_states", "layer");
    m.get_states(layer, out, len);
  });
}

recur_status recur_model_set_states(recur_model* model, const char* layer, const float* states, size_t len) {
  return guarded([&] {
    recur::Model& m = mutable_model_of(model, "recur_model_set_states");
    require(layer, "recur_model_set_states", "layer");
    m.set_states(layer, states, len);
  });
}

recur_status recur_layer_set_keras_backend(recur_layer* layer, const char* backend) {
  return guarded([&] {
    recur::Layer& l = layer_of(layer, "recur_layer_set_keras_backend");
    require(backend, "recur_layer_set_keras_backend", "backend");
    l.set_keras_backend(backend);
  });
}

recur_status recur_model_set_keras_backend(recur_model* model, const char* backend) {
  return guarded([&] {
    recur::Model& m = mutable_model_of(model, "recur_model_set_keras_backend");
    require(backend, "recur_model_set_keras_backend", "backend");
    m.set_keras_backend(backend);
  });
}

recur_status recur_model_streamable(const recur_model* model, const char** why) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_streamable");
    require(why, "recur_model_streamable", "why");
    *why = m.not_streamable().c_str();
  });
}

recur_status recur_model_state_create(recur_model_state** out, const recur_model* model, int32_t batch) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_model_state_create", "out");
    const recur::Model& m = model_of(model, "recur_model_state_create");
    auto handle = std::make_unique<recur_model_state>();
    handle->impl = m.make_stream(batch);
    model_states().add(handle.get());
    *out = handle.release();
  });
}

void recur_model_state_destroy(recur_model_state* state) {
  if (state && model_states().remove(state)) delete state;
}

recur_status recur_model_state_reset(recur_model_state* state) {
  return guarded([&] { stream_of(state, "recur_model_state_reset").reset(); });
}

recur_status recur_model_state_lengths(const recur_model_state* state, int32_t timesteps, size_t* inputs_len,
                                       size_t* outputs_len) {
  return guarded([&] {
    const recur::ModelStream& s = stream_of(state, "recur_model_state_lengths");
    if (inputs_len) *inputs_len = s.inputs_length(timesteps);
    if (outputs_len) *outputs_len = s.outputs_length(timesteps);
  });
}

recur_status recur_model_state_output_dims(const recur_model_state* state, int32_t index, int32_t timesteps,
                                           int64_t* dims, int32_t* rank) {
  return guarded([&] {
    const recur::ModelStream& st = stream_of(state, "recur_model_state_output_dims");
    require(dims, "recur_model_state_output_dims", "dims");
    const auto all = st.output_dims(timesteps);
    if (index < 0 || static_cast<std::size_t>(index) >= all.size())
      recur::fail(Error::Code::invalid_argument, "recur_model_state_output_dims: index ", index,
                  " is out of range (the model has ", all.size(), " outputs)");
    fill_dims(all[static_cast<std::size_t>(index)], rank, dims);
  });
}

recur_status recur_model_state_step(recur_model_state* state, int32_t timesteps, const float* inputs, size_t inputs_len,
                                    const uint8_t* masks, size_t masks_len, float* outputs, size_t outputs_len) {
  return guarded([&] {
    stream_of(state, "recur_model_state_step").step(timesteps, inputs, inputs_len, masks, masks_len, outputs, outputs_len);
  });
}

/* ---- model stream snapshots (0.9) ---- */

recur_status recur_model_state_save(const recur_model_state* state, void* out, size_t capacity, size_t* written) {
  return guarded([&] {
    const recur::ModelStream& s = stream_of(state, "recur_model_state_save");
    require(written, "recur_model_state_save", "written");
    const std::vector<std::uint8_t> bytes = s.save();
    *written = bytes.size();
    if (!out) return;
    if (capacity < bytes.size())
      recur::fail(Error::Code::shape, "recur_model_state_save: out holds ", capacity, " bytes, the snapshot needs ", bytes.size(),
                  " (*written); call with out NULL to ask the size");
    std::memcpy(out, bytes.data(), bytes.size());
  });
}

recur_status recur_model_state_load(recur_model_state* state, const void* data, size_t len) {
  return guarded([&] { stream_of(state, "recur_model_state_load").load(data, len); });
}

/* ---- resource limits (0.5) ---- */

recur_status recur_get_limit(int32_t limit, uint64_t* value) {
  return guarded([&] {
    const recur::Limit which = recur::limit_from_int(limit);
    require(value, "recur_get_limit", "value");
    *value = recur::limit(which);
  });
}

recur_status recur_default_limit(int32_t limit, uint64_t* value) {
  return guarded([&] {
    const recur::Limit which = recur::limit_from_int(limit);
    require(value, "recur_default_limit", "value");
    *value = recur::default_limit(which);
  });
}

recur_status recur_set_limit(int32_t limit, uint64_t value) {
  return guarded([&] { recur::set_limit(recur::limit_from_int(limit), value); });
}

/* ---- live handles (0.5) ---- */

recur_status recur_live_handles(uint64_t* layers_out, uint64_t* states_out, uint64_t* models_out,
                                uint64_t* model_states_out) {
  return guarded([&] {
    if (layers_out) *layers_out = layers().size();
    if (states_out) *states_out = states().size();
    if (models_out) *models_out = models().size();
    if (model_states_out) *model_states_out = model_states().size();
  });
}


/* ---- named runs, integer ids, cancellation and logging (0.6) ---- */

}  // extern "C": the helpers below return C++ types

namespace {

template <typename Options>  // recur_run_options or const recur_run_options
Options& options_of(Options* o, const char* fn) {
  if (!o) recur::fail(Error::Code::invalid_argument, fn, ": options is NULL");
  if (!run_options().contains(o)) recur::fail(Error::Code::state, fn, ": options is not a live handle (destroyed?)");
  return *o;
}

// The flag a run watches: none for NULL options (a run nobody can cancel).
const std::atomic<bool>* cancel_flag_of(const recur_run_options* o, const char* fn) {
  return o ? &options_of(o, fn).cancelled : nullptr;
}
// The run's timeout in seconds (0: none). Checks the handle as cancel_flag_of does: the two are
// arguments of one call, evaluated in either order.
double timeout_of(const recur_run_options* o, const char* fn) {
  return o ? options_of(o, fn).timeout_s.load(std::memory_order_relaxed) : 0.0;
}

template <typename T>
void require_array(const T* p, int32_t n, const char* fn, const char* name, const char* count) {
  if (n < 0) recur::fail(Error::Code::invalid_argument, fn, ": ", count, " must be >= 0, got ", n);
  if (n > 0 && !p) recur::fail(Error::Code::invalid_argument, fn, ": ", name, " is NULL with ", count, " = ", n);
}

std::vector<recur::NamedInput> named_inputs(const recur_tensor* in, int32_t n, const char* fn) {
  require_array(in, n, fn, "inputs", "num_inputs");
  std::vector<recur::NamedInput> out(static_cast<std::size_t>(n));
  for (int32_t k = 0; k < n; ++k) {
    const recur_tensor& t = in[k];
    if (t.version != RECUR_TENSOR_VERSION)
      recur::fail(Error::Code::invalid_argument, fn, ": inputs[", k, "].version must be RECUR_TENSOR_VERSION (",
                  RECUR_TENSOR_VERSION, "; use recur_tensor_init), got ", t.version);
    if (!t.name) recur::fail(Error::Code::invalid_argument, fn, ": inputs[", k, "].name is NULL");
    if (t.rank < 1 || t.rank > RECUR_MAX_RANK)
      recur::fail(Error::Code::shape, fn, ": inputs[", k, "] ('", t.name, "').rank: expected 1 to ", RECUR_MAX_RANK,
                  ", got ", t.rank);
    recur::NamedInput& x = out[static_cast<std::size_t>(k)];
    x.name = t.name;
    x.dtype = static_cast<recur::DType>(t.dtype);
    x.data = t.data;
    x.length = t.length;
    x.dims.assign(t.dims, t.dims + t.rank);
    x.mask = t.mask;
    x.mask_length = t.mask_length;
  }
  return out;
}

std::vector<recur::NamedOutput> named_outputs(const recur_output* out, int32_t n, const char* fn) {
  require_array(out, n, fn, "outputs", "num_outputs");
  std::vector<recur::NamedOutput> r(static_cast<std::size_t>(n));
  for (int32_t k = 0; k < n; ++k) {
    const recur_output& o = out[k];
    if (o.version != RECUR_OUTPUT_VERSION)
      recur::fail(Error::Code::invalid_argument, fn, ": outputs[", k, "].version must be RECUR_OUTPUT_VERSION (",
                  RECUR_OUTPUT_VERSION, "; use recur_output_init), got ", o.version);
    if (!o.name) recur::fail(Error::Code::invalid_argument, fn, ": outputs[", k, "].name is NULL");
    r[static_cast<std::size_t>(k)].name = o.name;
    r[static_cast<std::size_t>(k)].data = o.data;
    r[static_cast<std::size_t>(k)].capacity = o.capacity;
  }
  return r;
}

// Writes what a successful call found back into the caller's structs.
void write_back(const std::vector<recur::NamedOutput>& from, recur_output* to) {
  for (std::size_t k = 0; k < from.size(); ++k) {
    fill_dims(from[k].dims, &to[k].rank, to[k].dims);
    to[k].length = from[k].length;
  }
}

// Core messages name the argument; the C function's name goes in front.
template <typename F>
void prefixed(const char* fn, F&& body) {
  try {
    body();
  } catch (const Error& e) {
    throw Error(e.code(), recur::detail::bounded_message(std::string(fn) + ": " + e.what()));
  }
}

void log_sink(void* user_data, int level, const char* message) {
  const auto* cb = static_cast<const std::pair<recur_log_callback, void*>*>(user_data);
  cb->first(cb->second, level, message);
}

}  // namespace

extern "C" {

recur_status recur_tensor_init(recur_tensor* tensor, uint32_t version) {
  return guarded([&] {
    require(tensor, "recur_tensor_init", "tensor");
    if (version != RECUR_TENSOR_VERSION)
      recur::fail(Error::Code::unsupported, "recur_tensor_init: version ", version, " is not supported (this library has ",
                  RECUR_TENSOR_VERSION, ")");
    std::memset(tensor, 0, sizeof *tensor);
    tensor->version = version;
    tensor->dtype = RECUR_DTYPE_FLOAT32;
  });
}

recur_status recur_output_init(recur_output* output, uint32_t version) {
  return guarded([&] {
    require(output, "recur_output_init", "output");
    if (version != RECUR_OUTPUT_VERSION)
      recur::fail(Error::Code::unsupported, "recur_output_init: version ", version, " is not supported (this library has ",
                  RECUR_OUTPUT_VERSION, ")");
    std::memset(output, 0, sizeof *output);
    output->version = version;
  });
}

recur_status recur_run_options_create(recur_run_options** out) {
  if (out) *out = nullptr;
  return guarded([&] {
    require(out, "recur_run_options_create", "out");
    auto handle = std::make_unique<recur_run_options>();
    run_options().add(handle.get());
    *out = handle.release();
  });
}

void recur_run_options_destroy(recur_run_options* options) {
  if (options && run_options().remove(options)) delete options;
}

recur_status recur_live_run_options(uint64_t* count) {
  return guarded([&] {
    require(count, "recur_live_run_options", "count");
    *count = run_options().size();
  });
}

recur_status recur_run_options_cancel(recur_run_options* options) {
  return guarded([&] {
    options_of(options, "recur_run_options_cancel").cancelled.store(true, std::memory_order_relaxed);
  });
}

recur_status recur_run_options_reset(recur_run_options* options) {
  return guarded([&] {
    options_of(options, "recur_run_options_reset").cancelled.store(false, std::memory_order_relaxed);
  });
}

recur_status recur_run_options_is_cancelled(const recur_run_options* options, int32_t* cancelled) {
  return guarded([&] {
    const recur_run_options& o = options_of(options, "recur_run_options_is_cancelled");
    require(cancelled, "recur_run_options_is_cancelled", "cancelled");
    *cancelled = o.cancelled.load(std::memory_order_relaxed) ? 1 : 0;
  });
}

recur_status recur_model_run_named(const recur_model* model, const recur_tensor* inputs, int32_t num_inputs,
                                   recur_output* outputs, int32_t num_outputs, const recur_run_options* options) {
  const char* fn = "recur_model_run_named";
  return guarded([&] {
    const recur::Model& m = model_of(model, fn);
    const recur::CancelScope scope(cancel_flag_of(options, fn), timeout_of(options, fn));
    const std::vector<recur::NamedInput> in = named_inputs(inputs, num_inputs, fn);
    std::vector<recur::NamedOutput> out = named_outputs(outputs, num_outputs, fn);
    prefixed(fn, [&] { m.run_named(in, out); });
    write_back(out, outputs);
  });
}

recur_status recur_model_output_shapes(const recur_model* model, const recur_tensor* inputs, int32_t num_inputs,
                                       recur_output* outputs, int32_t num_outputs) {
  const char* fn = "recur_model_output_shapes";
  return guarded([&] {
    const recur::Model& m = model_of(model, fn);
    const std::vector<recur::NamedInput> in = named_inputs(inputs, num_inputs, fn);
    std::vector<recur::NamedOutput> out = named_outputs(outputs, num_outputs, fn);
    prefixed(fn, [&] { m.named_output_shapes(in, out); });
    write_back(out, outputs);
  });
}

recur_status recur_model_state_step_named(recur_model_state* state, const recur_tensor* inputs, int32_t num_inputs,
                                          recur_output* outputs, int32_t num_outputs, const recur_run_options* options) {
  const char* fn = "recur_model_state_step_named";
  return guarded([&] {
    recur::ModelStream& st = stream_of(state, fn);
    const recur::CancelScope scope(cancel_flag_of(options, fn), timeout_of(options, fn));
    const std::vector<recur::NamedInput> in = named_inputs(inputs, num_inputs, fn);
    std::vector<recur::NamedOutput> out = named_outputs(outputs, num_outputs, fn);
    prefixed(fn, [&] { st.step_named(in, out); });
    write_back(out, outputs);
  });
}

recur_status recur_model_state_output_shapes(const recur_model_state* state, const recur_tensor* inputs,
                                             int32_t num_inputs, recur_output* outputs, int32_t num_outputs) {
  const char* fn = "recur_model_state_output_shapes";
  return guarded([&] {
    const recur::ModelStream& st = stream_of(state, fn);
    const std::vector<recur::NamedInput> in = named_inputs(inputs, num_inputs, fn);
    std::vector<recur::NamedOutput> out = named_outputs(outputs, num_outputs, fn);
    prefixed(fn, [&] { st.named_output_shapes(in, out); });
    write_back(out, outputs);
  });
}

recur_status recur_model_states_step_named(recur_model_state* const* states, int32_t num_states,
                                           const recur_tensor* inputs, int32_t num_inputs, recur_output* outputs,
                                           int32_t num_outputs, const recur_run_options* options) {
  const char* fn = "recur_model_states_step_named";
  return guarded([&] {
    const std::vector<recur::ModelStream*> streams = streams_of(states, num_states, fn);
    const recur::CancelScope scope(cancel_flag_of(options, fn), timeout_of(options, fn));
    const std::vector<recur::NamedInput> in = named_inputs(inputs, num_inputs, fn);
    std::vector<recur::NamedOutput> out = named_outputs(outputs, num_outputs, fn);
    prefixed(fn, [&] { recur::ModelStream::step_named_many(streams, in, out); });
    write_back(out, outputs);
  });
}

recur_status recur_model_states_output_shapes(const recur_model_state* const* states, int32_t num_states,
                                              const recur_tensor* inputs, int32_t num_inputs, recur_output* outputs,
                                              int32_t num_outputs) {
  const char* fn = "recur_model_states_output_shapes";
  return guarded([&] {
    const std::vector<recur::ModelStream*> streams = streams_of(states, num_states, fn);
    const std::vector<const recur::ModelStream*> cs(streams.begin(), streams.end());
    const std::vector<recur::NamedInput> in = named_inputs(inputs, num_inputs, fn);
    std::vector<recur::NamedOutput> out = named_outputs(outputs, num_outputs, fn);
    prefixed(fn, [&] { recur::ModelStream::named_output_shapes_many(cs, in, out); });
    write_back(out, outputs);
  });
}

recur_status recur_set_log_callback(recur_log_callback callback, void* user_data, int32_t min_level) {
  return guarded([&] {
    if (callback && (min_level < RECUR_LOG_DEBUG || min_level > RECUR_LOG_ERROR))
      recur::fail(Error::Code::invalid_argument, "recur_set_log_callback: min_level must be a recur_log_level (",
                  RECUR_LOG_DEBUG, " debug to ", RECUR_LOG_ERROR, " error), got ", min_level);
    // The core's sink has no recur_* types: the callback and its user_data travel together.
    static std::pair<recur_log_callback, void*> slots[2];
    static std::mutex mutex;
    static int current = 0;
    std::lock_guard<std::mutex> lock(mutex);
    if (!callback) {
      recur::log::set_sink(nullptr, nullptr, 0);
      return;
    }
    // The slot not in use: set_sink waits for calls of the old sink, so the other slot is free
    // once it returns.
    const int next = 1 - current;
    slots[next] = {callback, user_data};
    recur::log::set_sink(log_sink, &slots[next], min_level);
    current = next;
    recur::log::write(recur::log::Level::info, "CPU kernels: ", recur::cpu::cpu_kernels_reason());
  });
}

}  // extern "C"

/* ---- budgets: a run's deadline (0.8) ---- */

extern "C" {

recur_status recur_run_options_set_timeout(recur_run_options* options, double seconds) {
  return guarded([&] {
    recur_run_options& o = options_of(options, "recur_run_options_set_timeout");
    if (!(seconds >= 0) || std::isinf(seconds))
      recur::fail(Error::Code::invalid_argument, "recur_run_options_set_timeout: seconds must be a finite number >= 0 "
                  "(0: no timeout), got ", seconds);
    o.timeout_s.store(seconds, std::memory_order_relaxed);
  });
}

recur_status recur_run_options_get_timeout(const recur_run_options* options, double* seconds) {
  return guarded([&] {
    const recur_run_options& o = options_of(options, "recur_run_options_get_timeout");
    require(seconds, "recur_run_options_get_timeout", "seconds");
    *seconds = o.timeout_s.load(std::memory_order_relaxed);
  });
}

}  // extern "C"

/* ---- reduced precision weights (0.8) ---- */

extern "C" {

recur_status recur_layer_set_precision(recur_layer* layer, const char* precision) {
  return guarded([&] {
    recur::Layer& l = layer_of(layer, "recur_layer_set_precision");
    require(precision, "recur_layer_set_precision", "precision");
    l.set_precision(recur::parse_precision(precision, "recur_layer_set_precision"));
  });
}

recur_status recur_layer_get_precision(const recur_layer* layer, const char** precision) {
  return guarded([&] {
    const recur::Layer& l = layer_of(layer, "recur_layer_get_precision");
    require(precision, "recur_layer_get_precision", "precision");
    *precision = recur::precision_name(l.precision());
  });
}

recur_status recur_model_set_precision(recur_model* model, const char* precision) {
  return guarded([&] {
    recur::Model& m = mutable_model_of(model, "recur_model_set_precision");
    require(precision, "recur_model_set_precision", "precision");
    m.set_precision(recur::parse_precision(precision, "recur_model_set_precision"));
  });
}

recur_status recur_model_get_precision(const recur_model* model, const char** precision) {
  return guarded([&] {
    const recur::Model& m = model_of(model, "recur_model_get_precision");
    require(precision, "recur_model_get_precision", "precision");
    *precision = recur::precision_name(m.precision());
  });
}

}  // extern "C"
