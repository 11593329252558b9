// recur: command-line tool over the public C ABI (recur.h) only.
//
//   recur info FILE [--json] [--device DEV]
//   recur run FILE --input x.npy [--input [NAME=]y.npy ...] [--mask [NAME=]m.npy ...]
//             [--initial-state h.npy ...] [--layer NAME] [--device DEV] [--threads N]
//             [--keras-backend tensorflow|jax] [--states-in s.npz] [--states-out s.npz]
//             (--output out.npz|out.npy | --output-dir DIR)
//   recur verify FILE --input x.npy [...] --expected y.npy|y.npz [--expected ...] [--mask ...]
//                [--initial-state h.npy ...] [--layer NAME] [--device DEV] [--threads N]
//                [--keras-backend B] [--states-in s.npz] [--atol 1e-5]
//   recur stream FILE --input x.npy [...] [--mask ...] --chunk N [--device DEV] [--threads N]
//                [--keras-backend B] (--output out.npz | --output-dir DIR)
//   recur devices
//
// info, run, verify and stream take --limit NAME=VALUE (repeatable, also before the subcommand)
// to raise or lower one of the library's resource limits: units, batch, state_bytes,
// weight_bytes, file_bytes or tensor_bytes, VALUE an integer with an optional K, M or G suffix
// (x1024, x1024^2, x1024^3); 0 restores the default. `info` prints the limits in effect.
//
// A model takes one --input per model input, in the model's input order, or NAME=path for input
// NAME; masks go to the inputs with a timesteps axis the same way (inputs without one get none,
// sequence inputs without a --mask an all-valid one). `run` writes every model output: an .npz
// with output, output_1, ... (in the model's output order), or DIR/<output name>.npy. `stream`
// steps the model N timesteps at a time through one model state and writes what `run` writes.
// DEV is cpu (the default), cuda, cuda:N or auto. N is the number of CPU threads a layer may use
// (1 by default, 0 = one per core); every count gives bitwise the same numbers.
//
// Exit codes: 0 success (verify: within atol), 1 verify mismatch, 2 any error (recur failure,
// unreadable or malformed .npy/.npz, bad usage).
#include <recur/recur.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "npy.hpp"

namespace {

using recur_cli::Array;
using recur_cli::NamedArrays;
using recur_cli::shape_string;

// An error that ends the program with exit code 2 after printing "recur: <message>".
struct Failure {
  std::string message;
};

void limit_failure(const std::string& message);

void check(recur_status s) {
  if (s == RECUR_ERR_LIMIT) limit_failure(recur_last_error());
  if (s != RECUR_OK) throw Failure{recur_last_error()};
}

[[noreturn]] void usage_error(const std::string& m) { throw Failure{m}; }

struct ModelHandle {
  recur_model* m = nullptr;
  ~ModelHandle() { recur_model_destroy(m); }
};
struct LayerHandle {
  recur_layer* l = nullptr;
  ~LayerHandle() { recur_layer_destroy(l); }
};
struct ModelStateHandle {
  recur_model_state* s = nullptr;
  ~ModelStateHandle() { recur_model_state_destroy(s); }
};

std::string str(const char* s) { return s ? s : ""; }

const char* dialect_name(int32_t d) {
  return d == RECUR_DIALECT_KERAS2 ? "keras2" : d == RECUR_DIALECT_KERAS3 ? "keras3" : "unknown";
}

recur_model_info model_info(const recur_model* m) {
  recur_model_info info{};
  info.version = RECUR_MODEL_INFO_VERSION;
  check(recur_model_get_info(m, &info));
  return info;
}

recur_device_info model_device(const recur_model* m, int32_t layer_index) {
  recur_device_info d{};
  d.version = RECUR_DEVICE_INFO_VERSION;
  check(recur_model_get_device(m, layer_index, &d));
  return d;
}

// "cpu (why)" or "cuda:0 via cudnn, <GPU name> (why)".
std::string device_line(const recur_device_info& d) {
  std::string line = str(d.backend);
  if (line != "cpu") line += " via " + str(d.path) + ", " + str(d.device_name);
  return line + " (" + str(d.reason) + ")";
}

nlohmann::ordered_json device_json(const recur_device_info& d) {
  return {{"requested", str(d.requested)},
          {"backend", str(d.backend)},
          {"path", str(d.path)},
          {"reason", str(d.reason)},
          {"device_name", str(d.device_name)}};
}

// ---------------------------------------------------------------------------------------------
// A model's inputs, outputs and stateful layers, through the graph functions of the C ABI

struct Tensor {
  std::string name;
  std::vector<int64_t> dims;  // batch first; -1 where given at run time
  bool token_ids = false;
  // An input with a timesteps axis (axis 1) that masks and streams address
  // (recur_model_input_sequence); false for outputs.
  bool sequence = false;
};

std::vector<Tensor> model_inputs(const recur_model* m) {
  int32_t n = 0;
  check(recur_model_num_inputs(m, &n));
  std::vector<Tensor> out;
  for (int32_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    int32_t rank = 0, ids = 0;
    int64_t dims[RECUR_MAX_RANK];
    check(recur_model_input(m, i, &name, &rank, dims, &ids));
    Tensor t;
    t.name = str(name);
    t.dims.assign(dims, dims + rank);
    t.token_ids = ids != 0;
    int32_t seq = 0;
    check(recur_model_input_sequence(m, i, &seq));
    t.sequence = seq != 0;
    out.push_back(t);
  }
  return out;
}

std::vector<Tensor> model_outputs(const recur_model* m) {
  int32_t n = 0;
  check(recur_model_num_outputs(m, &n));
  std::vector<Tensor> out;
  for (int32_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    check(recur_model_output(m, i, &name, &rank, dims));
    Tensor t;
    t.name = str(name);
    t.dims.assign(dims, dims + rank);
    out.push_back(t);
  }
  return out;
}

// "(B, T, 3)": B for the batch (its size where a stateful model fixes it), T for a sequence's
// timesteps, ? for another open axis.
std::string layout(const Tensor& t) {
  const std::string batch = t.dims.empty() || t.dims[0] < 0 ? std::string("B") : std::to_string(t.dims[0]);
  if (t.token_ids && t.dims.size() == 2 && t.sequence) return "token ids (" + batch + ", T)";
  std::string s = "(";
  for (std::size_t a = 0; a < t.dims.size(); ++a) {
    if (a) s += ", ";
    if (a == 0) s += batch;
    else if (a == 1 && t.sequence) s += "T";
    else s += t.dims[a] < 0 ? "?" : std::to_string(t.dims[a]);
  }
  return s + (t.dims.size() == 1 ? ",)" : ")");
}

// The dims the C ABI reports, with B for the batch, T for an open axis 1 and ? for another one.
std::string dims_string(const std::vector<int64_t>& d) {
  std::string s = "(";
  for (std::size_t a = 0; a < d.size(); ++a)
    s += (a ? ", " : "") + (d[a] >= 0 ? std::to_string(d[a]) : a == 0 ? std::string("B") : a == 1 ? std::string("T") : std::string("?"));
  return s + (d.size() == 1 ? ",)" : ")");
}

nlohmann::ordered_json dims_json(const std::vector<int64_t>& d) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (int64_t v : d) j.push_back(v);
  return j;
}

