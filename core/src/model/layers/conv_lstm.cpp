// SPDX-License-Identifier: Apache-2.0
// Keras's convolutional LSTMs (ConvLSTM1D, ConvLSTM2D, ConvLSTM3D): an LSTM whose input and
// recurrent products are convolutions over 1 to 3 spatial axes. Per timestep, with gates in
// Keras's order i, f, c, o (blocks of `filters` along the kernels' last axis):
//   z = conv(x_t, kernel, strides, padding, dilation_rate) + bias + conv(h, recurrent_kernel, 1, "same")
//   i = ra(z_i), f = ra(z_f), c = f * c + i * a(z_c), o = ra(z_o), h = o * a(c)
// The recurrent convolution always pads "same" with strides 1 and no dilation, so h keeps the
// input convolution's output shape. Masks, go_backwards, return_sequences/return_state,
// initial_state and streaming as Keras's RNN layer does them.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <optional>

#include "io/json_int.hpp"
#include "io/printable.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/activations.hpp"
#include "recur/cancel.hpp"
#include "recur/error.hpp"
#include "recur/limits.hpp"
#include "recur/state.hpp"

namespace recur::graph {
namespace {

using MapC = Eigen::Map<const RowMatrix>;
using Map = Eigen::Map<RowMatrix>;

// An integer or a list of `rank` integers (Keras's standardize_tuple), each in [lo, 2^30].
std::vector<Index> tuple_of(const json& cfg, const char* key, int rank, Index fallback, Index lo, const std::string& cls) {
  if (!cfg.contains(key) || cfg[key].is_null()) {
    if (fallback < 0) fail(Code::invalid_argument, cls, ": ", key, ": missing from the config");
    return std::vector<Index>(static_cast<std::size_t>(rank), fallback);
  }
  const json& v = cfg[key];
  std::vector<Index> out;
  auto one = [&](const json& x) {
    int i = 0;
    if (!x.is_number_integer() || !io::int_in(x, lo, std::int64_t(1) << 30, i))
      fail(Code::invalid_argument, cls, ": ", key, ": expected ", lo > 0 ? "positive" : "non-negative", " integers (at most 2^30), got ",
           io::excerpt(v));
    out.push_back(i);
  };
  if (v.is_array()) {
    if (v.size() != static_cast<std::size_t>(rank))
      fail(Code::invalid_argument, cls, ": ", key, ": expected ", rank, " integer(s), got ", io::excerpt(v));
    for (const auto& x : v) one(x);
  } else {
    one(v);
    out.assign(static_cast<std::size_t>(rank), out[0]);
  }
  return out;
}

ActivationFn activation_named(const json& cfg, const char* key, const char* fallback, const DialectInfo& d, const std::string& cls) {
  if (!cfg.contains(key)) return parse_activation(fallback, d, key);
  const json& a = cfg[key];
  if (a.is_null()) return parse_activation("linear", d, key);
  if (!a.is_string())
    fail(Code::unsupported, cls, ": ", key, ": expected an activation name, got ", io::excerpt(a), " (custom activations cannot be loaded)");
  return parse_activation(a.get<std::string>(), d, key);
}

class ConvLstmOp : public Op {
 public:
  ConvLstmOp(const json& cfg, const DialectInfo& d, int rank, const std::string& cls) : rank_(rank), cls_(cls) {
    const bool k3 = d.dialect == Dialect::keras3;
    static const char* const kKeys[] = {
        "name", "trainable", "dtype", "filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
        "activation", "recurrent_activation", "use_bias", "kernel_initializer", "recurrent_initializer",
        "bias_initializer", "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
        "activity_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
        "recurrent_dropout", "seed", "return_sequences", "return_state", "go_backwards", "stateful", "unroll",
        "batch_input_shape", "input_shape", "batch_size", "time_major", "zero_output_for_mask"};
    for (auto it = cfg.begin(); it != cfg.end(); ++it) {
      bool known = false;
      for (const char* k : kKeys) known = known || it.key() == k;
      if (!known) fail(Code::invalid_argument, cls_, ": config has no argument '", io::printable(it.key()), "'");
    }
    if (!cfg.contains("filters")) fail(Code::invalid_argument, cls_, ": filters: missing from the config");
    const json& fj = cfg["filters"];
    int f = 0;
    if (!fj.is_number_integer() || !io::int_in(fj, 1, std::int64_t(1) << 30, f))
      fail(Code::invalid_argument, cls_, ": filters: expected a positive integer (at most 2^30), got ", io::excerpt(fj));
    filters_ = f;
    check_limit(Limit::units, static_cast<double>(filters_), cls_ + ": filters");
    kernel_size_ = tuple_of(cfg, "kernel_size", rank, -1, 1, cls_);
    strides_ = tuple_of(cfg, "strides", rank, 1, 1, cls_);
    dilation_ = tuple_of(cfg, "dilation_rate", rank, 1, 1, cls_);
    if (*std::max_element(strides_.begin(), strides_.end()) > 1 && *std::max_element(dilation_.begin(), dilation_.end()) > 1)
      fail(Code::invalid_argument, cls_, ": strides > 1 with dilation_rate > 1 (Keras refuses it too)");
    std::string padding = str_of(cfg, "padding", "valid");
    std::transform(padding.begin(), padding.end(), padding.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (padding != "valid" && padding != "same")
      fail(Code::invalid_argument, cls_, ": padding: expected 'valid' or 'same', got '", io::printable(padding), "'");
    same_ = padding == "same";
    const std::string format = str_of(cfg, "data_format", "channels_last");
    if (format != "channels_last" && format != "channels_first")
      fail(Code::invalid_argument, cls_, ": data_format: expected 'channels_last' or 'channels_first', got '", io::printable(format), "'");
    channels_first_ = format == "channels_first";
    act_ = activation_named(cfg, "activation", "tanh", d, cls_);
    ract_ = activation_named(cfg, "recurrent_activation", k3 ? "sigmoid" : "hard_sigmoid", d, cls_);
    use_bias_ = bool_of(cfg, "use_bias", true);
    return_sequences_ = bool_of(cfg, "return_sequences", false);
    return_state_ = bool_of(cfg, "return_state", false);
    go_backwards_ = bool_of(cfg, "go_backwards", false);
    stateful_ = bool_of(cfg, "stateful", false);
    zero_output_for_mask_ = bool_of(cfg, "zero_output_for_mask", false);
    if (bool_of(cfg, "unroll", false)) fail(Code::unsupported, cls_, ": unroll=True (Keras's ConvRNN refuses it too)");
    if (bool_of(cfg, "time_major", false)) fail(Code::unsupported, cls_, ": time_major=True");
    for (const char* k : {"dropout", "recurrent_dropout"}) (void)num_of(cfg, k, 0.0);  // inference: dropout is off
  }

  // Per spatial axis: output size and padding before, for an input of `in` positions.
  struct Axis {
    Index in = 0, out = 0, pad = 0, k = 1, s = 1, d = 1;
  };
  std::vector<Axis> geometry(const std::vector<Index>& spatial) const {
    std::vector<Axis> g(static_cast<std::size_t>(rank_));
    for (int a = 0; a < rank_; ++a) {
      Axis& x = g[static_cast<std::size_t>(a)];
      x.in = spatial[static_cast<std::size_t>(a)];
      x.k = kernel_size_[static_cast<std::size_t>(a)];
      x.s = strides_[static_cast<std::size_t>(a)];
      x.d = dilation_[static_cast<std::size_t>(a)];
      const Index span = (x.k - 1) * x.d + 1;
      if (same_) {
        x.out = (x.in + x.s - 1) / x.s;
        x.pad = std::max<Index>((x.out - 1) * x.s + span - x.in, 0) / 2;
      } else {
        x.out = x.in >= span ? (x.in - span) / x.s + 1 : 0;
      }
      if (x.out <= 0)
        fail(Code::shape, cls_, ": spatial axis ", a + 1, " has ", x.in, " positions, fewer than the kernel spans (kernel_size ",
             x.k, ", dilation_rate ", x.d, ") with padding 'valid'");
    }
    return g;
  }
  // The recurrent convolution over the output grid: "same", strides 1, no dilation.
  std::vector<Axis> recurrent_geometry(const std::vector<Axis>& g) const {
    std::vector<Axis> r = g;
    for (Axis& x : r) {
      x.in = x.out;
      x.s = 1;
      x.d = 1;
      x.pad = (x.k - 1) / 2;
    }
    return r;
  }
  // For each output position and kernel offset, the flat input position it reads (-1: padding).
  static std::vector<Index> taps(const std::vector<Axis>& g) {
    Index outs = 1, ks = 1;
    for (const Axis& x : g) {
      outs *= x.out;
      ks *= x.k;
    }
    std::vector<Index> t(static_cast<std::size_t>(outs * ks));
    std::vector<Index> p(g.size()), k(g.size());
    for (Index o = 0; o < outs; ++o) {
      Index rem = o;
      for (std::size_t a = g.size(); a-- > 0;) {
        p[a] = rem % g[a].out;
        rem /= g[a].out;
      }
      for (Index kk = 0; kk < ks; ++kk) {
        Index r = kk;
        for (std::size_t a = g.size(); a-- > 0;) {
          k[a] = r % g[a].k;
          r /= g[a].k;
        }
        Index flat = 0;
        bool inside = true;
        for (std::size_t a = 0; a < g.size(); ++a) {
          const Index i = p[a] * g[a].s + k[a] * g[a].d - g[a].pad;
          inside = inside && i >= 0 && i < g[a].in;
          flat = flat * g[a].in + i;
        }
        t[static_cast<std::size_t>(o * ks + kk)] = inside ? flat : -1;
      }
    }
    return t;
  }

  std::vector<Index> spatial_of(const std::vector<Index>& dims) const {  // dims: (B, T, ...)
    return channels_first_ ? std::vector<Index>(dims.begin() + 3, dims.end()) : std::vector<Index>(dims.begin() + 2, dims.end() - 1);
  }
  Index channels_of(const std::vector<Index>& dims) const { return channels_first_ ? dims[2] : dims.back(); }
  // A (batch, spatial..., filters) shape in the layer's data format, with `lead` axes before.
  std::vector<Index> shaped(std::vector<Index> lead, const std::vector<Axis>& g) const {
    if (channels_first_) lead.push_back(filters_);
    for (const Axis& x : g) lead.push_back(x.out);
    if (!channels_first_) lead.push_back(filters_);
    return lead;
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>& init, const BuildContext& ctx) override {
    check_rank(in, 1, static_cast<std::size_t>(rank_ + 3), cls_.c_str());
    const std::vector<Index>& dims = in[0].dims;
    if (dims.size() != static_cast<std::size_t>(rank_ + 3))
      fail(Code::shape, cls_, ": expected (batch, timesteps, ", rank_, " spatial axes and channels), got ", spec_string(in[0]));
    const std::vector<Index> spatial = spatial_of(dims);
    const Index C = channels_of(dims);
    for (Index s : spatial)
      if (s < 0) fail(Code::shape, cls_, ": the spatial axes must be known (Keras requires it too), got ", spec_string(in[0]));
    if (C <= 0) fail(Code::shape, cls_, ": the channels axis must be known, got ", spec_string(in[0]));
    const std::vector<Axis> g = geometry(spatial);
    if (cin_ && (C != cin_ || spatial != spatial_))
      fail(Code::shape, cls_, ": built for ", cin_, " channels over ", shape_string(spatial_), ", called on ", spec_string(in[0]));
    if (!cin_) {
      double kprod = 1;
      for (Index k : kernel_size_) kprod *= static_cast<double>(k);
      const double f4 = 4.0 * filters_;
      ctx.reserve_weights(kprod * double(C) * f4 + kprod * double(filters_) * f4 + (use_bias_ ? f4 : 0.0),
                          cls_ + ": kernel_size, " + std::to_string(C) + " channels and filters=" + std::to_string(filters_));
      double outs = 1;
      for (const Axis& x : g) outs *= static_cast<double>(x.out);
      check_limit(Limit::state_bytes, 4.0 * 3.0 * outs * filters_ * std::max<double>(1.0, static_cast<double>(dims[0])),
                  cls_ + ": the states (spatial output positions x filters)");
      kernel_.assign(static_cast<std::size_t>(kprod * double(C) * f4), 0.0f);
      recurrent_.assign(static_cast<std::size_t>(kprod * double(filters_) * f4), 0.0f);
      bias_.assign(use_bias_ ? static_cast<std::size_t>(f4) : 0, 0.0f);
      spatial_ = spatial;
      cin_ = C;
    }
    const Index B = dims[0], T = dims[1];
    if (stateful_ && B <= 0)
      fail(Code::invalid_argument, cls_, ": stateful=True needs a fixed batch size (Keras's Input(batch_shape=...)), got ",
           spec_string(in[0]));
    if (stateful_) check_limit(Limit::batch, static_cast<double>(B), cls_ + ": batch_size (stateful)");
    if (stateful_ && !states_reserved_) {
      double outs = 1;
      for (const Axis& x : g) outs *= static_cast<double>(x.out);
      ctx.reserve_states(4.0 * 2.0 * outs * filters_ * static_cast<double>(B), "layer '" + name + "' (" + cls_ + ")");
      states_reserved_ = true;
    }
    const std::vector<Index> state = shaped({B}, g);
    if (!init.empty()) {
      if (init.size() != 2) fail(Code::shape, cls_, ": initial_state holds ", init.size(), " tensors, the layer has 2 states");
      for (std::size_t i = 0; i < 2; ++i) {
        bool ok = init[i].dims.size() == state.size();
        for (std::size_t a = 1; ok && a < state.size(); ++a) ok = init[i].dims[a] < 0 || init[i].dims[a] == state[a];
        if (!ok)
          fail(Code::shape, cls_, ": initial_state[", i, "] must be ", shape_string(state), ", got ", spec_string(init[i]));
      }
    }
    std::vector<Spec> out{Spec{return_sequences_ ? shaped({B, T}, g) : state, false}};
    if (return_state_) {
      out.push_back(Spec{state, false});
      out.push_back(Spec{state, false});
    }
    return out;
  }

  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    const std::vector<Axis> g = geometry(spatial_);
    const std::vector<Axis> rg = recurrent_geometry(g);
    Index Sin = 1, S = 1, K = 1;
    for (const Axis& a : g) {
      Sin *= a.in;
      S *= a.out;
      K *= a.k;
    }
    const Index C = cin_, F = filters_, F4 = 4 * F, R = B * S;
    // Scratch, checked against the tensor limit before anything is allocated (the weights bound
    // K * C and K * F, but not the positions times the kernel's).
    alloc_shape({S, K, 2}, cls_.c_str());
    alloc_shape({R, K, std::max(C, F)}, cls_.c_str());
    alloc_shape({R, F4}, cls_.c_str());
    const std::vector<Index> xt = taps(g), ht = taps(rg);
    Value y = make_value(return_sequences_ ? std::vector<Index>{B, T, S * F} : std::vector<Index>{B, S * F}, cls_.c_str());

    // The input in channels_last order, one timestep at a time: (B, Sin, C).
    std::vector<float> step_in(static_cast<std::size_t>(B * Sin * C));
    auto load_step = [&](Index t) {
      for (Index b = 0; b < B; ++b) {
        const float* src = x.data.data() + (b * T + t) * Sin * C;
        float* dst = step_in.data() + b * Sin * C;
        if (!channels_first_) std::memcpy(dst, src, static_cast<std::size_t>(Sin * C) * sizeof(float));
        else
          for (Index c = 0; c < C; ++c)
            for (Index p = 0; p < Sin; ++p) dst[p * C + c] = src[c * Sin + p];
      }
    };
    // A (B, S, F) tensor between the layer's data format and channels_last.
    auto to_last = [&](const float* src, float* dst) {
      for (Index b = 0; b < B; ++b)
        for (Index f = 0; f < F; ++f)
          for (Index p = 0; p < S; ++p) dst[(b * S + p) * F + f] = src[(b * F + f) * S + p];
    };
    auto from_last = [&](const float* src, float* dst) {
      for (Index b = 0; b < B; ++b)
        for (Index f = 0; f < F; ++f)
          for (Index p = 0; p < S; ++p) dst[(b * F + f) * S + p] = src[(b * S + p) * F + f];
    };

    // States h, c (B, S*F) channels_last: a stream's, the initial_state tensors, or zeros.
    State local(2, B, static_cast<int>(S * F));
    State* st = &local;
    bool fresh = true;
    if (ctx.stream && ctx.stepped) {
      std::vector<State>& kept = ctx.stream->states[{this, site}];
      fresh = kept.empty();
      if (fresh) kept.emplace_back(2, B, static_cast<int>(S * F));
      st = &kept[0];
    }
    if (!ctx.stream && stateful_) {
      // A stateful layer starts from the states its last call left (Keras uses initial_state
      // tensors instead when the call has them).
      std::lock_guard<std::mutex> lock(mutex_);
      if (stored_ && (stored_->batch() != B || stored_->units() != S * F))
        fail(Code::shape, "layer '", name, "' (", cls_, "): stateful with batch ", stored_->batch(), ", called with batch ", B);
      if (stored_) {
        local.tensor(0) = stored_->tensor(0);
        local.tensor(1) = stored_->tensor(1);
      }
    }
    if (fresh) {
      for (std::size_t k = 0; k < in.initial_state.size() && k < 2; ++k) {
        const Value& v = *in.initial_state[k];
        const std::vector<Index> want = shaped({B}, g);
        if (v.shape != want)
          fail(Code::shape, "layer '", name, "': initial_state[", k, "] is ", shape_string(v.shape), ", expected ", shape_string(want));
        float* dst = st->tensor(static_cast<int>(k)).data();
        if (channels_first_) to_last(v.data.data(), dst);
        else std::copy(v.data.begin(), v.data.end(), dst);
      }
    }
    RowMatrix& h = st->tensor(0);
    RowMatrix& c = st->tensor(1);
    // The previous output a masked step repeats: zeros at the start of a call (Keras's TF loop),
    // or what a stream carried from its last step.
    RowMatrix& prev = st->carried_output();
    if (prev.rows() != B || prev.cols() != S * F) prev.setZero(B, S * F);

    const bool masked = x.mask && !in.drop_mask;
    const std::uint8_t* mask = masked ? x.mask->data() : nullptr;
    std::vector<float> patches(static_cast<std::size_t>(R * K * std::max(C, F)));
    RowMatrix z(R, F4), zh(R, F4);
    RowMatrix gi(R, F), gf(R, F), gc(R, F), go(R, F);
    RowMatrix h_new(B, S * F), c_new(B, S * F);
    const MapC W(kernel_.data(), K * C, F4), U(recurrent_.data(), K * F, F4);
    auto gather = [&](const float* src, Index Sfrom, Index ch, const std::vector<Index>& tap) {
      for (Index b = 0; b < B; ++b)
        for (Index p = 0; p < S; ++p) {
          float* row = patches.data() + (b * S + p) * K * ch;
          for (Index k = 0; k < K; ++k) {
            const Index at = tap[static_cast<std::size_t>(p * K + k)];
            if (at < 0) std::fill_n(row + k * ch, ch, 0.0f);
            else std::memcpy(row + k * ch, src + (b * Sfrom + at) * ch, static_cast<std::size_t>(ch) * sizeof(float));
          }
        }
    };
    for (Index k = 0; k < T; ++k) {
      throw_if_cancelled();
      const Index t = go_backwards_ ? T - 1 - k : k;
      load_step(t);
      gather(step_in.data(), Sin, C, xt);
      z.noalias() = MapC(patches.data(), R, K * C) * W;
      if (use_bias_) z.rowwise() += Eigen::Map<const RowVector>(bias_.data(), F4);
      gather(h.data(), S, F, ht);
      zh.noalias() = MapC(patches.data(), R, K * F) * U;
      z += zh;
      gi = z.middleCols(0, F);
      gf = z.middleCols(F, F);
      gc = z.middleCols(2 * F, F);
      go = z.middleCols(3 * F, F);
      apply_activation(ract_, gi.data(), R, F);
      apply_activation(ract_, gf.data(), R, F);
      apply_activation(act_, gc.data(), R, F);
      apply_activation(ract_, go.data(), R, F);
      Map cn(c_new.data(), R, F), hn(h_new.data(), R, F);
      cn = gf.cwiseProduct(Map(c.data(), R, F)) + gi.cwiseProduct(gc);
      hn = cn;
      apply_activation(act_, hn.data(), R, F);
      hn = go.cwiseProduct(hn);
      for (Index b = 0; b < B; ++b) {
        if (!mask || mask[b * T + t]) {
          h.row(b) = h_new.row(b);
          c.row(b) = c_new.row(b);
          prev.row(b) = h_new.row(b);
        } else if (zero_output_for_mask_) {
          prev.row(b).setZero();  // a masked step keeps the states; its output is 0
        }
        if (return_sequences_) std::memcpy(y.data.data() + (b * T + k) * S * F, prev.row(b).data(), static_cast<std::size_t>(S * F) * sizeof(float));
      }
    }
    if (!return_sequences_) std::memcpy(y.data.data(), prev.data(), static_cast<std::size_t>(B * S * F) * sizeof(float));
    if (!ctx.stream && stateful_) {  // kept only once the whole call has run
      std::lock_guard<std::mutex> lock(mutex_);
      if (!stored_) stored_.emplace(2, B, static_cast<int>(S * F));
      stored_->tensor(0) = h;
      stored_->tensor(1) = c;
    }
    if (channels_first_) {
      const Index n = return_sequences_ ? B * T : B;
      std::vector<float> tmp(y.data.size());
      for (Index r = 0; r < n; ++r)
        for (Index f = 0; f < F; ++f)
          for (Index p = 0; p < S; ++p) tmp[static_cast<std::size_t>((r * F + f) * S + p)] = y.data[static_cast<std::size_t>((r * S + p) * F + f)];
      y.data.swap(tmp);
    }
    y.shape = return_sequences_ ? shaped({B, T}, g) : shaped({B}, g);
    if (return_sequences_ && masked) y.mask = x.mask;
    std::vector<Value> out;
    out.push_back(std::move(y));
    if (return_state_) {
      for (const RowMatrix* s : {&h, &c}) {
        Value v = make_value(shaped({B}, g), "state");
        if (channels_first_) from_last(s->data(), v.data.data());
        else std::memcpy(v.data.data(), s->data(), v.data.size() * sizeof(float));
        out.push_back(std::move(v));
      }
    }
    return out;
  }

  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    // Each (row, step, input position) meets every input and recurrent kernel weight (strides
    // only lower it), and works on four gates per filter.
    const double positions = elements(main.at(0)) / double(std::max<Index>(cin_, 1));
    const double per = double(kernel_.size() + recurrent_.size()) * kEigenMacWork + 4.0 * double(filters_) * kGateWork;
    return positions * per + Op::work(main, out);
  }
  std::size_t num_weights() const override { return use_bias_ ? 3 : 2; }
  std::uint64_t weight_floats() const override { return kernel_.size() + recurrent_.size() + bias_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    std::vector<std::int64_t> ks(kernel_size_.begin(), kernel_size_.end());
    std::vector<std::int64_t> kshape = ks, rshape = ks;
    kshape.push_back(cin_);
    kshape.push_back(4 * filters_);
    rshape.push_back(filters_);
    rshape.push_back(4 * filters_);
    if (w.size() < num_weights()) fail(Code::io, where, ": the file holds fewer weights than layer '", name, "' needs");
    for (std::size_t i = 0; i < num_weights(); ++i)
      for (float v : w[i].data)
        if (!std::isfinite(v)) fail(Code::io, weight_location(where, w[i].path), ": non-finite weight value");
    kernel_ = take_weight(w, kshape, where);
    recurrent_ = take_weight(w, rshape, where);
    if (use_bias_) bias_ = take_weight(w, {4 * filters_}, where);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    const std::string cell = object + "/cell";
    auto w = read_vars(h5, h5.is_group(cell) ? cell : object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }
  bool stateful() const override { return stateful_; }
  void collect_state_ops(std::vector<Op*>& out) override {
    if (stateful_) out.push_back(this);
  }
  void reset_states() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stored_.reset();
  }
  std::vector<float> saved_states() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<float> v;
    if (stored_) {
      v.resize(static_cast<std::size_t>(stored_->size()));
      stored_->get(v.data(), v.size());
    }
    return v;
  }
  // A run changes the states' values, never their shape (a batch that does not fit fails first).
  void restore_states(const std::vector<float>& v) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (v.empty() || !stored_ || static_cast<std::size_t>(stored_->size()) != v.size()) stored_.reset();
    else stored_->set(v.data(), v.size(), 2, cls_.c_str());
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool has_init, std::vector<bool>& stepped_out) const override {
    stepped_out.assign(stepped_out.size(), false);
    if (!stepped_in[0]) return "";
    if (go_backwards_) return "go_backwards reads the sequence from its end";
    if (has_init) return "its initial_state comes from other layers of the graph (only model inputs can start a stream)";
    if (!stepped_out.empty()) stepped_out[0] = return_sequences_;
    return "";
  }

 private:
  int rank_;
  std::string cls_;
  Index filters_ = 0;
  std::vector<Index> kernel_size_, strides_, dilation_;
  bool same_ = false, channels_first_ = false, use_bias_ = true;
  bool return_sequences_ = false, return_state_ = false, go_backwards_ = false, stateful_ = false, zero_output_for_mask_ = false;
  bool states_reserved_ = false;  // its states counted against total_state_bytes (at the first build)
  ActivationFn act_, ract_;
  Index cin_ = 0;
  std::vector<Index> spatial_;
  std::vector<float> kernel_, recurrent_, bias_;
  mutable std::mutex mutex_;            // guards stored_
  mutable std::optional<State> stored_;  // a stateful layer's h and c, (batch, positions * filters) each
};

}  // namespace

void register_conv_lstm_layers(OpTable& t) {
  const std::pair<const char*, int> kinds[] = {{"ConvLSTM1D", 1}, {"ConvLSTM2D", 2}, {"ConvLSTM3D", 3}};
  for (const auto& [cls, rank] : kinds) {
    const std::string name = cls;
    const int r = rank;
    t.add({cls}, [name, r](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
      if (!e.contains("config") || !e["config"].is_object()) fail(Code::invalid_argument, name, ": missing the object field \"config\"");
      return std::make_shared<ConvLstmOp>(e["config"], ctx.dialect, r, name);
    });
  }
}

}  // namespace recur::graph
