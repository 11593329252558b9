// SPDX-License-Identifier: Apache-2.0
// Shared by the C++ contender processes: the stdin protocol, the data files the driver writes,
// and peak-memory readings. See README.md for the protocol.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/resource.h>

namespace bench {

enum class Cell { GruResetAfter, GruResetBefore, Lstm };

inline Cell parse_cell(const std::string &s) {
  if (s == "gru_ra") return Cell::GruResetAfter;
  if (s == "gru_rb") return Cell::GruResetBefore;
  if (s == "lstm") return Cell::Lstm;
  throw std::runtime_error("unknown cell '" + s + "' (gru_ra, gru_rb, lstm)");
}

inline int gates(Cell c) { return c == Cell::Lstm ? 4 : 3; }

// One benchmark case. stream: every call is one timestep that continues the previous call's
// state (T is then 1); otherwise a call is a whole sequence from a zero state.
struct Spec {
  Cell cell = Cell::Lstm;
  int B = 0, T = 0, F = 0, H = 0;
  bool stream = false;
  int check_steps = 0;  // timesteps of the check input (T for sequences, a few calls for streams)
};

// Weights in Keras layout (kernel (F, G*H), recurrent_kernel (H, G*H), bias (G*H) or, for
// GRU reset_after=True, (2, 3H)) and the inputs, as written by the driver.
struct Data {
  std::vector<float> kernel, recurrent, bias;
  std::vector<float> x;   // (B, T, F): the input every timed call uses
  std::vector<float> xc;  // (B, check_steps, F): the input of the correctness check
};

inline std::vector<float> read_f32(const std::string &path, size_t n) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot open " + path);
  const auto bytes = static_cast<size_t>(f.tellg());
  if (bytes != n * sizeof(float))
    throw std::runtime_error(path + ": " + std::to_string(bytes) + " bytes, expected " +
                             std::to_string(n * sizeof(float)));
  std::vector<float> v(n);
  f.seekg(0);
  f.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(bytes));
  return v;
}

inline void write_f32(const std::string &path, const std::vector<float> &v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!f) throw std::runtime_error("cannot write " + path);
}

inline size_t bias_len(const Spec &s) {
  return s.cell == Cell::GruResetAfter ? size_t(6) * s.H : size_t(gates(s.cell)) * s.H;
}

inline Data load_data(const Spec &s, const std::string &dir) {
  const size_t G = gates(s.cell);
  Data d;
  d.kernel = read_f32(dir + "/kernel.f32", size_t(s.F) * G * s.H);
  d.recurrent = read_f32(dir + "/recurrent_kernel.f32", size_t(s.H) * G * s.H);
  d.bias = read_f32(dir + "/bias.f32", bias_len(s));
  d.x = read_f32(dir + "/x.f32", size_t(s.B) * s.T * s.F);
  d.xc = read_f32(dir + "/xc.f32", size_t(s.B) * s.check_steps * s.F);
  return d;
}

// Rows (b, t, :) of a (B, T, F) tensor for one t, gathered into (B, F): the input of one
// streaming call.
inline void gather_step(const std::vector<float> &x, int B, int T, int F, int t, float *out) {
  for (int b = 0; b < B; ++b)
    std::copy_n(x.data() + (size_t(b) * T + t) * F, F, out + size_t(b) * F);
}

inline void scatter_step(const float *h, int B, int T, int H, int t, std::vector<float> &out) {
  for (int b = 0; b < B; ++b)
    std::copy_n(h + size_t(b) * H, H, out.data() + (size_t(b) * T + t) * H);
}

// One contender's layer for one Spec. The constructor only creates (phase "create");
// set_weights loads the Keras weights (phase "weights"); run() is one timed call.
class Contender {
 public:
  virtual ~Contender() = default;
  virtual void set_weights(const Data &d) = 0;
  virtual void set_threads(int n) = 0;  // throws with the reason when a count is not supported
  virtual void run() = 0;
  // From a zero state, the outputs (B, check_steps, H) for xc: one call for a sequence, or
  // check_steps one-step calls that carry the state for a stream.
  virtual std::vector<float> check(const Data &d) = 0;
  virtual std::string describe() const { return ""; }
};

// Peak resident set so far (kB), from the kernel's own high-water mark.
inline long vm_hwm_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds of every thread of this process so far: over a timed stretch, CPU time / wall time
// is the number of threads the contender really kept busy (a spinning pool thread counts: it
// holds a core).
inline double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The thread count a serving process runs at: `--threads N` on its command line. It is fixed for
// the process's life, so that every library creates its pools, primitives and sessions at the
// count it is measured at (oneDNN, for one, sizes its work when a primitive is created).
inline int threads_arg(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--threads") {
      const int n = std::atoi(argv[i + 1]);
      if (n >= 1) return n;
    }
  throw std::runtime_error("expected --threads N (N >= 1)");
}

