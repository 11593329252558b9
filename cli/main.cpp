// SPDX-License-Identifier: Apache-2.0
// recur: command-line tool over the public C ABI (recur.h) only.
//
//   recur info FILE [--json] [--device DEV]
//   recur run FILE --input x.npy [--input [NAME=]y.npy ...] [--mask [NAME=]m.npy ...]
//             [--initial-state h.npy ...] [--layer NAME] [--device DEV] [--threads N]
//             [--precision float32|bf16|int8] [--keras-backend tensorflow|jax] [--states-in s.npz] [--states-out s.npz]
//             [--outputs NAME[,NAME...]] [--output out.npz|out.npy|out.txt|out.json|-]
//             [--output-dir DIR] [--json]
//   recur verify FILE --input x.npy [...] --expected y.npy|y.npz [--expected ...] [--mask ...]
//                [--initial-state h.npy ...] [--layer NAME] [--device DEV] [--threads N]
//                [--precision P] [--keras-backend B] [--states-in s.npz] [--outputs NAME[,NAME...]] [--atol 1e-5]
//   recur stream FILE --input x.npy [...] [--mask ...] --chunk N [--row-streams] [--state-in S] [--state-out S]
//                [--device DEV] [--threads N]
//                [--precision P] [--keras-backend B] [--per-step] [--outputs ...] [--output ...] [--output-dir DIR] [--json]
//   recur devices
//
// Every subcommand takes --log debug|info|warning|error (or -v for info), also before it: the
// library's log on stderr. Ctrl-C or SIGTERM cancels a run, verify or stream (exit 128 + the
// signal, nothing written).
//
// info, run, verify and stream take --limit NAME=VALUE (repeatable, also before the subcommand)
// to raise or lower one of the library's resource limits: units, batch, state_bytes,
// weight_bytes, file_bytes, tensor_bytes, total_state_bytes, run_bytes, timesteps, init_work or
// run_work,
// VALUE an integer with an optional K, M or G suffix (x1024, x1024^2, x1024^3); 0 restores the default. `info` prints the limits in effect. The
// budgets over the whole model are limits too: total_state_bytes, run_bytes, timesteps,
// init_work and run_work. run, verify and stream take --timeout SECONDS: each model run or stream step that
// takes longer stops with an error.
//
// A model takes one --input per model input, in the model's input order, or NAME=path for input
// NAME, or one .npz whose members are named like the inputs; masks go to the inputs with a
// timesteps axis the same way (inputs without one get none, sequence inputs without a --mask an
// all-valid one). Inputs go by name (recur_model_run_named); integer .npy arrays as int32/int64,
// so token ids stay exact. `run` prints every model output as text (or JSON with --json) when
// no --output is given, or writes an .npz (output, output_1, ... by the model's output order), an
// .npy, a .txt or a .json, and/or DIR/<output name>.npy; --outputs runs only the outputs named,
// in that order. `stream` steps the model N timesteps at a time
// through one model state and gives what `run` gives; --per-step prints each step's outputs.
// DEV is cpu (the default), cuda, cuda:N or auto. N is the number of CPU threads a layer may use
// (1 by default, 0 = one per core); every count gives bitwise the same numbers. docs/cli.md is the
// full reference.
//
// Exit codes: 0 success (verify: within atol), 1 verify mismatch, 2 any error (recur failure,
// unreadable or malformed .npy/.npz, bad usage), 130/143 cancelled by SIGINT/SIGTERM.
#include <recur/recur.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "io/printable.hpp"
#include "npy.hpp"
#include "results.hpp"

namespace {

using recur_cli::Array;
using recur_cli::NamedArrays;
using recur_cli::shape_string;

// A name from the model file (or anything else it holds) as the terminal gets it: control bytes,
// newlines and bytes that are not UTF-8 as \xNN, so a name cannot send escape sequences or start
// a line of its own.
std::string shown(const std::string& name) { return recur::io::printable(name); }

// A message as one printed line: the same escaping, with room for long messages.
std::string one_line(const std::string& message) { return recur::io::printable(message, 1 << 16); }

// An error that ends the program with exit code 2 after printing "recur: <message>".
struct Failure {
  std::string message;
};

// A run stopped by SIGINT or SIGTERM: exit 128 + the signal, having written nothing.
struct Cancelled {};

void limit_failure(const std::string& message);

// The library's messages name the C argument at fault ("num_threads: ...", and for some calls
// the function first: "recur_model_set_device: device: ..."); here they name the option instead.
// "inputs[k] ('NAME').FIELD: ..." of the named run's descriptors: the --input (or --mask) of NAME.
std::string descriptor_terms(const std::string& m) {
  static const std::regex kInput(R"(^inputs\[\d+\] \('([^']*)'\)\.(\w+): )");
  static const std::regex kName(R"(^(inputs|outputs)\[\d+\]\.name: )");
  std::smatch match;
  if (std::regex_search(m, match, kInput))
    return (match[2].str().rfind("mask", 0) == 0 ? "--mask " : "--input ") + match[1].str() + ": " +
           match.suffix().str();
  if (std::regex_search(m, match, kName))
    return (match[1].str() == "inputs" ? "--input: " : "--outputs: ") + match.suffix().str();
  return m;
}

std::string in_cli_terms(std::string m) {
  static const std::pair<const char*, const char*> kOptions[] = {
      {"num_threads", "--threads"}, {"device", "--device"}, {"backend", "--keras-backend"},
      {"name", "--layer"},          {"input", "--input"},   {"inputs", "--input"},
      {"timesteps", "--input"},     {"batch", "--input"},   {"mask", "--mask"},
      {"masks", "--mask"},          {"states", "--states-in"}, {"initial_state", "--initial-state"},
      {"limit", "--limit"}};
  // Arguments with no option of their own: the CLI passes them, so only the rest of the message says anything.
  static const char* const kInternal[] = {"len", "out", "out_len", "outputs", "output", "layer_index",
                                           "index", "data", "x_len", "y_len", "model", "state"};
  for (bool again = true; again;) {
    again = false;
    const auto colon = m.find(": ");
    if (colon == std::string::npos) break;
    const std::string head = m.substr(0, colon);
    if (head.rfind("recur_", 0) == 0 && head.find_first_not_of("abcdefghijklmnopqrstuvwxyz_0123456789") == std::string::npos) {
      m.erase(0, colon + 2);
      again = true;
      continue;
    }
    for (const auto& [arg, option] : kOptions)
      if (head == arg) return option + m.substr(colon);
    for (const char* arg : kInternal)
      if (head == arg) {
        m.erase(0, colon + 2);
        again = true;
        break;
      }
    const std::string named = descriptor_terms(m);
    if (named != m) return named;
  }
  return m;
}

void check(recur_status s) {
  if (s == RECUR_ERR_CANCELLED) throw Cancelled{};
  if (s == RECUR_ERR_LIMIT) limit_failure(in_cli_terms(recur_last_error()));
  if (s != RECUR_OK) throw Failure{in_cli_terms(recur_last_error())};
}

// Where progress lines ("device: ...", "wrote ...") go: stdout, or stderr while stdout carries
// the outputs themselves.
std::ostream* g_status = &std::cout;
std::ostream& status() { return *g_status; }

// One line on stderr that is not an error.
void note(const std::string& m) { std::cerr << "recur: note: " << one_line(m) << "\n"; }

[[noreturn]] void usage_error(const std::string& m) { throw Failure{m}; }

// ---------------------------------------------------------------------------------------------
// Ctrl-C and SIGTERM: cancel the running call

// SIGINT and SIGTERM are blocked in every thread and taken by one watcher thread (sigwait), which
// cancels the run options every run and step is given: no signal handler runs inside recur, and
// the cancel happens on an ordinary thread. A second signal ends the process at once.
struct SignalCancel {
  std::mutex mutex;  // guards options against the watcher while main destroys them
  recur_run_options* options = nullptr;
  std::atomic<int> signal{0};
  std::thread watcher;
  std::atomic<bool> stopping{false};
};
SignalCancel& signal_cancel() {
  static SignalCancel c;
  return c;
}

// Before any thread starts (threads inherit the blocked signals).
void start_signal_watch() {
  SignalCancel& c = signal_cancel();
  check(recur_run_options_create(&c.options));
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  c.watcher = std::thread([set] {
    SignalCancel& c = signal_cancel();
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (c.stopping) return;
      int none = 0;
      if (!c.signal.compare_exchange_strong(none, sig)) {
        static const char kMessage[] = "recur: cancelled\n";
        (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
        _exit(128 + sig);
      }
      std::lock_guard<std::mutex> lock(c.mutex);
      if (c.options) recur_run_options_cancel(c.options);
    }
  });
}

// Ends the watcher (the signals stay blocked: one that comes now changes nothing) and frees the
// options; returns false if some were left (a leak).
bool stop_signal_watch() {
  SignalCancel& c = signal_cancel();
  if (c.watcher.joinable()) {
    c.stopping = true;
    pthread_kill(c.watcher.native_handle(), SIGINT);
    c.watcher.join();
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  recur_run_options_destroy(c.options);
  c.options = nullptr;
  uint64_t live = 0;
  return recur_live_run_options(&live) == RECUR_OK && live == 0;
}

// The options runs and steps are given: NULL where no watcher runs (info, devices).
const recur_run_options* run_options() { return signal_cancel().options; }

// Called before anything is written: a signal that came after the last call still cancels.
void throw_if_cancelled() {
  if (signal_cancel().signal.load() != 0) throw Cancelled{};
}

// ---------------------------------------------------------------------------------------------
// --log LEVEL: the library's log on stderr

constexpr const char* kLogLevels[] = {"debug", "info", "warning", "error"};

// One line per message; stdio locks each fwrite, so lines from several threads do not mix.
void log_line(void*, int32_t level, const char* message) {
  const std::string line = std::string("recur: ") + (level >= 0 && level <= 3 ? kLogLevels[level] : "log") + ": " +
                           one_line(message ? message : "") + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void start_log(const std::string& level) {
  for (int32_t l = 0; l < 4; ++l)
    if (level == kLogLevels[l]) {
      check(recur_set_log_callback(log_line, nullptr, l));
      return;
    }
  usage_error("--log " + level + ": expected debug, info, warning or error");
}

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

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

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
  bool strings = false;  // a string input (recur_model_input_dtype): texts from a .txt
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
    int32_t dtype = 0;
    check(recur_model_input_dtype(m, i, &dtype));
    t.strings = dtype == RECUR_DTYPE_STRING;
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

// ---------------------------------------------------------------------------------------------
// What shapes a model takes and gives, as `run` accepts them

// How an input's timesteps axis runs, found by asking the model for its outputs' dims at other
// lengths: a length the file declares is only the one Keras built with, unless a layer needs it
// (a Flatten before a Dense); inputs whose sequences meet (an Add of two) share one length.
struct Timesteps {
  bool axis = false;      // the input has a timesteps axis (axis 1)
  int64_t declared = -1;  // the length the file declares; -1 for none
  bool fixed = false;     // only the declared length runs
  int group = -1;         // inputs of one group take one length; -1 when fixed or no axis
};

// Every input's and output's shape, each axis a number, "B" (the batch), a length symbol ("T";
// "T1", "T2", ... where inputs take lengths of their own) or "?" (another length that depends on
// the inputs).
struct ModelShapes {
  std::vector<Timesteps> timesteps;                   // per input
  std::vector<std::string> symbols;                   // per group
  std::vector<std::vector<std::string>> inputs, outputs;  // per axis
};

// The dims of every output for batch 1 and these timesteps; false where the model refuses them.
bool outputs_at(const recur_model* m, int32_t batch, const std::vector<int32_t>& ts, int32_t num_outputs,
                std::vector<std::vector<int64_t>>* out) {
  out->clear();
  for (int32_t k = 0; k < num_outputs; ++k) {
    int64_t d[RECUR_MAX_RANK];
    int32_t rank = 0;
    if (recur_model_output_dims(m, k, batch, ts.data(), static_cast<int32_t>(ts.size()), d, &rank) != RECUR_OK)
      return false;
    out->emplace_back(d, d + rank);
  }
  return true;
}

std::string axis_string(int64_t v, const std::string& symbol) { return v >= 0 ? std::to_string(v) : symbol; }

ModelShapes model_shapes(const recur_model* m, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  ModelShapes s;
  const int32_t n_out = static_cast<int32_t>(outputs.size());
  const int32_t batch = !inputs.empty() && !inputs[0].dims.empty() && inputs[0].dims[0] > 0
                            ? static_cast<int32_t>(inputs[0].dims[0])
                            : 1;
  std::vector<int32_t> base;
  for (const Tensor& t : inputs) {
    Timesteps ts;
    ts.axis = t.sequence;
    if (t.sequence && t.dims.size() > 1) ts.declared = t.dims[1];
    s.timesteps.push_back(ts);
    base.push_back(!t.sequence ? 0 : ts.declared > 0 ? static_cast<int32_t>(ts.declared) : 16);
  }
  std::vector<std::vector<int64_t>> at_base, probe;
  const bool base_runs = outputs_at(m, batch, base, n_out, &at_base);
  // One more step for the inputs in `who`: whether the model takes it.
  auto longer = [&](const std::vector<std::size_t>& who) {
    std::vector<int32_t> ts = base;
    for (std::size_t i : who) ++ts[i];
    return outputs_at(m, batch, ts, n_out, &probe);
  };
  std::vector<std::size_t> tied;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!s.timesteps[i].axis) continue;
    if (!base_runs || longer({i})) {
      s.timesteps[i].group = static_cast<int>(s.symbols.size());
      s.symbols.emplace_back();
    } else {
      tied.push_back(i);
    }
  }
  if (!tied.empty()) {
    const bool together = tied.size() > 1 && longer(tied);
    const int group = together ? static_cast<int>(s.symbols.size()) : -1;
    if (together) s.symbols.emplace_back();
    for (std::size_t i : tied) {
      if (together || s.timesteps[i].declared < 0) {  // an undeclared length cannot be fixed
        s.timesteps[i].group = together ? group : static_cast<int>(s.symbols.size());
        if (!together) s.symbols.emplace_back();
      } else {
        s.timesteps[i].fixed = true;
      }
    }
  }
  for (std::size_t g = 0; g < s.symbols.size(); ++g)
    s.symbols[g] = s.symbols.size() == 1 ? "T" : "T" + std::to_string(g + 1);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    std::vector<std::string> axes;
    for (std::size_t a = 0; a < t.dims.size(); ++a) {
      if (a == 0) axes.push_back(axis_string(t.dims[0], "B"));
      else if (a == 1 && s.timesteps[i].axis)
        axes.push_back(s.timesteps[i].fixed ? std::to_string(s.timesteps[i].declared)
                                            : s.symbols[static_cast<std::size_t>(s.timesteps[i].group)]);
      else axes.push_back(axis_string(t.dims[a], "?"));
    }
    s.inputs.push_back(axes);
  }
  // An output axis that grows with one group's length, step for step, is that length.
  std::vector<std::vector<std::vector<int64_t>>> per_group;
  for (std::size_t g = 0; g < s.symbols.size() && base_runs; ++g) {
    std::vector<std::size_t> members;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (s.timesteps[i].group == static_cast<int>(g)) members.push_back(i);
    per_group.push_back(longer(members) ? probe : std::vector<std::vector<int64_t>>{});
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    std::vector<std::string> axes;
    for (std::size_t a = 0; a < t.dims.size(); ++a) {
      if (a == 0) {
        axes.push_back(axis_string(t.dims[0], "B"));
        continue;
      }
      std::string axis = base_runs && a < at_base[k].size() ? std::to_string(at_base[k][a]) : axis_string(t.dims[a], "?");
      for (std::size_t g = 0; g < per_group.size(); ++g) {
        if (per_group[g].empty() || per_group[g][k].size() <= a || per_group[g][k][a] == at_base[k][a]) continue;
        bool same = false;  // the axis is the group's length at both probes
        for (std::size_t i = 0; i < inputs.size(); ++i)
          if (s.timesteps[i].group == static_cast<int>(g) && at_base[k][a] == base[i] &&
              per_group[g][k][a] == base[i] + 1)
            same = true;
        // A second length moving the same axis: it depends on both.
        axis = same && std::isdigit(static_cast<unsigned char>(axis[0])) ? s.symbols[g] : "?";
      }
      axes.push_back(axis);
    }
    s.outputs.push_back(axes);
  }
  return s;
}

