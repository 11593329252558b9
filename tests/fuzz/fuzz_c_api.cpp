// SPDX-License-Identifier: Apache-2.0
// C ABI call sequences: the input is a program of up to 64 calls on a few layers, states, cells,
// models and resource limits (each input starts from the baseline limits), in any order,
// with fuzzed arguments. Shapes, counts and batch sizes may be wrong; buffer lengths never are:
// every length passed is the true size of the buffer allocated for the call, so any read or write
// past one is recur's. Layers have at most 64 units, 64 features, 8 rows and 16 timesteps (mostly
// 8 or fewer: the same code paths in a fraction of the time), except for a few huge values that must
// fail cleanly. A program runs under lowered weight, state and tensor limits (kBaseline), so a huge
// size fails with RECUR_ERR_LIMIT instead of asking for what the defaults allow: a layer with
// 65536 features and an Orthogonal kernel fits the default 1 GiB of weights, and initialising it
// takes seconds. Models are fixtures opened from memory afresh for each input (at most twice), so
// that no state carries over from one input to the next.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_common.hpp"

namespace {

constexpr int kSlots = 3;
constexpr std::size_t kMaxBuffer = std::size_t(1) << 16;  // floats of one buffer

// Limits a program runs under (the rest keep their defaults): far above what a fixture or a
// 64-unit layer needs, far below a huge size.
struct Baseline {
  int32_t limit;
  uint64_t value;
};
// Weights: 1 MiB, as 4 MiB let a 65536 x 16 Orthogonal kernel through, whose QR took 2 s under ASan.
constexpr Baseline kBaseline[] = {{RECUR_LIMIT_WEIGHT_BYTES, 1u << 20}, {RECUR_LIMIT_STATE_BYTES, 4u << 20},
                                  {RECUR_LIMIT_TENSOR_BYTES, 16u << 20}};

void set_baseline() {
  for (int32_t i = RECUR_LIMIT_UNITS; i <= RECUR_LIMIT_RUN_WORK; ++i) recur_set_limit(i, 0);
  for (const Baseline& b : kBaseline)
    if (recur_set_limit(b.limit, b.value) != RECUR_OK) std::abort();
}

// A limit raised above the baseline (0 restores the default) goes back down to it.
void cap_at_baseline(int32_t limit) {
  for (const Baseline& b : kBaseline) {
    uint64_t v = 0;
    if (b.limit == limit && recur_get_limit(limit, &v) == RECUR_OK && v > b.value) recur_set_limit(limit, b.value);
  }
}

const char* pick_cstr(FuzzedDataProvider& p, std::initializer_list<const char*> options) {
  const std::size_t i = p.ConsumeIntegralInRange<std::size_t>(0, options.size() - 1);
  return options.begin()[i];
}

// A small count, sometimes one that is wrong in an interesting way. Seven times in eight it is at
// most 8: a layer's first use runs its initialisers (Orthogonal is a QR, cubic in its sizes), which
// at up to 64 units and features took three quarters of the target's time.
int32_t small(FuzzedDataProvider& p, int32_t lo, int32_t hi) {
  static const int32_t kOdd[] = {0, -1, -2, 65536, 1 << 20, std::numeric_limits<int32_t>::max(),
                                 std::numeric_limits<int32_t>::min()};
  if (p.ConsumeIntegralInRange(0, 31) == 0) return p.PickValueInArray(kOdd);
  if (hi > 8 && lo <= 8 && p.ConsumeIntegralInRange(0, 7) != 0) hi = 8;
  return p.ConsumeIntegralInRange(lo, hi);
}

int32_t flag(FuzzedDataProvider& p) {
  static const int32_t kFlags[] = {RECUR_DEFAULT, 0, 1, 0, 1, 2, 7};
  return p.PickValueInArray(kFlags);
}

float value(FuzzedDataProvider& p) {
  static const float kValues[] = {0.0f, 1.0f, -1.0f, 0.5f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(), 1e-40f};
  return p.ConsumeBool() ? p.PickValueInArray(kValues) : p.ConsumeFloatingPointInRange(-2.0f, 2.0f);
}

// A buffer whose size is the expected one or a little off; its length is always its size.
std::vector<float> buffer(FuzzedDataProvider& p, std::size_t expected) {
  std::size_t n = expected;
  switch (p.ConsumeIntegralInRange(0, 7)) {
    case 0: n = expected > 0 ? expected - 1 : 0; break;
    case 1: n = expected + 1; break;
    case 2: n = p.ConsumeIntegralInRange<std::size_t>(0, 64); break;
    default: break;
  }
  if (n > kMaxBuffer) n = p.ConsumeIntegralInRange<std::size_t>(0, 64);
  std::vector<float> b(n, 0.0f);
  const std::size_t filled = std::min<std::size_t>(n, p.ConsumeIntegralInRange<std::size_t>(0, 8));
  for (std::size_t i = 0; i < filled; ++i) b[p.ConsumeIntegralInRange<std::size_t>(0, n - 1)] = value(p);
  return b;
}

// Inputs of models with an Embedding are token ids: mostly 0 to 7; huge and non-finite values stay
// (recur must refuse them).
float token(float v) { return std::isfinite(v) && std::fabs(v) < 1e6f ? static_cast<float>(static_cast<int>(std::fabs(v)) & 7) : v; }

std::vector<std::uint8_t> mask_buffer(FuzzedDataProvider& p, std::size_t expected) {
  std::size_t n = expected;
  if (p.ConsumeIntegralInRange(0, 7) == 0) n = p.ConsumeIntegralInRange<std::size_t>(0, 64);
  if (n > kMaxBuffer) n = 64;
  std::vector<std::uint8_t> m(n, 1);
  for (auto& b : m) b = p.ConsumeBool() ? 1 : p.ConsumeIntegral<std::uint8_t>() & 3;
  return m;
}

const char* initializer(FuzzedDataProvider& p) {
  return pick_cstr(p, {nullptr, "glorot_uniform", "orthogonal", "zeros", "ones", "random_normal", "lecun_normal",
                       "he_uniform", "identity", "bogus", "", "{\"class_name\": \"Orthogonal\", \"config\": {\"gain\": 2.0}}",
                       "{\"class_name\": \"Constant\", \"config\": {\"value\": 1e39}}",
                       "{\"class_name\": \"RandomUniform\", \"config\": {\"minval\": 1, \"maxval\": -1}}",
                       "{\"class_name\": \"VarianceScaling\", \"config\": {\"scale\": -1, \"mode\": \"fan_avg\"}}",
                       "{\"class_name\": \"Identity\", \"config\": {\"gain\": 1}}", "{", "[]", "null"});
}

const char* regularizer(FuzzedDataProvider& p) {
  return pick_cstr(p, {nullptr, nullptr, "l1", "l2", "l1_l2", "bogus",
                       "{\"class_name\": \"L1L2\", \"config\": {\"l1\": 0.01, \"l2\": -1}}",
                       "{\"class_name\": \"OrthogonalRegularizer\", \"config\": {\"factor\": 0.1}}", "{}"});
}

const char* constraint(FuzzedDataProvider& p) {
  return pick_cstr(p, {nullptr, nullptr, "max_norm", "non_neg", "unit_norm", "min_max_norm", "bogus",
                       "{\"class_name\": \"MaxNorm\", \"config\": {\"max_value\": 0, \"axis\": 7}}",
                       "{\"class_name\": \"MinMaxNorm\", \"config\": {\"min_value\": 2, \"max_value\": 1, \"rate\": 0.5}}"});
}

recur_layer* create_layer(FuzzedDataProvider& p) {
  recur_layer_options o;
  std::memset(&o, 0, sizeof o);
  if (recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION) != RECUR_OK) std::abort();
  o.type = p.ConsumeIntegralInRange(0, 9);
  static const int32_t kDialects[] = {RECUR_DIALECT_AUTO, RECUR_DIALECT_KERAS2, RECUR_DIALECT_KERAS3, 1, -1};
  o.dialect = p.PickValueInArray(kDialects);
  o.keras_version = pick_cstr(p, {nullptr, "2.15.0", "3.0.0", "3.13.0", "3.14.0", "", "x.y"});
  o.name = pick_cstr(p, {nullptr, "layer", ""});
  o.units = small(p, 1, 64);
  o.input_size = small(p, 1, 64);
  o.activation = pick_cstr(p, {nullptr, "tanh", "relu", "sigmoid", "hard_sigmoid", "linear", "softmax", "elu",
                               "selu", "gelu", "swish", "softplus", "exponential", "bogus"});
  o.recurrent_activation = pick_cstr(p, {nullptr, nullptr, "sigmoid", "hard_sigmoid", "tanh", "relu", "bogus"});
  o.use_bias = flag(p);
  o.reset_after = flag(p);
  o.implementation = flag(p);
  o.unit_forget_bias = flag(p);
  static const float kRates[] = {0.0f, 0.0f, 0.25f, 0.5f, 1.0f, -0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN()};
  o.dropout = p.PickValueInArray(kRates);
  o.recurrent_dropout = p.PickValueInArray(kRates);
  o.return_sequences = flag(p);
  o.return_state = flag(p);
  o.go_backwards = flag(p);
  o.stateful = flag(p);
  o.time_major = flag(p);
  o.unroll = flag(p);
  o.zero_output_for_mask = flag(p);
  o.batch_size = small(p, 0, 8);
  o.kernel_initializer = initializer(p);
  o.recurrent_initializer = initializer(p);
  o.bias_initializer = initializer(p);
  o.kernel_regularizer = regularizer(p);
  o.recurrent_regularizer = regularizer(p);
  o.bias_regularizer = regularizer(p);
  o.activity_regularizer = regularizer(p);
  o.kernel_constraint = constraint(p);
  o.recurrent_constraint = constraint(p);
  o.bias_constraint = constraint(p);
  static const int64_t kSeeds[] = {-1, 0, 42, std::numeric_limits<int64_t>::max(), -5};
  o.seed = p.PickValueInArray(kSeeds);
  o.trainable = flag(p);
  recur_layer* layer = nullptr;
  if (recur_layer_create(&layer, &o) != RECUR_OK) {
    recur_fuzz::check_message(true);
    if (layer) std::abort();  // documented: *out is NULL on error
    return nullptr;
  }
  // Documented: a layer whose weights would go over RECUR_LIMIT_WEIGHT_BYTES is refused.
  std::size_t floats = 0;
  uint64_t limit = 0;
  if (recur_layer_weights_length(layer, &floats) != RECUR_OK || recur_get_limit(RECUR_LIMIT_WEIGHT_BYTES, &limit) != RECUR_OK ||
      floats * sizeof(float) > limit)
    std::abort();
  return layer;
}

