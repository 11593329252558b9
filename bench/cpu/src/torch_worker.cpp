// SPDX-License-Identifier: Apache-2.0
// PyTorch's CPU GRU and LSTM through libtorch (ATen's at::gru / at::lstm, the ops nn.GRU and
// nn.LSTM call), driven over stdin (common.hpp). Only libtorch_cpu and libc10 are linked, so the
// CUDA build of the wheel serves as well as a CPU one.
//
//   torch_worker --threads N              serve contender "torch" at N threads
//   torch_worker --mem torch CELL B T F H STREAM CHECK_STEPS DIR   peak memory per phase
//
// PyTorch has two CPU routes for these ops, its own kernels and oneDNN (mkldnn), and which is
// faster depends on the shape: the first timed call at each thread count tries both and keeps the
// faster, and setup's reply and the check cover both.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/headeronly/version.h>

#include "common.hpp"

namespace {

using namespace bench;

// Keras columns of a gate block, reordered: torch's GRU gates are r,z,n (Keras z,r,h).
std::vector<int> torch_gate_order(Cell c) {
  if (c == Cell::Lstm) return {0, 1, 2, 3};  // i,f,g,o = Keras i,f,c,o
  return {1, 0, 2};
}

class Torch final : public Contender {
 public:
  explicit Torch(const Spec &s) : s_(s) {
    c10::InferenceMode guard;
    const int64_t G = gates(s.cell), H = s.H, F = s.F;
    const auto f32 = at::TensorOptions().dtype(at::kFloat);
    params_ = {at::empty({G * H, F}, f32), at::empty({G * H, H}, f32), at::empty({G * H}, f32),
               at::empty({G * H}, f32)};
    h_ = at::zeros({1, s.B, H}, f32);
    if (s.cell == Cell::Lstm) c_ = at::zeros({1, s.B, H}, f32);
  }

  void set_weights(const Data &d) override {
    c10::InferenceMode guard;
    const int64_t G = gates(s_.cell), H = s_.H, F = s_.F;
    const auto order = torch_gate_order(s_.cell);
    auto k = at::from_blob(const_cast<float *>(d.kernel.data()), {F, G * H});
    auto r = at::from_blob(const_cast<float *>(d.recurrent.data()), {H, G * H});
    std::vector<at::Tensor> kg, rg, bi, bh;
    const float *bias = d.bias.data();
    for (int g : order) {
      // torch's weight_ih is (G*H, F): the transposed Keras kernel, gate blocks reordered.
      kg.push_back(k.slice(1, g * H, (g + 1) * H).t());
      rg.push_back(r.slice(1, g * H, (g + 1) * H).t());
      bi.push_back(at::from_blob(const_cast<float *>(bias + g * H), {H}));
      if (s_.cell == Cell::GruResetAfter)
        bh.push_back(at::from_blob(const_cast<float *>(bias + (3 + g) * H), {H}));
    }
    params_[0].copy_(at::cat(kg, 0));
    params_[1].copy_(at::cat(rg, 0));
    params_[2].copy_(at::cat(bi, 0));
    // torch's GRU is Keras's reset_after=True; b_hh is the recurrent bias (zero for the LSTM,
    // whose two biases only add up).
    if (s_.cell == Cell::GruResetAfter)
      params_[3].copy_(at::cat(bh, 0));
    else
      params_[3].zero_();
    x_ = at::from_blob(const_cast<float *>(d.x.data()), {s_.B, s_.T, s_.F});
  }

  void set_threads(int n) override {
    if (n != threads_) {
      at::set_num_threads(n);
      threads_ = n;
    }
    if (chosen_.count(n) == 0) choose_route(n);
    at::globalContext().setUserEnabledMkldnn(chosen_[n]);
  }

  void run() override { forward(x_); }