inline Spec parse_spec(std::istream &in) {
  Spec s;
  std::string cell;
  int stream = 0;
  in >> cell >> s.B >> s.T >> s.F >> s.H >> stream >> s.check_steps;
  if (!in) throw std::runtime_error("expected: CELL B T F H STREAM CHECK_STEPS DIR");
  s.cell = parse_cell(cell);
  s.stream = stream != 0;
  return s;
}

using Factory = std::unique_ptr<Contender> (*)(const std::string &name, const Spec &);

// The memory probe: a fresh process creates one contender for one Spec and prints VmHWM after
// each phase, so the phase that sets the peak is known. The caller has set one thread.
inline int memory_probe(Factory make, const std::string &name, std::istream &args) {
  const Spec spec = parse_spec(args);
  std::string dir;
  args >> dir;
  const Data data = load_data(spec, dir);
  std::printf("start %ld\n", vm_hwm_kb());
  auto c = make(name, spec);
  std::printf("create %ld\n", vm_hwm_kb());
  c->set_weights(data);
  std::printf("weights %ld\n", vm_hwm_kb());
  c->run();
  std::printf("call1 %ld\n", vm_hwm_kb());
  c->run();
  std::printf("call2 %ld\n", vm_hwm_kb());
  return 0;
}

// The stdin loop shared by the C++ processes. Commands (one line each, one reply line each:
// "ok ..." or "err <message>"):
//   setup NAME CELL B T F H STREAM CHECK_STEPS DIR   create NAME's layer and load DIR's data
//   check NAME OUT_PATH                              write the check outputs to OUT_PATH
//   time NAME THREADS ITERS                          ITERS calls; replies "ok WALL_S CPU_S"
//                                                    (THREADS must be the process's count)
//   describe NAME                                    what NAME runs (implementation, route)
//   free NAME | info | quit
inline int serve(Factory make, const std::string &info, int threads) {
  std::map<std::string, std::unique_ptr<Contender>> live;
  std::map<std::string, Data> data;
  std::string line;
  std::cout << std::setprecision(9) << "ready " << info << std::endl;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, name;
    in >> cmd;
    try {
      if (cmd == "quit") {
        std::cout << "ok" << std::endl;
        return 0;
      }
      if (cmd == "info") {
        std::cout << "ok " << info << std::endl;
        continue;
      }
      in >> name;
      if (cmd == "setup") {
        const Spec spec = parse_spec(in);
        std::string dir;
        in >> dir;
        live.erase(name);  // free the previous layer first so two never coexist
        data[name] = load_data(spec, dir);
        auto c = make(name, spec);
        c->set_weights(data[name]);
        c->set_threads(threads);  // before the check, so that the count measured is the one checked
        std::cout << "ok " << c->describe() << std::endl;
        live[name] = std::move(c);
      } else if (cmd == "check") {
        std::string out;
        in >> out;
        write_f32(out, live.at(name)->check(data.at(name)));
        std::cout << "ok" << std::endl;
      } else if (cmd == "time") {
        long iters = 1;
        int asked = 0;
        in >> asked >> iters;
        if (asked != threads)
          throw std::runtime_error("this process runs at " + std::to_string(threads) + " thread(s), not " +
                                   std::to_string(asked) + ": start one with --threads " + std::to_string(asked));
        Contender &c = *live.at(name);
        const double c0 = cpu_s(), t0 = now_s();
        for (long i = 0; i < iters; ++i) c.run();
        const double dt = now_s() - t0, dc = cpu_s() - c0;
        std::cout << "ok " << dt << " " << dc << std::endl;
      } else if (cmd == "describe") {
        std::cout << "ok " << live.at(name)->describe() << std::endl;
      } else if (cmd == "free") {
        live.erase(name);
        data.erase(name);
        std::cout << "ok" << std::endl;
      } else {
        throw std::runtime_error("unknown command '" + cmd + "'");
      }
    } catch (const std::out_of_range &) {
      std::cout << "err no layer set up for '" << name << "'" << std::endl;
    } catch (const std::exception &e) {
      std::string msg = e.what();
      for (auto &ch : msg)
        if (ch == '\n') ch = ' ';
      std::cout << "err " << msg << std::endl;
    }
  }
  return 0;
}

}  // namespace bench
