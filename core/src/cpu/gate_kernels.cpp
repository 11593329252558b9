// SPDX-License-Identifier: Apache-2.0
// The fused gate updates of one timestep, compiled once per instruction set (RECUR_ISA). This is
// where the elementwise half of the GRU, LSTM and SimpleRNN equations lives, in Keras's association order
// (the TU is built with -ffp-contract=off, so no multiply-add is fused behind Keras's back).
// tanh and sigmoid are Eigen's vectorised functions, the same approximations TensorFlow's CPU
// kernels use. Eigen is renamed per instruction set so that its inline code compiled here with
// wider vectors is never merged with the baseline copy the rest of the library uses.
#include "cpu/kernel_sets.hpp"

#define RECUR_EIGEN_NS_CAT(a, b) a##b
#define RECUR_EIGEN_NS(isa) RECUR_EIGEN_NS_CAT(recur_eigen_, isa)
#define Eigen RECUR_EIGEN_NS(RECUR_ISA)
#include <Eigen/Core>

namespace recur {
namespace cpu {
namespace RECUR_ISA {
namespace {

using Array = Eigen::Map<Eigen::ArrayXf>;

inline float clamp01(float y) { return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y); }

// Applies `a` to n contiguous floats.
void activate(const ActSpec& a, float* x, KIndex n) {
  switch (a.kind) {
    case ActSpec::linear: return;
    case ActSpec::tanh: {
      Array v(x, n);
      v = v.tanh();
      return;
    }
    case ActSpec::sigmoid: {
      Array v(x, n);
      v = v.logistic();
      return;
    }
    case ActSpec::hard_sigmoid_keras2:
      for (KIndex i = 0; i < n; ++i) {
        float y = x[i] * 0.2f;
        y = y + 0.5f;
        x[i] = clamp01(y);
      }
      return;
    case ActSpec::hard_sigmoid_keras3_0:
      for (KIndex i = 0; i < n; ++i) {
        float y = x[i] / 6.0f;
        y = y + 0.5f;
        x[i] = clamp01(y);
      }
      return;
    case ActSpec::hard_sigmoid_keras3:
      for (KIndex i = 0; i < n; ++i) {
        const float y = x[i] + 3.0f;
        x[i] = (y < 0.0f ? 0.0f : (y > 6.0f ? 6.0f : y)) / 6.0f;
      }
      return;
    case ActSpec::relu:
      for (KIndex i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case ActSpec::other: a.scalar(a.activation, a.hard_sigmoid, x, 1, n); return;
  }
}

// --- Fused passes -----------------------------------------------------------------------------
// Each row's gates in one pass of packets over its units, with tanh and sigmoid as Eigen's packet
// functions (what ArrayXf::tanh() and logistic() use on whole packets) applied to every unit: a
// last partial packet goes through a zero-padded copy, so a unit's value never depends on where
// a thread's range of units starts or ends. Other activations take their elementwise definition
// above on the packet's floats.
using P = Eigen::internal::packet_traits<float>::type;
constexpr int PS = static_cast<int>(sizeof(P) / sizeof(float));

inline bool packet_act(const ActSpec& a) { return !a.rowwise; }

inline P apply(const ActSpec& a, P x) {
  namespace ei = Eigen::internal;
  switch (a.kind) {
    case ActSpec::linear: return x;
    case ActSpec::tanh: return ei::scalar_tanh_op<float>().packetOp(x);
    case ActSpec::sigmoid: return ei::scalar_logistic_op<float>().packetOp(x);
    default: {
      alignas(64) float t[PS];
      ei::pstoreu(t, x);
      activate(a, t, PS);
      return ei::ploadu<P>(t);
    }
  }
}

// An activation as a packet function. The Keras defaults (tanh, sigmoid) are types of their own,
// so the fused passes are compiled for them with the functions inlined and interleaved (measured:
// the LSTM pass 1.09 -> 0.69 ns per unit on Zen 5, the same bits); any other goes through
// apply()'s switch.
struct Tanh {
  P operator()(P x) const { return Eigen::internal::scalar_tanh_op<float>().packetOp(x); }
};
struct Sigmoid {
  P operator()(P x) const { return Eigen::internal::scalar_logistic_op<float>().packetOp(x); }
};
struct AnyAct {
  const ActSpec& a;
  P operator()(P x) const { return apply(a, x); }
};

// Calls f(j, n) for units [j0, j1) of a row, a packet at a time: n == PS for whole packets, and
// the last n < PS units once, for which f must read and write through zero-padded copies.
template <typename F>
inline void packets(KIndex j0, KIndex j1, F&& f) {
  KIndex j = j0;
  for (; j + PS <= j1; j += PS) f(j, PS);
  if (j < j1) f(j, j1 - j);
}

// Reads n (<= PS) floats as a packet, zero-padded; writes the first n lanes of a packet.
inline P load_n(const float* p, KIndex n) {
  namespace ei = Eigen::internal;
  if (n == PS) return ei::ploadu<P>(p);
  alignas(64) float t[PS] = {};
  for (KIndex i = 0; i < n; ++i) t[i] = p[i];
  return ei::ploadu<P>(t);
}
inline void store_n(float* p, P v, KIndex n) {
  namespace ei = Eigen::internal;
  if (n == PS) return ei::pstoreu(p, v);
  alignas(64) float t[PS];
  ei::pstoreu(t, v);
  for (KIndex i = 0; i < n; ++i) p[i] = t[i];
}

// The projected inputs come from L2 or L3 (a chunk of steps' projection may outgrow L2) in runs of
// a row's units, too short for the hardware prefetcher to catch: each packet asks for the same
// units of the gates two rows on (measured on Zen 4 with 4 MB chunks, batch (32, 100, 64, 256):
// the GRU and LSTM layers 3-5% faster on avx512, 5-10% on avx2; the same at batch 1, where there
// is no next row).
template <int G>
inline void prefetch_row(const float* next, KIndex gs, KIndex j) {
#pragma GCC unroll 4
  for (int k = 0; k < G; ++k) __builtin_prefetch(next + k * gs + j, 0, 3);
}

template <typename R>
void gru_gates_fused(const GateArgs& g, R ract) {
  namespace ei = Eigen::internal;
  const KIndex gs = g.gate_stride;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride;
    float* p = g.pre + b * g.pre_stride;
    const float* h = g.h + b * g.units;
    const float* m = g.hmask ? g.hmask + b * g.units : nullptr;
    float* rh = g.rh ? g.rh + b * g.units : nullptr;
    const float* next = b + 2 < g.batch ? x + 2 * g.xp_stride : nullptr;
    packets(g.j0, g.j1, [&](KIndex j, KIndex n) {
      if (next) prefetch_row<2>(next, gs, j);
      // z and r: act((x@K + b_in) + (h@U + b_rec)), left in pre for gru_update
      const P z = ract(ei::padd(load_n(x + j, n), load_n(p + j, n)));
      const P r = ract(ei::padd(load_n(x + gs + j, n), load_n(p + gs + j, n)));
      store_n(p + j, z, n);
      store_n(p + gs + j, r, n);
      if (rh) {
        P hv = load_n(h + j, n);
        if (m) hv = ei::pmul(hv, load_n(m + j, n));
        store_n(rh + j, ei::pmul(r, hv), n);
      }
    });
  }
}

void gru_gates(const GateArgs& g) {
  if (packet_act(g.ract))
    return g.ract.kind == ActSpec::sigmoid ? gru_gates_fused(g, Sigmoid{}) : gru_gates_fused(g, AnyAct{g.ract});
  const KIndex n = g.j1 - g.j0, gs = g.gate_stride;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride + g.j0;
    float* p = g.pre + b * g.pre_stride + g.j0;
    // z and r: act((x@K + b_in) + (h@U + b_rec))
    for (int gate = 0; gate < 2; ++gate)
      for (KIndex j = 0; j < n; ++j) p[gate * gs + j] = x[gate * gs + j] + p[gate * gs + j];
    activate(g.ract, p, n);
    activate(g.ract, p + gs, n);
    if (g.rh) {
      const float* r = p + gs;
      const float* h = g.h + b * g.units + g.j0;
      float* rh = g.rh + b * g.units + g.j0;
      if (g.hmask) {
        const float* m = g.hmask + b * g.units + g.j0;
        for (KIndex j = 0; j < n; ++j) rh[j] = r[j] * (h[j] * m[j]);
      } else {
        for (KIndex j = 0; j < n; ++j) rh[j] = r[j] * h[j];
      }
    }
  }
}

template <typename A>
void gru_update_fused(const GateArgs& g, A act) {
  namespace ei = Eigen::internal;
  const KIndex gs = g.gate_stride;
  const P one = ei::pset1<P>(1.0f);
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride + 2 * gs;
    const float* p = g.pre + b * g.pre_stride;
    const float* h = g.h + b * g.units;
    float* out = g.h_out + b * g.units;
    const float* next = b + 2 < g.batch ? x + 2 * g.xp_stride : nullptr;
    packets(g.j0, g.j1, [&](KIndex j, KIndex n) {
      if (next) prefetch_row<1>(next, gs, j);
      const P z = load_n(p + j, n), hp = load_n(p + 2 * gs + j, n);
      // reset_after: ĥ = act((x@K_h + b_in_h) + r ⊙ (h@U_h + b_rec_h)); else act((x@K_h + b_h) + (r ⊙ h)@U_h)
      const P pre_h = g.reset_after ? ei::padd(load_n(x + j, n), ei::pmul(load_n(p + gs + j, n), hp))
                                    : ei::padd(load_n(x + j, n), hp);
      const P hh = act(pre_h);
      // h' = z ⊙ h + (1 - z) ⊙ ĥ, in this association (Keras never rewrites it as ĥ + z(h - ĥ)).
      store_n(out + j, ei::padd(ei::pmul(z, load_n(h + j, n)), ei::pmul(ei::psub(one, z), hh)), n);
    });
  }
}

void gru_update(const GateArgs& g) {
  if (packet_act(g.act))
    return g.act.kind == ActSpec::tanh ? gru_update_fused(g, Tanh{}) : gru_update_fused(g, AnyAct{g.act});
  const KIndex n = g.j1 - g.j0, gs = g.gate_stride;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride + g.j0 + 2 * gs;
    float* p = g.pre + b * g.pre_stride + g.j0;
    const float* z = p;
    const float* r = p + gs;
    float* hh = p + 2 * gs;
    if (g.reset_after) {
      // ĥ = act((x@K_h + b_in_h) + r ⊙ (h@U_h + b_rec_h))
      for (KIndex j = 0; j < n; ++j) hh[j] = x[j] + r[j] * hh[j];
    } else {
      // ĥ = act((x@K_h + b_h) + (r ⊙ h)@U_h)
      for (KIndex j = 0; j < n; ++j) hh[j] = x[j] + hh[j];
    }
    activate(g.act, hh, n);
    const float* h = g.h + b * g.units + g.j0;
    float* out = g.h_out + b * g.units + g.j0;
    // h' = z ⊙ h + (1 - z) ⊙ ĥ, in this association (Keras never rewrites it as ĥ + z(h - ĥ)).
    for (KIndex j = 0; j < n; ++j) out[j] = z[j] * h[j] + (1.0f - z[j]) * hh[j];
  }
}