// "(B, T, 3)"
std::string layout(const std::vector<std::string>& axes) {
  std::string s = "(";
  for (std::size_t a = 0; a < axes.size(); ++a) s += (a ? ", " : "") + axes[a];
  return s + (axes.size() == 1 ? ",)" : ")");
}

// The dims as numbers: -1 for an axis given at run time.
nlohmann::ordered_json dims_json(const std::vector<std::string>& axes) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const std::string& a : axes) j.push_back(std::isdigit(static_cast<unsigned char>(a[0])) ? std::stoll(a) : -1);
  return j;
}

// What an input takes: integer token ids (int8 to int64, uint8 to uint64 within int64; reaching
// the Embedding exactly) or float32 values.
const char* input_dtype(const Tensor& t) { return t.strings ? "strings" : t.token_ids ? "int ids" : "float32"; }

// What an input line says besides its shape: its dtype, how its length runs.
std::string input_notes(const Tensor& t, const Timesteps& ts, const ModelShapes& s, const std::vector<Tensor>& inputs) {
  std::vector<std::string> notes;
  notes.push_back(input_dtype(t));
  if (ts.fixed) notes.push_back("exactly " + std::to_string(ts.declared) + " timesteps (a layer needs that length)");
  if (ts.axis && !ts.fixed) {
    std::string n = s.symbols[static_cast<std::size_t>(ts.group)] + ": any length";
    std::string shared;
    int members = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (s.timesteps[i].group == ts.group) {
        shared += (shared.empty() ? "" : ", ") + inputs[i].name;
        ++members;
      }
    if (members > 1) n += ", the same for " + shared;
    if (ts.declared >= 0) n += " (declared " + std::to_string(ts.declared) + ")";
    if (members > 1 || ts.declared >= 0) notes.push_back(n);  // else the T says it all
  }
  std::string out;
  for (const std::string& n : notes) out += (out.empty() ? "" : "; ") + n;
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix);

// A stateful layer of a model: its name for recur_model_*_states and its states' shape.
struct StatefulLayer {
  std::string name;
  std::string member;  // its .npz member name for --states-out / --states-in (safe_file_names)
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
  // Member names: the layer name made safe, keeping a Bidirectional half's "/forward" or
  // "/backward" (the library's own separator; np.load gives back "bi/forward").
  std::vector<std::string> prefixes, suffixes, unique;
  for (const StatefulLayer& l : out) {
    std::string prefix = l.name, suffix;
    for (const char* half : {"/forward", "/backward"})
      if (ends_with(prefix, half) && prefix.size() > std::strlen(half)) {
        suffix = half;
        prefix.resize(prefix.size() - suffix.size());
      }
    prefixes.push_back(prefix);
    suffixes.push_back(suffix);
    if (std::find(unique.begin(), unique.end(), prefix) == unique.end()) unique.push_back(prefix);
  }
  const std::vector<std::string> safe = recur_cli::safe_file_names(unique);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].member = safe[static_cast<std::size_t>(std::find(unique.begin(), unique.end(), prefixes[i]) - unique.begin())] +
                    suffixes[i];
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
                                 {"tensor_bytes", RECUR_LIMIT_TENSOR_BYTES, true},
                                 {"total_state_bytes", RECUR_LIMIT_TOTAL_STATE_BYTES, true},
                                 {"run_bytes", RECUR_LIMIT_RUN_BYTES, true},
                                 {"timesteps", RECUR_LIMIT_TIMESTEPS, false},
                                 {"init_work", RECUR_LIMIT_INIT_WORK, false},
                                 {"run_work", RECUR_LIMIT_RUN_WORK, false}};
constexpr const char* kLimitChoices =
    "units, batch, state_bytes, weight_bytes, file_bytes, tensor_bytes, total_state_bytes, run_bytes, timesteps, "
    "init_work, run_work";

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
  if (message.find("deadline passed after ") != std::string::npos) throw Failure{message + "; here: --timeout SECONDS"};
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

// A layer of the model as info lists it.
struct LayerRow {
  std::string name, cls;
  int32_t in = 0, out = 0, recurrent = 0;
  recur_device_info device{};
};

std::vector<LayerRow> layer_rows(const recur_model* m, int32_t num_layers) {
  std::vector<LayerRow> rows;
  for (int32_t i = 0; i < num_layers; ++i) {
    const char *name = nullptr, *cls = nullptr;
    LayerRow r;
    check(recur_model_layer(m, i, &name, &cls, nullptr, &r.in, &r.out, &r.recurrent));
    r.name = str(name);
    r.cls = str(cls);
    r.device = model_device(m, i);
    rows.push_back(r);
  }
  return rows;
}