struct LayerShape {
  recur_layer_info info;
  std::size_t units = 0, features = 0, states = 1;
};

LayerShape shape_of(const recur_layer* layer) {
  LayerShape s;
  std::memset(&s.info, 0, sizeof s.info);
  s.info.version = RECUR_LAYER_INFO_VERSION;
  if (recur_layer_get_info(layer, &s.info) == RECUR_OK) {
    s.units = s.info.units > 0 ? static_cast<std::size_t>(s.info.units) : 0;
    s.features = s.info.input_size > 0 ? static_cast<std::size_t>(s.info.input_size) : 0;
    s.states = s.info.num_states > 0 ? static_cast<std::size_t>(s.info.num_states) : 1;
  }
  return s;
}

// Row counts: the layer's fixed batch, 1 to 8, or sometimes a wrong one.
int32_t batch_for(FuzzedDataProvider& p, const LayerShape& s) {
  if (s.info.stateful && s.info.batch_size > 0 && p.ConsumeBool()) return s.info.batch_size;
  return small(p, 1, 8);
}

std::size_t count(int32_t a) { return a > 0 ? static_cast<std::size_t>(a) : 0; }

struct Models {
  std::vector<std::string> images;
  Models() {
    images.push_back(recur_fuzz::read_source_file("tests/cli/models/keras3/bigru.keras"));
    images.push_back(recur_fuzz::read_source_file("tests/keras/graphs/keras3/multi_io.keras"));
    images.push_back(recur_fuzz::read_source_file("tests/keras/graphs/keras3/stateful_functional_lstm_gru.keras"));
    images.push_back(recur_fuzz::read_source_file("tests/keras/graphs/keras2/embedding_masked_merge.keras"));
  }
};