template <typename A, typename R>
void lstm_update_fused(const GateArgs& g, A act, R ract) {
  namespace ei = Eigen::internal;
  const KIndex gs = g.gate_stride;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride;
    const float* p = g.pre + b * g.pre_stride;
    const float* c = g.c + b * g.units;
    float* c_out = g.c_out + b * g.units;
    float* h_out = g.h_out + b * g.units;
    const float* next = b + 2 < g.batch ? x + 2 * g.xp_stride : nullptr;
    packets(g.j0, g.j1, [&](KIndex j, KIndex n) {
      if (next) prefetch_row<4>(next, gs, j);
      P gate[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        // implementation 2: (x@K + h@U) + b; implementation 1: (x@K + b) + h@U (the bias is in x)
        P v = ei::padd(load_n(x + k * gs + j, n), load_n(p + k * gs + j, n));
        if (g.bias) v = ei::padd(v, load_n(g.bias + k * gs + j, n));
        gate[k] = k == 2 ? act(v) : ract(v);
      }
      const P cn = ei::padd(ei::pmul(gate[1], load_n(c + j, n)), ei::pmul(gate[0], gate[2]));
      store_n(c_out + j, cn, n);
      store_n(h_out + j, ei::pmul(gate[3], act(cn)), n);
    });
  }
}

