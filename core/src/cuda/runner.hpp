// SPDX-License-Identifier: Apache-2.0
// The sequence runner of route KERNEL, written once against an execution policy so the same code
// runs on CUDA (cuda_exec.cuh) and on the host (host_exec.hpp, the emulator and the unit tests).
//
// A policy `Exec` provides:
//   void* scratch(size_t bytes)             per-thread device scratch, valid for the current call
//   void* host_staging(size_t bytes)        per-thread (pinned) host block for assembling uploads
//   void copy(void* dst, const void* src, size_t bytes, Copy kind)
//   void gemm(m, n, k, a, lda, b, ldb, c, ldc)   row-major C (m x n) = A (m x k) @ B (k x n)
//   template <class F> void for_each(int64_t n, const F& f, int threads = 256)
//                                            f(i) for i in [0, n), any order (threads: per block)
//   template <class S> void fused_step(const S& f, int64_t B, int threads)
//                                            a FusedStep pass over B rows: f(i) for every element,
//                                            or a kernel that computes the same sums in the same
//                                            order (the CUDA policy tiles the passes that neither
//                                            project the input nor add up split sums)
//   void sync()                              waits for the work ordered so far
// Functors passed to for_each are trivially copyable structs with a RECUR_HD operator().
//
// The algorithm is the CPU backend's (core/src/cpu/cpu_backend.cpp, core/src/cell.cpp) with the
// same association order everywhere: one projection GEMM per input over all rows (or chunks of
// timesteps), then per step the recurrent GEMM(s), element-wise gate kernels and the mask select.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "gpu_common.hpp"
#include "gpu_math.hpp"
#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

// What a layer computes, checked once from the ABI descriptor.
struct LayerSpec {
  int32_t cell = RECUR_GPU_CELL_GRU;
  bool reset_after = false;
  bool use_bias = false;
  bool bias_in_projection = false;
  int64_t units = 0;
  int64_t input_size = 0;
  int32_t act = kTanh, act_hs = kKeras3, ract = kSigmoid, ract_hs = kKeras3;

  bool gru() const { return cell == RECUR_GPU_CELL_GRU; }
  bool lstm() const { return cell == RECUR_GPU_CELL_LSTM; }
  bool simple_rnn() const { return cell == RECUR_GPU_CELL_SIMPLE_RNN; }
  int gates() const { return simple_rnn() ? 1 : (gru() ? 3 : 4); }
  int64_t width() const { return gates() * units; }
  int num_states() const { return lstm() ? 2 : 1; }
};

inline LayerSpec make_spec(const recur_gpu_layer_desc& d) {
  check(d.cell == RECUR_GPU_CELL_LSTM || d.cell == RECUR_GPU_CELL_GRU || d.cell == RECUR_GPU_CELL_SIMPLE_RNN,
        "layer_create: cell must be RECUR_GPU_CELL_LSTM, _GRU or _SIMPLE_RNN");
  check(d.units > 0 && d.input_size > 0, "layer_create: units and input_size must be positive");
  check(d.activation >= 0 && d.activation < kActCount && d.recurrent_activation >= 0 &&
            d.recurrent_activation < kActCount,
        "layer_create: unknown activation code");
  check(d.activation_hard_sigmoid >= 0 && d.activation_hard_sigmoid < kHardSigmoidFormCount &&
            d.recurrent_activation_hard_sigmoid >= 0 && d.recurrent_activation_hard_sigmoid < kHardSigmoidFormCount,
        "layer_create: unknown hard_sigmoid variant");
  LayerSpec s;
  s.cell = d.cell;
  s.reset_after = s.gru() && d.reset_after != 0;
  s.use_bias = d.use_bias != 0;
  // SimpleRNN always adds its bias to x@K (Keras: (x@K + b) + h@U).
  s.bias_in_projection = s.use_bias && (d.bias_in_projection != 0 || s.simple_rnn());
  s.units = d.units;
  s.input_size = d.input_size;
  s.act = d.activation;
  s.act_hs = d.activation_hard_sigmoid;
  s.ract = d.recurrent_activation;
  s.ract_hs = d.recurrent_activation_hard_sigmoid;
  return s;
}

// Device pointers to the weights (CellParams's layout).
struct DeviceWeights {
  const float* kernel = nullptr;          // (F, W)
  const float* recurrent = nullptr;       // (u, W)
  const float* input_bias = nullptr;      // (W) or null
  const float* recurrent_bias = nullptr;  // (W) or null: GRU reset_after with bias
};

// One run, every pointer a device pointer except `inputs` (a host array of device pointers).
struct SequenceArgs {
  const float* const* inputs = nullptr;
  int num_inputs = 1;
  int64_t batch = 0;
  int64_t timesteps = 0;
  bool time_major = false;
  bool go_backwards = false;
  const uint8_t* mask = nullptr;             // (rows) or null
  bool zero_output_for_mask = false;
  bool unrolled_mask_quirk = false;
  const float* recurrent_masks = nullptr;    // G x (B, u) or null
  float* states = nullptr;                   // ns x (B, u), in and out
  const float* carried_in = nullptr;         // (B, u) or null (zeros); may alias carried_out
  float* carried_out = nullptr;
  float* sequence_output = nullptr;
  float* last_output = nullptr;
};

