// SPDX-License-Identifier: Apache-2.0
// Whole Keras models (graphs) against Keras's own predictions: every model file under
// tests/keras/graphs/ (saved by Keras 2, Keras 3 on TensorFlow and Keras 3 on JAX, as .keras and
// .h5), run through the C ABI: input and output names, every call of a stateful model (with its
// resets), and, for models that stream, the same inputs fed a few timesteps at a time through a
// model state. RECUR_TEST_DEVICE (e.g. "cuda") runs every model on that device.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <recur/recur.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;

const std::string kDir = RECUR_KERAS_TEST_DIR;
constexpr double kTolerance = 1e-5;

struct Case {
  std::string dialect, backend, name, file;
  json data;
};

// graphs/<dialect>.json (the core suite) and graphs/<suite>/<dialect>.json (one per family of layers).
std::vector<Case> load_cases() {
  std::vector<std::string> folders = {kDir + "/graphs"};
  std::vector<std::string> suites;
  for (const auto& e : std::filesystem::directory_iterator(kDir + "/graphs"))
    if (e.is_directory() && std::filesystem::exists(e.path() / "keras2.json")) suites.push_back(e.path().string());
  std::sort(suites.begin(), suites.end());
  folders.insert(folders.end(), suites.begin(), suites.end());
  std::vector<Case> out;
  for (const std::string& folder : folders)
    for (const char* d : {"keras2", "keras3", "keras3_jax"}) {
      std::ifstream f(folder + "/" + d + ".json");
      if (!f) continue;
      const json doc = json::parse(f);
      for (const auto& c : doc.at("cases"))
        for (const auto& file : c.at("files"))
          out.push_back({d, doc.value("backend", "tensorflow"), c.at("name").get<std::string>(), file.get<std::string>(), c});
    }
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = load_cases();
  return c;
}

struct Model {
  recur_model* m = nullptr;
  ~Model() { recur_model_destroy(m); }
};

struct Inputs {
  int32_t batch = 0;
  std::vector<int32_t> timesteps;
  std::vector<std::vector<float>> per_input;
  std::vector<std::vector<int64_t>> shapes;
  // Integer inputs (ids) as Keras got them: run through the named API with their dtype, so that
  // ids above 2^24 stay exact (their float32 values in per_input are not).
  std::vector<std::vector<int32_t>> ints;
  bool any_int = false;
  std::vector<std::vector<std::string>> strings;  // a string input's texts (dtype "string")
  bool text = false;
};

Inputs inputs_of(const json& call) {
  Inputs in;
  for (const auto& x : call.at("inputs")) {
    const auto shape = x.at("shape").get<std::vector<int64_t>>();
    in.batch = static_cast<int32_t>(shape.at(0));
    in.timesteps.push_back(shape.size() >= 2 ? static_cast<int32_t>(shape[1]) : 0);
    const bool text = x.value("dtype", "") == "string";
    in.per_input.push_back(text ? std::vector<float>() : x.at("data").get<std::vector<float>>());
    in.strings.push_back(text ? x.at("data").get<std::vector<std::string>>() : std::vector<std::string>());
    in.text = in.text || text;
    in.shapes.push_back(shape);
    const bool is_int = x.value("dtype", std::string("float32")) == "int32";
    in.ints.push_back(is_int ? x.at("data").get<std::vector<int32_t>>() : std::vector<int32_t>());
    in.any_int = in.any_int || is_int;
  }
  return in;
}

// What a named tensor points into, kept alive for the call.
struct Kept {
  std::vector<float> f;
  std::vector<int32_t> i;
  std::vector<const char*> s;
};