void lstm_update(const GateArgs& g) {
  if (packet_act(g.act) && packet_act(g.ract)) {
    if (g.act.kind == ActSpec::tanh && g.ract.kind == ActSpec::sigmoid) return lstm_update_fused(g, Tanh{}, Sigmoid{});
    return lstm_update_fused(g, AnyAct{g.act}, AnyAct{g.ract});
  }
  const KIndex n = g.j1 - g.j0, gs = g.gate_stride;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride + g.j0;
    float* p = g.pre + b * g.pre_stride + g.j0;
    // implementation 2: (x@K + h@U) + b; implementation 1: (x@K + b) + h@U (the bias is in x)
    for (int gate = 0; gate < 4; ++gate) {
      float* pg = p + gate * gs;
      const float* xg = x + gate * gs;
      for (KIndex j = 0; j < n; ++j) pg[j] = xg[j] + pg[j];
      if (g.bias) {
        const float* bg = g.bias + gate * gs + g.j0;
        for (KIndex j = 0; j < n; ++j) pg[j] = pg[j] + bg[j];
      }
    }
    activate(g.ract, p, n);
    activate(g.ract, p + gs, n);
    activate(g.act, p + 2 * gs, n);
    activate(g.ract, p + 3 * gs, n);
    const float* i = p;
    const float* f = p + gs;
    const float* cand = p + 2 * gs;
    const float* o = p + 3 * gs;
    const float* c = g.c + b * g.units + g.j0;
    float* c_out = g.c_out + b * g.units + g.j0;
    for (KIndex j = 0; j < n; ++j) c_out[j] = f[j] * c[j] + i[j] * cand[j];
    // act(c') goes where i was: i is no longer needed.
    float* squashed = p;
    for (KIndex j = 0; j < n; ++j) squashed[j] = c_out[j];
    activate(g.act, squashed, n);
    float* h_out = g.h_out + b * g.units + g.j0;
    for (KIndex j = 0; j < n; ++j) h_out[j] = o[j] * squashed[j];
  }
}