// What --layer takes: each recurrent layer, a Bidirectional as its two halves.
std::vector<std::string> layer_choices(const std::vector<LayerRow>& rows) {
  std::vector<std::string> names;
  for (const LayerRow& r : rows) {
    if (!r.recurrent) continue;
    if (r.cls == "Bidirectional") {
      names.push_back(r.name + "/forward");
      names.push_back(r.name + "/backward");
    } else {
      names.push_back(r.name);
    }
  }
  return names;
}

// Everything info reports of a model.
struct ModelReport {
  recur_model_info info{};
  std::vector<LayerRow> rows;
  recur_device_info where{};
  // The rest only for a model that runs.
  std::vector<Tensor> inputs, outputs;
  ModelShapes shapes;
  bool stateful = false;
  std::vector<StatefulLayer> stateful_layers;
  std::string not_streamable;
};

ModelReport model_report(const recur_model* m) {
  ModelReport r;
  r.info = model_info(m);
  r.rows = layer_rows(m, r.info.num_layers);
  r.where = model_device(m, -1);
  if (!r.info.runnable) return r;
  r.inputs = model_inputs(m);
  r.outputs = model_outputs(m);
  r.shapes = model_shapes(m, r.inputs, r.outputs);
  int32_t stateful = 0;
  check(recur_model_is_stateful(m, &stateful));
  r.stateful = stateful != 0;
  r.stateful_layers = stateful_layers(m);
  const char* why = nullptr;
  check(recur_model_streamable(m, &why));
  r.not_streamable = str(why);
  return r;
}

void print_info_json(const std::string& file, const ModelReport& r) {
  nlohmann::ordered_json j;
  j["file"] = file;
  j["dialect"] = dialect_name(r.info.dialect);
  j["keras_version"] = str(r.info.keras_version);
  j["runnable"] = r.info.runnable != 0;
  j["unsupported"] = str(r.info.unsupported);
  if (r.info.runnable) {
    j["inputs"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.inputs.size(); ++i) {
      const Tensor& t = r.inputs[i];
      const Timesteps& ts = r.shapes.timesteps[i];
      nlohmann::ordered_json timesteps = nullptr;
      if (ts.axis)
        timesteps = {{"symbol", ts.fixed ? std::to_string(ts.declared) : r.shapes.symbols[static_cast<std::size_t>(ts.group)]},
                     {"declared", ts.declared >= 0 ? nlohmann::ordered_json(ts.declared) : nlohmann::ordered_json(nullptr)},
                     {"fixed", ts.fixed}};
      j["inputs"].push_back({{"name", t.name},
                             {"shape", layout(r.shapes.inputs[i])},
                             {"dims", dims_json(r.shapes.inputs[i])},
                             {"dtype", t.strings ? "string" : t.token_ids ? "int" : "float32"},
                             {"token_ids", t.token_ids},
                             {"sequence", t.sequence},
                             {"timesteps", timesteps}});
    }
    j["outputs"] = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < r.outputs.size(); ++k)
      j["outputs"].push_back({{"name", r.outputs[k].name},
                              {"shape", layout(r.shapes.outputs[k])},
                              {"dims", dims_json(r.shapes.outputs[k])}});
    j["stateful"] = r.stateful;
    j["stateful_layers"] = nlohmann::ordered_json::array();
    for (const StatefulLayer& l : r.stateful_layers)
      j["stateful_layers"].push_back(
          {{"name", l.name}, {"num_states", l.num_states}, {"batch_size", l.batch}, {"units", l.units}});
    j["streams"] = r.not_streamable.empty();
    j["not_streamable"] = r.not_streamable;
  }
  j["device"] = device_json(r.where);
  j["cpu_kernels"] = recur_cpu_kernels();
  j["limits"] = limits_json();
  j["layers"] = nlohmann::ordered_json::array();
  for (const LayerRow& l : r.rows)
    j["layers"].push_back({{"name", l.name},
                           {"class", l.cls},
                           {"input_size", l.in},
                           {"output_size", l.out},
                           {"recurrent", l.recurrent != 0},
                           {"device", device_json(l.device)}});
  j["run_layers"] = layer_choices(r.rows);
  std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

void print_info_text(const std::string& file, const ModelReport& report) {
  // Every name as the terminal shows it (and the widths computed from those).
  ModelReport r = report;
  for (Tensor& t : r.inputs) t.name = shown(t.name);
  for (Tensor& t : r.outputs) t.name = shown(t.name);
  for (StatefulLayer& l : r.stateful_layers) l.name = shown(l.name);
  for (LayerRow& l : r.rows) {
    l.name = shown(l.name);
    l.cls = shown(l.cls);
  }
  r.not_streamable = one_line(r.not_streamable);
  std::cout << "file:          " << one_line(file) << "\n";
  std::cout << "dialect:       " << dialect_name(r.info.dialect) << " (keras_version " << one_line(str(r.info.keras_version))
            << ")\n";
  std::cout << "runnable:      " << (r.info.runnable ? "yes" : "no: " + one_line(str(r.info.unsupported))) << "\n";
  if (r.info.runnable) {
    std::size_t wt = 4, wl = 4;
    for (const Tensor& t : r.inputs) wt = std::max(wt, t.name.size());
    for (const Tensor& t : r.outputs) wt = std::max(wt, t.name.size());
    for (const auto& axes : r.shapes.inputs) wl = std::max(wl, layout(axes).size());
    for (const auto& axes : r.shapes.outputs) wl = std::max(wl, layout(axes).size());
    std::cout << "inputs:        " << r.inputs.size() << "\n";
    for (std::size_t i = 0; i < r.inputs.size(); ++i) {
      const std::string notes = input_notes(r.inputs[i], r.shapes.timesteps[i], r.shapes, r.inputs);
      std::string line = "  " + r.inputs[i].name + std::string(wt - r.inputs[i].name.size(), ' ') + "  " +
                         layout(r.shapes.inputs[i]);
      line += std::string(wl - layout(r.shapes.inputs[i]).size(), ' ') + "  " + notes;
      std::cout << line << "\n";
    }
    std::cout << "outputs:       " << r.outputs.size() << "\n";
    for (std::size_t k = 0; k < r.outputs.size(); ++k)
      std::cout << "  " << r.outputs[k].name << std::string(wt - r.outputs[k].name.size(), ' ') << "  "
                << layout(r.shapes.outputs[k]) << "\n";
    std::cout << "stateful:      ";
    if (!r.stateful) {
      std::cout << "no\n";
    } else {
      std::string names;
      for (const StatefulLayer& l : r.stateful_layers) names += (names.empty() ? "" : ", ") + l.name;
      std::cout << "yes (" << names << ")\n";
      // Each layer's states as --states-in/--states-out hold them: (states, batch, units).
      std::size_t w = 4;
      for (const StatefulLayer& l : r.stateful_layers) w = std::max(w, l.name.size());
      for (const StatefulLayer& l : r.stateful_layers)
        std::printf("  %-*s  states (%d, %d, %d)\n", static_cast<int>(w), l.name.c_str(), l.num_states, l.batch,
                    l.units);
    }
    std::cout << "streams:       " << (r.not_streamable.empty() ? "yes" : "no: " + r.not_streamable) << "\n";
  }
  std::cout << "device:        " << one_line(device_line(r.where)) << "\n";
  std::cout << "cpu kernels:   " << recur_cpu_kernels() << "\n";
  std::cout << "limits:        " << limits_line() << "\n";
  const std::vector<std::string> choices = layer_choices(r.rows);
  std::cout << "run --layer:   " << (choices.empty() ? "none (no recurrent layers)" : list(choices)) << "\n";
  std::cout << "layers:        " << r.info.num_layers << "\n";
  std::size_t w = 4, wc = 5;
  for (const LayerRow& l : r.rows) {
    w = std::max(w, l.name.size());
    wc = std::max(wc, l.cls.size());
  }
  // On a GPU, where each layer runs: one without a GPU kernel costs copies, and says why.
  const bool gpu = str(r.where.backend) != "cpu";
  const int wr = gpu ? 9 : 0;  // the recurrent column padded only when a device column follows
  std::printf("  %-*s  %-*s  %6s  %6s  %-*s%s\n", static_cast<int>(w), "name", static_cast<int>(wc), "class", "input",
              "output", wr, "recurrent", gpu ? "  device" : "");
  for (const LayerRow& l : r.rows)
    std::printf("  %-*s  %-*s  %6d  %6d  %-*s%s\n", static_cast<int>(w), l.name.c_str(), static_cast<int>(wc),
                l.cls.c_str(), l.in, l.out, wr, l.recurrent ? "yes" : "no",
                gpu ? ("  " + str(l.device.backend)).c_str() : "");
  if (gpu)
    for (const LayerRow& l : r.rows)
      if (str(l.device.backend) == "cpu") std::cout << "  " << l.name << ": " << one_line(str(l.device.reason)) << "\n";
}

int cmd_info(const std::string& file, bool as_json, const std::string& device) {
  ModelHandle mh;
  check(recur_model_open(&mh.m, file.c_str()));
  check(recur_model_set_device(mh.m, device.c_str()));
  const ModelReport r = model_report(mh.m);
  if (as_json) print_info_json(file, r);
  else print_info_text(file, r);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// run

struct RunArgs {
  std::string file, layer, output, output_dir, keras_backend, states_in, states_out;
  std::vector<std::string> inputs, masks, expected;
  std::vector<std::string> output_names;  // --outputs / --output-name: NAME[,NAME...] each
  std::string device = "cpu";
  std::string precision = "float32";
  int32_t threads = 1;
  int32_t chunk = 1;
  std::vector<std::string> initial_states;
  double atol = 1e-5;
  double timeout = 0;     // --timeout: seconds each run or step may take (0: no limit)
  bool json = false;      // outputs printed or written as JSON
  bool per_step = false;  // stream: print each step's outputs as they come
  bool row_streams = false;  // stream: one model state per row, all stepped in one call
  std::string state_in, state_out;  // stream: a model-state snapshot to start from / to write
};

// What a run produced: arrays named as the .npz has them (output, output_1, ... or output,
// state_h, state_c), and for a model run the Keras name of each output.
struct RunResult {
  NamedArrays arrays;
  std::vector<std::string> keras_names;  // empty for a layer run
  std::vector<std::string> display;      // each array's name for people and --output-dir (model runs)
  // Every name that means one of the model's outputs (run's names, Keras names, "name:k"), chosen
  // by --outputs or not.
  std::vector<std::string> all_names;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// "NAME=path" where NAME is one of `names`: {NAME, path}; a plain path: {"", path}. NAME= with a
// NAME that is none of them (and no file of that whole name) is an error naming them: `what` says
// what they are ("input", "output").
std::pair<std::string, std::string> split_named(const std::string& arg, const std::vector<std::string>& names,
                                                const std::string& option, const std::string& what) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos) return {"", arg};
  const std::string name = arg.substr(0, eq);
  if (std::find(names.begin(), names.end(), name) != names.end()) return {name, arg.substr(eq + 1)};
  if (file_exists(arg)) return {"", arg};
  usage_error(option + " " + arg + ": no " + what + " is called '" + name + "'; the " + what + "s are " + list(names) +
              " (NAME=path names one of them)");
}