// Steps [t0, t0 + n) of input i (every step when `whole`; texts are always whole), as a named
// tensor of its own dtype: texts, int32 ids or floats.
recur_tensor named_input(const Inputs& in, std::size_t i, const char* name, bool whole, int64_t t0, int64_t n, Kept& keep) {
  recur_tensor t;
  recur_tensor_init(&t, RECUR_TENSOR_VERSION);
  t.name = name;
  const auto& shape = in.shapes[i];
  t.rank = static_cast<int32_t>(shape.size());
  for (std::size_t a = 0; a < shape.size(); ++a) t.dims[a] = shape[a];
  keep.f.clear();
  keep.i.clear();
  keep.s.clear();
  if (!in.strings[i].empty()) {
    for (const std::string& text : in.strings[i]) keep.s.push_back(text.c_str());
    t.dtype = RECUR_DTYPE_STRING;
    t.data = keep.s.data();
    t.length = keep.s.size();
    return t;
  }
  const bool is_int = !in.ints[i].empty();
  std::size_t step = 1;
  for (std::size_t a = 2; a < shape.size(); ++a) step *= static_cast<std::size_t>(shape[a]);
  for (int64_t b = 0; b < (whole ? 1 : shape[0]); ++b) {
    const std::size_t from = whole ? 0 : static_cast<std::size_t>((b * shape[1] + t0)) * step;
    const std::size_t to = whole ? in.per_input[i].size() : static_cast<std::size_t>((b * shape[1] + t0 + n)) * step;
    if (is_int) keep.i.insert(keep.i.end(), in.ints[i].begin() + static_cast<long>(from), in.ints[i].begin() + static_cast<long>(to));
    else keep.f.insert(keep.f.end(), in.per_input[i].begin() + static_cast<long>(from), in.per_input[i].begin() + static_cast<long>(to));
  }
  t.dtype = is_int ? RECUR_DTYPE_INT32 : RECUR_DTYPE_FLOAT32;
  t.data = is_int ? static_cast<const void*>(keep.i.data()) : static_cast<const void*>(keep.f.data());
  t.length = is_int ? keep.i.size() : keep.f.size();
  if (!whole) t.dims[1] = n;
  return t;
}

// A call through recur_model_run_named (texts, which the float entry points do not take, and
// integer ids, exact there): every output into its own buffer, in Keras's order.
std::vector<float> run_named(recur_model* m, const Inputs& in, const std::vector<std::string>& in_names,
                             const std::vector<std::string>& out_names, const json& want_outputs) {
  std::vector<Kept> kept(in_names.size());
  std::vector<recur_tensor> ts;
  for (std::size_t i = 0; i < in_names.size(); ++i) ts.push_back(named_input(in, i, in_names[i].c_str(), true, 0, 0, kept[i]));
  std::vector<std::vector<float>> bufs(out_names.size());
  std::vector<recur_output> os(out_names.size());
  for (std::size_t k = 0; k < out_names.size(); ++k) {
    bufs[k].resize(want_outputs[k].at("data").size() + 1);  // room for one more: a longer output shows
    EXPECT_EQ(recur_output_init(&os[k], RECUR_OUTPUT_VERSION), RECUR_OK);
    os[k].name = out_names[k].c_str();
    os[k].data = bufs[k].data();
    os[k].capacity = bufs[k].size();
  }
  EXPECT_EQ(recur_model_run_named(m, ts.data(), static_cast<int32_t>(ts.size()), os.data(), static_cast<int32_t>(os.size()),
                                  nullptr),
            RECUR_OK)
      << recur_last_error();
  std::vector<float> out;
  for (std::size_t k = 0; k < os.size(); ++k) out.insert(out.end(), bufs[k].begin(), bufs[k].begin() + static_cast<long>(os[k].length));
  return out;
}

std::string last_error() { return recur_last_error(); }

// RECUR_TEST_DEVICE, or null for the default (the CPU).
const char* test_device() {
  const char* d = std::getenv("RECUR_TEST_DEVICE");
  return d && *d ? d : nullptr;
}

// Largest |got - want| / max(1, |want|) over one output, or +inf when the lengths differ.
double error_of(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(double(got[i]) - double(want[i])) / std::max(1.0, std::fabs(double(want[i])));
    worst = std::isnan(e) ? INFINITY : std::max(worst, e);
  }
  return worst;
}

// On a device: what each whole-model run copied between host and device (recur's debug log
// line for the run). A run stays on the device when only model inputs go up and model outputs
// come down; otherwise the layers whose inputs came down are counted by class.
struct DeviceCopies {
  std::mutex mutex;
  int runs = 0, on_device = 0;
  std::map<std::string, int> copied_at;  // "Masking: recur has no GPU kernel for Masking" -> runs
};
DeviceCopies device_copies;