// Multiply-adds per step up to which a step is one FusedStep pass instead of the recurrent GEMM
// and the gate kernels: steps that small are bound by launches and round trips through memory,
// not by arithmetic, and the ordered sums (gpu_math.hpp) round like TensorFlow's CPU products.
// RECUR_CUDA_FUSED_WORK=N moves the limit (for measuring; read once).
constexpr int64_t kFusedStepWork = int64_t(1) << 22;

inline int64_t fused_step_work() {
  static const int64_t limit = env_limit("RECUR_CUDA_FUSED_WORK", kFusedStepWork);
  return limit;
}

// How a run's steps go: one fused pass per step (fused), with the step's input projected in it
// too (fuse_projection: one-step runs); and, for a batch too small to keep the GPU's memory
// system busy, each sum split into chunks of kSplitChunk terms that separate threads add up (in
// order within a chunk, the chunks then in order), so a step waits on memory a few times rather
// than once per 16 terms. Sums of up to kSplitChunk terms are not split.
constexpr int64_t kSplitChunk = 64;

struct StepPlan {
  bool fused = false;
  bool fuse_projection = false;
  int64_t chunks = 0;  // 0: sums not split
};

inline StepPlan plan_steps(const LayerSpec& s, int64_t B, int64_t T, int num_inputs, bool masked_rec) {
  StepPlan p;
  const int64_t u = s.units, W = s.width(), F = s.input_size;
  p.fused = !masked_rec && !is_row_activation(s.act) && !is_row_activation(s.ract) && B * W * u <= fused_step_work();
  p.fuse_projection = p.fused && T == 1 && num_inputs == 1 && B * W * (u + F) <= fused_step_work();
  const int64_t k = std::max(u, p.fuse_projection ? F : int64_t(0));
  // GRU reset_after=False's two passes are not split.
  if (p.fused && !(s.gru() && !s.reset_after) && B * u <= 4096 && k > kSplitChunk)
    p.chunks = (k + kSplitChunk - 1) / kSplitChunk;
  return p;
}

// The runner's scratch for one run, carved from the policy's scratch block.
struct RunBuffers {
  float* proj = nullptr;      // (chunk*B or B*T, W)
  float* gathered = nullptr;  // num_inputs x (chunk*B, F), chunked runs only
  float* states[2] = {nullptr, nullptr};  // ping-pong, ns x (B, u) each
  float* out_t = nullptr;     // (B, u)
  float* pre = nullptr;       // (B, W)
  float* cand = nullptr;      // (B, u)
  float* masked_h = nullptr;  // G x (B, u), recurrent dropout only
  float* partials = nullptr;  // 2 x (B, chunks, W): split sums of x@K and h@U
  int64_t chunk = 0;          // timesteps projected at once
  StepPlan plan;
};

// Timesteps projected at once: the CPU backend's rule, with the policy's budget in floats.
inline int64_t projection_chunk(int64_t B, int64_t T, int64_t W, int64_t budget) {
  return std::max<int64_t>(1, std::min<int64_t>(T, budget / std::max<int64_t>(1, B * W)));
}

inline RunBuffers carve_run(Arena& a, const LayerSpec& s, int64_t B, int64_t T, int num_inputs, bool masked_rec,
                            int64_t budget) {
  RunBuffers r;
  const int64_t u = s.units, W = s.width();
  r.chunk = projection_chunk(B, T, W, budget);
  const bool chunked = r.chunk < T;
  r.proj = a.take<float>((chunked ? r.chunk : T) * B * W);
  if (chunked) r.gathered = a.take<float>(num_inputs * r.chunk * B * s.input_size);
  r.states[0] = a.take<float>(s.num_states() * B * u);
  r.states[1] = a.take<float>(s.num_states() * B * u);
  r.out_t = a.take<float>(B * u);
  r.pre = a.take<float>(B * W);
  r.cand = a.take<float>(B * u);
  if (masked_rec) r.masked_h = a.take<float>(s.gates() * B * u);
  r.plan = plan_steps(s, B, T, num_inputs, masked_rec);
  if (r.plan.chunks) r.partials = a.take<float>(2 * B * r.plan.chunks * W);
  return r;
}

// ---- kernels (functors) ---------------------------------------------------------------------

struct FillZero {
  float* p;
  RECUR_HD void operator()(int64_t i) const { p[i] = 0.0f; }
};

// Copies timesteps [k0, k0+n) of one input, in processing order, into time-major rows jj*B + b.
struct GatherChunk {
  const float* x;
  float* dst;
  int64_t B, T, F, k0;
  bool time_major, go_backwards;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t f = i % F, rb = i / F, b = rb % B, jj = rb / B;
    const int64_t tt = go_backwards ? T - 1 - (k0 + jj) : k0 + jj;
    const int64_t row = time_major ? tt * B + b : b * T + tt;
    dst[i] = x[row * F + f];
  }
};