// A stateful layer of a model: its name for recur_model_*_states and its states' shape.
struct StatefulLayer {
  std::string name;
  int32_t num_states = 0, batch = 0, units = 0;
};

// Every stateful layer, in config order ("<name>/forward" and "<name>/backward" for a
// Bidirectional's halves), as the C ABI lists them.
std::vector<StatefulLayer> stateful_layers(const recur_model* m) {
  int32_t n = 0;
  check(recur_model_num_stateful_layers(m, &n));
  std::vector<StatefulLayer> out;
  for (int32_t i = 0; i < n; ++i) {
    const char* name = nullptr;
    StatefulLayer l;
    check(recur_model_stateful_layer(m, i, &name, &l.num_states, &l.batch, &l.units));
    l.name = str(name);
    out.push_back(l);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// --limit NAME=VALUE: the library's resource limits

struct LimitName {
  const char* name;
  recur_limit which;
  bool bytes;
};
constexpr LimitName kLimits[] = {{"units", RECUR_LIMIT_UNITS, false},
                                 {"batch", RECUR_LIMIT_BATCH, false},
                                 {"state_bytes", RECUR_LIMIT_STATE_BYTES, true},
                                 {"weight_bytes", RECUR_LIMIT_WEIGHT_BYTES, true},
                                 {"file_bytes", RECUR_LIMIT_FILE_BYTES, true},
                                 {"tensor_bytes", RECUR_LIMIT_TENSOR_BYTES, true}};
constexpr const char* kLimitChoices = "units, batch, state_bytes, weight_bytes, file_bytes, tensor_bytes";

// NAME=VALUE -> the limit and its value; the reason it is wrong otherwise.
std::string parse_limit(const std::string& arg, recur_limit* which, uint64_t* value) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos)
    return "expected NAME=VALUE with NAME one of " + std::string(kLimitChoices) + ", got '" + arg + "'";
  const std::string name = arg.substr(0, eq), v = arg.substr(eq + 1);
  const LimitName* found = nullptr;
  for (const LimitName& l : kLimits)
    if (name == l.name) found = &l;
  if (!found) return "unknown limit '" + name + "': expected one of " + kLimitChoices;
  std::size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  uint64_t mult = 1;
  const std::string suffix = v.substr(digits);
  if (suffix == "K" || suffix == "k") mult = uint64_t(1) << 10;
  else if (suffix == "M" || suffix == "m") mult = uint64_t(1) << 20;
  else if (suffix == "G" || suffix == "g") mult = uint64_t(1) << 30;
  else if (!suffix.empty()) digits = 0;
  if (digits == 0)
    return std::string(found->name) + "=" + v + ": expected a whole number with an optional K, M or G suffix (x1024)";
  uint64_t n = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const uint64_t d = static_cast<uint64_t>(v[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::string(found->name) + "=" + v + ": too large";
    n = n * 10 + d;
  }
  if (n > std::numeric_limits<uint64_t>::max() / mult) return std::string(found->name) + "=" + v + ": too large";
  *which = found->which;
  *value = n * mult;
  return "";
}

// The library's message, and the option that raises the limit it names.
void limit_failure(const std::string& message) {
  for (const LimitName& l : kLimits)
    if (message.find(std::string(" ") + l.name + " limit of ") != std::string::npos)
      throw Failure{message + "; here: --limit " + l.name + "=VALUE"};
  throw Failure{message};
}

void apply_limits(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    recur_limit which{};
    uint64_t value = 0;
    const std::string why = parse_limit(a, &which, &value);
    if (!why.empty()) usage_error("--limit: " + why);
    check(recur_set_limit(which, value));
  }
}

// "65536" for a count; "256M" for bytes that are a whole number of K, M or G (what --limit takes).
std::string limit_string(uint64_t v, bool bytes) {
  if (bytes && v)
    for (const auto& [shift, unit] : {std::pair<int, const char*>{30, "G"}, {20, "M"}, {10, "K"}})
      if (v % (uint64_t(1) << shift) == 0) return std::to_string(v >> shift) + unit;
  return std::to_string(v);
}

// The limits in effect, as NAME VALUE pairs.
std::string limits_line() {
  std::string line;
  for (const LimitName& l : kLimits) {
    uint64_t v = 0;
    check(recur_get_limit(l.which, &v));
    line += (line.empty() ? "" : ", ") + std::string(l.name) + " " + limit_string(v, l.bytes);
  }
  return line;
}

nlohmann::ordered_json limits_json() {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const LimitName& l : kLimits) {
    uint64_t v = 0;
    check(recur_get_limit(l.which, &v));
    j[l.name] = v;
  }
  return j;
}

// ---------------------------------------------------------------------------------------------
// info