class Program {
 public:
  explicit Program(FuzzedDataProvider& p) : p_(p) { set_baseline(); }
  ~Program() {
    for (auto* s : model_states_) recur_model_state_destroy(s);
    for (auto* s : states_) recur_state_destroy(s);
    for (auto* l : layers_) recur_layer_destroy(l);
    recur_model_destroy(model_);
  }

  void run() {
    for (int step = 0; step < 64 && p_.remaining_bytes() > 0; ++step) {
      switch (p_.ConsumeIntegralInRange(0, 20)) {
        case 0: replace_layer(); break;
        case 1: forward(); break;
        case 2: state_create(); break;
        case 3: state_ops(); break;
        case 4: forward_state(); break;
        case 5: forward_states(); break;
        case 6: cell(); break;
        case 7: weights(); break;
        case 8: losses(); break;
        case 9: layer_misc(); break;
        case 10: stateful_layer(); break;
        case 11: open_model(); break;
        case 12: model_run(); break;
        case 13: model_run_inputs(); break;
        case 14: model_stream(); break;
        case 15: model_states(); break;
        case 16: model_misc(); break;
        case 17: model_layer(); break;
        case 19: forward(); break;
        case 18: {  // a slot emptied
          const int i = slot();
          recur_layer_destroy(layers_[i]);
          layers_[i] = nullptr;
          break;
        }
        default: set_limit(); break;
      }
      recur_fuzz::check_message(false);  // the last failure's message, whichever call it was
    }
  }