void split_list(const std::string& message, const std::string& key, std::vector<std::string>& out) {
  const std::size_t at = message.find(key);
  if (at == std::string::npos) return;
  const std::size_t begin = at + key.size(), end = message.find(']', begin);
  std::string item;
  std::istringstream in(message.substr(begin, end - begin));
  while (std::getline(in, item, '|')) {
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
}

void hear_device_log(void*, int32_t level, const char* message) {
  const std::string m = message;
  if (level != RECUR_LOG_DEBUG || m.find("' ran on cuda:") == std::string::npos) return;
  std::vector<std::string> up, down;
  split_list(m, "upload(s) [", up);
  split_list(m, "download(s) [", down);
  std::lock_guard<std::mutex> lock(device_copies.mutex);
  ++device_copies.runs;
  bool stayed = true;
  for (const std::string& u : up) stayed = stayed && u.rfind("model input", 0) == 0;
  for (const std::string& d : down) {
    if (d.rfind("model output", 0) == 0) continue;
    stayed = false;
    const std::size_t open = d.find(" ("), close = d.find("): ");
    ++device_copies.copied_at[open != std::string::npos && close != std::string::npos
                                  ? d.substr(open + 2, close - open - 2) + ": " + d.substr(close + 3)
                                  : d];
  }
  device_copies.on_device += stayed;
}

double worst_overall = 0;
std::string worst_case;

void record(double e, const std::string& what) {
  if (e > worst_overall) {
    worst_overall = e;
    worst_case = what;
  }
}

class GraphParity : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GraphParity, MatchesKeras) {
  const Case& c = cases()[GetParam()];
  const std::string path = kDir + "/" + c.file;
  Model model;
  ASSERT_EQ(recur_model_open(&model.m, path.c_str()), RECUR_OK) << path << ": " << last_error();
  if (const char* d = test_device()) ASSERT_EQ(recur_model_set_device(model.m, d), RECUR_OK) << last_error();
  if (c.backend == "jax") ASSERT_EQ(recur_model_set_keras_backend(model.m, "jax"), RECUR_OK) << last_error();
  recur_model_info info;
  info.version = RECUR_MODEL_INFO_VERSION;
  ASSERT_EQ(recur_model_get_info(model.m, &info), RECUR_OK);
  ASSERT_EQ(info.runnable, 1) << c.file << ": " << info.unsupported;
  if (test_device()) {
    // The layers given GPU kernels after the first device graph say so (their runs' copies are
    // counted in the summary).
    for (int32_t i = 0; i < info.num_layers; ++i) {
      const char* cls = nullptr;
      ASSERT_EQ(recur_model_layer(model.m, i, nullptr, &cls, nullptr, nullptr, nullptr, nullptr), RECUR_OK);
      const std::string k = cls;
      static const std::set<std::string> kNewKernels = {"Attention", "AdditiveAttention", "MultiHeadAttention",
                                                        "Rescaling", "Permute", "Transpose", "GetItem",
                                                        "Masking", "Dot", "EinsumDense", "Normalization",
                                                        "TFOpLambda", "SlicingOpLambda", "Sum"};
      if (!kNewKernels.count(k)) continue;
      recur_device_info d;
      d.version = RECUR_DEVICE_INFO_VERSION;
      ASSERT_EQ(recur_model_get_device(model.m, i, &d), RECUR_OK) << last_error();
      EXPECT_EQ(std::string(d.backend).rfind("cuda", 0), 0u) << c.file << ": " << k << " runs on " << d.backend << ": "
                                                               << d.reason;
    }
  }

  // Names, in Keras's order.
  int32_t ni = 0, no = 0;
  ASSERT_EQ(recur_model_num_inputs(model.m, &ni), RECUR_OK);
  ASSERT_EQ(recur_model_num_outputs(model.m, &no), RECUR_OK);
  const auto in_names = c.data.at("input_names").get<std::vector<std::string>>();
  const auto out_names = c.data.at("output_names").get<std::vector<std::string>>();
  ASSERT_EQ(static_cast<std::size_t>(ni), in_names.size());
  ASSERT_EQ(static_cast<std::size_t>(no), out_names.size());
  for (int32_t i = 0; i < ni; ++i) {
    const char* name = nullptr;
    ASSERT_EQ(recur_model_input(model.m, i, &name, nullptr, nullptr, nullptr), RECUR_OK);
    EXPECT_EQ(name, in_names[static_cast<std::size_t>(i)]) << "input " << i;
  }
  for (int32_t i = 0; i < no; ++i) {
    const char* name = nullptr;
    ASSERT_EQ(recur_model_output(model.m, i, &name, nullptr, nullptr), RECUR_OK);
    EXPECT_EQ(name, out_names[static_cast<std::size_t>(i)]) << "output " << i;
  }

