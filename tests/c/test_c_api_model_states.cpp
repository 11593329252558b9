// SPDX-License-Identifier: Apache-2.0
// recur_model_states_step_named: many streams of one model stepped in one call give the numbers
// of stepping each alone, across models (masks, causal Conv1D and attention histories, several
// inputs and outputs, initial_state inputs, nested models), batch sizes and step lengths, and a
// call that fails leaves every stream as it was.
#include <gtest/gtest.h>

#if defined(__linux__)
#include <dlfcn.h>
#endif

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

const std::string kGraphs = std::string(RECUR_TEST_KERAS_DIR) + "/graphs/";
// Rows of a matrix product over more rows round alike here; the bound leaves room for kernels
// that block rows differently.
constexpr double kTolerance = 1e-6;

struct InputInfo {
  std::string name;
  std::vector<int64_t> dims;  // -1: the batch, and the timesteps of a sequence input
  bool ids = false;
  bool sequence = false;
};

struct Fixture {
  rt::Model model;
  std::vector<InputInfo> inputs;
  std::vector<std::string> outputs;
};

// Opens a model whose inputs a test can make up (numbers or ids, one unknown axis at most).
bool open_fixture(const std::string& path, Fixture& f, std::string& why) {
  recur_model* m = nullptr;
  if (recur_model_open(&m, path.c_str()) != RECUR_OK) {
    why = recur_last_error();
    return false;
  }
  f.model.reset(m);
  int32_t ni = 0, no = 0;
  EXPECT_EQ(recur_model_num_inputs(m, &ni), RECUR_OK);
  EXPECT_EQ(recur_model_num_outputs(m, &no), RECUR_OK);
  for (int32_t i = 0; i < ni; ++i) {
    const char* name = nullptr;
    int32_t rank = 0, ids = 0, seq = 0, dtype = 0;
    int64_t dims[RECUR_MAX_RANK];
    EXPECT_EQ(recur_model_input(m, i, &name, &rank, dims, &ids), RECUR_OK);
    EXPECT_EQ(recur_model_input_sequence(m, i, &seq), RECUR_OK);
    EXPECT_EQ(recur_model_input_dtype(m, i, &dtype), RECUR_OK);
    if (dtype == RECUR_DTYPE_STRING) {
      why = "a string input";
      return false;
    }
    InputInfo in{name, std::vector<int64_t>(dims, dims + rank), ids != 0, seq != 0};
    for (std::size_t a = in.sequence ? 2 : 1; a < in.dims.size(); ++a)
      if (in.dims[a] < 0) {
        why = "an input with an axis of unknown size";
        return false;
      }
    f.inputs.push_back(in);
  }
  for (int32_t k = 0; k < no; ++k) {
    const char* name = nullptr;
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    EXPECT_EQ(recur_model_output(m, k, &name, &rank, dims), RECUR_OK);
    f.outputs.push_back(name);
  }
  // Keras 3 names several outputs of one layer alike: ask by address then.
  const std::vector<std::string> names = f.outputs;
  for (std::size_t k = 0; k < names.size(); ++k) {
    int same = 0, nth = 0;
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (names[j] == names[k]) ++same;
      if (j < k && names[j] == names[k]) ++nth;
    }
    if (same > 1) f.outputs[k] += ":" + std::to_string(nth);
  }
  return true;
}

// One call's data for one stream: per input its values (floats, or ids as int64), dims and mask.
struct StepData {
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<uint8_t>> masks;
};

// Made-up inputs for `rows` rows and `steps` steps; `seed` picks the values. Every few values is 0,
// which a Masking layer (mask_value 0) or an Embedding with mask_zero masks.
StepData make_step(const Fixture& f, int64_t rows, int64_t steps, uint32_t seed, bool masks) {
  StepData d;
  for (const InputInfo& in : f.inputs) {
    std::vector<int64_t> dims = in.dims;
    dims[0] = rows;
    if (in.sequence) dims[1] = steps;
    std::size_t n = 1;
    for (int64_t x : dims) n *= static_cast<std::size_t>(x);
    std::vector<float> v(n);
    std::vector<int64_t> ids(in.ids ? n : 0);
    for (std::size_t e = 0; e < n; ++e) {
      const uint32_t h = (seed * 2654435761u) ^ static_cast<uint32_t>(e * 40503u + 17u);
      if (in.ids) ids[e] = (h >> 7) % 2;
      else v[e] = (h >> 9) % 7 == 0 ? 0.0f : static_cast<float>((h >> 4) % 2001) / 1000.0f - 1.0f;
    }
    std::vector<uint8_t> m;
    if (masks && in.sequence && !in.ids) {
      m.resize(static_cast<std::size_t>(rows * steps));
      for (std::size_t e = 0; e < m.size(); ++e) m[e] = ((seed + e) % 3) != 0;
    }
    d.floats.push_back(std::move(v));
    d.ids.push_back(std::move(ids));
    d.dims.push_back(dims);
    d.masks.push_back(std::move(m));
  }
  return d;
}