int cmd_info(const std::string& file, bool as_json, const std::string& device) {
  ModelHandle mh;
  check(recur_model_open(&mh.m, file.c_str()));
  check(recur_model_set_device(mh.m, device.c_str()));
  const recur_model_info info = model_info(mh.m);
  struct Row {
    std::string name, cls;
    int32_t in = 0, out = 0, recurrent = 0;
    recur_device_info device{};
  };
  std::vector<Row> rows;
  for (int32_t i = 0; i < info.num_layers; ++i) {
    const char *name = nullptr, *cls = nullptr;
    Row r;
    check(recur_model_layer(mh.m, i, &name, &cls, nullptr, &r.in, &r.out, &r.recurrent));
    r.name = str(name);
    r.cls = str(cls);
    r.device = model_device(mh.m, i);
    rows.push_back(r);
  }
  const recur_device_info where = model_device(mh.m, -1);
  const std::vector<Tensor> inputs = model_inputs(mh.m), outputs = model_outputs(mh.m);
  int32_t stateful = 0;
  check(recur_model_is_stateful(mh.m, &stateful));
  const std::vector<StatefulLayer> stateful_names = stateful_layers(mh.m);
  const char* why = nullptr;
  check(recur_model_streamable(mh.m, &why));
  if (as_json) {
    nlohmann::ordered_json j;
    j["file"] = file;
    j["dialect"] = dialect_name(info.dialect);
    j["keras_version"] = str(info.keras_version);
    j["runnable"] = info.runnable != 0;
    j["unsupported"] = str(info.unsupported);
    j["input_size"] = info.input_size;
    j["takes_token_ids"] = info.takes_token_ids != 0;
    j["output_size"] = info.output_size;
    j["returns_sequences"] = info.returns_sequences != 0;
    j["num_outputs"] = info.num_outputs;
    j["inputs"] = nlohmann::ordered_json::array();
    for (const Tensor& t : inputs)
      j["inputs"].push_back({{"name", t.name}, {"dims", dims_json(t.dims)}, {"token_ids", t.token_ids},
                             {"sequence", t.sequence}});
    j["outputs"] = nlohmann::ordered_json::array();
    for (const Tensor& t : outputs) j["outputs"].push_back({{"name", t.name}, {"dims", dims_json(t.dims)}});
    j["stateful"] = stateful != 0;
    j["stateful_layers"] = nlohmann::ordered_json::array();
    for (const StatefulLayer& l : stateful_names)
      j["stateful_layers"].push_back({{"name", l.name}, {"num_states", l.num_states}, {"batch_size", l.batch},
                                      {"units", l.units}});
    j["streams"] = str(why).empty();
    j["not_streamable"] = str(why);
    j["device"] = device_json(where);
    j["cpu_kernels"] = recur_cpu_kernels();
    j["limits"] = limits_json();
    j["layers"] = nlohmann::ordered_json::array();
    for (const Row& r : rows)
      j["layers"].push_back({{"name", r.name},
                             {"class", r.cls},
                             {"input_size", r.in},
                             {"output_size", r.out},
                             {"recurrent", r.recurrent != 0},
                             {"device", device_json(r.device)}});
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "file:          " << file << "\n";
  std::cout << "dialect:       " << dialect_name(info.dialect) << " (keras_version " << str(info.keras_version) << ")\n";
  std::cout << "runnable:      " << (info.runnable ? "yes" : "no: " + str(info.unsupported)) << "\n";
  if (inputs.size() == 1) {  // the one-input summary
    if (info.takes_token_ids)
      std::cout << "input:         token ids (B, T)\n";
    else
      std::cout << "input:         (B, T, " << info.input_size << ")\n";
    std::cout << "output:        " << (info.returns_sequences ? "(B, T, " : "(B, ") << info.output_size << ")";
    if (info.num_outputs > 1) std::cout << " x " << info.num_outputs << " outputs";
    std::cout << "\n";
  }
  std::size_t wt = 4;
  for (const Tensor& t : inputs) wt = std::max(wt, t.name.size());
  for (const Tensor& t : outputs) wt = std::max(wt, t.name.size());
  std::cout << "inputs:        " << inputs.size() << "\n";
  for (const Tensor& t : inputs)
    std::printf("  %-*s  %s%s\n", static_cast<int>(wt), t.name.c_str(), dims_string(t.dims).c_str(),
                t.token_ids ? "  token ids" : "");
  std::cout << "outputs:       " << outputs.size() << "\n";
  for (const Tensor& t : outputs)
    std::printf("  %-*s  %s\n", static_cast<int>(wt), t.name.c_str(), dims_string(t.dims).c_str());
  std::cout << "stateful:      ";
  if (!stateful) {
    std::cout << "no\n";
  } else {
    std::string names;
    for (const StatefulLayer& l : stateful_names) names += (names.empty() ? "" : ", ") + l.name;
    std::cout << "yes (" << names << ")\n";
    // Each layer's states as --states-in/--states-out hold them: (states, batch, units).
    std::size_t wl = 4;
    for (const StatefulLayer& l : stateful_names) wl = std::max(wl, l.name.size());
    for (const StatefulLayer& l : stateful_names)
      std::printf("  %-*s  states (%d, %d, %d)\n", static_cast<int>(wl), l.name.c_str(), l.num_states, l.batch,
                  l.units);
  }
  std::cout << "streams:       " << (str(why).empty() ? "yes" : "no: " + str(why)) << "\n";
  std::cout << "device:        " << device_line(where) << "\n";
  std::cout << "cpu kernels:   " << recur_cpu_kernels() << "\n";
  std::cout << "limits:        " << limits_line() << "\n";
  std::cout << "layers:        " << info.num_layers << "\n";
  std::size_t w = 4, wc = 5;
  for (const Row& r : rows) {
    w = std::max(w, r.name.size());
    wc = std::max(wc, r.cls.size());
  }
  std::printf("  %-*s  %-*s  %6s  %6s  %s\n", static_cast<int>(w), "name", static_cast<int>(wc), "class", "input",
              "output", "recurrent");
  for (const Row& r : rows)
    std::printf("  %-*s  %-*s  %6d  %6d  %s\n", static_cast<int>(w), r.name.c_str(), static_cast<int>(wc), r.cls.c_str(),
                r.in, r.out, r.recurrent ? "yes" : "no");
  return 0;
}

// ---------------------------------------------------------------------------------------------
// run

struct RunArgs {
  std::string file, layer, output, output_dir, keras_backend, states_in, states_out;
  std::vector<std::string> inputs, masks, expected;
  std::string device = "cpu";
  int32_t threads = 1;
  int32_t chunk = 1;
  std::vector<std::string> initial_states;
  double atol = 1e-5;
};

// What a run produced: arrays named as the .npz has them (output, output_1, ... or output,
// state_h, state_c), and for a model run the Keras name of each output.
struct RunResult {
  NamedArrays arrays;
  std::vector<std::string> keras_names;  // empty for a layer run
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "NAME=path" where NAME is one of `names`: {NAME, path}; anything else: {"", arg}.
std::pair<std::string, std::string> split_named(const std::string& arg, const std::vector<std::string>& names) {
  const auto eq = arg.find('=');
  if (eq != std::string::npos && std::find(names.begin(), names.end(), arg.substr(0, eq)) != names.end())
    return {arg.substr(0, eq), arg.substr(eq + 1)};
  return {"", arg};
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Assigns `args` (paths, or NAME=path) to the slots named `names` for which `eligible` holds:
// named ones by name, the others in order. Returns the path of each slot ("" for none).
std::vector<std::string> assign(const std::vector<std::string>& args, const std::vector<std::string>& names,
                                const std::vector<bool>& eligible, const std::string& option) {
  std::vector<std::string> slot(names.size());
  std::vector<std::string> positional;
  for (const std::string& a : args) {
    const auto [name, path] = split_named(a, names);
    if (name.empty()) {
      positional.push_back(path);
      continue;
    }
    const std::size_t i = static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
    if (!eligible[i]) usage_error(option + " " + a + ": input '" + name + "' has no timesteps axis to mask");
    if (!slot[i].empty()) usage_error(option + ": '" + name + "' is given twice");
    slot[i] = path;
  }
  std::size_t next = 0;
  for (const std::string& p : positional) {
    while (next < names.size() && (!eligible[next] || !slot[next].empty())) ++next;
    if (next == names.size()) {
      std::vector<std::string> want;
      for (std::size_t i = 0; i < names.size(); ++i)
        if (eligible[i]) want.push_back(names[i]);
      usage_error("too many " + option + " files: the model takes " + std::to_string(want.size()) + " (" + list(want) +
                  "); got " + std::to_string(args.size()));
    }
    slot[next++] = p;
  }
  return slot;
}

std::vector<uint8_t> load_mask(const std::string& path, int64_t B, int64_t T, bool time_major) {
  const Array m = recur_cli::read_npy(path);
  const std::vector<int64_t> want = time_major ? std::vector<int64_t>{T, B} : std::vector<int64_t>{B, T};
  if (m.shape != want)
    throw recur_cli::NpyError(path + ": mask shape " + shape_string(m.shape) + " does not match the input; expected " +
                              shape_string(want));
  std::vector<uint8_t> out(m.data.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = m.data[i] != 0.0f ? 1 : 0;
  return out;
}

// The model's inputs read from the --input files, checked against the model, and their masks.
struct ModelInputs {
  std::vector<Tensor> desc;
  std::vector<Array> x;            // one per input, in input order
  std::vector<int32_t> timesteps;  // axis 1 of each input (0 for rank-1 inputs)
  int32_t batch = 0;
  std::vector<std::vector<uint8_t>> masks;  // per input; empty for none (all empty: no masks)
  bool has_masks = false;
};

ModelInputs load_model_inputs(const recur_model* m, const RunArgs& a) {
  ModelInputs in;
  in.desc = model_inputs(m);
  std::vector<std::string> names;
  for (const Tensor& t : in.desc) names.push_back(t.name);
  if (a.inputs.size() != in.desc.size())
    usage_error("the model has " + std::to_string(in.desc.size()) + " input(s) (" + list(names) + "); got " +
                std::to_string(a.inputs.size()) + " --input file(s)");
  const std::vector<std::string> paths = assign(a.inputs, names, std::vector<bool>(names.size(), true), "--input");
  const bool one = in.desc.size() == 1;
  for (std::size_t i = 0; i < in.desc.size(); ++i) {
    const Tensor& d = in.desc[i];
    Array x = recur_cli::read_npy(paths[i]);
    // (B, T, 1) token ids are (B, T).
    if (d.token_ids && d.dims.size() == 2 && x.shape.size() == 3 && x.shape[2] == 1) x.shape.pop_back();
    bool fits = x.shape.size() == d.dims.size();
    for (std::size_t ax = 2; fits && ax < d.dims.size(); ++ax)
      if (d.dims[ax] >= 0 && x.shape[ax] != d.dims[ax]) fits = false;
    if (fits && d.dims.size() == 2 && !d.sequence && d.dims[1] >= 0 && x.shape[1] != d.dims[1]) fits = false;
    if (!fits)
      throw recur_cli::NpyError(paths[i] + ": shape " + shape_string(x.shape) + " does not fit " +
                                (one ? std::string("the model") : "input '" + d.name + "' of the model") + ": expected " +
                                layout(d));
    const int64_t B = x.shape.empty() ? 0 : x.shape[0];
    const int64_t T = x.shape.size() > 1 ? x.shape[1] : 1;
    if (B <= 0 || T <= 0 || B > std::numeric_limits<int32_t>::max() || T > std::numeric_limits<int32_t>::max())
      throw recur_cli::NpyError(paths[i] + ": shape " + shape_string(x.shape) +
                                ": batch and timesteps must be in [1, 2^31)");
    if (i == 0) in.batch = static_cast<int32_t>(B);
    else if (B != in.batch)
      throw recur_cli::NpyError(paths[i] + ": batch " + std::to_string(B) + " differs from input '" + in.desc[0].name +
                                "' (" + std::to_string(in.batch) + ")");
    in.timesteps.push_back(x.shape.size() > 1 ? static_cast<int32_t>(T) : 0);
    in.x.push_back(std::move(x));
  }
  in.masks.resize(in.desc.size());
  if (!a.masks.empty()) {
    std::vector<bool> seq;
    for (const Tensor& t : in.desc) seq.push_back(t.sequence);
    const std::vector<std::string> mpaths = assign(a.masks, names, seq, "--mask");
    for (std::size_t i = 0; i < in.desc.size(); ++i) {
      if (!seq[i]) continue;
      const int64_t B = in.batch, T = in.timesteps[i];
      in.masks[i] = mpaths[i].empty() ? std::vector<uint8_t>(static_cast<std::size_t>(B * T), 1)  // all valid
                                      : load_mask(mpaths[i], B, T, false);
    }
    in.has_masks = true;
  }
  return in;
}

// The model's outputs, named output, output_1, ... (and with their Keras names).
RunResult name_outputs(const std::vector<Tensor>& outs, std::vector<Array> arrays) {
  RunResult r;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    r.arrays.emplace_back(k == 0 ? "output" : "output_" + std::to_string(k), std::move(arrays[k]));
    r.keras_names.push_back(outs[k].name);
  }
  return r;
}

// Opens the model for a whole-model command: threads, device and backend set, where it runs printed.
void open_model(ModelHandle& mh, const RunArgs& a) {
  check(recur_model_open(&mh.m, a.file.c_str()));
  // Before the device, so a bad count is reported without touching a GPU.
  check(recur_model_set_num_threads(mh.m, a.threads));
  if (!a.keras_backend.empty()) check(recur_model_set_keras_backend(mh.m, a.keras_backend.c_str()));
  check(recur_model_set_device(mh.m, a.device.c_str()));
  std::cout << "device: " << device_line(model_device(mh.m, -1)) << "\n";
}

// --states-in: sets the states of the model's stateful layers from an .npz (members named by layer).
void load_states(const recur_model* m, const std::string& path) {
  const std::vector<StatefulLayer> layers = stateful_layers(m);
  if (layers.empty()) usage_error("--states-in: the model has no stateful layers");
  for (const auto& [name, arr] : recur_cli::read_npz(path)) {
    const auto l = std::find_if(layers.begin(), layers.end(), [&](const StatefulLayer& s) { return s.name == name; });
    if (l == layers.end()) {
      std::vector<std::string> names;
      for (const StatefulLayer& s : layers) names.push_back(s.name);
      throw recur_cli::NpyError(path + ": '" + name + "' is not a stateful layer of the model (" + list(names) + ")");
    }
    const std::vector<int64_t> want{l->num_states, l->batch, l->units};
    if (arr.shape != want)
      throw recur_cli::NpyError(path + ": '" + name + "' has shape " + shape_string(arr.shape) + "; expected " +
                                shape_string(want) + " (states, batch, units)");
    check(recur_model_set_states(const_cast<recur_model*>(m), name.c_str(), arr.data.data(), arr.data.size()));
  }
}

// --states-out: the states of every stateful layer, (num_states, batch_size, units) each.
NamedArrays save_states(const recur_model* m) {
  NamedArrays out;
  for (const StatefulLayer& l : stateful_layers(m)) {
    Array a;
    a.dtype = "<f4";
    a.shape = {l.num_states, l.batch, l.units};
    a.data.resize(static_cast<std::size_t>(l.num_states) * static_cast<std::size_t>(l.batch) *
                  static_cast<std::size_t>(l.units));
    check(recur_model_get_states(m, l.name.c_str(), a.data.data(), a.data.size()));
    out.emplace_back(l.name, std::move(a));
  }
  if (out.empty()) usage_error("--states-out: the model has no stateful layers");
  return out;
}

RunResult run_model(const RunArgs& a, NamedArrays* states_out) {
  if (!a.initial_states.empty()) usage_error("--initial-state needs --layer (whole-model runs start from zero states)");
  ModelHandle mh;
  open_model(mh, a);
  const ModelInputs in = load_model_inputs(mh.m, a);
  if (!a.states_in.empty()) load_states(mh.m, a.states_in);
  std::vector<float> x;
  for (const Array& xi : in.x) x.insert(x.end(), xi.data.begin(), xi.data.end());
  std::vector<uint8_t> masks;
  if (in.has_masks)
    for (const auto& mk : in.masks) masks.insert(masks.end(), mk.begin(), mk.end());
  const int32_t n = static_cast<int32_t>(in.timesteps.size());
  size_t out_len = 0;
  check(recur_model_outputs_length(mh.m, in.batch, in.timesteps.data(), n, &out_len));
  std::vector<float> y(out_len);
  check(recur_model_run_inputs(mh.m, in.batch, in.timesteps.data(), n, x.data(), x.size(),
                               in.has_masks ? masks.data() : nullptr, masks.size(), y.data(), y.size()));
  const std::vector<Tensor> outs = model_outputs(mh.m);
  std::vector<Array> arrays;
  std::size_t off = 0;
  for (int32_t k = 0; k < static_cast<int32_t>(outs.size()); ++k) {
    int64_t dims[RECUR_MAX_RANK];
    int32_t rank = 0;
    check(recur_model_output_dims(mh.m, k, in.batch, in.timesteps.data(), n, dims, &rank));
    Array o;
    o.dtype = "<f4";
    o.shape.assign(dims, dims + rank);
    std::size_t count = 1;
    for (int64_t d : o.shape) count *= static_cast<std::size_t>(d);
    if (off + count > y.size()) throw Failure{"the model's output dims exceed its outputs' length (a bug in recur)"};
    o.data.assign(y.begin() + static_cast<long>(off), y.begin() + static_cast<long>(off + count));
    off += count;
    arrays.push_back(std::move(o));
  }
  if (states_out) *states_out = save_states(mh.m);
  return name_outputs(outs, std::move(arrays));
}

RunResult run_layer(const RunArgs& a) {
  if (a.inputs.size() != 1) usage_error("--layer takes one --input (got " + std::to_string(a.inputs.size()) + ")");
  if (a.masks.size() > 1) usage_error("--layer takes at most one --mask");
  if (!a.states_in.empty() || !a.states_out.empty()) usage_error("--states-in/--states-out are for whole models");
  const std::string input = a.inputs[0];
  ModelHandle mh;
  check(recur_model_open(&mh.m, a.file.c_str()));
  LayerHandle lh;
  check(recur_model_get_layer(mh.m, a.layer.c_str(), &lh.l));
  check(recur_layer_set_num_threads(lh.l, a.threads));
  if (!a.keras_backend.empty()) check(recur_layer_set_keras_backend(lh.l, a.keras_backend.c_str()));
  check(recur_layer_set_device(lh.l, a.device.c_str()));
  recur_device_info where{};
  where.version = RECUR_DEVICE_INFO_VERSION;
  check(recur_layer_get_device(lh.l, &where));
  std::cout << "device: " << device_line(where) << "\n";
  recur_layer_info li{};
  li.version = RECUR_LAYER_INFO_VERSION;
  check(recur_layer_get_info(lh.l, &li));
  const Array x = recur_cli::read_npy(input);
  const bool tm = li.time_major != 0;
  if (x.shape.size() != 3 || x.shape[2] != li.input_size)
    throw recur_cli::NpyError(input + ": shape " + shape_string(x.shape) + " does not fit layer '" + a.layer +
                              "': expected " + (tm ? "(T, B, " : "(B, T, ") + std::to_string(li.input_size) + ")");
  const int64_t B = tm ? x.shape[1] : x.shape[0], T = tm ? x.shape[0] : x.shape[1];
  if (B <= 0 || T <= 0 || B > std::numeric_limits<int32_t>::max() || T > std::numeric_limits<int32_t>::max())
    throw recur_cli::NpyError(input + ": shape " + shape_string(x.shape) + ": batch and timesteps must be in [1, 2^31)");
  std::vector<uint8_t> mask;
  if (!a.masks.empty()) mask = load_mask(a.masks[0], B, T, tm);
  std::vector<float> init;
  if (!a.initial_states.empty()) {
    if (static_cast<int32_t>(a.initial_states.size()) != li.num_states)
      usage_error("layer '" + a.layer + "' has " + std::to_string(li.num_states) + " state tensor(s) (" +
                  (li.num_states == 2 ? "h, c" : "h") + "); got " + std::to_string(a.initial_states.size()) +
                  " --initial-state file(s)");
    for (const std::string& p : a.initial_states) {
      const Array s = recur_cli::read_npy(p);
      const std::vector<int64_t> want{B, li.units};
      if (s.shape != want)
        throw recur_cli::NpyError(p + ": initial state shape " + shape_string(s.shape) + "; expected " + shape_string(want));
      init.insert(init.end(), s.data.begin(), s.data.end());
    }
  }
  size_t out_len = 0;
  check(recur_layer_output_length(lh.l, static_cast<int32_t>(B), static_cast<int32_t>(T), &out_len));
  std::vector<float> y(out_len);
  std::vector<float> fs(static_cast<std::size_t>(li.num_states) * static_cast<std::size_t>(B) * static_cast<std::size_t>(li.units));
  check(recur_layer_forward(lh.l, x.data.data(), x.data.size(), static_cast<int32_t>(B), static_cast<int32_t>(T),
                            mask.empty() ? nullptr : mask.data(), mask.size(), init.empty() ? nullptr : init.data(),
                            init.size(), init.empty() ? 0 : li.num_states, 0, y.data(), y.size(), fs.data(), fs.size()));
  RunResult r;
  Array o;
  o.dtype = "<f4";
  if (li.return_sequences) o.shape = tm ? std::vector<int64_t>{T, B, li.units} : std::vector<int64_t>{B, T, li.units};
  else o.shape = {B, li.units};
  o.data = std::move(y);
  r.arrays.emplace_back("output", std::move(o));
  const std::size_t n = static_cast<std::size_t>(B) * static_cast<std::size_t>(li.units);
  for (int32_t k = 0; k < li.num_states; ++k) {
    Array s;
    s.dtype = "<f4";
    s.shape = {B, li.units};
    s.data.assign(fs.begin() + static_cast<long>(k * n), fs.begin() + static_cast<long>((k + 1) * n));
    r.arrays.emplace_back(k == 0 ? "state_h" : "state_c", std::move(s));
  }
  return r;
}

RunResult run_any(const RunArgs& a, NamedArrays* states_out = nullptr) {
  if (a.inputs.empty()) usage_error("--input is required");
  return a.layer.empty() ? run_model(a, states_out) : run_layer(a);
}

// A file name for an output: its Keras name, with path separators replaced.
std::string file_name(std::string name) {
  for (char& c : name)
    if (c == '/' || c == '\\') c = '_';
  return name.empty() ? "output" : name;
}

void check_output_options(const RunArgs& a) {
  if (a.output.empty() && a.output_dir.empty()) usage_error("--output or --output-dir is required");
}

// Writes a run's arrays: --output (.npz, or .npy for one array) and/or --output-dir DIR/<name>.npy.
void write_outputs(const RunArgs& a, const RunResult& r) {
  for (std::size_t i = 0; i < r.arrays.size(); ++i) {
    const auto& kv = r.arrays[i];
    std::cout << kv.first << ": " << shape_string(kv.second.shape);
    if (i < r.keras_names.size() && r.keras_names[i] != kv.first) std::cout << "  " << r.keras_names[i];
    std::cout << "\n";
  }
  if (!a.output.empty()) {
    if (ends_with(a.output, ".npy")) {
      if (r.arrays.size() != 1)
        usage_error("--output " + a.output + ": an .npy holds one array; this run has " + std::to_string(r.arrays.size()) +
                    " (use .npz or --output-dir)");
      recur_cli::write_npy(a.output, r.arrays[0].second);
    } else {
      recur_cli::write_npz(a.output, r.arrays);
    }
    std::cout << "wrote " << a.output << "\n";
  }
  if (!a.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (ec) throw recur_cli::NpyError(a.output_dir + ": cannot create the directory: " + ec.message());
    // Keras 3 names every output of a layer after it (`gru`, `gru`): later ones get _1, _2, ...
    std::set<std::string> used;
    for (std::size_t i = 0; i < r.arrays.size(); ++i) {
      const std::string base = file_name(i < r.keras_names.size() ? r.keras_names[i] : r.arrays[i].first);
      std::string name = base;
      for (int k = 1; used.count(name); ++k) name = base + "_" + std::to_string(k);
      used.insert(name);
      const std::string path = a.output_dir + "/" + name + ".npy";
      recur_cli::write_npy(path, r.arrays[i].second);
      std::cout << "wrote " << path << "\n";
    }
  }
}

int cmd_run(const RunArgs& a) {
  check_output_options(a);
  NamedArrays states;
  const RunResult out = run_any(a, a.states_out.empty() ? nullptr : &states);
  write_outputs(a, out);
  if (!a.states_out.empty()) {
    recur_cli::write_npz(a.states_out, states);
    for (const auto& kv : states) std::cout << "states " << kv.first << ": " << shape_string(kv.second.shape) << "\n";
    std::cout << "wrote " << a.states_out << "\n";
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// stream

// The rows [t0, t0 + n) of axis 1 of x (B, T, ...).
std::vector<float> slice_steps(const std::vector<float>& x, int64_t B, int64_t T, int64_t t0, int64_t n) {
  const std::size_t rest = x.size() / static_cast<std::size_t>(B * T);
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(B * n) * rest);
  for (int64_t b = 0; b < B; ++b) {
    const auto first = x.begin() + static_cast<long>((static_cast<std::size_t>(b * T + t0)) * rest);
    out.insert(out.end(), first, first + static_cast<long>(static_cast<std::size_t>(n) * rest));
  }
  return out;
}

std::vector<uint8_t> slice_steps(const std::vector<uint8_t>& m, int64_t B, int64_t T, int64_t t0, int64_t n) {
  std::vector<uint8_t> out;
  for (int64_t b = 0; b < B; ++b)
    out.insert(out.end(), m.begin() + static_cast<long>(b * T + t0), m.begin() + static_cast<long>(b * T + t0 + n));
  return out;
}

int cmd_stream(const RunArgs& a) {
  check_output_options(a);
  if (!a.layer.empty()) usage_error("stream runs whole models; --layer is for run and verify");
  if (a.chunk < 1) usage_error("--chunk must be at least 1, got " + std::to_string(a.chunk));
  if (a.inputs.empty()) usage_error("--input is required");
  ModelHandle mh;
  open_model(mh, a);
  const ModelInputs in = load_model_inputs(mh.m, a);
  ModelStateHandle sh;
  check(recur_model_state_create(&sh.s, mh.m, in.batch));
  // Every sequence input is stepped along the same timesteps.
  int64_t T = 0;
  for (std::size_t i = 0; i < in.desc.size(); ++i)
    if (in.desc[i].sequence) {
      if (T && in.timesteps[i] != T)
        usage_error("stream: the sequence inputs have different lengths (" + std::to_string(T) + " and " +
                    std::to_string(in.timesteps[i]) + " for '" + in.desc[i].name + "')");
      T = in.timesteps[i];
    }
  if (!T) usage_error("stream: the model has no input with a timesteps axis");
  const int64_t B = in.batch;
  const std::vector<Tensor> outs = model_outputs(mh.m);
  // The dims of output k of a step of n steps, from the C ABI.
  const auto step_dims = [&](std::size_t k, int64_t n) {
    int64_t d[RECUR_MAX_RANK];
    int32_t rank = 0;
    check(recur_model_state_output_dims(sh.s, static_cast<int32_t>(k), static_cast<int32_t>(n), d, &rank));
    return std::vector<int64_t>(d, d + rank);
  };
  // Sequence outputs hold a step's timesteps on axis 1 (written in place into the whole (B, T, ...)
  // result); the others are what the model outputs after the step (the last step's is kept).
  std::vector<bool> seq_out(outs.size());
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const std::vector<int64_t> one = step_dims(k, 1);
    int64_t two[RECUR_MAX_RANK];
    int32_t rank = 0;
    if (recur_model_state_output_dims(sh.s, static_cast<int32_t>(k), 2, two, &rank) == RECUR_OK)
      seq_out[k] = one.size() >= 2 && rank >= 2 && one[1] == 1 && two[1] == 2;
    else  // a model that only steps one timestep at a time
      seq_out[k] = one.size() >= 3 && one[1] == 1;
  }
  std::vector<Array> result(outs.size());
  int64_t chunks = 0;
  for (int64_t t0 = 0; t0 < T; t0 += a.chunk, ++chunks) {
    const int64_t n = std::min<int64_t>(a.chunk, T - t0);
    std::vector<float> x;
    std::vector<uint8_t> masks;
    for (std::size_t i = 0; i < in.desc.size(); ++i) {
      if (!in.desc[i].sequence) {
        x.insert(x.end(), in.x[i].data.begin(), in.x[i].data.end());
        continue;
      }
      const std::vector<float> s = slice_steps(in.x[i].data, B, T, t0, n);
      x.insert(x.end(), s.begin(), s.end());
      if (in.has_masks) {
        const std::vector<uint8_t> ms = slice_steps(in.masks[i], B, T, t0, n);
        masks.insert(masks.end(), ms.begin(), ms.end());
      }
    }
    size_t in_len = 0, out_len = 0;
    check(recur_model_state_lengths(sh.s, static_cast<int32_t>(n), &in_len, &out_len));
    if (in_len != x.size())
      throw Failure{"stream: the model state reads " + std::to_string(in_len) + " floats for " + std::to_string(n) +
                    " timestep(s); the inputs give " + std::to_string(x.size()) +
                    " (an input the model does not step along its timesteps axis?)"};
    std::vector<float> y(out_len);
    check(recur_model_state_step(sh.s, static_cast<int32_t>(n), x.data(), x.size(), in.has_masks ? masks.data() : nullptr,
                                 masks.size(), y.data(), y.size()));
    std::size_t off = 0;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const std::vector<int64_t> d = step_dims(k, n);
      std::size_t count = 1;
      for (int64_t v : d) count *= static_cast<std::size_t>(v);
      if (off + count > y.size()) throw Failure{"stream: the outputs' dims exceed the step's outputs (a bug in recur)"};
      const std::vector<float> part(y.begin() + static_cast<long>(off), y.begin() + static_cast<long>(off + count));
      off += count;
      Array& r = result[k];
      r.dtype = "<f4";
      if (!seq_out[k]) {
        r.shape = d;
        r.data = part;
        continue;
      }
      if (r.data.empty()) {
        r.shape = d;
        r.shape[1] = T;
        r.data.assign(static_cast<std::size_t>(B * T) * (count / static_cast<std::size_t>(B * n)), 0.0f);
      }
      const std::size_t rest = count / static_cast<std::size_t>(B * n);
      for (int64_t b = 0; b < B; ++b)
        std::copy(part.begin() + static_cast<long>(static_cast<std::size_t>(b * n) * rest),
                  part.begin() + static_cast<long>(static_cast<std::size_t>((b + 1) * n) * rest),
                  r.data.begin() + static_cast<long>(static_cast<std::size_t>(b * T + t0) * rest));
    }
    if (off != y.size()) throw Failure{"stream: the outputs' dims do not cover the step's outputs (a bug in recur)"};
  }
  std::cout << "stream: " << T << " timesteps in " << chunks << " step(s) of up to " << a.chunk << "\n";
  write_outputs(a, name_outputs(outs, std::move(result)));
  return 0;
}

// ---------------------------------------------------------------------------------------------
// verify

// The expected arrays: one .npz (members named like run's outputs, or by the model's output
// names), or .npy files for the outputs in order (NAME=y.npy for output NAME).
NamedArrays load_expected(const RunArgs& a, const RunResult& got) {
  NamedArrays expected;
  std::vector<std::string> names;
  for (const auto& kv : got.arrays) names.push_back(kv.first);
  for (const std::string& n : got.keras_names) names.push_back(n);
  std::size_t positional = 0;
  for (const std::string& e : a.expected) {
    const auto [name, path] = split_named(e, names);
    if (name.empty() && ends_with(path, ".npz")) {
      NamedArrays members = recur_cli::read_npz(path);
      if (members.empty()) throw recur_cli::NpyError(path + ": the archive holds no arrays");
      for (auto& kv : members) expected.push_back(std::move(kv));
      continue;
    }
    Array arr = recur_cli::read_npy(path);
    if (!name.empty()) {
      expected.emplace_back(name, std::move(arr));
    } else {
      if (positional >= got.arrays.size())
        usage_error("--expected: " + std::to_string(positional + 1) + " .npy files for a run with " +
                    std::to_string(got.arrays.size()) + " output(s)");
      expected.emplace_back(got.arrays[positional++].first, std::move(arr));
    }
  }
  return expected;
}

int cmd_verify(const RunArgs& a) {
  if (!(a.atol >= 0.0)) usage_error("--atol must be a non-negative number");
  if (a.expected.empty()) usage_error("--expected is required");
  const RunResult got = run_any(a);
  const NamedArrays expected = load_expected(a, got);
  double max_abs = 0.0, max_rel = 0.0;
  std::size_t count = 0;
  bool shapes_ok = true;
  for (const auto& kv : expected) {
    const Array* g = nullptr;
    for (std::size_t i = 0; i < got.arrays.size(); ++i)
      if (got.arrays[i].first == kv.first || (i < got.keras_names.size() && got.keras_names[i] == kv.first))
        g = &got.arrays[i].second;
    if (!g) {
      std::vector<std::string> names;
      for (std::size_t i = 0; i < got.arrays.size(); ++i)
        names.push_back(got.arrays[i].first + (i < got.keras_names.size() && got.keras_names[i] != got.arrays[i].first
                                                   ? " (" + got.keras_names[i] + ")"
                                                   : ""));
      std::cerr << "recur: " << list(a.expected) << ": '" << kv.first << "' is not an output of this run (outputs: "
                << list(names) << ")\n";
      shapes_ok = false;
      continue;
    }
    if (g->shape != kv.second.shape) {
      std::cerr << "recur: " << kv.first << ": shape " << shape_string(g->shape) << " differs from the expected "
                << shape_string(kv.second.shape) << " in " << list(a.expected) << "\n";
      shapes_ok = false;
      continue;
    }
    double mabs = 0.0, mrel = 0.0;
    for (std::size_t i = 0; i < g->data.size(); ++i) {
      const double e = kv.second.data[i], v = g->data[i];
      double d = std::fabs(v - e);
      if (std::isnan(d)) d = std::numeric_limits<double>::infinity();
      mabs = std::max(mabs, d);
      if (e != 0.0) mrel = std::max(mrel, d / std::fabs(e));
      else if (d > 0.0) mrel = std::numeric_limits<double>::infinity();
    }
    std::printf("%-10s %-14s max abs error %.3e  max rel error %.3e  (%zu elements)\n", kv.first.c_str(),
                shape_string(g->shape).c_str(), mabs, mrel, g->data.size());
    max_abs = std::max(max_abs, mabs);
    max_rel = std::max(max_rel, mrel);
    count += g->data.size();
  }
  const bool ok = shapes_ok && max_abs <= a.atol;
  std::printf("max abs error: %.6e\nmax rel error: %.6e\nelements: %zu\natol: %g\n%s\n", max_abs, max_rel, count, a.atol,
              ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// devices

// "<device>: available", or "<device>: unavailable: <what is missing>".
void check_device_line(const std::string& device) {
  if (recur_device_check(device.c_str()) == RECUR_OK)
    std::cout << device << ": available\n";
  else
    std::cout << device << ": unavailable: " << recur_last_error() << "\n";
}

int cmd_devices() {
  int32_t count = 0;
  check(recur_device_count(&count));
  std::cout << "cpu: available\n";
  std::cout << "cpu kernels: " << recur_cpu_kernels() << "\n";
  std::cout << "cuda devices: " << count << "\n";
  if (count == 0) {
    check_device_line("cuda");
    return 0;
  }
  for (int32_t i = 0; i < count; ++i) check_device_line("cuda:" + std::to_string(i));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"recur: run Keras recurrent models and layers with Keras's numbers (library " +
               std::string(recur_version_string()) + ")"};
  bool version = false;
  app.add_flag("--version", version, "print the library version and exit");
  app.require_subcommand(0, 1);
  // --limit before the subcommand, or after it on the subcommands that open models.
  std::vector<std::string> global_limits, sub_limits;
  const auto limit_check = CLI::Validator(
      [](std::string& arg) {
        recur_limit which{};
        uint64_t value = 0;
        return parse_limit(arg, &which, &value);
      },
      "NAME=VALUE");
  const std::string limit_help = std::string("raise or lower a resource limit (repeatable): NAME one of ") +
                                 kLimitChoices +
                                 "; VALUE a whole number with an optional K, M or G suffix (x1024); 0 restores the "
                                 "default";
  auto add_limit = [&](CLI::App* sub, std::vector<std::string>& into) {
    sub->add_option("--limit", into, limit_help)->check(limit_check)->allow_extra_args(false);
  };
  add_limit(&app, global_limits);

  const char* const device_help = "where to run: cpu, cuda, cuda:N or auto (a GPU when one can run, else the CPU)";
  std::string info_file, info_device = "cpu";
  bool info_json = false;
  CLI::App* info = app.add_subcommand("info", "describe a Keras model file (.keras or .h5)");
  info->add_option("FILE", info_file, "the model file")->required();
  info->add_flag("--json", info_json, "print JSON");
  info->add_option("--device", info_device, device_help)->capture_default_str();
  add_limit(info, sub_limits);

  RunArgs ra, va, sa;
  const char* const threads_help =
      "CPU threads a layer may use: 1 runs on the calling thread only, 0 one per core; every count gives "
      "bitwise the same numbers";
  const char* const backend_help =
      "Keras 3 backend semantics: tensorflow (the default, also torch's) or jax (also numpy's); they differ at "
      "masked steps before the first valid one";
  auto common = [&](CLI::App* sub, RunArgs& a, bool layers) {
    add_limit(sub, sub_limits);
    sub->add_option("FILE", a.file, "the model file (.keras or .h5)")->required();
    // One value per occurrence: --input a.npy --input b.npy (FILE may follow).
    sub->add_option("--input,-i", a.inputs,
                    "input .npy, one per model input in the model's input order, or NAME=x.npy for input NAME: "
                    "(B, T, F) floats, (B, T) token ids, ...")
        ->required()
        ->allow_extra_args(false);
    sub->add_option("--mask,-m", a.masks,
                    "(B, T) .npy mask of a sequence input, nonzero = valid step; one per sequence input in order, "
                    "or NAME=m.npy")
        ->allow_extra_args(false);
    if (layers) {
      sub->add_option("--initial-state", a.initial_states, "with --layer: one (B, units) .npy per state (h, then c)");
      sub->add_option("--layer,-l", a.layer, "run only this recurrent layer ('name/forward' for a Bidirectional half)");
    }
    sub->add_option("--device", a.device, device_help)->capture_default_str();
    // No range check here: the library's, so the message is the one the C ABI gives.
    sub->add_option("--threads", a.threads, threads_help)->capture_default_str();
    sub->add_option("--keras-backend", a.keras_backend, backend_help);
  };
  auto outputs = [](CLI::App* sub, RunArgs& a) {
    sub->add_option("--output,-o", a.output,
                    "output .npz (output[, output_1 ...] in the model's output order, or output, state_h[, state_c] "
                    "for --layer), or .npy for a run with one array");
    sub->add_option("--output-dir", a.output_dir, "write DIR/<output name>.npy for every output");
  };
  CLI::App* run = app.add_subcommand("run", "run a model (or one of its recurrent layers) on .npy inputs");
  common(run, ra, true);
  outputs(run, ra);
  run->add_option("--states-in", ra.states_in,
                  "stateful models: .npz of states to start from, (states, batch, units) per stateful layer name");
  run->add_option("--states-out", ra.states_out,
                  "stateful models: write the states the run leaves (what --states-in reads) to this .npz");
  CLI::App* verify = app.add_subcommand("verify", "run like `run` and compare with expected outputs");
  common(verify, va, true);
  verify
      ->add_option("--expected,-e", va.expected,
                   "expected outputs: one .npz (members named like run's outputs, or by the model's output names), "
                   "or one .npy per output in order (or NAME=y.npy)")
      ->required()
      ->allow_extra_args(false);
  verify->add_option("--states-in", va.states_in, "stateful models: .npz of states to start from (see run)");
  verify->add_option("--atol", va.atol, "largest allowed absolute error per element")->capture_default_str();
  CLI::App* stream = app.add_subcommand(
      "stream", "step a model through its inputs N timesteps at a time with one model state; writes what `run` writes");
  common(stream, sa, false);
  outputs(stream, sa);
  stream->add_option("--chunk", sa.chunk, "timesteps per step")->capture_default_str();
  CLI::App* devices =
      app.add_subcommand("devices", "list the devices recur can run on, why a GPU cannot, and the CPU kernel set");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  int rc = 2;
  try {
    if (version) {
      std::cout << "recur " << recur_version_string() << "\n";
      return 0;
    }
    apply_limits(global_limits);
    apply_limits(sub_limits);
    if (*info) rc = cmd_info(info_file, info_json, info_device);
    else if (*run) rc = cmd_run(ra);
    else if (*verify) rc = cmd_verify(va);
    else if (*stream) rc = cmd_stream(sa);
    else if (*devices) rc = cmd_devices();
    else std::cerr << app.help();
  } catch (const Failure& f) {
    std::cerr << "recur: " << f.message << "\n";
  } catch (const recur_cli::NpyError& e) {
    std::cerr << "recur: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "recur: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "recur: " << e.what() << "\n";
  }
  // Every handle a command makes is freed when it returns, on errors too: one left is a leak.
  uint64_t layers = 0, states = 0, models = 0, streams = 0;
  if (recur_live_handles(&layers, &states, &models, &streams) == RECUR_OK && layers + states + models + streams) {
    std::cerr << "recur: internal error: handles left at exit (layers " << layers << ", states " << states
              << ", models " << models << ", model states " << streams << ")\n";
    return 70;
  }
  return rc;
}