  // Keras's calls in order (a stateful model carries its states between them).
  int call_index = 0;
  for (const auto& call : c.data.at("calls")) {
    SCOPED_TRACE("call " + std::to_string(call_index++));
    if (call.value("reset_states_before", false)) ASSERT_EQ(recur_model_reset_states(model.m), RECUR_OK) << last_error();
    const Inputs in = inputs_of(call);
    std::vector<float> out;
    if (in.text) {
      for (int32_t i = 0; i < ni; ++i) {
        int32_t dtype = 0;
        ASSERT_EQ(recur_model_input_dtype(model.m, i, &dtype), RECUR_OK) << last_error();
        EXPECT_EQ(dtype == RECUR_DTYPE_STRING, !in.strings[static_cast<std::size_t>(i)].empty()) << "input " << i;
      }
      out = run_named(model.m, in, in_names, out_names, call.at("outputs"));
    } else {
      std::size_t out_len = 0;
      ASSERT_EQ(recur_model_outputs_length(model.m, in.batch, in.timesteps.data(), ni, &out_len), RECUR_OK) << last_error();
      if (in.any_int) {
        out = run_named(model.m, in, in_names, out_names, call.at("outputs"));
        EXPECT_EQ(out.size(), out_len) << "recur_model_outputs_length and the named run disagree";
      } else {
        std::vector<float> flat;
        for (const auto& x : in.per_input) flat.insert(flat.end(), x.begin(), x.end());
        out.resize(out_len);
        ASSERT_EQ(recur_model_run_inputs(model.m, in.batch, in.timesteps.data(), ni, flat.data(), flat.size(), nullptr, 0,
                                         out.data(), out.size()),
                  RECUR_OK)
            << last_error();
      }
    }
    std::size_t off = 0;
    for (int32_t k = 0; k < no; ++k) {
      const auto& want = call.at("outputs")[static_cast<std::size_t>(k)].at("data").get<std::vector<float>>();
      std::vector<float> got(out.begin() + static_cast<long>(std::min(off, out.size())),
                             out.begin() + static_cast<long>(std::min(off + want.size(), out.size())));
      off += want.size();
      const double e = error_of(got, want);
      record(e, c.dialect + "/" + c.file + " output " + out_names[static_cast<std::size_t>(k)]);
      EXPECT_LE(e, kTolerance) << c.file << " output " << out_names[static_cast<std::size_t>(k)];
    }
    EXPECT_EQ(off, out.size()) << "recur wrote more outputs than Keras";
  }
}