// The rows of each stream's data one after another (what a many-state call takes).
StepData concat(const std::vector<StepData>& parts) {
  StepData d = parts[0];
  for (std::size_t p = 1; p < parts.size(); ++p)
    for (std::size_t i = 0; i < d.dims.size(); ++i) {
      d.floats[i].insert(d.floats[i].end(), parts[p].floats[i].begin(), parts[p].floats[i].end());
      d.ids[i].insert(d.ids[i].end(), parts[p].ids[i].begin(), parts[p].ids[i].end());
      d.masks[i].insert(d.masks[i].end(), parts[p].masks[i].begin(), parts[p].masks[i].end());
      d.dims[i][0] += parts[p].dims[i][0];
    }
  return d;
}

std::vector<recur_tensor> tensors(const Fixture& f, const StepData& d) {
  std::vector<recur_tensor> t(f.inputs.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    recur_tensor_init(&t[i], RECUR_TENSOR_VERSION);
    t[i].name = f.inputs[i].name.c_str();
    if (f.inputs[i].ids) {
      t[i].dtype = RECUR_DTYPE_INT64;
      t[i].data = d.ids[i].data();
      t[i].length = d.ids[i].size();
    } else {
      t[i].data = d.floats[i].data();
      t[i].length = d.floats[i].size();
    }
    t[i].rank = static_cast<int32_t>(d.dims[i].size());
    for (std::size_t a = 0; a < d.dims[i].size(); ++a) t[i].dims[a] = d.dims[i][a];
    if (!d.masks[i].empty()) {
      t[i].mask = d.masks[i].data();
      t[i].mask_length = d.masks[i].size();
    }
  }
  return t;
}

// Output structs for every output of `f`, sized by `shapes` (a state's or many states' query).
template <typename Shapes>
std::vector<recur_output> outputs_for(const Fixture& f, std::vector<std::vector<float>>& bufs, Shapes shapes) {
  std::vector<recur_output> o(f.outputs.size());
  for (std::size_t k = 0; k < o.size(); ++k) {
    recur_output_init(&o[k], RECUR_OUTPUT_VERSION);
    o[k].name = f.outputs[k].c_str();
  }
  if (shapes(o.data(), static_cast<int32_t>(o.size())) != RECUR_OK) return {};
  bufs.assign(o.size(), {});
  for (std::size_t k = 0; k < o.size(); ++k) {
    bufs[k].assign(o[k].length, -7.0f);
    o[k].data = bufs[k].data();
    o[k].capacity = bufs[k].size();
  }
  return o;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double e = 0;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(double(a[i]) - double(b[i])));
  return e;
}

