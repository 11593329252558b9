// recur: command-line tool over the public C ABI (recur.h) only.
//
//   recur info FILE [--json] [--device DEV]
//   recur run FILE --input x.npy [--mask m.npy] [--initial-state h.npy ...] [--layer NAME] [--device DEV]
//             [--threads N] --output out.npz
//   recur verify FILE --input x.npy --expected y.npy|y.npz [--mask m.npy] [--initial-state h.npy ...]
//                [--layer NAME] [--device DEV] [--threads N] [--atol 1e-5]
//   recur devices
//
// DEV is cpu (the default), cuda, cuda:N or auto. N is the number of CPU threads a layer may use
// (1 by default, 0 = one per core); every count gives bitwise the same numbers.
//
// Exit codes: 0 success (verify: within atol), 1 verify mismatch, 2 any error (recur failure,
// unreadable or malformed .npy/.npz, bad usage).
#include <recur/recur.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
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

void check(recur_status s) {
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
    j["device"] = device_json(where);
    j["cpu_kernels"] = recur_cpu_kernels();
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
  if (info.takes_token_ids)
    std::cout << "input:         token ids (B, T)\n";
  else
    std::cout << "input:         (B, T, " << info.input_size << ")\n";
  std::cout << "output:        " << (info.returns_sequences ? "(B, T, " : "(B, ") << info.output_size << ")";
  if (info.num_outputs > 1) std::cout << " x " << info.num_outputs << " outputs";
  std::cout << "\n";
  std::cout << "device:        " << device_line(where) << "\n";
  std::cout << "cpu kernels:   " << recur_cpu_kernels() << "\n";
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
  std::string file, input, mask, layer, output, expected;
  std::string device = "cpu";
  int32_t threads = 1;
  std::vector<std::string> initial_states;
  double atol = 1e-5;
};

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

NamedArrays run_model(const RunArgs& a) {
  if (!a.initial_states.empty()) usage_error("--initial-state needs --layer (whole-model runs start from zero states)");
  ModelHandle mh;
  check(recur_model_open(&mh.m, a.file.c_str()));
  // Before the device, so a bad count is reported without touching a GPU.
  check(recur_model_set_num_threads(mh.m, a.threads));
  check(recur_model_set_device(mh.m, a.device.c_str()));
  std::cout << "device: " << device_line(model_device(mh.m, -1)) << "\n";
  const recur_model_info info = model_info(mh.m);
  const Array x = recur_cli::read_npy(a.input);
  int64_t B = 0, T = 0;
  if (info.takes_token_ids) {
    if (x.shape.size() == 2 || (x.shape.size() == 3 && x.shape[2] == 1)) {
      B = x.shape[0];
      T = x.shape[1];
    } else {
      throw recur_cli::NpyError(a.input + ": shape " + shape_string(x.shape) +
                                " does not fit the model: expected token ids (B, T)");
    }
  } else {
    if (x.shape.size() != 3 || x.shape[2] != info.input_size)
      throw recur_cli::NpyError(a.input + ": shape " + shape_string(x.shape) + " does not fit the model: expected (B, T, " +
                                std::to_string(info.input_size) + ")");
    B = x.shape[0];
    T = x.shape[1];
  }
  if (B <= 0 || T <= 0 || B > std::numeric_limits<int32_t>::max() || T > std::numeric_limits<int32_t>::max())
    throw recur_cli::NpyError(a.input + ": shape " + shape_string(x.shape) + ": batch and timesteps must be in [1, 2^31)");
  std::vector<uint8_t> mask;
  if (!a.mask.empty()) mask = load_mask(a.mask, B, T, false);
  size_t out_len = 0;
  check(recur_model_output_length(mh.m, static_cast<int32_t>(B), static_cast<int32_t>(T), &out_len));
  std::vector<float> y(out_len);
  check(recur_model_run(mh.m, x.data.data(), x.data.size(), static_cast<int32_t>(B), static_cast<int32_t>(T),
                        mask.empty() ? nullptr : mask.data(), mask.size(), y.data(), y.size()));
  std::vector<int64_t> shape = info.returns_sequences ? std::vector<int64_t>{B, T, info.output_size}
                                                      : std::vector<int64_t>{B, info.output_size};
  const std::size_t each = out_len / static_cast<std::size_t>(std::max(1, info.num_outputs));
  NamedArrays out;
  for (int32_t k = 0; k < info.num_outputs; ++k) {
    Array o;
    o.shape = shape;
    o.dtype = "<f4";
    o.data.assign(y.begin() + static_cast<long>(k * each), y.begin() + static_cast<long>((k + 1) * each));
    out.emplace_back(k == 0 ? "output" : "output_" + std::to_string(k), std::move(o));
  }
  return out;
}

