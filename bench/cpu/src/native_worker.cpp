// SPDX-License-Identifier: Apache-2.0
// recur (through its C ABI) or oneDNN's RNN primitives, driven over stdin (common.hpp). The driver
// starts one process per contender and thread count, so that neither library's threads share a
// process with the other's and each creates its work at the count it is measured at.
//
//   native_worker --threads N              serve contender "recur" (or "recur_<set>") or "onednn"
//   native_worker --kernels                print the kernel set librecur runs here
//   native_worker --mem NAME CELL B T F H STREAM CHECK_STEPS DIR   peak memory per phase
#include <dlfcn.h>
#include <omp.h>

#include <dnnl.hpp>
#include <recur/recur.h>

#include "common.hpp"

namespace {

using namespace bench;

// ---------------------------------------------------------------------------------------------
// recur

// Resolved at run time: the thread-count call and the kernel report are newer than some builds
// of the library, and a benchmark of an older build should still run (1 thread only).
using SetThreadsFn = recur_status (*)(recur_layer *, int32_t);
using KernelsFn = const char *(*)(void);

SetThreadsFn recur_set_threads_fn() {
  static auto fn = reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "recur_layer_set_num_threads"));
  return fn;
}

std::string recur_kernels() {
  auto fn = reinterpret_cast<KernelsFn>(dlsym(RTLD_DEFAULT, "recur_cpu_kernels"));
  return fn ? fn() : "unreported";
}

void ok(recur_status st, const char *what) {
  if (st != RECUR_OK)
    throw std::runtime_error(std::string("recur: ") + what + ": " + recur_status_string(st) + ": " +
                             recur_last_error());
}

class Recur final : public Contender {
 public:
  explicit Recur(const Spec &s) : s_(s) {
    recur_layer_options o;
    ok(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION), "options_init");
    o.type = s.cell == Cell::Lstm ? RECUR_LAYER_LSTM : RECUR_LAYER_GRU;
    o.dialect = RECUR_DIALECT_KERAS3;
    o.units = s.H;
    o.input_size = s.F;
    if (s.cell != Cell::Lstm) o.reset_after = s.cell == Cell::GruResetAfter ? 1 : 0;
    o.return_sequences = 1;
    o.seed = 1;
    ok(recur_layer_create(&layer_, &o), "layer_create");
    if (s.stream) ok(recur_state_create(&state_, layer_, s.B), "state_create");
    out_.resize(size_t(s.B) * s.T * s.H);
  }
  ~Recur() override {
    recur_state_destroy(state_);
    recur_layer_destroy(layer_);
  }

  // One tensor at a time, from the arrays the process holds (as from Keras's get_weights()): no
  // concatenated copy, which would count in recur's peak memory.
  void set_weights(const Data &d) override {
    const std::vector<float> *parts[3] = {&d.kernel, &d.recurrent, &d.bias};
    for (int i = 0; i < 3; ++i)
      ok(recur_layer_set_weight(layer_, i, parts[i]->data(), parts[i]->size(), nullptr, 0), "set_weight");
    x_ = d.x.data();
  }

  void set_threads(int n) override {
    if (n == threads_) return;
    SetThreadsFn fn = recur_set_threads_fn();
    if (!fn) {
      if (n == 1) return;  // the library's only behaviour before the call existed
      throw std::runtime_error("this librecur does not export recur_layer_set_num_threads");
    }
    ok(fn(layer_, n), "set_num_threads");
    threads_ = n;
  }

  void run() override {
    const size_t in_len = size_t(s_.B) * s_.T * s_.F;
    if (s_.stream)
      ok(recur_layer_forward_state(layer_, state_, x_, in_len, s_.T, nullptr, 0, out_.data(), out_.size()),
         "forward_state");
    else
      ok(recur_layer_forward(layer_, x_, in_len, s_.B, s_.T, nullptr, 0, nullptr, 0, 0, 0, out_.data(),
                             out_.size(), nullptr, 0),
         "forward");
  }

  std::string describe() const override { return "kernels=" + recur_kernels(); }

  std::vector<float> check(const Data &d) override {
    const int tc = s_.check_steps;
    std::vector<float> out(size_t(s_.B) * tc * s_.H);
    if (!s_.stream) {
      ok(recur_layer_forward(layer_, d.xc.data(), d.xc.size(), s_.B, tc, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                             out.size(), nullptr, 0),
         "forward");
      return out;
    }
    ok(recur_state_reset(state_), "state_reset");
    std::vector<float> xt(size_t(s_.B) * s_.F), ht(size_t(s_.B) * s_.H);
    for (int t = 0; t < tc; ++t) {
      gather_step(d.xc, s_.B, tc, s_.F, t, xt.data());
      ok(recur_layer_forward_state(layer_, state_, xt.data(), xt.size(), 1, nullptr, 0, ht.data(), ht.size()),
         "forward_state");
      scatter_step(ht.data(), s_.B, tc, s_.H, t, out);
    }
    return out;
  }

 private:
  Spec s_;
  recur_layer *layer_ = nullptr;
  recur_state *state_ = nullptr;
  const float *x_ = nullptr;
  std::vector<float> out_;
  int threads_ = 1;
};