// Steps streams of `batches` one by one and, in another set of states, all in one call, for calls
// of `steps` steps; `reset_at` resets stream 1 (or the streams `reset`) of both sets before that
// call (they then take their first step beside streams already stepped). Returns the worst
// difference (or -1 when the model does not stream, with `why`).
double compare(const std::string& file, const std::vector<int32_t>& batches, const std::vector<int64_t>& steps,
               bool masks, int reset_at, std::string& why, const char* device = nullptr,
               const std::vector<std::size_t>& reset = {1}) {
  Fixture f;
  if (!open_fixture(kGraphs + file, f, why)) return -1;
  if (device && recur_model_set_device(f.model.get(), device) != RECUR_OK) {
    why = recur_last_error();
    return -1;
  }
  std::vector<rt::Stream> alone, together;
  for (int32_t b : batches) {
    recur_model_state* s = nullptr;
    if (recur_model_state_create(&s, f.model.get(), b) != RECUR_OK) {
      why = recur_last_error();
      return -1;
    }
    alone.emplace_back(s);
    EXPECT_EQ(recur_model_state_create(&s, f.model.get(), b), RECUR_OK);
    together.emplace_back(s);
  }
  std::vector<recur_model_state*> handles;
  for (auto& s : together) handles.push_back(s.get());
  double worst = 0;
  for (std::size_t c = 0; c < steps.size(); ++c) {
    if (static_cast<int>(c) == reset_at && batches.size() > 1)
      for (std::size_t r : reset) {
        EXPECT_EQ(recur_model_state_reset(alone[r].get()), RECUR_OK);
        EXPECT_EQ(recur_model_state_reset(together[r].get()), RECUR_OK);
      }
    std::vector<StepData> parts;
    for (std::size_t s = 0; s < batches.size(); ++s)
      parts.push_back(make_step(f, batches[s], steps[c], static_cast<uint32_t>(c * 101 + s * 7 + 1), masks));
    std::vector<std::vector<float>> want(f.outputs.size());
    for (std::size_t s = 0; s < batches.size(); ++s) {
      const std::vector<recur_tensor> in = tensors(f, parts[s]);
      std::vector<std::vector<float>> bufs;
      std::vector<recur_output> out = outputs_for(f, bufs, [&](recur_output* o, int32_t n) {
        return recur_model_state_output_shapes(alone[s].get(), in.data(), static_cast<int32_t>(in.size()), o, n);
      });
      if (out.empty() || recur_model_state_step_named(alone[s].get(), in.data(), static_cast<int32_t>(in.size()),
                                                      out.data(), static_cast<int32_t>(out.size()), nullptr) != RECUR_OK) {
        why = std::string("a stream step failed: ") + recur_last_error();
        return -1;
      }
      for (std::size_t k = 0; k < out.size(); ++k) want[k].insert(want[k].end(), bufs[k].begin(), bufs[k].end());
    }
    const StepData all = concat(parts);
    const std::vector<recur_tensor> in = tensors(f, all);
    std::vector<std::vector<float>> got;
    std::vector<recur_output> out = outputs_for(f, got, [&](recur_output* o, int32_t n) {
      return recur_model_states_output_shapes(handles.data(), static_cast<int32_t>(handles.size()), in.data(),
                                              static_cast<int32_t>(in.size()), o, n);
    });
    EXPECT_FALSE(out.empty()) << file << ": " << recur_last_error();
    if (out.empty()) return INFINITY;
    EXPECT_EQ(recur_model_states_step_named(handles.data(), static_cast<int32_t>(handles.size()), in.data(),
                                            static_cast<int32_t>(in.size()), out.data(), static_cast<int32_t>(out.size()),
                                            nullptr),
              RECUR_OK)
        << file << ": " << recur_last_error();
    for (std::size_t k = 0; k < out.size(); ++k) {
      EXPECT_EQ(out[k].length, want[k].size()) << file << " output " << f.outputs[k];
      const double e = max_diff(got[k], want[k]);
      // A GPU's kernels may block rows differently: the parity suite's bound there.
      EXPECT_LE(e, device ? 1e-5 : kTolerance) << file << " call " << c << " output " << f.outputs[k];
      worst = std::max(worst, e);
    }
  }
  return worst;
}

// Stream-capable models from the Keras fixtures: masks (Masking, Embedding mask_zero, masked
// merges), several inputs and outputs, initial_state inputs, nested models, causal Conv1D and
// causal attention histories, ConvLSTM1D.
const char* const kFiles[] = {
    "keras3/masking_functional.keras",
    "keras3/masking_sequential.keras",
    "keras3/multi_io.keras",
    "keras3/nested_functional.keras",
    "keras3/nested_sequential.keras",
    "keras3/masked_initial_state.keras",
    "keras3/return_state_outputs.keras",
    "keras3/residual_add_layernorm.keras",
    "keras3/time_distributed_dense.keras",
    "keras2/masking_functional.h5",
    "keras2/multi_io.h5",
    "conv_stream/keras3/causal_conv_groups_gru.keras",
    "conv_stream/keras3/causal_conv_with_ids.keras",
    "conv_stream/keras3/tcn_lstm.keras",
    "attention/keras3/mha_causal.keras",
    "attention/keras3/attn_causal_masked.keras",
    "conv_lstm/keras3/convlstm1d_basic.keras",
    "conv_lstm/keras3/convlstm1d_masked.keras",
    "keras2/merges_masked.h5",
    "keras2/masked_initial_state.h5",
};

TEST(CApiModelStates, ManyStatesInOneCallMatchStepsOneByOne) {
  RECUR_SKIP_WITHOUT_FILES();
  int ran = 0;
  double worst = 0;
  for (const char* file : kFiles) {
    std::string why;
    const double e = compare(file, {1, 2, 3, 1}, {1, 2, 3, 1}, false, 2, why);
    EXPECT_GE(e, 0.0) << file << ": " << why;
    ++ran;
    worst = std::max(worst, e);
  }
  std::printf("  %d models, worst difference %.3g\n", ran, worst);
}