NamedArrays run_layer(const RunArgs& a) {
  ModelHandle mh;
  check(recur_model_open(&mh.m, a.file.c_str()));
  LayerHandle lh;
  check(recur_model_get_layer(mh.m, a.layer.c_str(), &lh.l));
  check(recur_layer_set_num_threads(lh.l, a.threads));
  check(recur_layer_set_device(lh.l, a.device.c_str()));
  recur_device_info where{};
  where.version = RECUR_DEVICE_INFO_VERSION;
  check(recur_layer_get_device(lh.l, &where));
  std::cout << "device: " << device_line(where) << "\n";
  recur_layer_info li{};
  li.version = RECUR_LAYER_INFO_VERSION;
  check(recur_layer_get_info(lh.l, &li));
  const Array x = recur_cli::read_npy(a.input);
  const bool tm = li.time_major != 0;
  if (x.shape.size() != 3 || x.shape[2] != li.input_size)
    throw recur_cli::NpyError(a.input + ": shape " + shape_string(x.shape) + " does not fit layer '" + a.layer +
                              "': expected " + (tm ? "(T, B, " : "(B, T, ") + std::to_string(li.input_size) + ")");
  const int64_t B = tm ? x.shape[1] : x.shape[0], T = tm ? x.shape[0] : x.shape[1];
  if (B <= 0 || T <= 0 || B > std::numeric_limits<int32_t>::max() || T > std::numeric_limits<int32_t>::max())
    throw recur_cli::NpyError(a.input + ": shape " + shape_string(x.shape) + ": batch and timesteps must be in [1, 2^31)");
  std::vector<uint8_t> mask;
  if (!a.mask.empty()) mask = load_mask(a.mask, B, T, tm);
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
  NamedArrays out;
  Array o;
  o.dtype = "<f4";
  if (li.return_sequences) o.shape = tm ? std::vector<int64_t>{T, B, li.units} : std::vector<int64_t>{B, T, li.units};
  else o.shape = {B, li.units};
  o.data = std::move(y);
  out.emplace_back("output", std::move(o));
  const std::size_t n = static_cast<std::size_t>(B) * static_cast<std::size_t>(li.units);
  for (int32_t k = 0; k < li.num_states; ++k) {
    Array s;
    s.dtype = "<f4";
    s.shape = {B, li.units};
    s.data.assign(fs.begin() + static_cast<long>(k * n), fs.begin() + static_cast<long>((k + 1) * n));
    out.emplace_back(k == 0 ? "state_h" : "state_c", std::move(s));
  }
  return out;
}

NamedArrays run_any(const RunArgs& a) { return a.layer.empty() ? run_model(a) : run_layer(a); }