// ---------------------------------------------------------------------------------------------
// oneDNN

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

class OneDnn final : public Contender {
 public:
  explicit OneDnn(const Spec &s) : s_(s), eng_(dnnl::engine::kind::cpu, 0), strm_(eng_) {
    const memory::dim B = s.B, T = s.T, F = s.F, H = s.H;
    const memory::dim G = gates(s.cell);
    // Keras's (B, T, F) is oneDNN's ntc; no transposition is needed on either side.
    const memory::desc src_md({T, B, F}, dt::f32, tag::ntc), dst_md({T, B, H}, dt::f32, tag::ntc);
    // A sequence call starts from zero states and returns only the sequence (an empty desc);
    // a streaming call reads and writes h (and c).
    const memory::desc iter_md = s.stream ? memory::desc({1, 1, B, H}, dt::f32, tag::ldnc) : memory::desc();
    const memory::desc wl_any({1, 1, F, G, H}, dt::f32, tag::any), wi_any({1, 1, H, G, H}, dt::f32, tag::any);
    const memory::dim bias_gates = s.cell == Cell::GruResetAfter ? 4 : G;
    const memory::desc bias_md({1, 1, bias_gates, H}, dt::f32, tag::ldgo);
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto dir = dnnl::rnn_direction::unidirectional_left2right;

    dnnl::primitive_desc_base pd;
    switch (s.cell) {
      case Cell::GruResetAfter: {
        dnnl::lbr_gru_forward::primitive_desc p(
            {prop, dir, src_md, iter_md, wl_any, wi_any, bias_md, dst_md, iter_md}, eng_);
        prim_ = dnnl::lbr_gru_forward(p);
        pd = p;
        break;
      }
      case Cell::GruResetBefore: {
        dnnl::gru_forward::primitive_desc p({prop, dir, src_md, iter_md, wl_any, wi_any, bias_md, dst_md, iter_md},
                                            eng_);
        prim_ = dnnl::gru_forward(p);
        pd = p;
        break;
      }
      case Cell::Lstm: {
        dnnl::lstm_forward::primitive_desc p(
            {prop, dir, src_md, iter_md, iter_md, wl_any, wi_any, bias_md, dst_md, iter_md, iter_md}, eng_);
        prim_ = dnnl::lstm_forward(p);
        pd = p;
        break;
      }
    }
    impl_ = pd.impl_info_str();
    wl_ = memory(pd.query_md(dnnl::query::weights_md, 0), eng_);
    wi_ = memory(pd.query_md(dnnl::query::weights_md, 1), eng_);
    bias_ = memory(bias_md, eng_);
    src_ = memory(src_md, eng_);
    dst_ = memory(dst_md, eng_);
    args_[0] = {{DNNL_ARG_SRC_LAYER, src_}, {DNNL_ARG_WEIGHTS_LAYER, wl_}, {DNNL_ARG_WEIGHTS_ITER, wi_},
                {DNNL_ARG_BIAS, bias_},     {DNNL_ARG_DST_LAYER, dst_}};
    if (s.stream) {
      // Two sets of state buffers: each call reads one and writes the other, and the next call
      // swaps them, so the state moves without a copy.
      const int n_states = s.cell == Cell::Lstm ? 2 : 1;
      for (int i = 0; i < 2 * n_states; ++i) states_.emplace_back(iter_md, eng_);
      args_[1] = args_[0];
      for (int k = 0; k < 2; ++k) {
        auto &a = args_[k];
        a[DNNL_ARG_SRC_ITER] = states_[k];
        a[DNNL_ARG_DST_ITER] = states_[1 - k];
        if (n_states == 2) {
          a[DNNL_ARG_SRC_ITER_C] = states_[2 + k];
          a[DNNL_ARG_DST_ITER_C] = states_[3 - k];
        }
      }
      zero_states();
    }
  }

  void set_weights(const Data &d) override {
    const memory::dim F = s_.F, H = s_.H, G = gates(s_.cell);
    // Keras's kernel (F, G*H) is oneDNN's ldigo, and the gate orders agree (GRU z,r,h = u,r,o;
    // LSTM i,f,c,o), so the user memories are the Keras buffers themselves.
    memory user_wl({{1, 1, F, G, H}, dt::f32, tag::ldigo}, eng_, const_cast<float *>(d.kernel.data()));
    memory user_wi({{1, 1, H, G, H}, dt::f32, tag::ldigo}, eng_, const_cast<float *>(d.recurrent.data()));
    dnnl::reorder(user_wl, wl_).execute(strm_, user_wl, wl_);
    dnnl::reorder(user_wi, wi_).execute(strm_, user_wi, wi_);
    strm_.wait();
    auto *b = static_cast<float *>(bias_.get_data_handle());
    if (s_.cell == Cell::GruResetAfter) {
      // Keras (2, 3H) = [input bias; recurrent bias]. LBR-GRU adds its 4th bias inside r*(...):
      // u and r take the sum of both biases, o the input bias, the 4th the recurrent h bias.
      const float *bx = d.bias.data(), *bh = d.bias.data() + 3 * H;
      for (memory::dim j = 0; j < 2 * H; ++j) b[j] = bx[j] + bh[j];
      std::copy_n(bx + 2 * H, H, b + 2 * H);
      std::copy_n(bh + 2 * H, H, b + 3 * H);
    } else {
      std::copy(d.bias.begin(), d.bias.end(), b);
    }
    src_.set_data_handle(const_cast<float *>(d.x.data()));
  }