// masked_h[g] = h ⊙ mask_g for every gate (Keras implementation 1 recurrent dropout).
struct MaskH {
  const float* h;
  const float* masks;
  float* out;
  int64_t n;  // B*u
  RECUR_HD void operator()(int64_t i) const { out[i] = h[i % n] * masks[i]; }
};

// Everything a step's element-wise kernels read and write.
struct StepCtx {
  int64_t u, W;
  const float* xp;        // projected inputs of row b at xp + b*xp_stride
  int64_t xp_stride;
  const float* b_in;      // added to xp (bias in the projection), or null
  const float* b_late;    // LSTM implementation 2: added after x@K + h@U, or null
  const float* b_rec;     // GRU reset_after recurrent bias, or null
  float* pre;             // (B, W): recurrent products in, gates out
  float* cand;            // (B, u)
  const float* h;         // current state
  const float* c;
  float* h_next;
  float* c_next;
  const float* mask_h;    // h ⊙ mask_h for GRU reset_after=False's (r ⊙ h) @ U_h, or null
  const uint8_t* mask;    // null: every row valid; else row b valid iff mask[mask_base + b*mask_stride]
  int64_t mask_base, mask_stride;
  bool zero_masked;
  const float* prev_out;  // the output a masked row repeats (out_t, or the carried output at step 0)
  float* out_t;           // (B, u): the output of this step (a masked row repeats or zeroes it)
  float* seq_out;         // row b of this step at seq_out + b*seq_stride, or null
  int64_t seq_stride;
  int32_t act, act_hs, ract, ract_hs;

  RECUR_HD float xp_at(int64_t b, int64_t col) const {
    const float x = xp[b * xp_stride + col];
    return b_in ? x + b_in[col] : x;
  }
  // Writes the new state (or keeps the old one on a masked row) and the step's output.
  RECUR_HD void finish(int64_t i, float h_new, float c_new) const {
    const int64_t b = i / u;
    if (!mask || mask[mask_base + b * mask_stride]) {
      h_next[i] = h_new;
      if (c_next) c_next[i] = c_new;
      out_t[i] = h_new;
    } else {
      h_next[i] = h[i];
      if (c_next) c_next[i] = c[i];
      out_t[i] = zero_masked || !prev_out ? 0.0f : prev_out[i];
    }
    if (seq_out) seq_out[b * seq_stride + i % u] = out_t[i];
  }
  // An LSTM step from its gates' pre-activations v (i, f, c, o): c', h', then finish.
  RECUR_HD void lstm_from(int64_t i, const float* v) const {
    const float ig = activate(ract, ract_hs, v[0]);
    const float fg = activate(ract, ract_hs, v[1]);
    const float gg = activate(act, act_hs, v[2]);
    const float og = activate(ract, ract_hs, v[3]);
    const float c_new = lstm_cell(fg, c[i], ig, gg);
    finish(i, lstm_hidden(og, activate(act, act_hs, c_new)), c_new);
  }
};

// GRU z and r: act((x@K + b_in) + (h@U + b_rec)). `fused` (reset_after, both activations
// element-wise) goes on to the candidate and the update in the same pass.
struct GruGates {
  StepCtx s;
  bool fused;
  bool reset_h;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    float* pre = s.pre + b * s.W;
    float rz = pre[j], rr = pre[s.u + j];
    if (s.b_rec) {
      rz = rz + s.b_rec[j];
      rr = rr + s.b_rec[s.u + j];
    }
    float z = s.xp_at(b, j) + rz;
    float r = s.xp_at(b, s.u + j) + rr;
    if (!is_row_activation(s.ract)) {
      z = activate(s.ract, s.ract_hs, z);
      r = activate(s.ract, s.ract_hs, r);
    }
    if (fused) {
      float rh = pre[2 * s.u + j];
      if (s.b_rec) rh = rh + s.b_rec[2 * s.u + j];
      const float cand = activate(s.act, s.act_hs, s.xp_at(b, 2 * s.u + j) + r * rh);
      s.finish(i, gru_update(z, s.h[i], cand), 0.0f);
      return;
    }
    pre[j] = z;
    pre[s.u + j] = r;
    // reset_after=False with element-wise gates: r ⊙ (h ⊙ mask_h), the left operand of U_h.
    if (reset_h) s.cand[i] = r * (s.mask_h ? s.h[i] * s.mask_h[i] : s.h[i]);
  }
};

// GRU reset_after=False: cand (B, u) = r ⊙ (h ⊙ mask_h), the left operand of the U_h product.
struct GruResetH {
  StepCtx s;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    const float h = s.mask_h ? s.h[i] * s.mask_h[i] : s.h[i];
    s.cand[i] = s.pre[b * s.W + s.u + j] * h;
  }
};