int cmd_run(const RunArgs& a) {
  const NamedArrays out = run_any(a);
  recur_cli::write_npz(a.output, out);
  for (const auto& kv : out) std::cout << kv.first << ": " << shape_string(kv.second.shape) << "\n";
  std::cout << "wrote " << a.output << "\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// verify

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int cmd_verify(const RunArgs& a) {
  if (!(a.atol >= 0.0)) usage_error("--atol must be a non-negative number");
  const NamedArrays got = run_any(a);
  NamedArrays expected;
  if (ends_with(a.expected, ".npz")) {
    expected = recur_cli::read_npz(a.expected);
    if (expected.empty()) throw recur_cli::NpyError(a.expected + ": the archive holds no arrays");
  } else {
    expected.emplace_back("output", recur_cli::read_npy(a.expected));
  }
  double max_abs = 0.0, max_rel = 0.0;
  std::size_t count = 0;
  bool shapes_ok = true;
  for (const auto& kv : expected) {
    const Array* g = nullptr;
    for (const auto& o : got)
      if (o.first == kv.first) g = &o.second;
    if (!g) {
      std::string names;
      for (const auto& o : got) names += (names.empty() ? "" : ", ") + o.first;
      std::cerr << "recur: " << a.expected << ": '" << kv.first << "' is not an output of this run (outputs: " << names
                << ")\n";
      shapes_ok = false;
      continue;
    }
    if (g->shape != kv.second.shape) {
      std::cerr << "recur: " << kv.first << ": shape " << shape_string(g->shape) << " differs from the expected "
                << shape_string(kv.second.shape) << " in " << a.expected << "\n";
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

  const char* const device_help = "where to run: cpu, cuda, cuda:N or auto (a GPU when one can run, else the CPU)";
  std::string info_file, info_device = "cpu";
  bool info_json = false;
  CLI::App* info = app.add_subcommand("info", "describe a Keras model file (.keras or .h5)");
  info->add_option("FILE", info_file, "the model file")->required();
  info->add_flag("--json", info_json, "print JSON");
  info->add_option("--device", info_device, device_help)->capture_default_str();

  RunArgs ra, va;
  const char* const threads_help =
      "CPU threads a layer may use: 1 runs on the calling thread only, 0 one per core; every count gives "
      "bitwise the same numbers";
  auto common = [device_help, threads_help](CLI::App* sub, RunArgs& a) {
    sub->add_option("FILE", a.file, "the model file (.keras or .h5)")->required();
    sub->add_option("--input,-i", a.input, "input .npy: (B, T, F) floats, or (B, T) token ids")->required();
    sub->add_option("--mask,-m", a.mask, "(B, T) .npy mask, nonzero = valid step");
    sub->add_option("--initial-state", a.initial_states, "with --layer: one (B, units) .npy per state (h, then c)");
    sub->add_option("--layer,-l", a.layer, "run only this recurrent layer ('name/forward' for a Bidirectional half)");
    sub->add_option("--device", a.device, device_help)->capture_default_str();
    // No range check here: the library's, so the message is the one the C ABI gives.
    sub->add_option("--threads", a.threads, threads_help)->capture_default_str();
  };
  CLI::App* run = app.add_subcommand("run", "run a model (or one of its recurrent layers) on a .npy input");
  common(run, ra);
  run->add_option("--output,-o", ra.output, "output .npz (output[, output_1] or output, state_h[, state_c])")->required();
  CLI::App* verify = app.add_subcommand("verify", "run like `run` and compare with expected outputs");
  common(verify, va);
  verify->add_option("--expected,-e", va.expected, "expected .npy (the output) or .npz (named like run's outputs)")
      ->required();
  verify->add_option("--atol", va.atol, "largest allowed absolute error per element")->capture_default_str();
  CLI::App* devices =
      app.add_subcommand("devices", "list the devices recur can run on, why a GPU cannot, and the CPU kernel set");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (version) {
      std::cout << "recur " << recur_version_string() << "\n";
      return 0;
    }
    if (*info) return cmd_info(info_file, info_json, info_device);
    if (*run) return cmd_run(ra);
    if (*verify) return cmd_verify(va);
    if (*devices) return cmd_devices();
    std::cerr << app.help();
    return 2;
  } catch (const Failure& f) {
    std::cerr << "recur: " << f.message << "\n";
  } catch (const recur_cli::NpyError& e) {
    std::cerr << "recur: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "recur: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "recur: " << e.what() << "\n";
  }
  return 2;
}