// Fresh streams among stepped ones, in any order, ride in one batch of their own (and the stepped
// ones in another): each stream's outputs still land in its own rows.
TEST(CApiModelStates, FreshStreamsAmongSteppedOnes) {
  RECUR_SKIP_WITHOUT_FILES();
  for (const char* file : {"keras3/multi_io.keras", "conv_stream/keras3/tcn_lstm.keras", "attention/keras3/mha_causal.keras"}) {
    std::string why;
    EXPECT_GE(compare(file, {2, 1, 3, 1, 2, 1}, {1, 2, 1, 1}, false, 2, why, nullptr, {0, 2, 5}), 0.0)
        << file << ": " << why;
  }
}

TEST(CApiModelStates, MasksGivenWithTheInputs) {
  RECUR_SKIP_WITHOUT_FILES();
  int ran = 0;
  for (const char* file : {"keras3/masking_sequential.keras", "keras3/masking_functional.keras", "keras3/multi_io.keras",
                           "conv_stream/keras3/tcn_lstm.keras", "keras2/multi_io.h5"}) {
    std::string why;
    const double e = compare(file, {2, 1, 3}, {2, 1, 3}, true, -1, why);
    EXPECT_GE(e, 0.0) << file << ": " << why;
    std::printf("  %s with masks: worst difference %.3g\n", file, e);
    ++ran;
  }
  EXPECT_EQ(ran, 5);
}

TEST(CApiModelStates, OneStateAndManyStates) {
  RECUR_SKIP_WITHOUT_FILES();
  std::string why;
  // One state in the batched call is that state's own step: the same bits.
  EXPECT_EQ(compare("keras3/masking_sequential.keras", {3}, {1, 2, 1}, false, -1, why), 0.0) << why;
  EXPECT_EQ(compare("keras3/multi_io.keras", {2}, {1, 3, 1}, true, -1, why), 0.0) << why;
  std::vector<int32_t> many(300);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = 1 + static_cast<int32_t>(i % 3);
  EXPECT_GE(compare("conv_stream/keras3/tcn_lstm.keras", many, {1, 1, 2}, false, 1, why), 0.0) << why;
}

// ---- errors ----------------------------------------------------------------------------------

struct Pair {
  Fixture f;
  rt::Stream a, b;
  Pair() {
    std::string why;
    EXPECT_TRUE(open_fixture(kGraphs + "conv_stream/keras3/causal_conv_with_ids.keras", f, why)) << why;
    recur_model_state* s = nullptr;
    EXPECT_EQ(recur_model_state_create(&s, f.model.get(), 1), RECUR_OK);
    a.reset(s);
    EXPECT_EQ(recur_model_state_create(&s, f.model.get(), 2), RECUR_OK);
    b.reset(s);
  }
};