 private:
  int slot() { return p_.ConsumeIntegralInRange(0, kSlots - 1); }
  recur_layer* layer() { return layers_[slot()]; }

  // A process-wide resource limit lowered (or an unknown one): later calls of this input must
  // fail with RECUR_ERR_LIMIT where they go over it, and objects made before keep working.
  void set_limit() {
    static const uint64_t kValues[] = {0, 1, 2, 8, 64, 1024, 4096, 1 << 16, 1 << 20};
    const int32_t which = p_.ConsumeIntegralInRange(-1, RECUR_LIMIT_RUN_WORK + 1);
    const uint64_t value = p_.PickValueInArray(kValues);
    uint64_t got = 0, fallback = 0;
    const bool known = recur_set_limit(which, value) == RECUR_OK;
    limit_set_ = limit_set_ || known;
    if (known != (recur_get_limit(which, &got) == RECUR_OK) ||
        known != (recur_default_limit(which, &fallback) == RECUR_OK))
      std::abort();  // a limit is known to all three calls or to none
    if (known && got != (value ? value : fallback)) std::abort();  // documented: 0 restores the default
    cap_at_baseline(which);
  }

  void replace_layer() {
    const int i = slot();
    recur_layer_destroy(layers_[i]);
    layers_[i] = create_layer(p_);
  }

  void forward() {
    recur_layer* l = layer();
    if (!l) return;
    const LayerShape s = shape_of(l);
    const int32_t b = batch_for(p_, s), t = small(p_, 1, 16);
    std::size_t out_len = 0;
    if (recur_layer_output_length(l, b, t, &out_len) != RECUR_OK) out_len = count(b) * count(t) * s.units;
    std::vector<float> in = buffer(p_, count(b) * count(t) * s.features);
    std::vector<float> out = buffer(p_, out_len);
    const bool masked = p_.ConsumeBool(), init = p_.ConsumeBool(), fin = p_.ConsumeBool();
    std::vector<std::uint8_t> mask = masked ? mask_buffer(p_, count(b) * count(t)) : std::vector<std::uint8_t>();
    std::vector<float> h0 = init ? buffer(p_, s.states * count(b) * s.units) : std::vector<float>();
    std::vector<float> hn = fin ? buffer(p_, s.states * count(b) * s.units) : std::vector<float>();
    const int32_t n0 = init ? p_.ConsumeIntegralInRange(0, 3) : 0;
    recur_layer_forward(l, in.data(), in.size(), b, t, masked ? mask.data() : nullptr, mask.size(),
                        init ? h0.data() : nullptr, h0.size(), n0, p_.ConsumeBool(), out.data(), out.size(),
                        fin ? hn.data() : nullptr, hn.size());
  }

  void state_create() {
    recur_layer* l = layer();
    if (!l || states_.size() >= 4) return;
    recur_state* st = nullptr;
    if (recur_state_create(&st, l, batch_for(p_, shape_of(l))) == RECUR_OK) states_.push_back(st);
  }

  recur_state* state() {
    if (states_.empty()) return nullptr;
    return states_[p_.ConsumeIntegralInRange<std::size_t>(0, states_.size() - 1)];
  }