// The same calls through a model state, a few timesteps at a time.
TEST_P(GraphParity, StreamsLikeOneCall) {
  const Case& c = cases()[GetParam()];
  Model model;
  ASSERT_EQ(recur_model_open(&model.m, (kDir + "/" + c.file).c_str()), RECUR_OK) << last_error();
  if (const char* d = test_device()) ASSERT_EQ(recur_model_set_device(model.m, d), RECUR_OK) << last_error();
  if (c.backend == "jax") ASSERT_EQ(recur_model_set_keras_backend(model.m, "jax"), RECUR_OK);
  const char* why = nullptr;
  ASSERT_EQ(recur_model_streamable(model.m, &why), RECUR_OK);
  if (*why) {
    // A model that does not stream says which layer stops it, and refuses a state.
    recur_model_state* st = nullptr;
    EXPECT_EQ(recur_model_state_create(&st, model.m, 1), RECUR_ERR_UNSUPPORTED);
    EXPECT_EQ(st, nullptr);
    EXPECT_NE(std::string(why).find("layer '"), std::string::npos) << why;
    GTEST_SKIP() << c.file << " does not stream: " << why;
  }
  int32_t ni = 0, no = 0;
  ASSERT_EQ(recur_model_num_inputs(model.m, &ni), RECUR_OK);
  ASSERT_EQ(recur_model_num_outputs(model.m, &no), RECUR_OK);
  const auto in_names = c.data.at("input_names").get<std::vector<std::string>>();
  const auto out_names = c.data.at("output_names").get<std::vector<std::string>>();
  // Which inputs and outputs carry the timesteps axis: their axis 1 follows the input length.
  const json& first = c.data.at("calls")[0];
  const Inputs in0 = inputs_of(first);
  std::vector<bool> seq_in(static_cast<std::size_t>(ni)), seq_out(static_cast<std::size_t>(no));
  for (int32_t i = 0; i < ni; ++i) {
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    ASSERT_EQ(recur_model_input(model.m, i, nullptr, &rank, dims, nullptr), RECUR_OK);
    int32_t ids = 0;
    ASSERT_EQ(recur_model_input(model.m, i, nullptr, nullptr, nullptr, &ids), RECUR_OK);
    seq_in[static_cast<std::size_t>(i)] = rank >= 3 || (rank == 2 && (dims[1] < 0 || ids));
  }
  for (int32_t k = 0; k < no; ++k) {
    int64_t d1[RECUR_MAX_RANK], d2[RECUR_MAX_RANK];
    int32_t r1 = 0, r2 = 0;
    std::vector<int32_t> t1(static_cast<std::size_t>(ni), 1), t2(static_cast<std::size_t>(ni), 2);
    ASSERT_EQ(recur_model_output_dims(model.m, k, in0.batch, t1.data(), ni, d1, &r1), RECUR_OK) << last_error();
    ASSERT_EQ(recur_model_output_dims(model.m, k, in0.batch, t2.data(), ni, d2, &r2), RECUR_OK) << last_error();
    // Steps out in proportion to steps in (UpSampling1D makes `size` of each).
    seq_out[static_cast<std::size_t>(k)] = r1 >= 3 && d1[1] >= 1 && d2[1] == 2 * d1[1];
  }
  recur_model_state* st = nullptr;
  ASSERT_EQ(recur_model_state_create(&st, model.m, in0.batch), RECUR_OK) << last_error();
  for (const auto& call : c.data.at("calls")) {
    if (call.value("reset_states_before", false)) ASSERT_EQ(recur_model_state_reset(st), RECUR_OK);
    const Inputs in = inputs_of(call);
    int32_t T = 0;
    for (int32_t i = 0; i < ni; ++i)
      if (seq_in[static_cast<std::size_t>(i)]) T = in.timesteps[static_cast<std::size_t>(i)];
    if (T == 0) GTEST_SKIP() << c.file << " has no input with a timesteps axis to stream";
    std::vector<std::vector<float>> got(static_cast<std::size_t>(no));
    std::vector<std::vector<int64_t>> got_rows(static_cast<std::size_t>(no));
    for (int32_t t0 = 0, chunk = 1; t0 < T; t0 += chunk, chunk = std::min(chunk + 1, 3)) {
      const int32_t n = std::min(chunk, T - t0);
      std::vector<float> flat;
      for (int32_t i = 0; i < ni; ++i) {
        const auto& x = in.per_input[static_cast<std::size_t>(i)];
        const auto& shape = in.shapes[static_cast<std::size_t>(i)];
        if (!seq_in[static_cast<std::size_t>(i)]) {
          flat.insert(flat.end(), x.begin(), x.end());
          continue;
        }
        std::size_t step = 1;
        for (std::size_t a = 2; a < shape.size(); ++a) step *= static_cast<std::size_t>(shape[a]);
        for (int64_t b = 0; b < shape[0]; ++b)
          flat.insert(flat.end(), x.begin() + static_cast<long>((b * shape[1] + t0) * step),
                      x.begin() + static_cast<long>((b * shape[1] + t0 + n) * step));
      }
      size_t in_len = 0, out_len = 0;
      ASSERT_EQ(recur_model_state_lengths(st, n, &in_len, &out_len), RECUR_OK) << last_error();
      ASSERT_EQ(in_len, flat.size());
      std::vector<float> out(out_len);
      if (in.any_int) {
        std::vector<Kept> kept(static_cast<std::size_t>(ni));
        std::vector<recur_tensor> named;
        for (int32_t i = 0; i < ni; ++i)
          named.push_back(named_input(in, static_cast<std::size_t>(i), in_names[static_cast<std::size_t>(i)].c_str(),
                                      !seq_in[static_cast<std::size_t>(i)], t0, n, kept[static_cast<std::size_t>(i)]));
        std::vector<recur_output> outs(static_cast<std::size_t>(no));
        std::size_t off = 0;
        for (int32_t k = 0; k < no; ++k) {
          int64_t dims[RECUR_MAX_RANK];
          int32_t rank = 0;
          std::vector<int32_t> ts(static_cast<std::size_t>(ni), n);
          ASSERT_EQ(recur_model_output_dims(model.m, k, in.batch, ts.data(), ni, dims, &rank), RECUR_OK);
          std::size_t len = 1;
          for (int32_t a = 0; a < rank; ++a) len *= static_cast<std::size_t>(dims[a]);
          recur_output& o = outs[static_cast<std::size_t>(k)];
          recur_output_init(&o, RECUR_OUTPUT_VERSION);
          o.name = out_names[static_cast<std::size_t>(k)].c_str();
          o.data = out.data() + off;
          o.capacity = len;
          off += len;
        }
        ASSERT_EQ(recur_model_state_step_named(st, named.data(), ni, outs.data(), no, nullptr), RECUR_OK) << last_error();
      } else {
        ASSERT_EQ(recur_model_state_step(st, n, flat.data(), flat.size(), nullptr, 0, out.data(), out.size()), RECUR_OK)
            << last_error();
      }
      std::size_t off = 0;
      for (int32_t k = 0; k < no; ++k) {
        int64_t dims[RECUR_MAX_RANK];
        int32_t rank = 0;
        std::vector<int32_t> ts(static_cast<std::size_t>(ni), n);
        ASSERT_EQ(recur_model_output_dims(model.m, k, in.batch, ts.data(), ni, dims, &rank), RECUR_OK);
        std::size_t len = 1;
        for (int32_t a = 0; a < rank; ++a) len *= static_cast<std::size_t>(dims[a]);
        std::vector<float> piece(out.begin() + static_cast<long>(off), out.begin() + static_cast<long>(off + len));
        off += len;
        auto& g = got[static_cast<std::size_t>(k)];
        if (!seq_out[static_cast<std::size_t>(k)]) {
          g = piece;  // a value of the whole sequence so far
          continue;
        }
        // Interleave this piece's steps into (B, T, ...) order.
        const std::size_t per_row = len / static_cast<std::size_t>(in.batch);
        if (g.empty()) g.assign(static_cast<std::size_t>(in.batch) * per_row / static_cast<std::size_t>(n) * static_cast<std::size_t>(T), 0.0f);
        const std::size_t step = per_row / static_cast<std::size_t>(n);
        for (int32_t b = 0; b < in.batch; ++b)
          std::copy(piece.begin() + static_cast<long>(b * per_row), piece.begin() + static_cast<long>((b + 1) * per_row),
                    g.begin() + static_cast<long>((static_cast<std::size_t>(b) * static_cast<std::size_t>(T) + static_cast<std::size_t>(t0)) * step));
      }
    }
    for (int32_t k = 0; k < no; ++k) {
      const auto want = call.at("outputs")[static_cast<std::size_t>(k)].at("data").get<std::vector<float>>();
      const double e = error_of(got[static_cast<std::size_t>(k)], want);
      record(e, c.dialect + "/" + c.file + " streamed output " + std::to_string(k));
      EXPECT_LE(e, kTolerance) << c.file << " streamed output " << k;
    }
  }
  recur_model_state_destroy(st);
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& p) {
  const Case& c = cases()[p.param];
  // graphs/<dialect>/x.keras -> <dialect>_x_keras; graphs/<suite>/<dialect>/x.keras -> <dialect>_<suite>_x_keras
  const std::string rel = c.file.substr(c.file.find('/') + 1);
  const std::size_t slash = rel.find('/');
  const std::string suite = rel.rfind('/') != slash ? rel.substr(0, slash) + "_" : "";
  std::string s = c.dialect + "_" + suite + c.file.substr(c.file.rfind('/') + 1);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Graphs, GraphParity, ::testing::Range<std::size_t>(0, cases().size()), case_name);