// GRU candidate from activated z, r in pre: reset_after ĥ = act(xh + r ⊙ (h@U_h + b_rec_h)),
// else ĥ = act(xh + (r ⊙ h)@U_h) with the product already in pre's h block. With an element-wise
// activation it finishes the step; otherwise it leaves the pre-activation in cand.
struct GruCandidate {
  StepCtx s;
  bool reset_after;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    const float* pre = s.pre + b * s.W;
    float rh = pre[2 * s.u + j];
    if (reset_after) {
      if (s.b_rec) rh = rh + s.b_rec[2 * s.u + j];
      rh = pre[s.u + j] * rh;
    }
    const float x = s.xp_at(b, 2 * s.u + j) + rh;
    if (is_row_activation(s.act)) {
      s.cand[i] = x;
      return;
    }
    s.finish(i, gru_update(pre[j], s.h[i], activate(s.act, s.act_hs, x)), 0.0f);
  }
};

struct GruFinal {
  StepCtx s;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    s.finish(i, gru_update(s.pre[b * s.W + j], s.h[i], s.cand[i]), 0.0f);
  }
};

// SimpleRNN: h' = act((x@K + b) + h@U). `fused` (an element-wise activation) finishes the step;
// otherwise the pre-activation stays in pre for the row pass and SimpleRnnFinal finishes.
struct SimpleRnnStep {
  StepCtx s;
  bool fused;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    float* pre = s.pre + b * s.W;
    const float v = s.xp_at(b, j) + pre[j];
    if (fused) {
      s.finish(i, activate(s.act, s.act_hs, v), 0.0f);
      return;
    }
    pre[j] = v;
  }
};

struct SimpleRnnFinal {
  StepCtx s;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    s.finish(i, s.pre[b * s.W + j], 0.0f);
  }
};

// LSTM gates: (x@K [+ b]) + h@U [+ b]. `fused` (both activations element-wise) goes on to c', h'.
struct LstmGates {
  StepCtx s;
  bool fused;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    float* pre = s.pre + b * s.W;
    float g4[4];
    for (int g = 0; g < 4; ++g) {
      const int64_t col = g * s.u + j;
      float v = s.xp_at(b, col) + pre[col];
      if (s.b_late) v = v + s.b_late[col];
      g4[g] = v;
    }
    if (fused) {
      s.lstm_from(i, g4);
      return;
    }
    for (int g = 0; g < 4; ++g) pre[g * s.u + j] = g4[g];
  }
};

// LSTM c' from activated gates in pre; finishes the step unless act(c') is row-wise, in which
// case c' goes to cand for the row pass and LstmFinal finishes.
struct LstmCell {
  StepCtx s;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    const float* pre = s.pre + b * s.W;
    const float c_new = lstm_cell(pre[s.u + j], s.c[i], pre[j], pre[2 * s.u + j]);
    if (is_row_activation(s.act)) {
      s.cand[i] = c_new;
      return;
    }
    s.finish(i, lstm_hidden(pre[3 * s.u + j], activate(s.act, s.act_hs, c_new)), c_new);
  }
};

// LSTM h' = o ⊙ act(c') after the row pass; cand holds act(c'), and c' is recomputed (cheap,
// and the exact same expression) so the mask select keeps one code path.
struct LstmFinal {
  StepCtx s;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u;
    const float* pre = s.pre + b * s.W;
    const float c_new = lstm_cell(pre[s.u + j], s.c[i], pre[j], pre[2 * s.u + j]);
    s.finish(i, lstm_hidden(pre[3 * s.u + j], s.cand[i]), c_new);
  }
};

// Pass 1 of a split step: the sum over terms [c*L, (c+1)*L) of column col of x@K (when x) and
// h@U for row b, in order, into partials (x's at px, h's at ph, each (B, chunks, W)).
struct StepPartials {
  const float* x;  // (B, F) or null
  const float* K;
  const float* h;  // (B, u)
  const float* U;
  int64_t F, u, W, chunks;
  float* px;
  float* ph;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t col = i % W, c = (i / W) % chunks, b = i / (W * chunks);
    const int64_t k0 = c * kSplitChunk;
    const int64_t cols[1] = {col};
    float xs[1] = {0.0f}, hs[1] = {0.0f};
    // Terms of this chunk in each sum (x and h may have different lengths; none past the end).
    const int64_t nh = u <= k0 ? 0 : (u - k0 < kSplitChunk ? u - k0 : kSplitChunk);
    if (x) {
      const int64_t nx = F <= k0 ? 0 : (F - k0 < kSplitChunk ? F - k0 : kSplitChunk);
      ordered_dots2<1>(x + b * F + k0, nx, K + k0 * W, h + b * u + k0, nh, U + k0 * W, W, cols, xs, hs);
      px[i] = xs[0];
    } else {
      ordered_dots1<1>(h + b * u + k0, nh, U + k0 * W, W, cols, hs);
    }
    ph[i] = hs[0];
  }
};