TEST(CApiModelStates, ErrorsNameTheArgument) {
  RECUR_SKIP_WITHOUT_FILES();
  Pair p;
  const char* fn = "recur_model_states_step_named";
  StepData d = make_step(p.f, 3, 2, 5, false);
  std::vector<recur_tensor> in = tensors(p.f, d);
  std::vector<std::vector<float>> bufs;
  recur_model_state* both[2] = {p.a.get(), p.b.get()};
  std::vector<recur_output> out = outputs_for(p.f, bufs, [&](recur_output* o, int32_t n) {
    return recur_model_states_output_shapes(both, 2, in.data(), 2, o, n);
  });
  ASSERT_FALSE(out.empty()) << recur_last_error();
  const int32_t no = static_cast<int32_t>(out.size());
  EXPECT_RECUR_ERR(recur_model_states_step_named(nullptr, 2, in.data(), 2, out.data(), no, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, std::string(fn) + ": states is NULL");
  EXPECT_RECUR_ERR(recur_model_states_step_named(both, 0, in.data(), 2, out.data(), no, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "num_states must be at least 1, got 0");
  recur_model_state* with_null[2] = {p.a.get(), nullptr};
  EXPECT_RECUR_ERR(recur_model_states_step_named(with_null, 2, in.data(), 2, out.data(), no, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "states[1] is NULL");
  recur_model_state* twice[2] = {p.b.get(), p.b.get()};
  EXPECT_RECUR_ERR(recur_model_states_step_named(twice, 2, in.data(), 2, out.data(), no, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "states[0] and states[1] are the same state");
  // A state of another model (the same file opened again is another model).
  Pair other;
  recur_model_state* mixed[2] = {p.a.get(), other.b.get()};
  EXPECT_RECUR_ERR(recur_model_states_step_named(mixed, 2, in.data(), 2, out.data(), no, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "states[1] was created from another model than states[0]");
  // The inputs hold 3 rows; these states hold 1 + 1.
  rt::Stream c;
  {
    recur_model_state* s = nullptr;
    ASSERT_EQ(recur_model_state_create(&s, p.f.model.get(), 1), RECUR_OK);
    c.reset(s);
  }
  recur_model_state* short_rows[2] = {p.a.get(), c.get()};
  EXPECT_RECUR_ERR(recur_model_states_step_named(short_rows, 2, in.data(), 2, out.data(), no, nullptr), RECUR_ERR_SHAPE,
                   "inputs[0] ('" + p.f.inputs[0].name + "').dims: batch 3, expected 2 (the rows of the 2 states");
  EXPECT_RECUR_ERR(recur_model_states_output_shapes(short_rows, 2, in.data(), 2, out.data(), no), RECUR_ERR_SHAPE,
                   "recur_model_states_output_shapes: inputs[0]");
  // A destroyed state.
  recur_model_state* gone = nullptr;
  ASSERT_EQ(recur_model_state_create(&gone, p.f.model.get(), 2), RECUR_OK);
  recur_model_state_destroy(gone);
  recur_model_state* dead[2] = {p.a.get(), gone};
  EXPECT_RECUR_ERR(recur_model_states_step_named(dead, 2, in.data(), 2, out.data(), no, nullptr), RECUR_ERR_STATE,
                   "states[1] is not a live handle");
  // An output buffer too small.
  out[0].capacity -= 1;
  EXPECT_RECUR_ERR(recur_model_states_step_named(both, 2, in.data(), 2, out.data(), no, nullptr), RECUR_ERR_SHAPE,
                   ".capacity");
  out[0].capacity += 1;
  EXPECT_EQ(recur_model_states_step_named(both, 2, in.data(), 2, out.data(), no, nullptr), RECUR_OK)
      << recur_last_error();
}

// The batch limit holds for the sum of the states' batches: each state fits, the call would not.
TEST(CApiModelStates, TheSumOfTheBatchesKeepsTheBatchLimit) {
  RECUR_SKIP_WITHOUT_FILES();
  Pair p;  // batches 1 and 2
  uint64_t was = 0;
  ASSERT_EQ(recur_get_limit(RECUR_LIMIT_BATCH, &was), RECUR_OK);
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_BATCH, 2), RECUR_OK);
  StepData d = make_step(p.f, 3, 1, 5, false);
  std::vector<recur_tensor> in = tensors(p.f, d);
  std::vector<float> y(64);
  recur_output o;
  recur_output_init(&o, RECUR_OUTPUT_VERSION);
  o.name = p.f.outputs[0].c_str();
  o.data = y.data();
  o.capacity = y.size();
  recur_model_state* both[2] = {p.a.get(), p.b.get()};
  EXPECT_RECUR_ERR(recur_model_states_step_named(both, 2, in.data(), 2, &o, 1, nullptr), RECUR_ERR_LIMIT,
                   "states: the sum of the states' batches");
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_BATCH, was), RECUR_OK);
  EXPECT_EQ(recur_model_states_step_named(both, 2, in.data(), 2, &o, 1, nullptr), RECUR_OK) << recur_last_error();
}

// A call that fails after the model ran part of the way (an id out of range after the causal
// convolution, a cancel) leaves every stream as it was: the next calls give the numbers of
// streams that never saw it.
TEST(CApiModelStates, AFailedCallLeavesEveryStreamAsItWas) {
  RECUR_SKIP_WITHOUT_FILES();
  Pair p, ref;
  recur_model_state* both[2] = {p.a.get(), p.b.get()};
  recur_model_state* ref_both[2] = {ref.a.get(), ref.b.get()};
  rt::RunOptions cancel;
  {
    recur_run_options* o = nullptr;
    ASSERT_EQ(recur_run_options_create(&o), RECUR_OK);
    cancel.reset(o);
    ASSERT_EQ(recur_run_options_cancel(o), RECUR_OK);
  }
  rt::RunOptions late;  // a timeout that has always passed by the first check
  {
    recur_run_options* o = nullptr;
    ASSERT_EQ(recur_run_options_create(&o), RECUR_OK);
    late.reset(o);
    ASSERT_EQ(recur_run_options_set_timeout(o, 1e-9), RECUR_OK);
  }
  for (int call = 0; call < 4; ++call) {
    StepData d = make_step(p.f, 3, 1 + call % 2, static_cast<uint32_t>(call + 9), false);
    std::vector<recur_tensor> in = tensors(p.f, d);
    std::vector<std::vector<float>> got, want;
    std::vector<recur_output> out = outputs_for(p.f, got, [&](recur_output* o, int32_t n) {
      return recur_model_states_output_shapes(both, 2, in.data(), 2, o, n);
    });
    std::vector<recur_output> ref_out = outputs_for(p.f, want, [&](recur_output* o, int32_t n) {
      return recur_model_states_output_shapes(ref_both, 2, in.data(), 2, o, n);
    });
    ASSERT_FALSE(out.empty());
    const int32_t no = static_cast<int32_t>(out.size());
    if (call > 0) {
      const std::size_t ids = p.f.inputs[0].ids ? 0 : 1;
      StepData bad = d;
      bad.ids[ids].back() = 1 << 20;  // the last row: the second state's
      std::vector<recur_tensor> bad_in = tensors(p.f, bad);
      EXPECT_RECUR_ERR(recur_model_states_step_named(both, 2, bad_in.data(), 2, out.data(), no, nullptr),
                       RECUR_ERR_INVALID_ARGUMENT, "token id 1048576");
      EXPECT_RECUR_ERR(recur_model_states_step_named(both, 2, in.data(), 2, out.data(), no, cancel.get()),
                       RECUR_ERR_CANCELLED, "cancelled");
      EXPECT_RECUR_ERR(recur_model_states_step_named(both, 2, in.data(), 2, out.data(), no, late.get()),
                       RECUR_ERR_LIMIT, "deadline passed");
    }
    ASSERT_EQ(recur_model_states_step_named(both, 2, in.data(), 2, out.data(), no, nullptr), RECUR_OK)
        << recur_last_error();
    ASSERT_EQ(recur_model_states_step_named(ref_both, 2, in.data(), 2, ref_out.data(), no, nullptr), RECUR_OK)
        << recur_last_error();
    for (std::size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], want[k]) << "call " << call << " output " << k;
  }
}