// A --input or --mask array and where it came from ("x.npy", "in.npz:ids").
struct Loaded {
  std::string source;
  Array array;
};

// An --input file: a .txt of texts (one per line) for a string input, else an .npy.
Array read_array(const std::string& path) {
  return ends_with(path, ".txt") ? recur_cli::read_text_lines(path) : recur_cli::read_npy(path);
}

// Assigns `args` (paths, NAME=path, or for --input an .npz whose members are named like the
// inputs) to the slots named `names` for which `eligible` holds: named ones by name, the others in
// order. Returns each slot's array (no source for none).
std::vector<Loaded> assign(const std::vector<std::string>& args, const std::vector<std::string>& names,
                           const std::vector<bool>& eligible, const std::string& option) {
  std::vector<Loaded> slot(names.size());
  auto put = [&](std::size_t i, Loaded l) {
    if (!eligible[i]) usage_error(option + " " + l.source + ": input '" + names[i] + "' has no timesteps axis to mask");
    if (!slot[i].source.empty()) usage_error(option + ": '" + names[i] + "' is given twice");
    slot[i] = std::move(l);
  };
  const auto index_of = [&](const std::string& n) {
    return static_cast<std::size_t>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  std::vector<std::string> positional;
  for (const std::string& a : args) {
    const auto [name, path] = split_named(a, names, option, "input");
    const bool npz = ends_with(path, ".npz") || (file_exists(path) && recur_cli::is_zip_file(path));
    if (npz && option != "--input")
      usage_error(option + " " + a + ": an .npz is not taken here; pass one .npy per " + option);
    if (npz && !name.empty())
      usage_error(option + " " + a + ": an .npz holds several arrays; pass " + name +
                  "=x.npy, or the .npz alone with members named like the inputs (" + list(names) + ")");
    if (npz) {
      NamedArrays members = recur_cli::read_npz(path);
      if (members.empty()) throw recur_cli::NpyError(path + ": the archive holds no arrays");
      // np.savez(f, x) names its one array arr_0: a one-input model takes it whatever its name.
      if (names.size() == 1 && members.size() == 1) {
        put(0, {path + ":" + members[0].first, std::move(members[0].second)});
        continue;
      }
      for (auto& [member, arr] : members) {
        const std::size_t i = index_of(member);
        if (i == names.size())
          usage_error(option + " " + path + ": member '" + member + "' is named after no input; the inputs are " +
                      list(names) + " (np.savez(\"" + path + "\", " + names[0] + "=...))");
        put(i, {path + ":" + member, std::move(arr)});
      }
      continue;
    }
    if (!name.empty()) put(index_of(name), {path, read_array(path)});
    else positional.push_back(path);
  }
  std::size_t next = 0;
  for (const std::string& p : positional) {
    while (next < names.size() && (!eligible[next] || !slot[next].source.empty())) ++next;
    if (next == names.size()) {
      std::vector<std::string> want;
      for (std::size_t i = 0; i < names.size(); ++i)
        if (eligible[i]) want.push_back(names[i]);
      usage_error("too many " + option + " files: the model takes " + std::to_string(want.size()) + " (" + list(want) +
                  "); got " + std::to_string(args.size()));
    }
    slot[next++] = {p, option == "--input" ? read_array(p) : recur_cli::read_npy(p)};
  }
  return slot;
}

// The line --input prints for an array that is not float32: what recur made of it. Integer ids
// of a token-id input go on as integers, unchanged.
std::string conversion(const Array& a, bool token_ids) {
  const std::string d = recur_cli::dtype_name(a.dtype);
  if (d == "float32") return "";
  if (token_ids && a.integer()) return "";
  if (token_ids) return d + " ids passed as float32";
  if (d == "float64") return "float64 values rounded to float32";
  if (d == "float16") return "float16 values widened to float32";
  if (d == "bool") return "bool values passed as 0 and 1 in float32";
  return d + " values converted to float32";
}

std::vector<uint8_t> mask_of(const Array& m, const std::string& source, int64_t B, int64_t T, bool time_major) {
  const std::vector<int64_t> want = time_major ? std::vector<int64_t>{T, B} : std::vector<int64_t>{B, T};
  if (m.shape != want)
    throw recur_cli::NpyError(source + ": mask shape " + shape_string(m.shape) + " does not match the input; expected " +
                              shape_string(want));
  std::vector<uint8_t> out(m.data.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = m.data[i] != 0.0f ? 1 : 0;
  return out;
}

// One model input as recur_model_run_named takes it: float32 values, or integers (token ids
// exactly) as int32 where the file's dtype fits it, else int64.
struct Feed {
  int32_t dtype = RECUR_DTYPE_FLOAT32;
  std::vector<float> f;
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  std::vector<std::string> texts;            // RECUR_DTYPE_STRING
  mutable std::vector<const char*> pointers;  // to texts, made with the descriptors
  std::vector<int64_t> dims;
  std::vector<uint8_t> mask;  // (B, T); empty for none
};

// `source` names the array in the message that refuses a uint64 beyond int64.
Feed feed_of(const Array& x, const std::string& input, const std::string& source) {
  Feed f;
  f.dims = x.shape;
  if (!x.integer()) {
    f.f = x.data;
    return f;
  }
  if (x.int_overflow != static_cast<std::size_t>(-1))
    throw recur_cli::NpyError(source + ": input '" + input + "': uint64 value " + std::to_string(x.int_overflow_value) +
                              " at flat index " + std::to_string(x.int_overflow) +
                              " is beyond int64's range (the largest is 9223372036854775807); save it as int64");
  const std::string d = recur_cli::dtype_name(x.dtype);
  if (d == "int8" || d == "int16" || d == "int32" || d == "uint8" || d == "uint16") {
    f.dtype = RECUR_DTYPE_INT32;
    f.i32.assign(x.ints.begin(), x.ints.end());
  } else {
    f.dtype = RECUR_DTYPE_INT64;
    f.i64 = x.ints;
  }
  return f;
}

// The steps [t0, t0 + n) of axis 1 of v, which holds B x T rows of equal size.
template <typename V>
std::vector<V> slice_steps(const std::vector<V>& v, int64_t B, int64_t T, int64_t t0, int64_t n) {
  const std::size_t rest = v.size() / static_cast<std::size_t>(B * T);
  std::vector<V> out;
  out.reserve(static_cast<std::size_t>(B * n) * rest);
  for (int64_t b = 0; b < B; ++b) {
    const auto first = v.begin() + static_cast<long>((static_cast<std::size_t>(b * T + t0)) * rest);
    out.insert(out.end(), first, first + static_cast<long>(static_cast<std::size_t>(n) * rest));
  }
  return out;
}

// A sequence input's steps [t0, t0 + n).
Feed slice_feed(const Feed& f, int64_t t0, int64_t n) {
  const int64_t B = f.dims[0], T = f.dims[1];
  Feed s;
  s.dtype = f.dtype;
  s.dims = f.dims;
  s.dims[1] = n;
  s.f = slice_steps(f.f, B, T, t0, n);
  s.i32 = slice_steps(f.i32, B, T, t0, n);
  s.i64 = slice_steps(f.i64, B, T, t0, n);
  if (!f.mask.empty()) s.mask = slice_steps(f.mask, B, T, t0, n);
  return s;
}

// The descriptors of `feeds` (which must outlive them), named like `desc`.
template <typename Desc>
std::vector<recur_tensor> tensors(const std::vector<Desc>& desc, const std::vector<Feed>& feeds) {
  std::vector<recur_tensor> out(feeds.size());
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    const Feed& f = feeds[i];
    recur_tensor& t = out[i];
    check(recur_tensor_init(&t, RECUR_TENSOR_VERSION));
    t.name = desc[i].name.c_str();
    t.dtype = f.dtype;
    f.pointers.clear();
    for (const std::string& s : f.texts) f.pointers.push_back(s.c_str());
    t.data = f.dtype == RECUR_DTYPE_STRING  ? static_cast<const void*>(f.pointers.data())
             : f.dtype == RECUR_DTYPE_INT32 ? static_cast<const void*>(f.i32.data())
             : f.dtype == RECUR_DTYPE_INT64 ? static_cast<const void*>(f.i64.data())
                                            : static_cast<const void*>(f.f.data());
    t.length = f.dtype == RECUR_DTYPE_STRING  ? f.pointers.size()
               : f.dtype == RECUR_DTYPE_INT32 ? f.i32.size()
               : f.dtype == RECUR_DTYPE_INT64 ? f.i64.size()
                                              : f.f.size();
    t.rank = static_cast<int32_t>(f.dims.size());
    std::copy(f.dims.begin(), f.dims.end(), t.dims);
    t.mask = f.mask.empty() ? nullptr : f.mask.data();
    t.mask_length = f.mask.size();
  }
  return out;
}

// A string input's texts from a .txt: one row per line; a (B, W) input with W > 1 takes W
// tab-separated fields per line (pre-split tokens for a StringLookup).
Feed text_feed(const Tensor& d, recur_cli::Array x, const std::string& source, int32_t batch, const std::string& first) {
  if (!x.is_text)
    throw recur_cli::NpyError(source + ": input '" + d.name + "' holds strings, which an .npy cannot carry here; pass a .txt "
                              "with one text per line (-i " + d.name + "=lines.txt)");
  if (!d.strings)
    throw recur_cli::NpyError(source + ": a .txt of texts is for a string input; input '" + d.name + "' takes " +
                              (d.token_ids ? "token ids" : "numbers") + " (an .npy)");
  Feed f;
  f.dtype = RECUR_DTYPE_STRING;
  const int64_t B = static_cast<int64_t>(x.texts.size());
  const int64_t W = d.dims.size() == 2 ? d.dims[1] : 1;
  if (d.dims.size() > 2 || W < 1)
    throw recur_cli::NpyError(source + ": input '" + d.name + "' is " + shape_string(d.dims) + "; a .txt gives (B,) or (B, W) "
                              "texts");
  for (std::size_t r = 0; r < x.texts.size(); ++r) {
    if (W == 1) {
      f.texts.push_back(std::move(x.texts[r]));
      continue;
    }
    std::size_t start = 0, fields = 0;
    const std::string& line = x.texts[r];
    for (;;) {
      const std::size_t tab = line.find('\t', start);
      f.texts.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      ++fields;
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (fields != static_cast<std::size_t>(W))
      throw recur_cli::NpyError(source + ": line " + std::to_string(r + 1) + " holds " + std::to_string(fields) +
                                " tab-separated texts; input '" + d.name + "' takes " + std::to_string(W) + " per row");
  }
  if (B > std::numeric_limits<int32_t>::max())
    throw recur_cli::NpyError(source + ": " + std::to_string(B) + " lines: the batch must be below 2^31");
  if (!first.empty() && B != batch)
    throw recur_cli::NpyError(source + ": batch " + std::to_string(B) + " (lines) differs from input '" + first + "' (" +
                              std::to_string(batch) + ")");
  f.dims = d.dims.size() == 1 ? std::vector<int64_t>{B} : std::vector<int64_t>{B, W};
  return f;
}

// The model's inputs read from the --input files, checked against the model, and their masks.
struct ModelInputs {
  std::vector<Tensor> desc;
  std::vector<Feed> x;             // one per input, in input order, masks included
  std::vector<int32_t> timesteps;  // axis 1 of each input (0 for rank-1 inputs)
  int32_t batch = 0;
};

ModelInputs load_model_inputs(const recur_model* m, const RunArgs& a) {
  ModelInputs in;
  in.desc = model_inputs(m);
  const ModelShapes shapes = model_shapes(m, in.desc, model_outputs(m));
  std::vector<std::string> names;
  for (const Tensor& t : in.desc) names.push_back(t.name);
  std::vector<Loaded> given = assign(a.inputs, names, std::vector<bool>(names.size(), true), "--input");
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < given.size(); ++i)
    if (given[i].source.empty()) missing.push_back(names[i]);
  if (!missing.empty())
    usage_error("the model has " + std::to_string(in.desc.size()) + " input(s) (" + list(names) + "); no --input for " +
                list(missing) + " (one .npy per input in order, NAME=x.npy, or an .npz with members named like them)");
  const bool one = in.desc.size() == 1;
  for (std::size_t i = 0; i < in.desc.size(); ++i) {
    const Tensor& d = in.desc[i];
    const std::string& source = given[i].source;
    Array x = std::move(given[i].array);
    const std::string what = one ? std::string("the model") : "input '" + d.name + "' of the model";
    if (d.strings || x.is_text) {
      in.x.push_back(text_feed(d, std::move(x), source, in.batch, i == 0 ? "" : in.desc[0].name));
      if (i == 0) in.batch = static_cast<int32_t>(in.x.back().dims[0]);
      in.timesteps.push_back(0);
      continue;
    }
    // (B, T, 1) token ids are (B, T).
    if (d.token_ids && d.dims.size() == 2 && x.shape.size() == 3 && x.shape[2] == 1) x.shape.pop_back();
    bool fits = x.shape.size() == d.dims.size();
    for (std::size_t ax = 2; fits && ax < d.dims.size(); ++ax)
      if (d.dims[ax] >= 0 && x.shape[ax] != d.dims[ax]) fits = false;
    if (fits && d.dims.size() == 2 && !d.sequence && d.dims[1] >= 0 && x.shape[1] != d.dims[1]) fits = false;
    if (!fits)
      throw recur_cli::NpyError(source + ": shape " + shape_string(x.shape) + " does not fit " + what + ": expected " +
                                (d.token_ids ? "token ids " : "") + layout(shapes.inputs[i]));
    const int64_t B = x.shape.empty() ? 0 : x.shape[0];
    const int64_t T = x.shape.size() > 1 ? x.shape[1] : 1;
    if (B <= 0 || T <= 0 || B > std::numeric_limits<int32_t>::max() || T > std::numeric_limits<int32_t>::max())
      throw recur_cli::NpyError(source + ": shape " + shape_string(x.shape) + ": batch and timesteps must be in [1, 2^31)");
    if (shapes.timesteps[i].fixed && T != shapes.timesteps[i].declared)
      throw recur_cli::NpyError(source + ": shape " + shape_string(x.shape) + " does not fit " + what + ": it takes exactly " +
                                std::to_string(shapes.timesteps[i].declared) + " timesteps (a layer needs that length), got " +
                                std::to_string(T));
    if (i == 0) in.batch = static_cast<int32_t>(B);
    else if (B != in.batch)
      throw recur_cli::NpyError(source + ": batch " + std::to_string(B) + " differs from input '" + in.desc[0].name +
                                "' (" + std::to_string(in.batch) + ")");
    const std::string converted = conversion(x, d.token_ids);
    if (!converted.empty()) note("input '" + d.name + "' (" + source + "): " + converted);
    in.timesteps.push_back(x.shape.size() > 1 ? static_cast<int32_t>(T) : 0);
    in.x.push_back(feed_of(x, d.name, source));
  }
  if (!a.masks.empty()) {
    std::vector<bool> seq;
    for (const Tensor& t : in.desc) seq.push_back(t.sequence);
    const std::vector<Loaded> masks = assign(a.masks, names, seq, "--mask");
    for (std::size_t i = 0; i < in.desc.size(); ++i) {
      if (!seq[i]) continue;
      const int64_t B = in.batch, T = in.timesteps[i];
      in.x[i].mask = masks[i].source.empty() ? std::vector<uint8_t>(static_cast<std::size_t>(B * T), 1)  // all valid
                                             : mask_of(masks[i].array, masks[i].source, B, T, false);
    }
  }
  return in;
}

// The name that selects model output i alone, as recur_model_run_named takes it: its Keras name,
// or "name:k" where a Keras 3 layer gives its several outputs one name.
std::vector<std::string> output_addresses(const std::vector<Tensor>& outs) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    std::size_t same = 0, before = 0;
    for (std::size_t j = 0; j < outs.size(); ++j)
      if (outs[j].name == outs[i].name) {
        if (j < i) ++before;
        ++same;
      }
    out.push_back(same > 1 ? outs[i].name + ":" + std::to_string(before) : outs[i].name);
  }
  return out;
}