// A whole step of a small batch in one pass: thread (b, j) sums gate columns j + g*u of h@U (and,
// for a one-step run, of x@K too, so the input needs no projection launch), each over k in order,
// then applies the gates and writes the new state and output. Keras's association is kept: the
// two sums are separate and added as (x@K + b) + h@U. GRU reset_after=False needs r of every unit
// before (r ⊙ h)@U_h, so it takes two passes: phase 1 writes z to pre and r ⊙ h to cand, phase 2
// sums the candidate's product and finishes. Element-wise activations only.
struct FusedStep {
  StepCtx s;
  const float* U;  // (u, W)
  const float* x;  // (B, F) this step's inputs, or null: the projection is in s.xp
  const float* K;  // (F, W)
  int64_t F;
  int32_t cell;
  bool reset_after;
  int phase;  // 0: the whole step; 1, 2: GRU reset_after=False's two passes
  const float* px = nullptr;  // split sums (StepPartials) to add up instead, or null
  const float* ph = nullptr;
  int64_t chunks = 0;

  // The sums this pass takes: how many gate columns, the first one's offset (the others follow u
  // apart) and the left operand of the recurrent product.
  RECUR_HD int gates() const {
    if (cell == RECUR_GPU_CELL_SIMPLE_RNN || phase == 2) return 1;
    if (cell == RECUR_GPU_CELL_LSTM) return 4;
    return phase == 1 ? 2 : 3;
  }
  RECUR_HD int64_t first_column() const { return phase == 2 ? 2 * s.u : 0; }
  RECUR_HD const float* left() const { return phase == 2 ? s.cand : s.h; }

  // The chunks' partial sums of one column, added in order.
  RECUR_HD float combine(const float* p, int64_t b, int64_t col) const {
    const float* at = p + b * chunks * s.W + col;
    float acc = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) acc = acc + at[c * s.W];
    return acc;
  }

  // xs: the step's input term of each column (bias in the projection included).
  RECUR_HD float input_term(int64_t b, int64_t col, float projected) const {
    if (!x && !px) return s.xp_at(b, col);
    return s.b_in ? projected + s.b_in[col] : projected;
  }

  template <int G>
  RECUR_HD void sums(int64_t b, const int64_t* col, float* xs, float* hs) const {
    for (int g = 0; g < G; ++g) hs[g] = 0.0f;
    if (ph) {
      for (int g = 0; g < G; ++g) {
        hs[g] = combine(ph, b, col[g]);
        xs[g] = input_term(b, col[g], px ? combine(px, b, col[g]) : 0.0f);
      }
      return;
    }
    if (x) {
      for (int g = 0; g < G; ++g) xs[g] = 0.0f;
      ordered_dots2<G>(x + b * F, F, K, left() + b * s.u, s.u, U, s.W, col, xs, hs);
      for (int g = 0; g < G; ++g) xs[g] = input_term(b, col[g], xs[g]);
    } else {
      ordered_dots1<G>(left() + b * s.u, s.u, U, s.W, col, hs);
      for (int g = 0; g < G; ++g) xs[g] = input_term(b, col[g], 0.0f);
    }
  }

  // The gates of element i (row b, unit j) from its sums: xs and hs hold gates() values.
  RECUR_HD void finish_from(int64_t i, const float* xs, const float* hs) const {
    const int64_t b = i / s.u, j = i % s.u, u = s.u;
    if (cell == RECUR_GPU_CELL_SIMPLE_RNN) {
      s.finish(i, activate(s.act, s.act_hs, xs[0] + hs[0]), 0.0f);
    } else if (cell == RECUR_GPU_CELL_LSTM) {
      float v[4];
      for (int g = 0; g < 4; ++g) {
        v[g] = xs[g] + hs[g];
        if (s.b_late) v[g] = v[g] + s.b_late[g * u + j];
      }
      s.lstm_from(i, v);
    } else if (phase == 2) {
      // GRU reset_after=False: ĥ = act(xh + (r ⊙ h)@U_h), with z from phase 1 in pre.
      const float cand = activate(s.act, s.act_hs, xs[0] + hs[0]);
      s.finish(i, gru_update(s.pre[b * s.W + j], s.h[i], cand), 0.0f);
    } else {
      float rz = hs[0], rr = hs[1];
      if (s.b_rec) {
        rz = rz + s.b_rec[j];
        rr = rr + s.b_rec[u + j];
      }
      const float z = activate(s.ract, s.ract_hs, xs[0] + rz);
      const float r = activate(s.ract, s.ract_hs, xs[1] + rr);
      if (phase == 1) {
        s.pre[b * s.W + j] = z;
        s.cand[i] = r * s.h[i];
        return;
      }
      float rh = hs[2];
      if (s.b_rec) rh = rh + s.b_rec[2 * u + j];
      const float cand = activate(s.act, s.act_hs, xs[2] + r * rh);
      s.finish(i, gru_update(z, s.h[i], cand), 0.0f);
    }
  }

  RECUR_HD void operator()(int64_t i) const {
    const int64_t b = i / s.u, j = i % s.u, u = s.u, c0 = first_column();
    const int64_t col[4] = {c0 + j, c0 + u + j, c0 + 2 * u + j, c0 + 3 * u + j};
    float xs[4] = {}, hs[4] = {};
    switch (gates()) {
      case 1: sums<1>(b, col, xs, hs); break;
      case 2: sums<2>(b, col, xs, hs); break;
      case 3: sums<3>(b, col, xs, hs); break;
      default: sums<4>(b, col, xs, hs); break;
    }
    finish_from(i, xs, hs);
  }
};