TEST(GraphParitySummary, HasCases) { ASSERT_FALSE(cases().empty()) << "no graph fixtures under " << kDir << "/graphs"; }

// Printed after every case has run.
class Summary : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("graph parity: %zu model files; worst error %.3e (relative above 1) at %s\n", cases().size(),
                worst_overall, worst_case.c_str());
    if (test_device()) {
      std::printf("graph runs on %s: %d, %d of them with no copy between host and device besides the model's inputs "
                  "and outputs; layers whose inputs crossed to the host (runs):\n",
                  test_device(), device_copies.runs, device_copies.on_device);
      std::vector<std::pair<int, std::string>> by_count;
      for (const auto& [what, n] : device_copies.copied_at) by_count.emplace_back(n, what);
      std::sort(by_count.rbegin(), by_count.rend());
      for (const auto& [n, what] : by_count) std::printf("  %5d  %s\n", n, what.c_str());
      // Layers with a GPU kernel for every call of this suite never make a run copy: Keras's merges,
      // Keras 3's op nodes (ZerosLike and OnesLike read only shapes), the tensor layers, the
      // recurrent layers (masked, JAX, streamed from initial_state tensors, unrolled backwards), the
      // attention layers and the 1D convolutions (their causal stream steps keep their past there).
      static const std::set<std::string> kNeverCopy = {
          "Add", "Subtract", "Multiply", "Maximum", "Minimum", "Average", "Concatenate", "NotEqual", "Equal",
          "Greater", "GreaterEqual", "Less", "LessEqual", "Divide", "TrueDivide", "LogicalAnd", "LogicalOr",
          "LogicalXor", "LogicalNot", "Absolute", "Abs", "Negative", "Square", "Sqrt", "Any", "All", "Sum", "Mean",
          "Max", "Min", "ExpandDims", "Squeeze", "ZerosLike", "OnesLike", "Cast", "Stack", "Transpose", "GetItem",
          "Masking", "Permute", "Rescaling", "EinsumDense", "TFOpLambda", "SlicingOpLambda",
          "Normalization", "Dot", "AdaptiveAveragePooling1D", "AdaptiveMaxPooling1D", "GRU", "LSTM", "SimpleRNN",
          "RNN", "Bidirectional", "CuDNNGRU", "CuDNNLSTM", "Attention", "AdditiveAttention", "MultiHeadAttention",
          "Conv1D", "SeparableConv1D", "DepthwiseConv1D"};
      for (const auto& [what, n] : device_copies.copied_at)
        if (kNeverCopy.count(what.substr(0, what.find(':'))))
          ADD_FAILURE() << n << " run(s) copied at a layer with a GPU kernel: " << what;
    }
  }
};
const auto* const kSummary = ::testing::AddGlobalTestEnvironment(new Summary);

}  // namespace

// With RECUR_TEST_DEVICE naming a device that cannot run here (no GPU, driver or plugin), the whole
// suite is skipped (exit 77, ctest's SKIP_RETURN_CODE) with the reason, instead of failing every case.
// With RECUR_CPU_KERNELS naming a kernel set this CPU cannot run, it is skipped the same way.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* asked = std::getenv("RECUR_CPU_KERNELS")) {
    if (std::strcmp(asked, recur_cpu_kernels()) != 0) {
      std::printf("skipped: this CPU cannot run the %s kernels (it runs %s)\n", asked, recur_cpu_kernels());
      return 77;
    }
    std::printf("model parity with the %s CPU kernels\n", asked);
  }
  if (const char* device = test_device()) {
    if (recur_device_check(device) != RECUR_OK) {
      std::printf("skipped: the model parity suite on %s cannot run here: %s\n", device, recur_last_error());
      return 77;
    }
    std::printf("model parity on device %s\n", device);
    recur_set_log_callback(hear_device_log, nullptr, RECUR_LOG_DEBUG);
  }
  return RUN_ALL_TESTS();
}