// --outputs: the chosen model outputs' indices in the order given; all of them without it.
std::vector<std::size_t> selected_outputs(const RunArgs& a, const std::vector<Tensor>& outs) {
  std::vector<std::size_t> sel;
  if (a.output_names.empty()) {
    for (std::size_t i = 0; i < outs.size(); ++i) sel.push_back(i);
    return sel;
  }
  const std::vector<std::string> addresses = output_addresses(outs);
  for (const std::string& arg : a.output_names) {
    std::size_t from = 0;
    for (;;) {
      const std::size_t comma = arg.find(',', from);
      const std::string name = arg.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (name.empty()) usage_error("--outputs " + arg + ": an empty name (NAME[,NAME...])");
      const auto at = std::find(addresses.begin(), addresses.end(), name);
      if (at == addresses.end()) {
        std::size_t same = 0;
        for (const Tensor& t : outs) same += t.name == name;
        if (same > 1)
          usage_error("--outputs: '" + name + "' names " + std::to_string(same) + " outputs of one layer; ask for '" +
                      name + ":0' to '" + name + ":" + std::to_string(same - 1) + "'");
        usage_error("--outputs: the model has no output '" + name + "'; its outputs are " + list(addresses));
      }
      const std::size_t i = static_cast<std::size_t>(at - addresses.begin());
      if (std::find(sel.begin(), sel.end(), i) != sel.end()) usage_error("--outputs: '" + name + "' is given twice");
      sel.push_back(i);
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
  }
  return sel;
}

// The chosen model outputs, named output, output_1, ... by their place among the model's outputs
// (so a choice does not rename them), with their Keras names.
RunResult name_outputs(const std::vector<Tensor>& outs, const std::vector<std::size_t>& sel, std::vector<Array> arrays) {
  const auto positional = [](std::size_t i) { return i == 0 ? std::string("output") : "output_" + std::to_string(i); };
  // Keras 3 names every output of a layer after it (`gru`, `gru`): later ones get _1, _2, ...
  std::set<std::string> used;
  std::vector<std::string> display;
  for (const Tensor& t : outs) {
    std::string name = t.name.empty() ? "output" : t.name;
    for (int k = 1; used.count(name); ++k) name = t.name + "_" + std::to_string(k);
    used.insert(name);
    display.push_back(name);
  }
  RunResult r;
  for (std::size_t k = 0; k < sel.size(); ++k) {
    r.arrays.emplace_back(positional(sel[k]), std::move(arrays[k]));
    r.keras_names.push_back(outs[sel[k]].name);
    r.display.push_back(display[sel[k]]);
  }
  const std::vector<std::string> addresses = output_addresses(outs);
  const auto add = [&](const std::string& n) {
    if (std::find(r.all_names.begin(), r.all_names.end(), n) == r.all_names.end()) r.all_names.push_back(n);
  };
  for (std::size_t i = 0; i < outs.size(); ++i) add(positional(i));
  for (const Tensor& t : outs) add(t.name);
  for (const std::string& n : addresses) add(n);
  for (const std::string& n : display) add(n);
  return r;
}

// Requests for the chosen outputs (named by `addresses`, which must outlive them).
std::vector<recur_output> output_requests(const std::vector<std::string>& addresses,
                                          const std::vector<std::size_t>& sel) {
  std::vector<recur_output> req(sel.size());
  for (std::size_t k = 0; k < sel.size(); ++k) {
    check(recur_output_init(&req[k], RECUR_OUTPUT_VERSION));
    req[k].name = addresses[sel[k]].c_str();
  }
  return req;
}

// Arrays of the dims the shape query wrote, with the requests pointed at their data.
std::vector<Array> output_arrays(std::vector<recur_output>& req) {
  // The outputs are tensors of the run too: over run_bytes together, the run would be refused
  // anyway, so the buffers are not made.
  double bytes = 0;
  for (const recur_output& r : req) bytes += 4.0 * static_cast<double>(r.length);
  uint64_t cap = 0;
  check(recur_get_limit(RECUR_LIMIT_RUN_BYTES, &cap));
  if (bytes > static_cast<double>(cap))
    throw Failure{"the outputs: need " + std::to_string(static_cast<unsigned long long>(bytes)) +
                  " bytes together, over the run_bytes limit of " + std::to_string(cap) +
                  " bytes (recur_set_limit(RECUR_LIMIT_RUN_BYTES, ...) raises it); here: --limit run_bytes=VALUE"};
  std::vector<Array> arrays(req.size());
  for (std::size_t k = 0; k < req.size(); ++k) {
    arrays[k].dtype = "<f4";
    arrays[k].shape.assign(req[k].dims, req[k].dims + req[k].rank);
    arrays[k].data.resize(req[k].length);
    req[k].data = arrays[k].data.data();
    req[k].capacity = arrays[k].data.size();
  }
  return arrays;
}

// Opens the model for a whole-model command: threads, device and backend set, where it runs printed.
void open_model(ModelHandle& mh, const RunArgs& a) {
  check(recur_model_open(&mh.m, a.file.c_str()));
  // Before the device, so a bad count is reported without touching a GPU.
  check(recur_model_set_num_threads(mh.m, a.threads));
  if (!a.keras_backend.empty()) check(recur_model_set_keras_backend(mh.m, a.keras_backend.c_str()));
  // Before the device too: a GPU refuses bf16/int8 and says so.
  check(recur_model_set_precision(mh.m, a.precision.c_str()));
  check(recur_model_set_device(mh.m, a.device.c_str()));
  status() << "device: " << one_line(device_line(model_device(mh.m, -1))) << "\n";
}

// --states-in: sets the states of the model's stateful layers from an .npz (members named by layer).
void load_states(const recur_model* m, const std::string& path) {
  const std::vector<StatefulLayer> layers = stateful_layers(m);
  if (layers.empty()) usage_error("--states-in: the model has no stateful layers");
  for (const auto& member : recur_cli::read_npz(path)) {
    // Named, not a structured binding: a lambda captures a binding only from C++20 (clang refuses).
    const std::string& name = member.first;
    const Array& arr = member.second;
    const auto l = std::find_if(layers.begin(), layers.end(),
                                [&](const StatefulLayer& s) { return s.member == name || s.name == name; });
    if (l == layers.end()) {
      std::vector<std::string> names;
      for (const StatefulLayer& s : layers) names.push_back(s.member);
      throw recur_cli::NpyError(path + ": '" + name + "' is not a stateful layer of the model (" + list(names) + ")");
    }
    const std::vector<int64_t> want{l->num_states, l->batch, l->units};
    if (arr.shape != want)
      throw recur_cli::NpyError(path + ": '" + name + "' has shape " + shape_string(arr.shape) + "; expected " +
                                shape_string(want) + " (states, batch, units)");
    check(recur_model_set_states(const_cast<recur_model*>(m), l->name.c_str(), arr.data.data(), arr.data.size()));
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
    out.emplace_back(l.member, std::move(a));
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
  const std::vector<Tensor> outs = model_outputs(mh.m);
  const std::vector<std::size_t> sel = selected_outputs(a, outs);
  const std::vector<std::string> addresses = output_addresses(outs);
  const std::vector<recur_tensor> x = tensors(in.desc, in.x);
  std::vector<recur_output> req = output_requests(addresses, sel);
  const int32_t n_in = static_cast<int32_t>(x.size()), n_out = static_cast<int32_t>(req.size());
  check(recur_model_output_shapes(mh.m, x.data(), n_in, req.data(), n_out));
  std::vector<Array> arrays = output_arrays(req);
  check(recur_model_run_named(mh.m, x.data(), n_in, req.data(), n_out, run_options()));
  if (states_out) *states_out = save_states(mh.m);
  return name_outputs(outs, sel, std::move(arrays));
}

// --layer NAME: a name that is not one of the model's recurrent layers gets the library's reason
// and the names --layer takes.
void check_layer_name(const recur_model* m, const std::string& name) {
  const std::vector<std::string> choices = layer_choices(layer_rows(m, model_info(m).num_layers));
  if (std::find(choices.begin(), choices.end(), name) != choices.end()) return;
  LayerHandle probe;
  if (recur_model_get_layer(m, name.c_str(), &probe.l) == RECUR_OK) return;
  std::string why = in_cli_terms(recur_last_error());
  if (why.rfind("--layer: ", 0) == 0) why.erase(0, 9);
  usage_error("--layer " + name + ": " + why + "; the recurrent layers are " +
              (choices.empty() ? std::string("none") : list(choices)));
}

RunResult run_layer(const RunArgs& a) {
  if (a.inputs.size() != 1) usage_error("--layer takes one --input (got " + std::to_string(a.inputs.size()) + ")");
  if (a.masks.size() > 1) usage_error("--layer takes at most one --mask");
  if (!a.states_in.empty() || !a.states_out.empty()) usage_error("--states-in/--states-out are for whole models");
  const std::string input = a.inputs[0];
  if (ends_with(input, ".npz") || (file_exists(input) && recur_cli::is_zip_file(input)))
    usage_error("--input " + input + ": --layer takes one (B, T, features) .npy, not an .npz");
  ModelHandle mh;
  check(recur_model_open(&mh.m, a.file.c_str()));
  check_layer_name(mh.m, a.layer);
  LayerHandle lh;
  check(recur_model_get_layer(mh.m, a.layer.c_str(), &lh.l));
  check(recur_layer_set_num_threads(lh.l, a.threads));
  if (!a.keras_backend.empty()) check(recur_layer_set_keras_backend(lh.l, a.keras_backend.c_str()));
  check(recur_layer_set_precision(lh.l, a.precision.c_str()));
  check(recur_layer_set_device(lh.l, a.device.c_str()));
  recur_device_info where{};
  where.version = RECUR_DEVICE_INFO_VERSION;
  check(recur_layer_get_device(lh.l, &where));
  status() << "device: " << one_line(device_line(where)) << "\n";
  recur_layer_info li{};
  li.version = RECUR_LAYER_INFO_VERSION;
  check(recur_layer_get_info(lh.l, &li));
  const Array x = recur_cli::read_npy(input);
  const bool tm = li.time_major != 0;
  if (x.shape.size() != 3 || x.shape[2] != li.input_size)
    throw recur_cli::NpyError(input + ": shape " + shape_string(x.shape) + " does not fit layer '" + a.layer +
                              "': expected " + (tm ? "(T, B, " : "(B, T, ") + std::to_string(li.input_size) + ")");
  const std::string converted = conversion(x, false);
  if (!converted.empty()) note("input (" + input + "): " + converted);
  const int64_t B = tm ? x.shape[1] : x.shape[0], T = tm ? x.shape[0] : x.shape[1];
  if (B <= 0 || T <= 0 || B > std::numeric_limits<int32_t>::max() || T > std::numeric_limits<int32_t>::max())
    throw recur_cli::NpyError(input + ": shape " + shape_string(x.shape) + ": batch and timesteps must be in [1, 2^31)");
  std::vector<uint8_t> mask;
  if (!a.masks.empty()) mask = mask_of(recur_cli::read_npy(a.masks[0]), a.masks[0], B, T, tm);
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
  if (!a.layer.empty() && !a.output_names.empty())
    usage_error("--outputs chooses among a model's outputs; a --layer run gives output and its states");
  return a.layer.empty() ? run_model(a, states_out) : run_layer(a);
}

// ---------------------------------------------------------------------------------------------
// Where outputs go

enum class Form { npz, npy, text, json };

// Where --output sends a run's outputs: a file, or stdout (path "").
struct Destination {
  bool any = false;  // false: --output-dir only
  Form form = Form::text;
  std::string path;
};

constexpr const char* kOutputForms =
    ".npz (every output), .npy (a run with one output), .txt (text), .json (JSON) or - (stdout, the default)";

// Checked before anything runs, so a bad --output changes nothing.
Destination destination(const RunArgs& a) {
  Destination d;
  if (a.output.empty() && !a.output_dir.empty()) {
    if (a.json) usage_error("--json prints the outputs; with only --output-dir there is nothing to print (add -o -)");
    return d;
  }
  d.any = true;
  d.form = a.json ? Form::json : Form::text;
  if (a.output.empty() || a.output == "-") return d;
  d.path = a.output;
  std::error_code ec;
  if (std::filesystem::is_directory(a.output, ec))
    usage_error("--output " + a.output + ": is a directory; --output takes a file (" + kOutputForms +
                "); for one .npy per output in it use --output-dir " + a.output);
  if (ends_with(a.output, ".npz")) d.form = Form::npz;
  else if (ends_with(a.output, ".npy")) d.form = Form::npy;
  else if (ends_with(a.output, ".txt")) d.form = Form::text;
  else if (ends_with(a.output, ".json")) d.form = Form::json;
  else usage_error("--output " + a.output + ": unknown kind of file; expected " + kOutputForms);
  if (a.json && d.form != Form::json)
    usage_error("--json with --output " + a.output + ": --json is for outputs printed to stdout or written to a .json file");
  return d;
}

// The name of each output for people, JSON and --output-dir: its Keras name (output, state_h,
// state_c for a layer); Keras 3 names every output of a layer after it (`gru`, `gru`): later ones
// get _1, _2, ...
std::vector<std::string> display_names(const RunResult& r) {
  if (!r.display.empty()) return r.display;
  std::set<std::string> used;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < r.arrays.size(); ++i) {
    const std::string base = i < r.keras_names.size() && !r.keras_names[i].empty() ? r.keras_names[i] : r.arrays[i].first;
    std::string name = base;
    for (int k = 1; used.count(name); ++k) name = base + "_" + std::to_string(k);
    used.insert(name);
    names.push_back(name);
  }
  return names;
}

NamedArrays displayed(const RunResult& r) {
  const std::vector<std::string> names = display_names(r);
  NamedArrays out;
  for (std::size_t i = 0; i < r.arrays.size(); ++i) out.emplace_back(names[i], r.arrays[i].second);
  return out;
}

// Output files are written under a temporary name beside them and renamed when every one is
// written, so a cancelled or failed run leaves none, whole or partial.
class PendingFiles {
 public:
  PendingFiles() = default;
  PendingFiles(const PendingFiles&) = delete;
  PendingFiles& operator=(const PendingFiles&) = delete;
  ~PendingFiles() {
    for (const auto& f : files_) std::remove(f.first.c_str());
  }
  // Writes `path` through `write(temporary path)`; messages name `path`.
  template <typename Write>
  void write(const std::string& path, Write&& write) {
    const std::string part = path + ".part-" + std::to_string(::getpid());
    files_.emplace_back(part, path);
    try {
      write(part);
    } catch (const recur_cli::NpyError& e) {
      std::string m = e.what();
      for (std::size_t at; (at = m.find(part)) != std::string::npos;) m.replace(at, part.size(), path);
      throw recur_cli::NpyError(m);
    }
  }
  // Renames them all into place, unless a signal came meanwhile.
  void commit() {
    throw_if_cancelled();
    for (const auto& [part, path] : files_)
      if (std::rename(part.c_str(), path.c_str()) != 0)
        throw recur_cli::NpyError(path + ": cannot write: " + std::strerror(errno));
    for (const auto& f : files_) status() << "wrote " << one_line(f.second) << "\n";
    files_.clear();
  }

 private:
  std::vector<std::pair<std::string, std::string>> files_;  // temporary, final
};

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw recur_cli::NpyError(path + ": cannot create: " + std::strerror(errno));
  f << text;
  f.close();
  if (!f) throw recur_cli::NpyError(path + ": write error");
}