  // Both routes' outputs, one after the other (2 x (B, check_steps, H)): each is checked
  // against the reference, since either may be the one timed.
  std::vector<float> check(const Data &d) override {
    const bool before = at::globalContext().userEnabledMkldnn();
    std::vector<float> out;
    for (int m = 0; m < 2; ++m) {
      at::globalContext().setUserEnabledMkldnn(m == 1);
      const auto o = check_route(d);
      out.insert(out.end(), o.begin(), o.end());
    }
    at::globalContext().setUserEnabledMkldnn(before);
    return out;
  }

  std::string describe() const override {
    auto it = chosen_.find(threads_);
    return std::string("route=") + (it == chosen_.end() ? "default" : it->second ? "mkldnn" : "native");
  }

 private:
  at::Tensor forward(const at::Tensor &x) {
    c10::InferenceMode guard;
    if (s_.cell == Cell::Lstm) {
      auto [y, h, c] = at::lstm(x, {h_, c_}, params_, true, 1, 0.0, false, false, true);
      if (s_.stream) {
        h_ = h;
        c_ = c;
      }
      return y;
    }
    auto [y, h] = at::gru(x, h_, params_, true, 1, 0.0, false, false, true);
    if (s_.stream) h_ = h;
    return y;
  }

  void reset_state() {
    h_.zero_();
    if (c_.defined()) c_.zero_();
  }

  std::vector<float> check_route(const Data &d) {
    c10::InferenceMode guard;
    const int tc = s_.check_steps;
    auto xc = at::from_blob(const_cast<float *>(d.xc.data()), {s_.B, tc, s_.F});
    std::vector<float> out(size_t(s_.B) * tc * s_.H);
    reset_state();
    if (!s_.stream) {
      auto y = forward(xc).contiguous();
      std::copy_n(y.data_ptr<float>(), out.size(), out.data());
      return out;
    }
    for (int t = 0; t < tc; ++t) {
      auto y = forward(xc.slice(1, t, t + 1).contiguous()).contiguous();
      scatter_step(y.data_ptr<float>(), s_.B, tc, s_.H, t, out);
    }
    reset_state();
    return out;
  }

  // Times each route for at least 50 ms (and 2 calls) and keeps the faster at this count.
  void choose_route(int n) {
    double best[2];
    for (int m = 0; m < 2; ++m) {
      at::globalContext().setUserEnabledMkldnn(m == 1);
      forward(x_);  // warm-up: the first call of a route builds its kernels
      long iters = 0;
      const double t0 = now_s();
      double dt = 0;
      do {
        forward(x_);
        ++iters;
        dt = now_s() - t0;
      } while (dt < 0.05 || iters < 2);
      best[m] = dt / iters;
    }
    chosen_[n] = best[1] < best[0];
  }

  Spec s_;
  std::vector<at::Tensor> params_;
  at::Tensor h_, c_, x_;
  int threads_ = -1;
  std::map<int, bool> chosen_;  // threads -> mkldnn route
};

std::unique_ptr<Contender> make(const std::string &name, const Spec &s) {
  if (name != "torch") throw std::runtime_error("this process runs torch, not '" + name + "'");
  return std::make_unique<Torch>(s);
}

}  // namespace

int main(int argc, char **argv) {
  try {
    if (argc >= 2 && std::string(argv[1]) == "--mem") {
      std::string rest;
      for (int i = 3; i < argc; ++i) rest += std::string(argv[i]) + " ";
      std::istringstream args(rest);
      at::set_num_threads(1);  // the probe measures one thread, on torch's default route
      return memory_probe(make, argc >= 3 ? argv[2] : "", args);
    }
    const int threads = threads_arg(argc, argv);
    at::set_num_threads(threads);
    std::ostringstream info;
    info << "torch=" << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH
         << " mkldnn_available=" << (at::hasMKLDNN() ? "yes" : "no");
    return serve(make, info.str(), threads);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "torch_worker: %s\n", e.what());
    return 1;
  }
}