// One activation over `cols` values of each row (row i at data + i*stride): the row-wise
// activations' pass, and the element-wise ones of a step that needs a row pass anyway.
struct ActivateRows {
  float* data;
  int64_t stride, cols;
  int32_t act, hs;
  RECUR_HD void operator()(int64_t i) const { activate_row(act, hs, data + i * stride, cols, 1); }
};

// Keras unroll=True + go_backwards: zero output k where the input-order mask at k is 0.
struct UnrolledQuirk {
  float* seq_out;
  const uint8_t* mask;
  int64_t u;
  RECUR_HD void operator()(int64_t i) const {
    if (!mask[i / u]) seq_out[i] = 0.0f;
  }
};

// The last output of rows whose last processed step is masked, zeroed (the quirk's last output).
struct ZeroMaskedRows {
  float* out;
  const uint8_t* mask;
  int64_t u, mask_base, mask_stride;
  RECUR_HD void operator()(int64_t i) const {
    if (!mask[mask_base + (i / u) * mask_stride]) out[i] = 0.0f;
  }
};

// ---- the runner ------------------------------------------------------------------------------

template <class Exec>
void run_sequence(Exec& ex, const LayerSpec& s, const DeviceWeights& w, const SequenceArgs& a, const RunBuffers& rb) {
  const int64_t B = a.batch, T = a.timesteps, u = s.units, W = s.width(), F = s.input_size;
  const int ns = s.num_states(), G = s.gates();
  const int64_t Bu = B * u;
  const size_t bu_bytes = static_cast<size_t>(Bu) * sizeof(float);
  auto row_index = [&](int64_t b, int64_t t) { return a.time_major ? t * B + b : b * T + t; };
  const int64_t time_stride = a.time_major ? 1 : T;  // rows between batch entries of one step

  // Projection of `rows` rows of each input into proj: one GEMM per input (per gate block when
  // every gate has its own input).
  auto project = [&](const float* const* xs, int64_t rows) {
    if (a.num_inputs == 1) {
      ex.gemm(rows, W, F, xs[0], F, w.kernel, W, rb.proj, W);
    } else {
      for (int g = 0; g < G; ++g) ex.gemm(rows, u, F, xs[g], F, w.kernel + g * u, W, rb.proj + g * u, W);
    }
  };

  // Step 0 reads the caller's states; each step writes the other scratch buffer.
  const float* cur = a.states;
  float* next = rb.states[0];
  float* spare = rb.states[1];
  // The step's output lives in the carried output where there is one (so nothing is copied
  // there at the end); a masked row of step 0 repeats the carried output, or zeros.
  float* out_t = a.carried_out ? a.carried_out : rb.out_t;
  if (T == 0 && Bu > 0) {
    if (a.carried_in)
      ex.copy(out_t, a.carried_in, bu_bytes, Copy::d2d);
    else
      ex.for_each(Bu, FillZero{out_t});
  }

  // A small step is one pass (two for GRU reset_after=False, and two when its sums are split); a
  // one-step run also projects its input in that pass.
  const bool fused = rb.plan.fused && !a.recurrent_masks;
  const bool fuse_projection = fused && rb.plan.fuse_projection;
  const int64_t split = fused ? rb.plan.chunks : 0;
  // A split step's second pass reads only its own elements of h and c, so it updates them in
  // place: the caller's states are the run's states throughout.
  if (split) next = a.states;
  // Small blocks spread a small batch's weight reads over many multiprocessors.
  const int fused_threads = Bu <= 8192 ? 32 : 128;
  const bool chunked = rb.chunk < T;
  if (!chunked && B * T > 0 && !fuse_projection) project(a.inputs, B * T);
  const float* gathered_ptrs[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int g = 0; g < a.num_inputs && chunked; ++g) gathered_ptrs[g] = rb.gathered + g * rb.chunk * B * F;

  StepCtx c{};
  c.u = u;
  c.W = W;
  c.b_in = s.bias_in_projection ? w.input_bias : nullptr;
  c.b_late = s.lstm() && s.use_bias && !s.bias_in_projection ? w.input_bias : nullptr;
  c.b_rec = s.reset_after && s.use_bias ? w.recurrent_bias : nullptr;
  c.pre = rb.pre;
  c.cand = rb.cand;
  c.mask = a.mask;
  c.mask_stride = time_stride;
  c.zero_masked = a.zero_output_for_mask && !a.unrolled_mask_quirk;
  c.out_t = out_t;
  c.seq_stride = time_stride * u;
  c.act = s.act;
  c.act_hs = s.act_hs;
  c.ract = s.ract;
  c.ract_hs = s.ract_hs;
  const bool row_act = is_row_activation(s.act), row_ract = is_row_activation(s.ract);

  // pre (:, gate blocks [g0, g0+n)) = h @ U, with h ⊙ mask_g per gate under recurrent dropout.
  auto recurrent_product = [&](const float* h, int g0, int n) {
    if (!a.recurrent_masks) {
      ex.gemm(B, n * u, u, h, u, w.recurrent + g0 * u, W, rb.pre + g0 * u, W);
      return;
    }
    for (int g = g0; g < g0 + n; ++g)
      ex.gemm(B, u, u, rb.masked_h + g * Bu, u, w.recurrent + g * u, W, rb.pre + g * u, W);
  };
  // Activation pass over gate block g of every row of pre.
  auto activate_gate = [&](int g, int32_t act, int32_t hs) {
    ex.for_each(B, ActivateRows{rb.pre + g * u, W, u, act, hs});
  };

  for (int64_t k = 0; k < T && B > 0; ++k) {
    const int64_t t = a.go_backwards ? T - 1 - k : k;
    if (fuse_projection) {
      c.xp = nullptr;
      c.xp_stride = 0;
    } else if (!chunked) {
      c.xp = rb.proj + row_index(0, t) * W;
      c.xp_stride = time_stride * W;
    } else {
      const int64_t j = k % rb.chunk;
      if (j == 0) {
        const int64_t n = std::min(rb.chunk, T - k);
        for (int g = 0; g < a.num_inputs; ++g)
          ex.for_each(n * B * F, GatherChunk{a.inputs[g], rb.gathered + g * rb.chunk * B * F, B, T, F, k,
                                             a.time_major, a.go_backwards});
        project(gathered_ptrs, n * B);
      }
      c.xp = rb.proj + j * B * W;
      c.xp_stride = W;
    }
    c.h = cur;
    c.c = s.lstm() ? cur + Bu : nullptr;
    c.h_next = next;
    c.c_next = s.lstm() ? next + Bu : nullptr;
    c.prev_out = k == 0 ? a.carried_in : out_t;
    c.mask_base = row_index(0, t);
    c.seq_out = a.sequence_output ? a.sequence_output + row_index(0, k) * u : nullptr;
    c.mask_h = nullptr;

    if (fused) {
      FusedStep f{c, w.recurrent, fuse_projection ? a.inputs[0] : nullptr, w.kernel, F, s.cell, s.reset_after, 0};
      if (split) {
        float* px = rb.partials;
        float* ph = rb.partials + B * split * W;
        ex.for_each(B * split * W,
                    StepPartials{f.x, w.kernel, cur, w.recurrent, F, u, W, split, px, ph}, fused_threads);
        f.px = f.x ? px : nullptr;
        f.ph = ph;
        f.chunks = split;
      } else if (s.gru() && !s.reset_after) {
        f.phase = 1;
        ex.fused_step(f, B, fused_threads);
        f.phase = 2;
      }
      ex.fused_step(f, B, fused_threads);
    } else {
      if (a.recurrent_masks) ex.for_each(G * Bu, MaskH{cur, a.recurrent_masks, rb.masked_h, Bu});
      if (s.simple_rnn()) {
        recurrent_product(cur, 0, 1);
        ex.for_each(Bu, SimpleRnnStep{c, !row_act});
        if (row_act) {
          activate_gate(0, s.act, s.act_hs);
          ex.for_each(Bu, SimpleRnnFinal{c});
        }
      } else if (s.gru()) {
        recurrent_product(cur, 0, s.reset_after ? 3 : 2);
        const bool gates_fused = s.reset_after && !row_act && !row_ract;
        StepCtx cr = c;
        cr.mask_h = a.recurrent_masks ? a.recurrent_masks + 2 * Bu : nullptr;
        // r ⊙ h comes out of the gate kernel unless r needs a row pass first.
        ex.for_each(Bu, GruGates{cr, gates_fused, !s.reset_after && !row_ract});
        if (!gates_fused) {
          if (row_ract) {
            activate_gate(0, s.ract, s.ract_hs);
            activate_gate(1, s.ract, s.ract_hs);
          }
          if (!s.reset_after && row_ract) ex.for_each(Bu, GruResetH{cr});
          if (!s.reset_after && !row_act && use_ordered_gemm(B, u, u)) {
            // (r ⊙ h)@U_h summed in order, the candidate and the update in one pass: the same
            // sums as the ordered GEMM it replaces, one launch fewer.
            ex.fused_step(FusedStep{c, w.recurrent, nullptr, w.kernel, F, s.cell, false, 2}, B, fused_threads);
          } else {
            if (!s.reset_after) ex.gemm(B, u, u, rb.cand, u, w.recurrent + 2 * u, W, rb.pre + 2 * u, W);
            ex.for_each(Bu, GruCandidate{c, s.reset_after});
            if (row_act) {
              ex.for_each(B, ActivateRows{rb.cand, u, u, s.act, s.act_hs});
              ex.for_each(Bu, GruFinal{c});
            }
          }
        }
      } else {
        recurrent_product(cur, 0, 4);
        const bool gates_fused = !row_act && !row_ract;
        ex.for_each(Bu, LstmGates{c, gates_fused});
        if (!gates_fused) {
          activate_gate(0, s.ract, s.ract_hs);
          activate_gate(1, s.ract, s.ract_hs);
          activate_gate(2, s.act, s.act_hs);
          activate_gate(3, s.ract, s.ract_hs);
          ex.for_each(Bu, LstmCell{c});
          if (row_act) {
            ex.for_each(B, ActivateRows{rb.cand, u, u, s.act, s.act_hs});
            ex.for_each(Bu, LstmFinal{c});
          }
        }
      }
    }
    cur = next;
    if (!split) std::swap(next, spare);  // (a split step updates the caller's states in place)
  }

  if (a.mask && a.unrolled_mask_quirk && a.zero_output_for_mask && T > 0) {
    // Keras (unroll=True) zeroes the stacked outputs with the mask in input order, although the
    // outputs are in processing order; the last output uses the last processed step.
    if (a.sequence_output) ex.for_each(B * T * u, UnrolledQuirk{a.sequence_output, a.mask, u});
    ex.for_each(Bu, ZeroMaskedRows{out_t, a.mask, u, row_index(0, a.go_backwards ? 0 : T - 1), time_stride});
  }
  if (Bu > 0) {
    if (T > 0) ex.copy(a.states, cur, bu_bytes * ns, Copy::d2d);
    // The carried output, where there is one, is out_t itself.
    if (a.last_output) ex.copy(a.last_output, out_t, bu_bytes, Copy::d2d);
  }
}