  void state_ops() {
    if (states_.empty()) return;
    const std::size_t i = p_.ConsumeIntegralInRange<std::size_t>(0, states_.size() - 1);
    recur_state* st = states_[i];
    int32_t ns = 0, b = 0, u = 0;
    recur_state_shape(st, &ns, &b, &u);
    const std::size_t len = count(ns) * count(b) * count(u);
    switch (p_.ConsumeIntegralInRange(0, 5)) {
      case 0: {
        std::vector<float> v = buffer(p_, len);
        recur_state_get(st, v.data(), v.size());
        break;
      }
      case 1: {
        std::vector<float> v = buffer(p_, len);
        recur_state_set(st, v.data(), v.size(), p_.ConsumeBool() ? ns : p_.ConsumeIntegralInRange(-1, 3));
        break;
      }
      case 2: recur_state_reset(st); break;
      case 3: {
        recur_device_info d;
        std::memset(&d, 0, sizeof d);
        d.version = RECUR_DEVICE_INFO_VERSION;
        recur_state_get_device(st, &d);
        recur_state_set_device(st, pick_cstr(p_, {"cpu", "auto", "bogus", "cuda:7"}));
        break;
      }
      case 4: recur_state_shape(st, nullptr, nullptr, nullptr); break;
      default:
        recur_state_destroy(st);
        states_.erase(states_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
    }
  }

  void forward_state() {
    recur_layer* l = layer();
    recur_state* st = state();
    if (!l || !st) return;
    const LayerShape s = shape_of(l);
    int32_t ns = 0, b = 0, u = 0;
    recur_state_shape(st, &ns, &b, &u);
    const int32_t t = small(p_, 1, 16);
    std::size_t out_len = 0;
    if (recur_layer_output_length(l, b, t, &out_len) != RECUR_OK) out_len = 0;
    std::vector<float> in = buffer(p_, count(b) * count(t) * s.features);
    std::vector<float> out = buffer(p_, out_len);
    const bool masked = p_.ConsumeBool();
    std::vector<std::uint8_t> mask = masked ? mask_buffer(p_, count(b) * count(t)) : std::vector<std::uint8_t>();
    recur_layer_forward_state(l, st, in.data(), in.size(), t, masked ? mask.data() : nullptr, mask.size(), out.data(),
                              out.size());
  }

  void forward_states() {
    recur_layer* l = layer();
    if (!l || states_.empty()) return;
    const LayerShape s = shape_of(l);
    std::vector<recur_state*> picked;
    std::size_t rows = 0;
    const int n = p_.ConsumeIntegralInRange(0, 4);
    for (int i = 0; i < n; ++i) {
      recur_state* st = state();  // the same state may come twice: recur must refuse that
      int32_t b = 0;
      recur_state_shape(st, nullptr, &b, nullptr);
      rows += count(b);
      picked.push_back(st);
    }
    std::vector<float> in = buffer(p_, rows * s.features);
    std::vector<float> out = buffer(p_, rows * s.units);
    const bool masked = p_.ConsumeBool();
    std::vector<std::uint8_t> mask = masked ? mask_buffer(p_, rows) : std::vector<std::uint8_t>();
    recur_device_info d{};
    d.version = RECUR_DEVICE_INFO_VERSION;
    // The device-buffer form takes these host buffers only where they are no device pointers to
    // anything: a layer on the CPU (its refusal) or the emulator, whose device memory is the host's.
    const bool host_memory =
        recur_layer_get_device(l, &d) == RECUR_OK &&
        (std::strcmp(d.backend, "cpu") == 0 || std::strncmp(d.device_name, "recur GPU emulator", 18) == 0);
    if (host_memory && p_.ConsumeBool()) {
      // Device pointers carry no lengths: a buffer too short for the rows goes as NULL (refused).
      const bool in_fits = !in.empty() && in.size() >= rows * s.features;
      const bool out_fits = !out.empty() && out.size() >= rows * s.units;
      recur_layer_forward_states_device(l, nullptr, picked.data(), static_cast<int32_t>(picked.size()),
                                        in_fits && p_.ConsumeBool() ? in.data() : nullptr,
                                        masked ? mask.data() : nullptr, mask.size(), out_fits ? out.data() : nullptr);
      return;
    }
    recur_layer_forward_states(l, picked.data(), static_cast<int32_t>(picked.size()), in.data(), in.size(),
                               masked ? mask.data() : nullptr, mask.size(), out.data(), out.size());
  }

  void cell() {
    recur_layer* l = layer();
    if (!l) return;
    const LayerShape s = shape_of(l);
    const int32_t b = batch_for(p_, s);
    int32_t n = 0;
    switch (p_.ConsumeIntegralInRange(0, 4)) {
      case 0: {
        std::vector<float> in = buffer(p_, count(b) * s.features);
        std::vector<float> h = buffer(p_, s.states * count(b) * s.units);
        std::vector<float> out = buffer(p_, count(b) * s.units);
        const bool keep = p_.ConsumeBool();
        std::vector<float> h2 = keep ? buffer(p_, s.states * count(b) * s.units) : std::vector<float>();
        recur_cell_call(l, in.data(), in.size(), b, h.data(), h.size(),
                        p_.ConsumeBool() ? static_cast<int32_t>(s.states) : p_.ConsumeIntegralInRange(-1, 3),
                        p_.ConsumeBool(), out.data(), out.size(), keep ? h2.data() : nullptr, h2.size());
        break;
      }
      case 1:
      case 2: {
        const bool rec = p_.ConsumeBool();
        const int32_t training = p_.ConsumeBool();
        const recur_status st = rec ? recur_cell_get_recurrent_dropout_mask(l, b, training, nullptr, 0, &n)
                                    : recur_cell_get_dropout_mask(l, b, training, nullptr, 0, &n);
        if (st != RECUR_OK || n < 0 || n > 8) break;
        std::vector<float> m = buffer(p_, count(n) * count(b) * (rec ? s.units : s.features));
        if (rec) recur_cell_get_recurrent_dropout_mask(l, b, training, m.data(), m.size(), &n);
        else recur_cell_get_dropout_mask(l, b, training, m.data(), m.size(), &n);
        break;
      }
      case 3: recur_cell_reset_dropout_mask(l); break;
      default: recur_cell_reset_recurrent_dropout_mask(l); break;
    }
  }

  void weights() {
    recur_layer* l = layer();
    if (!l) return;
    int32_t n = 0;
    recur_layer_num_weights(l, &n);
    const int32_t i = p_.ConsumeIntegralInRange(-1, 4);
    int64_t dims[2] = {0, 0};
    int32_t nd = 0;
    std::size_t len = 0;
    if (recur_layer_weight_shape(l, i, dims, &nd) == RECUR_OK && nd >= 1 && nd <= 2)
      len = count(static_cast<int32_t>(dims[0])) * (nd == 2 ? count(static_cast<int32_t>(dims[1])) : 1);
    switch (p_.ConsumeIntegralInRange(0, 4)) {
      case 0: {
        const char* name = nullptr;
        if (recur_layer_weight_name(l, i, &name) == RECUR_OK) recur_fuzz::touch(name);
        break;
      }
      case 1: {
        std::vector<float> w = buffer(p_, len);
        recur_layer_get_weight(l, i, w.data(), w.size());
        break;
      }
      case 2: {
        std::vector<float> w = buffer(p_, len);
        int64_t d[2] = {dims[0], dims[1]};
        if (p_.ConsumeBool()) d[p_.ConsumeIntegralInRange(0, 1)] = p_.ConsumeIntegralInRange<int64_t>(-1, 300);
        const int32_t ndims = p_.ConsumeBool() ? nd : p_.ConsumeIntegralInRange(0, 2);
        recur_layer_set_weight(l, i, w.data(), w.size(), p_.ConsumeBool() ? d : nullptr, ndims);
        break;
      }
      default: {
        std::size_t total = 0;
        recur_layer_weights_length(l, &total);
        std::vector<float> w = buffer(p_, total);
        if (p_.ConsumeBool()) recur_layer_get_weights(l, w.data(), w.size());
        else recur_layer_set_weights(l, w.data(), w.size());
        break;
      }
    }
  }

  void losses() {
    recur_layer* l = layer();
    if (!l) return;
    int32_t n = 0;
    if (recur_layer_get_losses(l, nullptr, 0, &n) == RECUR_OK && n >= 0 && n < 64) {
      std::vector<float> v = buffer(p_, count(n));
      recur_layer_get_losses(l, v.data(), v.size(), &n);
    }
    const char* name = nullptr;
    if (recur_layer_loss_name(l, p_.ConsumeIntegralInRange(-1, 8), &name) == RECUR_OK) recur_fuzz::touch(name);
    recur_layer_apply_constraints(l);
  }

  void layer_misc() {
    recur_layer* l = layer();
    if (!l) return;
    switch (p_.ConsumeIntegralInRange(0, 4)) {
      case 0: {
        static const int32_t kThreads[] = {1, 1, 2, 4, 0, -1, 1025};
        recur_layer_set_num_threads(l, p_.PickValueInArray(kThreads));
        int32_t n = 0;
        recur_layer_get_num_threads(l, &n);
        break;
      }
      case 1:
        recur_layer_set_keras_backend(l, pick_cstr(p_, {"tensorflow", "jax", "numpy", "torch", "", "bogus", nullptr}));
        break;
      case 2: {
        recur_layer_set_device(l, pick_cstr(p_, {"cpu", "auto", "bogus", "cuda:-1", nullptr}));
        recur_device_info d;
        std::memset(&d, 0, sizeof d);
        d.version = RECUR_DEVICE_INFO_VERSION;
        if (recur_layer_get_device(l, &d) == RECUR_OK) shape_of(l);
        break;
      }
      case 3: {
        std::size_t len = 0;
        static const int32_t kBig[] = {1, 8, 0, -1, std::numeric_limits<int32_t>::max()};
        recur_layer_output_length(l, p_.PickValueInArray(kBig), p_.PickValueInArray(kBig), &len);
        break;
      }
      default: {
        const LayerShape s = shape_of(l);
        const int32_t b = small(p_, 1, 8);
        std::vector<float> v = buffer(p_, s.states * count(b) * s.units);
        recur_layer_get_initial_state(l, b, v.data(), v.size());
        break;
      }
    }
  }

  void stateful_layer() {
    recur_layer* l = layer();
    if (!l) return;
    const LayerShape s = shape_of(l);
    const std::size_t len = s.states * count(s.info.batch_size) * s.units;
    switch (p_.ConsumeIntegralInRange(0, 2)) {
      case 0: recur_layer_reset_states(l); break;
      case 1: {
        std::vector<float> v = buffer(p_, len);
        recur_layer_set_states(l, v.data(), v.size(),
                               p_.ConsumeBool() ? static_cast<int32_t>(s.states) : p_.ConsumeIntegralInRange(-1, 3));
        break;
      }
      default: {
        std::vector<float> v = buffer(p_, len);
        recur_layer_get_states(l, v.data(), v.size());
        break;
      }
    }
  }

  void open_model() {
    static const Models models;
    if (++opens_ > 2) return;  // an open takes milliseconds: a program of opens would time out
    for (auto* s : model_states_) recur_model_state_destroy(s);  // they outlive the model anyway
    model_states_.clear();
    recur_model_destroy(model_);
    model_ = nullptr;
    const std::string& image = models.images[p_.ConsumeIntegralInRange<std::size_t>(0, models.images.size() - 1)];
    // A fixture always opens (the baseline limits included), unless this program set a limit.
    const recur_status st = recur_model_open_memory(&model_, image.data(), image.size(), "fixture.keras");
    if (st != RECUR_OK && !(st == RECUR_ERR_LIMIT && limit_set_)) std::abort();
    if (st != RECUR_OK) return;
    int32_t n = 0;
    recur_model_num_inputs(model_, &n);
    inputs_ = n;
  }

  std::vector<int32_t> timesteps() {
    std::vector<int32_t> t(static_cast<std::size_t>(p_.ConsumeBool() ? inputs_ : p_.ConsumeIntegralInRange(0, 3)));
    for (auto& v : t) v = small(p_, 1, 16);
    return t;
  }

  void model_run() {
    if (!model_) return;
    const int32_t b = small(p_, 1, 8), t = small(p_, 1, 16);
    std::size_t out_len = 0;
    recur_model_output_length(model_, b, t, &out_len);
    const int64_t in_guess = static_cast<int64_t>(count(b)) * count(t) * 4;
    std::vector<float> in = buffer(p_, static_cast<std::size_t>(in_guess));
    std::vector<float> out = buffer(p_, out_len);
    const bool masked = p_.ConsumeBool();
    std::vector<std::uint8_t> mask = masked ? mask_buffer(p_, count(b) * count(t)) : std::vector<std::uint8_t>();
    recur_model_run(model_, in.data(), in.size(), b, t, masked ? mask.data() : nullptr, mask.size(), out.data(),
                    out.size());
  }

  void model_run_inputs() {
    if (!model_) return;
    const int32_t b = small(p_, 1, 8);
    const std::vector<int32_t> t = timesteps();
    const int32_t nt = static_cast<int32_t>(t.size());
    std::size_t in_len = 0, out_len = 0;
    recur_model_inputs_length(model_, b, t.data(), nt, &in_len);
    recur_model_outputs_length(model_, b, t.data(), nt, &out_len);
    for (int32_t i = 0; i < 3; ++i) {
      int64_t dims[RECUR_MAX_RANK];
      int32_t rank = 0;
      recur_model_output_dims(model_, p_.ConsumeIntegralInRange(-1, 4), b, t.data(), nt, dims, &rank);
    }
    std::vector<float> in = buffer(p_, in_len);
    for (auto& v : in) v = token(v);
    std::vector<float> out = buffer(p_, out_len);
    std::size_t mask_len = 0;
    for (int32_t v : t) mask_len += count(b) * count(v);
    const bool masked = p_.ConsumeBool();
    std::vector<std::uint8_t> mask = masked ? mask_buffer(p_, mask_len) : std::vector<std::uint8_t>();
    recur_model_run_inputs(model_, b, t.data(), nt, in.data(), in.size(), masked ? mask.data() : nullptr, mask.size(),
                           out.data(), out.size());
  }

  void model_stream() {
    if (!model_) return;
    switch (p_.ConsumeIntegralInRange(0, 3)) {
      case 0: {
        recur_model_state* s = nullptr;
        if (model_states_.size() < 3 && recur_model_state_create(&s, model_, small(p_, 1, 8)) == RECUR_OK)
          model_states_.push_back(s);
        break;
      }
      case 1: {
        if (model_states_.empty()) break;
        recur_model_state* s = model_states_[p_.ConsumeIntegralInRange<std::size_t>(0, model_states_.size() - 1)];
        const int32_t t = small(p_, 1, 16);
        std::size_t in_len = 0, out_len = 0;
        recur_model_state_lengths(s, t, &in_len, &out_len);
        int64_t dims[RECUR_MAX_RANK];
        int32_t rank = 0;
        recur_model_state_output_dims(s, p_.ConsumeIntegralInRange(-1, 3), t, dims, &rank);
        std::vector<float> in = buffer(p_, in_len);
        for (auto& v : in) v = token(v);
        std::vector<float> out = buffer(p_, out_len);
        const bool masked = p_.ConsumeBool();
        std::vector<std::uint8_t> mask = masked ? mask_buffer(p_, p_.ConsumeIntegralInRange<std::size_t>(0, 64))
                                                : std::vector<std::uint8_t>();
        recur_model_state_step(s, t, in.data(), in.size(), masked ? mask.data() : nullptr, mask.size(), out.data(),
                               out.size());
        break;
      }
      case 2:
        if (!model_states_.empty())
          recur_model_state_reset(model_states_[p_.ConsumeIntegralInRange<std::size_t>(0, model_states_.size() - 1)]);
        break;
      default: {
        // The model goes first: its streams must stay valid without it.
        recur_model_destroy(model_);
        model_ = nullptr;
        break;
      }
    }
  }

  void model_states() {
    if (!model_) return;
    int32_t n = 0;
    recur_model_num_stateful_layers(model_, &n);
    const char* name = "bogus";
    if (n > 0 && p_.ConsumeBool())
      recur_model_stateful_layer(model_, p_.ConsumeIntegralInRange(0, n - 1), &name, nullptr, nullptr, nullptr);
    const std::string layer = p_.ConsumeBool() ? std::string(name) : p_.ConsumeRandomLengthString(12);
    std::size_t len = 0;
    recur_model_states_length(model_, layer.c_str(), &len);
    std::vector<float> v = buffer(p_, len);
    switch (p_.ConsumeIntegralInRange(0, 2)) {
      case 0: recur_model_get_states(model_, layer.c_str(), v.data(), v.size()); break;
      case 1: recur_model_set_states(model_, layer.c_str(), v.data(), v.size()); break;
      default: recur_model_reset_states(model_); break;
    }
  }

  void model_misc() {
    if (!model_) return;
    switch (p_.ConsumeIntegralInRange(0, 3)) {
      case 0: {
        static const int32_t kThreads[] = {1, 2, 0, -1, 1025};
        recur_model_set_num_threads(model_, p_.PickValueInArray(kThreads));
        int32_t n = 0;
        recur_model_get_num_threads(model_, &n);
        break;
      }
      case 1:
        recur_model_set_keras_backend(model_, pick_cstr(p_, {"tensorflow", "jax", "numpy", "bogus", nullptr}));
        break;
      case 2: {
        recur_model_set_device(model_, pick_cstr(p_, {"cpu", "auto", "bogus"}));
        recur_device_info d;
        std::memset(&d, 0, sizeof d);
        d.version = RECUR_DEVICE_INFO_VERSION;
        recur_model_get_device(model_, p_.ConsumeIntegralInRange(-2, 8), &d);
        break;
      }
      default: recur_fuzz::exercise_model(model_); break;
    }
  }

  void model_layer() {
    if (!model_) return;
    const char* name = nullptr;
    int32_t recurrent = 0;
    recur_model_layer(model_, p_.ConsumeIntegralInRange(-1, 12), &name, nullptr, nullptr, nullptr, nullptr, &recurrent);
    std::string n = name ? name : "";
    if (p_.ConsumeBool()) n += pick_cstr(p_, {"/forward", "/backward", "/", "/x"});
    const int i = slot();
    recur_layer* got = nullptr;
    if (recur_model_get_layer(model_, p_.ConsumeBool() ? n.c_str() : nullptr, &got) == RECUR_OK) {
      recur_layer_destroy(layers_[i]);
      layers_[i] = got;
    }
  }

  FuzzedDataProvider& p_;
  recur_layer* layers_[kSlots] = {nullptr, nullptr, nullptr};
  std::vector<recur_state*> states_;
  recur_model* model_ = nullptr;
  int32_t inputs_ = 0;
  int opens_ = 0;
  bool limit_set_ = false;  // this program set a limit of its own
  std::vector<recur_model_state*> model_states_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider p(data, size);
  Program(p).run();
  return 0;
}