// Two streams of `batches` rows of `f`'s model and a reference pair stepped alike, four calls; before
// each call but the first, `fail(pair, d)` makes a call of its own fail with the pair and that
// call's data. Each output of the pair must equal the reference's, bit for bit: a failed call
// leaves its streams as they were.
template <class Fail>
void expect_failed_calls_change_nothing(Fixture& f, const int32_t (&batches)[2], uint32_t seed, Fail fail) {
  std::vector<rt::Stream> mine, ref;
  for (std::vector<rt::Stream>* set : {&mine, &ref})
    for (int32_t b : batches) {
      recur_model_state* s = nullptr;
      ASSERT_EQ(recur_model_state_create(&s, f.model.get(), b), RECUR_OK) << recur_last_error();
      set->emplace_back(s);
    }
  recur_model_state* both[2] = {mine[0].get(), mine[1].get()};
  recur_model_state* ref_both[2] = {ref[0].get(), ref[1].get()};
  const int32_t ni = static_cast<int32_t>(f.inputs.size());
  for (int call = 0; call < 4; ++call) {
    const StepData d = make_step(f, batches[0] + batches[1], 1 + call % 2, seed + static_cast<uint32_t>(call), false);
    const std::vector<recur_tensor> in = tensors(f, d);
    std::vector<std::vector<float>> got, want;
    std::vector<recur_output> out = outputs_for(f, got, [&](recur_output* o, int32_t n) {
      return recur_model_states_output_shapes(both, 2, in.data(), ni, o, n);
    });
    std::vector<recur_output> ref_out = outputs_for(f, want, [&](recur_output* o, int32_t n) {
      return recur_model_states_output_shapes(ref_both, 2, in.data(), ni, o, n);
    });
    ASSERT_FALSE(out.empty()) << recur_last_error();
    const int32_t no = static_cast<int32_t>(out.size());
    if (call > 0) fail(both, d);
    ASSERT_EQ(recur_model_states_step_named(both, 2, in.data(), ni, out.data(), no, nullptr), RECUR_OK)
        << recur_last_error();
    ASSERT_EQ(recur_model_states_step_named(ref_both, 2, in.data(), ni, ref_out.data(), no, nullptr), RECUR_OK)
        << recur_last_error();
    for (std::size_t k = 0; k < got.size(); ++k) EXPECT_EQ(got[k], want[k]) << "call " << call << " output " << k;
  }
}