template <typename A>
void simple_rnn_update_fused(const GateArgs& g, A act) {
  namespace ei = Eigen::internal;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride;
    const float* p = g.pre + b * g.pre_stride;
    float* out = g.h_out + b * g.units;
    const float* next = b + 2 < g.batch ? x + 2 * g.xp_stride : nullptr;
    // Keras: output = (x@K + b) + h@U, then the activation.
    packets(g.j0, g.j1, [&](KIndex j, KIndex n) {
      if (next) prefetch_row<1>(next, 0, j);
      store_n(out + j, act(ei::padd(load_n(x + j, n), load_n(p + j, n))), n);
    });
  }
}

void simple_rnn_update(const GateArgs& g) {
  if (packet_act(g.act))
    return g.act.kind == ActSpec::tanh ? simple_rnn_update_fused(g, Tanh{}) : simple_rnn_update_fused(g, AnyAct{g.act});
  const KIndex n = g.j1 - g.j0;
  for (KIndex b = 0; b < g.batch; ++b) {
    const float* x = g.xp + b * g.xp_stride + g.j0;
    const float* p = g.pre + b * g.pre_stride + g.j0;
    float* out = g.h_out + b * g.units + g.j0;
    // Keras: output = (x@K + b) + h@U, then the activation.
    for (KIndex j = 0; j < n; ++j) out[j] = x[j] + p[j];
    activate(g.act, out, n);
  }
}

void multiply(const float* x, const float* m, float* y, KIndex n) {
  for (KIndex i = 0; i < n; ++i) y[i] = x[i] * m[i];
}

}  // namespace

void fill_gates(KernelSet& set) {
  set.gru_gates = gru_gates;
  set.gru_update = gru_update;
  set.lstm_update = lstm_update;
  set.simple_rnn_update = simple_rnn_update;
  set.multiply = multiply;
}

}  // namespace RECUR_ISA
}  // namespace cpu
}  // namespace recur