  void set_threads(int n) override {
    // oneDNN here is built on OpenMP, and its primitive was created at the process's count.
    if (omp_get_max_threads() != n)
      throw std::runtime_error("oneDNN's primitive was created at " + std::to_string(omp_get_max_threads()) +
                               " OpenMP thread(s), not " + std::to_string(n));
  }

  void run() override {
    prim_.execute(strm_, args_[flip_]);
    strm_.wait();
    if (s_.stream) flip_ ^= 1;
  }

  std::vector<float> check(const Data &d) override {
    const int tc = s_.check_steps;
    std::vector<float> out(size_t(s_.B) * tc * s_.H);
    if (!s_.stream) {
      src_.set_data_handle(const_cast<float *>(d.xc.data()));
      run();
      src_.set_data_handle(const_cast<float *>(d.x.data()));
      const auto *y = static_cast<const float *>(dst_.get_data_handle());
      std::copy_n(y, out.size(), out.data());
      return out;
    }
    zero_states();
    std::vector<float> xt(size_t(s_.B) * s_.F);
    src_.set_data_handle(xt.data());
    for (int t = 0; t < tc; ++t) {
      gather_step(d.xc, s_.B, tc, s_.F, t, xt.data());
      run();
      scatter_step(static_cast<const float *>(dst_.get_data_handle()), s_.B, tc, s_.H, t, out);
    }
    src_.set_data_handle(const_cast<float *>(d.x.data()));
    return out;
  }

  std::string describe() const override { return "impl=" + impl_ + " isa=" + isa_name(dnnl_get_effective_cpu_isa()); }

  // The instruction set oneDNN's JIT code may use (ONEDNN_MAX_CPU_ISA caps it).
  static std::string isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
      case dnnl_cpu_isa_sse41: return "sse41";
      case dnnl_cpu_isa_avx: return "avx";
      case dnnl_cpu_isa_avx2: return "avx2";
      case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
      case dnnl_cpu_isa_avx512_core: return "avx512_core";
      case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
      case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
      case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
      default: return "other(" + std::to_string(static_cast<int>(isa)) + ")";
    }
  }

 private:
  void zero_states() {
    for (auto &m : states_) {
      auto *p = static_cast<float *>(m.get_data_handle());
      std::fill_n(p, size_t(s_.B) * s_.H, 0.0f);
    }
    flip_ = 0;
  }

  Spec s_;
  dnnl::engine eng_;
  dnnl::stream strm_;
  dnnl::primitive prim_;
  std::string impl_;
  memory wl_, wi_, bias_, src_, dst_;
  std::vector<memory> states_;
  std::unordered_map<int, memory> args_[2];
  int flip_ = 0;
};

std::unique_ptr<Contender> make(const std::string &name, const Spec &s) {
  // "recur_avx2" and the like: recur on another kernel set (the driver sets RECUR_CPU_KERNELS).
  if (name == "recur" || name.rfind("recur_", 0) == 0) return std::make_unique<Recur>(s);
  // "onednn_avx2": oneDNN capped to an instruction set (the driver sets ONEDNN_MAX_CPU_ISA).
  if (name == "onednn" || name.rfind("onednn_", 0) == 0) return std::make_unique<OneDnn>(s);
  throw std::runtime_error("this process runs recur and onednn, not '" + name + "'");
}

}  // namespace

int main(int argc, char **argv) {
  try {
    if (argc >= 2 && std::string(argv[1]) == "--kernels") {
      std::printf("%s\n", recur_kernels().c_str());
      return 0;
    }
    if (argc >= 2 && std::string(argv[1]) == "--mem") {
      std::string rest;
      for (int i = 3; i < argc; ++i) rest += std::string(argv[i]) + " ";
      std::istringstream args(rest);
      omp_set_num_threads(1);  // the probe measures one thread (recur's default)
      return memory_probe(make, argc >= 3 ? argv[2] : "", args);
    }
    const int threads = threads_arg(argc, argv);
    // Before any primitive exists: oneDNN sizes its work for the count at creation.
    omp_set_num_threads(threads);
    const dnnl_version_t *v = dnnl_version();
    std::ostringstream info;
    info << "recur=" << recur_version_string() << " recur_kernels=" << recur_kernels()
         << " recur_set_num_threads=" << (recur_set_threads_fn() ? "yes" : "no") << " onednn=" << v->major << "."
         << v->minor << "." << v->patch << " onednn_cpu_runtime=" << (v->cpu_runtime == DNNL_RUNTIME_OMP ? "omp" : "other");
    return serve(make, info.str(), threads);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "native_worker: %s\n", e.what());
    return 1;
  }
}