// Writes a run's arrays where --output and --output-dir say (files through `files`, to commit).
void write_outputs(const RunArgs& a, const Destination& d, const RunResult& r, PendingFiles& files) {
  throw_if_cancelled();
  for (std::size_t i = 0; i < r.arrays.size(); ++i) {
    const auto& kv = r.arrays[i];
    status() << shown(kv.first) << ": " << shape_string(kv.second.shape);
    if (i < r.keras_names.size() && r.keras_names[i] != kv.first) status() << "  " << shown(r.keras_names[i]);
    status() << "\n";
  }
  if (d.any && d.path.empty()) {
    std::cout << (d.form == Form::json ? recur_cli::json_of(displayed(r)) + "\n" : recur_cli::text_of(displayed(r)));
    std::cout.flush();
  } else if (d.any) {
    if (d.form == Form::npy) {
      if (r.arrays.size() != 1)
        usage_error("--output " + a.output + ": an .npy holds one array; this run has " + std::to_string(r.arrays.size()) +
                    " (use .npz or --output-dir)");
      files.write(a.output, [&](const std::string& p) { recur_cli::write_npy(p, r.arrays[0].second); });
    } else if (d.form == Form::npz) {
      files.write(a.output, [&](const std::string& p) { recur_cli::write_npz(p, r.arrays); });
    } else {
      files.write(a.output, [&](const std::string& p) {
        write_text_file(p, d.form == Form::json ? recur_cli::json_of(displayed(r)) + "\n"
                                                : recur_cli::text_of(displayed(r)));
      });
    }
  }
  if (!a.output_dir.empty()) {
    // Every file name is made safe (and distinct) before any file is written.
    const std::vector<std::string> names = recur_cli::safe_file_names(display_names(r));
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (ec) throw recur_cli::NpyError(a.output_dir + ": cannot create the directory: " + ec.message());
    for (std::size_t i = 0; i < r.arrays.size(); ++i) {
      const std::string path = a.output_dir + "/" + names[i] + ".npy";
      files.write(path, [&](const std::string& p) { recur_cli::write_npy(p, r.arrays[i].second); });
    }
  }
}