// ---- step_rows: many streams' device-resident states, one step ------------------------------

// Gathers (scatter = false) or scatters rows' h, c and carried vectors between their own buffers
// and contiguous (rows, u) blocks, in one kernel.
struct MoveRows {
  float* const* h_rows;
  float* const* c_rows;  // null for GRU and SimpleRNN
  float* const* carried_rows;
  float* h;
  float* c;
  float* carried;
  int64_t u;
  bool scatter;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t r = i / u, j = i % u;
    if (scatter) {
      h_rows[r][j] = h[i];
      if (c_rows) c_rows[r][j] = c[i];
      carried_rows[r][j] = carried[i];
    } else {
      h[i] = h_rows[r][j];
      if (c_rows) c[i] = c_rows[r][j];
      carried[i] = carried_rows[r][j];
    }
  }
};

// ---- model ops --------------------------------------------------------------------------------

// y = x + b per row, then the activation (element-wise, or per row for softmax-like ones).
struct BiasActivate {
  float* y;
  const float* b;
  int64_t cols;
  int32_t act, hs;
  RECUR_HD void operator()(int64_t i) const {
    float v = y[i];
    if (b) v = v + b[i % cols];
    y[i] = activate(act, hs, v);
  }
};

struct GatherIds {
  const float* table;
  const int32_t* ids;
  float* out;
  int64_t cols;
  RECUR_HD void operator()(int64_t i) const { out[i] = table[static_cast<int64_t>(ids[i / cols]) * cols + i % cols]; }
};