// Steps `states` with `d`, which must fail with a bad token id.
void expect_bad_token(Fixture& f, recur_model_state* const* states, int32_t count, const StepData& d) {
  const std::vector<recur_tensor> in = tensors(f, d);
  const int32_t ni = static_cast<int32_t>(in.size());
  std::vector<std::vector<float>> bufs;
  std::vector<recur_output> out = outputs_for(f, bufs, [&](recur_output* o, int32_t n) {
    return recur_model_states_output_shapes(states, count, in.data(), ni, o, n);
  });
  ASSERT_FALSE(out.empty()) << recur_last_error();
  EXPECT_RECUR_ERR(recur_model_states_step_named(states, count, in.data(), ni, out.data(),
                                                 static_cast<int32_t>(out.size()), nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "token id 1048576");
}

// More rows than one batch of the CPU takes (256): states of 200 and 100 rows run as two batches.
// A call that fails after the first batch ran leaves both streams as they were, and the calls after
// it give what streams that never saw it give, bit for bit.
TEST(CApiModelStates, AFailureInALaterBatchLeavesEveryStreamAsItWas) {
  RECUR_SKIP_WITHOUT_FILES();
  Fixture f;
  std::string why;
  ASSERT_TRUE(open_fixture(kGraphs + "conv_stream/keras3/causal_conv_with_ids.keras", f, why)) << why;
  const std::size_t ids = f.inputs[0].ids ? 0 : 1;
  expect_failed_calls_change_nothing(f, {200, 100}, 31, [&](recur_model_state* const* both, const StepData& d) {
    StepData bad = d;
    bad.ids[ids].back() = 1 << 20;  // the last row: the second state's, in the second batch
    expect_bad_token(f, both, 2, bad);
  });
}

}  // namespace

namespace {

// A stateful Keras model fixes its batch: one state per call, as its streams take.
TEST(CApiModelStates, AModelWithAFixedBatchTakesOneStatePerCall) {
  RECUR_SKIP_WITHOUT_FILES();
  const std::string file = "keras3/stateful_sequential_gru.keras";
  Fixture f;
  std::string why;
  ASSERT_TRUE(open_fixture(kGraphs + file, f, why)) << why;
  const int32_t fixed = static_cast<int32_t>(f.inputs[0].dims[0]);
  ASSERT_GT(fixed, 0);
  EXPECT_GE(compare(file, {fixed}, {1, 2}, false, -1, why), 0.0) << why;
  recur_model_state *a = nullptr, *b = nullptr;
  ASSERT_EQ(recur_model_state_create(&a, f.model.get(), fixed), RECUR_OK);
  ASSERT_EQ(recur_model_state_create(&b, f.model.get(), fixed), RECUR_OK);
  rt::Stream ka(a), kb(b);
  StepData d = make_step(f, 2 * fixed, 1, 3, false);
  std::vector<recur_tensor> in = tensors(f, d);
  std::vector<float> y(1024);
  recur_output o;
  recur_output_init(&o, RECUR_OUTPUT_VERSION);
  o.name = f.outputs[0].c_str();
  o.data = y.data();
  o.capacity = y.size();
  recur_model_state* both[2] = {a, b};
  EXPECT_RECUR_ERR(recur_model_states_step_named(both, 2, in.data(), static_cast<int32_t>(in.size()), &o, 1, nullptr),
                   RECUR_ERR_SHAPE, "the model fixes the batch at");
}

}  // namespace