// Progress lines go to stderr while stdout carries the outputs.
void route_status(const Destination& d, bool per_step) {
  if ((d.any && d.path.empty()) || per_step) g_status = &std::cerr;
}

int cmd_run(const RunArgs& a) {
  const Destination d = destination(a);
  route_status(d, false);
  NamedArrays states;
  const RunResult out = run_any(a, a.states_out.empty() ? nullptr : &states);
  PendingFiles files;
  write_outputs(a, d, out, files);
  if (!a.states_out.empty()) {
    files.write(a.states_out, [&](const std::string& p) { recur_cli::write_npz(p, states); });
    for (const auto& kv : states) status() << "states " << shown(kv.first) << ": " << shape_string(kv.second.shape) << "\n";
  }
  files.commit();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// stream

// --per-step: step `index`, timesteps [t0, t0 + n), as text or as one JSON line, at once.
void print_step(int64_t index, int64_t t0, int64_t n, const NamedArrays& outputs, bool json) {
  if (json)
    std::cout << "{\"step\": " << index << ", \"timesteps\": [" << t0 << ", " << t0 + n
              << "], \"outputs\": " << recur_cli::json_of(outputs) << "}\n";
  else
    std::cout << "step " << index << ": timesteps " << t0 << " to " << t0 + n - 1 << "\n" << recur_cli::text_of(outputs);
  std::cout.flush();
}

// stream's --output: with --per-step, stdout is the steps', and --json is theirs.
Destination stream_destination(const RunArgs& a) {
  if (!a.per_step) return destination(a);
  if (a.output == "-")
    usage_error("--per-step prints each step to stdout; -o - would print the whole outputs there too (give -o a file)");
  if (a.output.empty()) return Destination{};
  RunArgs file = a;
  file.json = false;
  return destination(file);
}

int cmd_stream(const RunArgs& a) {
  const Destination d = stream_destination(a);
  route_status(d, a.per_step);
  if (!a.layer.empty()) usage_error("stream runs whole models; --layer is for run and verify");
  if (a.chunk < 1) usage_error("--chunk must be at least 1, got " + std::to_string(a.chunk));
  if (a.inputs.empty()) usage_error("--input is required");
  ModelHandle mh;
  open_model(mh, a);
  const ModelInputs in = load_model_inputs(mh.m, a);
  // --row-streams: each row its own state of batch 1, all stepped in one call
  // (recur_model_states_step_named); else one state of the whole batch.
  std::vector<ModelStateHandle> rows(a.row_streams ? static_cast<std::size_t>(in.batch) : 0);
  std::vector<recur_model_state*> row_states;
  ModelStateHandle sh;
  if (a.row_streams) {
    for (ModelStateHandle& r : rows) {
      check(recur_model_state_create(&r.s, mh.m, 1));
      row_states.push_back(r.s);
    }
  } else {
    check(recur_model_state_create(&sh.s, mh.m, in.batch));
  }
  if (a.row_streams && (!a.state_in.empty() || !a.state_out.empty()))
    usage_error("--state-in/--state-out save one model state: they do not go with --row-streams");
  if (!a.state_in.empty()) {
    std::ifstream f(a.state_in, std::ios::binary);
    if (!f) throw Failure{"--state-in: cannot read " + a.state_in};
    const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (recur_model_state_load(sh.s, bytes.data(), bytes.size()) != RECUR_OK)
      throw Failure{"--state-in " + a.state_in + ": " + in_cli_terms(recur_last_error())};
  }
  recur_model_state* const probe = a.row_streams ? rows[0].s : sh.s;
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
  const std::vector<std::size_t> sel = selected_outputs(a, outs);
  const std::vector<std::string> addresses = output_addresses(outs);
  // Sequence outputs hold a step's timesteps on axis 1 (written in place into the whole (B, T, ...)
  // result); the others are what the model outputs after the step (the last step's is kept).
  std::vector<bool> seq_out(sel.size());
  for (std::size_t k = 0; k < sel.size(); ++k) {
    const int32_t index = static_cast<int32_t>(sel[k]);
    int64_t one[RECUR_MAX_RANK], two[RECUR_MAX_RANK];
    int32_t rank1 = 0, rank2 = 0;
    check(recur_model_state_output_dims(probe, index, 1, one, &rank1));
    if (recur_model_state_output_dims(probe, index, 2, two, &rank2) == RECUR_OK)
      seq_out[k] = rank1 >= 2 && rank2 >= 2 && one[1] == 1 && two[1] == 2;
    else  // a model that only steps one timestep at a time
      seq_out[k] = rank1 >= 3 && one[1] == 1;
  }
  RunResult named = name_outputs(outs, sel, std::vector<Array>(sel.size()));
  std::vector<Array> result(sel.size());
  int64_t chunks = 0;
  for (int64_t t0 = 0; t0 < T; t0 += a.chunk, ++chunks) {
    const int64_t n = std::min<int64_t>(a.chunk, T - t0);
    std::vector<Feed> feeds;
    for (std::size_t i = 0; i < in.desc.size(); ++i)
      feeds.push_back(in.desc[i].sequence ? slice_feed(in.x[i], t0, n) : in.x[i]);
    const std::vector<recur_tensor> x = tensors(in.desc, feeds);
    std::vector<recur_output> req = output_requests(addresses, sel);
    const int32_t n_in = static_cast<int32_t>(x.size()), n_out = static_cast<int32_t>(req.size());
    const int32_t n_states = static_cast<int32_t>(row_states.size());
    if (a.row_streams)
      check(recur_model_states_output_shapes(row_states.data(), n_states, x.data(), n_in, req.data(), n_out));
    else
      check(recur_model_state_output_shapes(sh.s, x.data(), n_in, req.data(), n_out));
    std::vector<Array> parts = output_arrays(req);
    if (a.row_streams)
      check(recur_model_states_step_named(row_states.data(), n_states, x.data(), n_in, req.data(), n_out, run_options()));
    else
      check(recur_model_state_step_named(sh.s, x.data(), n_in, req.data(), n_out, run_options()));
    NamedArrays step;  // this step's outputs, for --per-step
    for (std::size_t k = 0; k < sel.size(); ++k) {
      const Array& part = parts[k];
      if (a.per_step) step.emplace_back(named.display[k], part);
      Array& r = result[k];
      r.dtype = "<f4";
      if (!seq_out[k]) {
        r = part;
        continue;
      }
      const std::size_t rest = part.data.size() / static_cast<std::size_t>(B * n);
      if (r.data.empty()) {
        r.shape = part.shape;
        r.shape[1] = T;
        r.data.assign(static_cast<std::size_t>(B * T) * rest, 0.0f);
      }
      for (int64_t b = 0; b < B; ++b)
        std::copy(part.data.begin() + static_cast<long>(static_cast<std::size_t>(b * n) * rest),
                  part.data.begin() + static_cast<long>(static_cast<std::size_t>((b + 1) * n) * rest),
                  r.data.begin() + static_cast<long>(static_cast<std::size_t>(b * T + t0) * rest));
    }
    if (a.per_step) {
      throw_if_cancelled();
      print_step(chunks, t0, n, step, a.json);
    }
  }
  status() << "stream: " << T << " timesteps in " << chunks << " step(s) of up to " << a.chunk
           << (a.row_streams ? ", " + std::to_string(B) + " row streams stepped together" : std::string()) << "\n";
  PendingFiles files;
  write_outputs(a, d, name_outputs(outs, sel, std::move(result)), files);
  if (!a.state_out.empty()) {
    size_t len = 0;
    check(recur_model_state_save(sh.s, nullptr, 0, &len));
    std::vector<char> bytes(len);
    check(recur_model_state_save(sh.s, bytes.data(), bytes.size(), &len));
    files.write(a.state_out, [&](const std::string& p) {
      std::ofstream f(p, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!f.flush()) throw recur_cli::NpyError("--state-out: cannot write " + p);
    });
  }
  files.commit();
  return 0;
}

// ---------------------------------------------------------------------------------------------
// verify

// The expected arrays: one .npz (members named like run's outputs, or by the model's output
// names), or .npy files for the outputs in order (NAME=y.npy for output NAME).
NamedArrays load_expected(const RunArgs& a, const RunResult& got) {
  NamedArrays expected;
  std::vector<std::string> names = got.all_names;
  if (names.empty())  // a --layer run
    for (const auto& kv : got.arrays) names.push_back(kv.first);
  std::size_t positional = 0;
  for (const std::string& e : a.expected) {
    const auto [name, path] = split_named(e, names, "--expected", "output");
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
  throw_if_cancelled();
  const NamedArrays expected = load_expected(a, got);
  double max_abs = 0.0, max_rel = 0.0;
  std::size_t count = 0;
  bool shapes_ok = true;
  for (const auto& kv : expected) {
    const Array* g = nullptr;
    for (std::size_t i = 0; i < got.arrays.size(); ++i)
      if (got.arrays[i].first == kv.first || (i < got.keras_names.size() && got.keras_names[i] == kv.first) ||
          (i < got.display.size() && got.display[i] == kv.first))
        g = &got.arrays[i].second;
    // An output --outputs left out: its expected values are not compared.
    if (!g && !a.output_names.empty() &&
        std::find(got.all_names.begin(), got.all_names.end(), kv.first) != got.all_names.end()) {
      note("'" + kv.first + "' in " + list(a.expected) + " is not compared (not among --outputs)");
      continue;
    }
    if (!g) {
      std::vector<std::string> names;
      for (std::size_t i = 0; i < got.arrays.size(); ++i)
        names.push_back(got.arrays[i].first + (i < got.keras_names.size() && got.keras_names[i] != got.arrays[i].first
                                                   ? " (" + got.keras_names[i] + ")"
                                                   : ""));
      std::cerr << "recur: "
                << one_line(list(a.expected) + ": '" + kv.first + "' is not an output of this run (outputs: " + list(names) + ")")
                << "\n";
      shapes_ok = false;
      continue;
    }
    if (g->shape != kv.second.shape) {
      std::cerr << "recur: " << shown(kv.first) << ": shape " << shape_string(g->shape) << " differs from the expected "
                << shape_string(kv.second.shape) << " in " << one_line(list(a.expected)) << "\n";
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
    std::printf("%-10s %-14s max abs error %.3e  max rel error %.3e  (%zu elements)\n", shown(kv.first).c_str(),
                shape_string(g->shape).c_str(), mabs, mrel, g->data.size());
    max_abs = std::max(max_abs, mabs);
    max_rel = std::max(max_rel, mrel);
    count += g->data.size();
  }
  const bool ok = shapes_ok && max_abs <= a.atol;
  std::printf("precision: %s\nmax abs error: %.6e\nmax rel error: %.6e\nelements: %zu\natol: %g\n%s\n",
              a.precision.c_str(), max_abs, max_rel, count, a.atol, ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// devices

// "<device>: available", or "<device>: unavailable: <what is missing>".
void check_device_line(const std::string& device) {
  if (recur_device_check(device.c_str()) == RECUR_OK)
    std::cout << device << ": available\n";
  else
    std::cout << device << ": unavailable: " << one_line(recur_last_error()) << "\n";
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
  // --log LEVEL / -v, before the subcommand or after it.
  std::string log_level;
  bool verbose = false;
  const char* const log_help =
      "print the library's log to stderr, one line a message: debug, info, warning or error (and above); off by "
      "default";
  auto add_log = [&](CLI::App* sub) {
    sub->add_option("--log", log_level, log_help)->check(CLI::IsMember({"debug", "info", "warning", "error"}));
    sub->add_flag("-v,--verbose", verbose, "the same as --log info");
  };
  add_log(&app);

  const char* const device_help = "where to run: cpu, cuda, cuda:N or auto (a GPU when one can run, else the CPU)";
  std::string info_file, info_device = "cpu";
  bool info_json = false;
  CLI::App* info = app.add_subcommand("info", "describe a Keras model file (.keras or .h5)");
  info->add_option("FILE", info_file, "the model file")->required();
  info->add_flag("--json", info_json, "print JSON");
  info->add_option("--device", info_device, device_help)->capture_default_str();
  add_limit(info, sub_limits);
  add_log(info);

  RunArgs ra, va, sa;
  const char* const threads_help =
      "CPU threads a layer may use: 1 runs on the calling thread only, 0 one per core; every count gives "
      "bitwise the same numbers";
  const char* const backend_help =
      "Keras 3 backend semantics: tensorflow (the default, also torch's) or jax (also numpy's); they differ at "
      "masked steps before the first valid one";
  auto common = [&](CLI::App* sub, RunArgs& a, bool layers) {
    add_limit(sub, sub_limits);
    add_log(sub);
    sub->add_option("FILE", a.file, "the model file (.keras or .h5)")->required();
    // One value per occurrence: --input a.npy --input b.npy (FILE may follow).
    sub->add_option("--input,-i", a.inputs,
                    "input .npy, one per model input in the model's input order, or NAME=x.npy for input NAME, or "
                    "one .npz with members named like the inputs: (B, T, F) floats, (B, T) token ids (integer .npy ids "
                    "go as integers), ...")
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
    sub->add_option("--precision", a.precision,
                    "weights of the recurrent layers in their matrix products: float32 (Keras's numbers), bf16 or int8 "
                    "(faster, outputs differ from Keras's; see docs/precision.md)")
        ->capture_default_str();
    sub->add_option("--keras-backend", a.keras_backend, backend_help);
    sub->add_option("--timeout", a.timeout,
                    "seconds each model run or stream step may take before it stops with an error (0, the default: "
                    "no limit)")
        ->check(CLI::NonNegativeNumber);
  };
  const char* const outputs_help =
      "run only these model outputs, in this order (NAME[,NAME...], repeatable; 'name:k' for the k-th of a Keras 3 "
      "layer's several outputs)";
  auto choose_outputs = [&](CLI::App* sub, RunArgs& a) {
    sub->add_option("--outputs,--output-name", a.output_names, outputs_help)->allow_extra_args(false);
  };
  auto outputs = [](CLI::App* sub, RunArgs& a) {
    sub->add_option("--output,-o", a.output,
                    "where the outputs go: - (stdout, the default without --output-dir), out.npz (output[, output_1 "
                    "...] in the model's output order, or output, state_h[, state_c] for --layer), out.npy (a run "
                    "with one array), out.txt (text) or out.json (JSON)");
    sub->add_option("--output-dir", a.output_dir, "write DIR/<output name>.npy for every output");
    sub->add_flag("--json", a.json, "print the outputs as one JSON object {name: {dims, values}} instead of text");
  };
  CLI::App* run = app.add_subcommand("run", "run a model (or one of its recurrent layers) on .npy inputs");
  common(run, ra, true);
  outputs(run, ra);
  choose_outputs(run, ra);
  run->add_option("--states-in", ra.states_in,
                  "stateful models: .npz of states to start from, (states, batch, units) per stateful layer name");
  run->add_option("--states-out", ra.states_out,
                  "stateful models: write the states the run leaves (what --states-in reads) to this .npz");
  CLI::App* verify = app.add_subcommand("verify", "run like `run` and compare with expected outputs");
  common(verify, va, true);
  choose_outputs(verify, va);
  verify
      ->add_option("--expected,-e", va.expected,
                   "expected outputs: one .npz (members named like run's outputs, or by the model's output names), "
                   "or one .npy per output in order (or NAME=y.npy)")
      ->required()
      ->allow_extra_args(false);
  verify->add_option("--states-in", va.states_in, "stateful models: .npz of states to start from (see run)");
  verify->add_option("--atol", va.atol, "largest allowed absolute error per element")->capture_default_str();
  CLI::App* stream = app.add_subcommand(
      "stream", "step a model through its inputs N timesteps at a time with one model state; gives what `run` gives");
  common(stream, sa, false);
  outputs(stream, sa);
  choose_outputs(stream, sa);
  stream->add_option("--chunk", sa.chunk, "timesteps per step")->capture_default_str();
  stream->add_flag("--per-step", sa.per_step,
                   "print each step's outputs as it comes (text, or one JSON object per line with --json)");
  stream->add_flag("--row-streams", sa.row_streams,
                   "step each row of the batch as its own model state, all rows in one call per step "
                   "(recur_model_states_step_named); gives the same outputs");
  stream->add_option("--state-in", sa.state_in,
                     "start from a model-state snapshot (what --state-out wrote, recur_model_state_save): "
                     "the stream goes on where that one stopped");
  stream->add_option("--state-out", sa.state_out,
                     "write the stream's state after the last step (recur_model_state_save) to this file");
  CLI::App* devices =
      app.add_subcommand("devices", "list the devices recur can run on, why a GPU cannot, and the CPU kernel set");
  add_log(devices);

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
    if (*run || *verify || *stream) start_signal_watch();
    if (!log_level.empty()) start_log(log_level);
    else if (verbose) start_log("info");
    apply_limits(global_limits);
    apply_limits(sub_limits);
    {
      const double timeout = *run ? ra.timeout : *verify ? va.timeout : *stream ? sa.timeout : 0.0;
      if (timeout > 0) check(recur_run_options_set_timeout(signal_cancel().options, timeout));
    }
    if (*info) rc = cmd_info(info_file, info_json, info_device);
    else if (*run) rc = cmd_run(ra);
    else if (*verify) rc = cmd_verify(va);
    else if (*stream) rc = cmd_stream(sa);
    else if (*devices) rc = cmd_devices();
    else std::cerr << app.help();
  } catch (const Cancelled&) {
    std::cerr << "recur: cancelled\n";
    const int sig = signal_cancel().signal.load();
    rc = 128 + (sig ? sig : SIGINT);
  } catch (const Failure& f) {
    std::cerr << "recur: " << one_line(f.message) << "\n";
  } catch (const recur_cli::NpyError& e) {
    std::cerr << "recur: " << one_line(e.what()) << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "recur: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "recur: " << one_line(e.what()) << "\n";
  }
  recur_set_log_callback(nullptr, nullptr, 0);
  // Every handle a command makes is freed when it returns, on errors too: one left is a leak.
  if (!stop_signal_watch()) {
    std::cerr << "recur: internal error: run options left at exit\n";
    return 70;
  }
  uint64_t layers = 0, states = 0, models = 0, streams = 0;
  if (recur_live_handles(&layers, &states, &models, &streams) == RECUR_OK && layers + states + models + streams) {
    std::cerr << "recur: internal error: handles left at exit (layers " << layers << ", states " << states
              << ", models " << models << ", model states " << streams << ")\n";
    return 70;
  }
  return rc;
}