struct Binary {
  int32_t op;
  const float* a;
  const float* b;
  float* out;
  RECUR_HD void operator()(int64_t i) const {
    const float v = pair_op(op, a[i], b[i]);
    out[i] = op == RECUR_GPU_OP_AVERAGE ? v / 2.0f : v;
  }
};

struct Copy2d {
  const float* src;
  float* dst;
  int64_t src_stride, dst_stride, cols;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t r = i / cols, j = i % cols;
    dst[r * dst_stride + j] = src[r * src_stride + j];
  }
};

// Element i of n blocks laid end to end (`starts`: n + 1 running totals of their sizes, none
// empty): its block found by binary search, so that one launch copies blocks of any sizes.
struct CopyBlocks {
  const float* const* src;
  float* const* dst;
  const int64_t* starts;
  int64_t n;
  RECUR_HD void operator()(int64_t i) const {
    int64_t lo = 0, hi = n;  // the block k with starts[k] <= i < starts[k + 1]
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (starts[mid] <= i) lo = mid;
      else hi = mid;
    }
    dst[lo][i - starts[lo]] = src[lo][i - starts[lo]];
  }
};

template <class Exec>
void activate_rows(Exec& ex, float* data, int64_t rows, int64_t cols, int32_t act, int32_t hs, const float* bias) {
  if (is_row_activation(act)) {
    if (bias) ex.for_each(rows * cols, BiasActivate{data, bias, cols, kLinear, hs});
    ex.for_each(rows, ActivateRows{data, cols, cols, act, hs});
  } else if (bias || act != kLinear) {
    ex.for_each(rows * cols, BiasActivate{data, bias, cols, act, hs});
  }
}

}  // namespace recur::gpu