namespace {

// On a GPU (the real plugin, or the CPU-only emulator of it in the c_api_device_gpu_emulator
// test) the states live on the device between steps, and a batch of streams gathers and scatters
// them there; causal pasts, and the states of layers that run on the CPU (ConvLSTM1D), go through
// the host.
TEST(CApiDeviceModelStates, ManyStatesOnTheGpuMatchStepsOneByOne) {
  int32_t n = 0;
  ASSERT_EQ(recur_device_count(&n), RECUR_OK);
  if (n == 0) GTEST_SKIP() << "no GPU backend can run here";
  for (const char* file : kFiles) {
    std::string why;
    EXPECT_GE(compare(file, {1, 2, 3}, {1, 2, 1}, false, 1, why, "cuda"), 0.0) << file << ": " << why;
  }
}

// On a GPU too, a call that fails after one of its batches ran leaves every stream as it was: a
// fresh stream rides in a batch of its own after the stepped ones', and its bad token id fails the
// call after their batch stepped on the device.
TEST(CApiDeviceModelStates, AFailedCallLeavesEveryStreamOnTheGpuAsItWas) {
  int32_t n = 0;
  ASSERT_EQ(recur_device_count(&n), RECUR_OK);
  if (n == 0) GTEST_SKIP() << "no GPU backend can run here";
  Fixture f;
  std::string why;
  ASSERT_TRUE(open_fixture(kGraphs + "conv_stream/keras3/causal_conv_with_ids.keras", f, why)) << why;
  ASSERT_EQ(recur_model_set_device(f.model.get(), "cuda"), RECUR_OK) << recur_last_error();
  const std::size_t ids = f.inputs[0].ids ? 0 : 1;
  uint32_t seed = 71;
  expect_failed_calls_change_nothing(f, {1, 2}, 51, [&](recur_model_state* const* both, const StepData&) {
    recur_model_state* fresh = nullptr;
    ASSERT_EQ(recur_model_state_create(&fresh, f.model.get(), 1), RECUR_OK);
    rt::Stream keep(fresh);
    recur_model_state* three[3] = {both[0], both[1], fresh};
    StepData bad = make_step(f, 4, 1, seed++, false);
    bad.ids[ids].back() = 1 << 20;  // the fresh stream's row, in the second batch
    expect_bad_token(f, three, 3, bad);
  });
}

// What the emulator has copied each way (bytes); null where the plugin is another (the real one
// counts nothing).
using CopiedFn = void (*)(uint64_t*, uint64_t*);
CopiedFn emulator_copies() {
#if defined(__linux__)
  const char* path = std::getenv("RECUR_CUDA_PLUGIN");
  void* h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return h ? reinterpret_cast<CopiedFn>(dlsym(h, "recur_gpu_emulator_copied")) : nullptr;
#else
  return nullptr;  // the emulator is built for Linux hosts only
#endif
}

// A steady batch of streams on the GPU brings down its outputs and nothing else: each stream's
// states stay on the device, and the batch is gathered and scattered there. (Their numbers are
// ManyStatesOnTheGpuMatchStepsOneByOne's.)
TEST(CApiDeviceModelStates, ABatchOfStreamsOnTheGpuBringsDownOnlyItsOutputs) {
  int32_t n = 0;
  ASSERT_EQ(recur_device_count(&n), RECUR_OK);
  if (n == 0) GTEST_SKIP() << "no GPU backend can run here";
  const CopiedFn copied = emulator_copies();
  if (!copied) GTEST_SKIP() << "only the GPU emulator (RECUR_CUDA_PLUGIN=librecur_gpu_emulator.so) counts its copies";
  // (Models without Masking, whose flags come down too.) GRU, LSTM and GRU, LSTM:
  for (const char* file : {"keras3/multi_io.keras", "activations/keras3/prelu_shared_variable_length.keras",
                           "keras2/spatial_dropout_float64.keras"}) {
    SCOPED_TRACE(file);
    Fixture f;
    std::string why;
    ASSERT_TRUE(open_fixture(kGraphs + file, f, why)) << why;
    ASSERT_EQ(recur_model_set_device(f.model.get(), "cuda"), RECUR_OK) << recur_last_error();
    const std::vector<int32_t> batches = {1, 2, 1, 3, 1};
    std::vector<rt::Stream> streams;
    std::vector<recur_model_state*> handles;
    std::vector<StepData> parts;
    for (std::size_t s = 0; s < batches.size(); ++s) {
      recur_model_state* st = nullptr;
      ASSERT_EQ(recur_model_state_create(&st, f.model.get(), batches[s]), RECUR_OK) << recur_last_error();
      streams.emplace_back(st);
      handles.push_back(st);
      parts.push_back(make_step(f, batches[s], 1, static_cast<uint32_t>(s + 3), false));
    }
    const StepData all = concat(parts);
    const std::vector<recur_tensor> in = tensors(f, all);
    std::vector<std::vector<float>> bufs;
    std::vector<recur_output> out = outputs_for(f, bufs, [&](recur_output* o, int32_t k) {
      return recur_model_states_output_shapes(handles.data(), static_cast<int32_t>(handles.size()), in.data(),
                                              static_cast<int32_t>(in.size()), o, k);
    });
    ASSERT_FALSE(out.empty()) << recur_last_error();
    uint64_t out_bytes = 0;
    for (const recur_output& o : out) out_bytes += o.length * sizeof(float);
    // The first call takes the states up; from the second on they stay there.
    uint64_t up0 = 0, down0 = 0, up1 = 0, down1 = 0;
    for (int call = 0; call < 3; ++call) {
      copied(&up0, &down0);
      ASSERT_EQ(recur_model_states_step_named(handles.data(), static_cast<int32_t>(handles.size()), in.data(),
                                              static_cast<int32_t>(in.size()), out.data(),
                                              static_cast<int32_t>(out.size()), nullptr),
                RECUR_OK)
          << recur_last_error();
      copied(&up1, &down1);
      if (call > 0) {
        EXPECT_EQ(down1 - down0, out_bytes) << "call " << call << ": bytes brought down";
      }
    }
  }
}

}  // namespace

