// SPDX-License-Identifier: Apache-2.0
// Keras's attention layers: Attention (Luong: dot or concat scores), AdditiveAttention (Bahdanau)
// and MultiHeadAttention, over (batch, steps, features) tensors, with their masks, causal calls and
// attention scores. A causal self-attention streams: each call site keeps the keys and values of
// the steps so far in StreamStates::history.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>

#include "io/printable.hpp"
#include "model/device_run.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/error.hpp"

namespace recur::graph {
namespace {

// Keras's constant for masked scores (float32): BaseDenseAttention / Attention subtract it, the
// Softmax layer inside MultiHeadAttention adds it (Keras 2) or puts it in place (Keras 3).
constexpr float kMaskedScore = 1.0e9f;
// Sizes a config may give (heads, key_dim...): checked before their product sizes any weight.
constexpr int kMaxAttentionDim = 1 << 20;

bool call_flag(const CallArgs* call, const char* key) {
  if (!call) return false;
  return bool_of(call->kwargs, key, false);
}

// At build, so that a bad call argument is refused naming the layer before anything runs.
void check_call_flags(const CallArgs* call) {
  for (const char* key : {"use_causal_mask", "return_attention_scores"}) call_flag(call, key);
}

// Softmax of one row in double, Keras's exp(x - max) / sum, written back as floats.
void softmax_row(float* x, Index n) {
  if (n == 0) return;
  double m = x[0];
  for (Index j = 1; j < n; ++j) m = std::max(m, double(x[j]));
  double sum = 0;
  for (Index j = 0; j < n; ++j) sum += std::exp(double(x[j]) - m);
  for (Index j = 0; j < n; ++j) x[j] = static_cast<float>(std::exp(double(x[j]) - m) / sum);
}

// One attention call on the run's GPU (recur_gpu_attention: the same sums as the CPU loops here).
void attention_on_device(DeviceRun& dev, recur_gpu_attention& a, const std::string& what) {
  dev.call(what, [&](char* err, std::size_t len) { return dev.table().attention(dev.ordinal(), &a, err, len); });
}

const std::uint8_t* mask_data(const std::vector<std::uint8_t>* m) { return m ? m->data() : nullptr; }

// The steps (B, P) of a stream's past h and (B, n) of this step joined: their masks side by side,
// 1 where one has none (null when neither has one).
std::shared_ptr<const std::vector<std::uint8_t>> joined_mask(const Value& h, const Value& now) {
  if (!h.mask && !now.mask) return nullptr;
  const Index B = now.shape[0], n = now.shape[1], P = h.shape[1];
  auto m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(B * (P + n)), 1);
  for (Index b = 0; b < B; ++b) {
    for (Index t = 0; t < P; ++t) (*m)[static_cast<std::size_t>(b * (P + n) + t)] = h.mask ? (*h.mask)[static_cast<std::size_t>(b * P + t)] : 1;
    for (Index t = 0; t < n; ++t) (*m)[static_cast<std::size_t>(b * (P + n) + P + t)] = now.mask ? (*now.mask)[static_cast<std::size_t>(b * n + t)] : 1;
  }
  return m;
}

// The call site's past steps, checked against this step's rows (B, n, w); null before its first step.
Value* stream_past(const RunContext& ctx, const Op* op, int site, const Value& now) {
  const auto it = ctx.stream->history.find({op, site});
  if (it == ctx.stream->history.end()) return nullptr;
  Value& h = it->second;
  if (h.shape.size() != 3 || h.shape[0] != now.shape[0] || h.shape[2] != now.shape[2])
    fail(Code::shape, "layer '", op->name, "' (", op->class_name, "): the stream's past steps have shape ", shape_string(h.shape),
         ", this step ", shape_string(now.shape));
  return &h;
}

// Causal streaming: the call site's history (every past step's keys/values rows, with the value
// mask when there is one) with this step's rows (B, n, w) appended. The caller stores it back once
// the step has run, so that a step it refuses leaves the stream as it was.
Value with_history(const RunContext& ctx, const Op* op, int site, Value now) {
  Value* h = stream_past(ctx, op, site, now);
  if (!h) return now;
  download_to_host(*h);  // kept on a GPU by an earlier step
  const Index B = now.shape[0], n = now.shape[1], w = now.shape[2], P = h->shape[1];
  Value all = make_value({B, P + n, w}, op->class_name.c_str());
  join_values({h, &now}, 1, all);
  all.mask = joined_mask(*h, now);
  return all;
}

// The same on the run's GPU, where the joined steps stay for the next step. A past the host holds
// (the stream stepped on the CPU, or came from a snapshot) goes up once.
std::optional<Value> with_history_on_device(RunContext& ctx, const Op* op, int site, Value now) {
  const Value* past = stream_past(ctx, op, site, now);
  if (!past) return now;
  DeviceRun& dev = *ctx.device;
  Value h = *past;  // the stream keeps its own until the step has run
  const std::string what = "layer '" + op->name + "' (" + op->class_name + ")";
  dev.to_device(h, what + ": the stream's past steps");
  std::vector<Value> out;
  if (!join_on_device(dev, {&h, &now}, 1, {now.shape[0], h.shape[1] + now.shape[1], now.shape[2]}, what, out))
    return std::nullopt;
  out[0].mask = joined_mask(h, now);
  return std::move(out[0]);
}

// A causal stream's query step that sees no valid step yet: Keras spreads it over every step of
// the whole sequence (all its scores are masked alike), which a stream has not seen yet.
[[noreturn]] void no_valid_step(const Op& op, Index b, Index t) {
  fail(Code::unsupported, "layer '", op.name, "' (", op.class_name, "): streamed step ", t, " of batch row ", b,
       " attends to no unmasked step so far; Keras spreads such a step over the whole sequence, so run the whole sequence at once");
}

// A causal stream step on the GPU: the step a CPU run refuses (no_valid_step), refused before the
// device runs it. `valid(b, i, j)` says whether query i of row b may attend to step j of the Tv
// joined steps (past ones and this step's Tq).
template <class Valid>
void check_each_step_sees_one(const Op& op, Index B, Index Tq, Index Tv, Valid valid) {
  const Index past = Tv - Tq;
  for (Index b = 0; b < B; ++b)
    for (Index i = 0; i < Tq; ++i) {
      bool any = false;
      for (Index j = 0; j <= past + i && !any; ++j) any = valid(b, i, j);
      if (!any) no_valid_step(op, b, past + i);
    }
}

// The stream rule both layers share: a query that steps over a key/value that does not is per
// step; key/value that step need a causal call over a query that steps with them.
std::string attention_stream_rule(const std::vector<bool>& stepped_in, std::size_t query, std::size_t value, std::size_t key,
                                  bool causal, bool kv_scores, std::vector<bool>& stepped_out) {
  const bool q = stepped_in[query], v = stepped_in[value], k = stepped_in[key];
  stepped_out.assign(stepped_out.size(), q);
  if (!q && !v && !k) return "";
  if (!v && !k) {
    if (causal) return "a causal call over a value that does not step (its positions count from the stream's start)";
    return "";
  }
  if (!causal) return "it attends over the whole value sequence (only a causal self-attention, use_causal_mask=True, streams)";
  if (!q || !v || !k) return "its query, value and key must all step for a causal attention to stream";
  if (kv_scores) return "its attention scores cover every past step (return_attention_scores=True does not stream)";
  return "";
}

// ---- Attention, AdditiveAttention -------------------------------------------------------------

class DenseAttentionOp : public Op {
 public:
  DenseAttentionOp(const json& cfg, bool additive, const DialectInfo& d)
      : additive_(additive), keras3_(d.dialect == Dialect::keras3), who_(additive ? "AdditiveAttention" : "Attention") {
    use_scale_ = bool_of(cfg, "use_scale", additive);
    if (!additive) {
      score_mode_ = str_of(cfg, "score_mode", "dot");
      if (score_mode_ != "dot" && score_mode_ != "concat")
        fail(Code::invalid_argument, who_, ": score_mode: expected 'dot' or 'concat', got '", io::printable(score_mode_), "'");
    }
    const double dropout = num_of(cfg, "dropout", 0.0);  // inference: no dropout
    if (!(dropout >= 0.0 && dropout <= 1.0)) fail(Code::invalid_argument, who_, ": dropout: expected a rate in [0, 1], got ", dropout);
    causal_ = bool_of(cfg, "causal", false);  // older Keras 2 configs
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    if (in.size() != 2 && in.size() != 3)
      fail(Code::invalid_argument, who_, ": takes [query, value] or [query, value, key], got ", in.size(), " input(s)");
    check_call_flags(ctx.call);
    if (ctx.call)
      for (const std::string& r : ctx.call->roles)
        if (!r.empty()) fail(Code::unsupported, who_, ": a tensor passed as '", r, "' (Keras calls it on a list)");
    for (const Spec& s : in)
      if (s.dims.size() != 3)
        fail(Code::unsupported, who_, ": recur runs (batch, steps, features) inputs, got ", spec_string(s));
    const Spec& q = in[0];
    const Spec& v = in[1];
    const Spec& k = in.size() > 2 ? in[2] : in[1];
    const Index dq = known_last(q, who_.c_str()), dv = known_last(v, who_.c_str()), dk = known_last(k, who_.c_str());
    if (dq != dk)
      fail(Code::shape, who_, ": the query's features (", dq, ") and the key's (", dk, ") must be equal; got query ", spec_string(q),
           ", key ", spec_string(k));
    if (v.dims[1] >= 0 && k.dims[1] >= 0 && v.dims[1] != k.dims[1])
      fail(Code::shape, who_, ": the value and the key must have the same steps; got value ", spec_string(v), ", key ", spec_string(k));
    // AdditiveAttention's scale has the features of the value (Keras 2) or of the query (Keras 3);
    // both must equal the query's for scale * tanh(query + key).
    if (additive_ && !keras3_ && dv != dq)
      fail(Code::shape, who_, ": the value's features (", dv, ") must equal the query's (", dq, ") for its scale");
    const Index dim = additive_ ? dq : 1;
    if (!built_) {
      ctx.reserve_weights(double(dim) + 1, who_ + ": " + std::to_string(dim) + " features");
      dim_ = dim;
      features_ = dq;
      scale_.assign(static_cast<std::size_t>(dim), 1.0f);
      built_ = true;
    } else if (dq != features_) {
      fail(Code::shape, who_, ": built for ", features_, " query features, called on ", spec_string(q));
    }
    Spec out = q;
    out.ids = false;
    out.dims[2] = dv;
    std::vector<Spec> outs = {out};
    if (call_flag(ctx.call, "return_attention_scores")) {
      Spec s;
      s.dims = {q.dims[0], q.dims[1], v.dims[1]};
      outs.push_back(s);
    }
    return outs;
  }

  std::string stream_rule_at(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out,
                             const CallArgs* call) const override {
    if (stepped_in.size() < 2) return "";
    const bool causal = causal_ || call_flag(call, "use_causal_mask");
    return attention_stream_rule(stepped_in, 0, 1, stepped_in.size() > 2 ? 2 : 1, causal,
                                 call_flag(call, "return_attention_scores"), stepped_out);
  }

  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const Value& q = *in.main[0];
    const Value& v0 = *in.main[1];
    const Value& k0 = in.main.size() > 2 ? *in.main[2] : v0;
    const bool causal = causal_ || call_flag(ctx.call, "use_causal_mask");
    const bool scores_out = call_flag(ctx.call, "return_attention_scores");
    check_fit(q, v0, k0);
    const Index B = q.shape[0], Tq = q.shape[1], d = q.shape[2], dv = v0.shape[2];
    // The keys and values attended over: this call's, or (a causal stream) every step so far.
    const Value* kv = nullptr;
    Value joined;  // a causal stream's keys and values so far
    Index past = 0;
    if (ctx.stream && ctx.stepped && causal) {
      Value now = make_value({B, v0.shape[1], d + dv}, who_.c_str());
      for (Index r = 0; r < B * v0.shape[1]; ++r) {
        std::copy_n(k0.data.data() + r * d, d, now.data.data() + r * (d + dv));
        std::copy_n(v0.data.data() + r * dv, dv, now.data.data() + r * (d + dv) + d);
      }
      now.mask = v0.mask;
      joined = with_history(ctx, this, site, std::move(now));
      kv = &joined;
      past = kv->shape[1] - v0.shape[1];
    }
    const Index Tv = kv ? kv->shape[1] : v0.shape[1];
    const Index kstride = kv ? d + dv : d, vstride = kv ? d + dv : dv;
    const float* K = kv ? kv->data.data() : k0.data.data();
    const float* V = kv ? kv->data.data() + d : v0.data.data();
    const std::vector<std::uint8_t>* vmask = kv ? kv->mask.get() : in.drop_mask ? nullptr : v0.mask.get();
    const std::vector<std::uint8_t>* qmask = in.drop_mask ? nullptr : q.mask.get();

    Value y = make_value({B, Tq, dv}, who_.c_str());
    Value s = make_value({B, Tq, Tv}, who_.c_str());
    for (Index b = 0; b < B; ++b)
      for (Index i = 0; i < Tq; ++i) {
        const float* qi = q.data.data() + (b * Tq + i) * d;
        float* row = s.data.data() + (b * Tq + i) * Tv;
        bool any_valid = false;
        for (Index j = 0; j < Tv; ++j) {
          const float* kj = K + (b * Tv + j) * kstride;
          float score;
          if (additive_) {  // sum(scale * tanh(q + k))
            double acc = 0;
            for (Index c = 0; c < d; ++c) acc += double(scale_[use_scale_ ? static_cast<std::size_t>(c) : 0] * std::tanh(qi[c] + kj[c]));
            score = static_cast<float>(acc);
          } else if (score_mode_ == "concat") {  // concat_score_weight * sum(tanh(scale * (q + k)))
            double acc = 0;
            for (Index c = 0; c < d; ++c) {
              const float x = qi[c] + kj[c];
              acc += std::tanh(use_scale_ ? scale_[0] * x : x);
            }
            score = concat_weight_ * static_cast<float>(acc);
          } else {
            double acc = 0;
            for (Index c = 0; c < d; ++c) acc += double(qi[c]) * kj[c];
            score = static_cast<float>(acc);
            if (use_scale_) score *= scale_[0];
          }
          const bool valid = (!vmask || (*vmask)[static_cast<std::size_t>(b * Tv + j)]) && (!causal || j <= past + i);
          any_valid = any_valid || valid;
          row[j] = valid ? score : score - kMaskedScore;
        }
        softmax_row(row, Tv);
        float* out = y.data.data() + (b * Tq + i) * dv;
        if (qmask && !(*qmask)[static_cast<std::size_t>(b * Tq + i)]) continue;  // Keras zeroes masked queries
        if (kv && !any_valid) no_valid_step(*this, b, past + i);
        for (Index c = 0; c < dv; ++c) {
          double acc = 0;
          for (Index j = 0; j < Tv; ++j) acc += double(row[j]) * V[(b * Tv + j) * vstride + c];
          out[c] = static_cast<float>(acc);
        }
      }
    if (qmask) y.mask = q.mask;  // the output mask is the query's
    if (kv) ctx.stream->history[{this, site}] = std::move(joined);
    std::vector<Value> outs;
    outs.push_back(std::move(y));
    if (scores_out) outs.push_back(std::move(s));
    return outs;
  }

  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const override {
    const bool causal = causal_ || call_flag(ctx.call, "use_causal_mask");
    const Value& q = *in.main[0];
    const Value& v = *in.main[1];
    const Value& k = in.main.size() > 2 ? *in.main[2] : v;
    check_fit(q, v, k);
    const Index B = q.shape[0], Tq = q.shape[1], d = q.shape[2], dv = v.shape[2];
    DeviceRun& dev = *ctx.device;
    const std::string what = who_ + " '" + name + "'";
    // A causal stream attends over its past keys and values too, side by side as forward keeps them.
    const bool streaming = ctx.stream && ctx.stepped && causal;
    std::optional<Value> joined;
    if (streaming) {
      std::vector<Value> now;
      if (!join_on_device(dev, {&k, &v}, 2, {B, v.shape[1], d + dv}, what, now)) return false;
      now[0].mask = v.mask;
      joined = with_history_on_device(ctx, this, site, std::move(now[0]));
      if (!joined) return false;
      const std::vector<std::uint8_t>* kvm = joined->mask.get();
      const std::vector<std::uint8_t>* qm = in.drop_mask ? nullptr : q.mask.get();
      const Index Tj = joined->shape[1];
      check_each_step_sees_one(*this, B, Tq, Tj, [&](Index b, Index i, Index j) {
        return (qm && !(*qm)[static_cast<std::size_t>(b * Tq + i)]) || !kvm || (*kvm)[static_cast<std::size_t>(b * Tj + j)];
      });
    }
    const Index Tv = joined ? joined->shape[1] : v.shape[1];
    Value y = dev.make({B, Tq, dv}, who_.c_str());
    Value s = dev.make({B, Tq, Tv}, who_.c_str());
    recur_gpu_attention a{};
    a.score = additive_ ? RECUR_GPU_ATTN_ADDITIVE : score_mode_ == "concat" ? RECUR_GPU_ATTN_CONCAT : RECUR_GPU_ATTN_DOT;
    a.flags = (use_scale_ && !additive_ ? RECUR_GPU_ATTN_SCALE_LOGITS : 0) | (causal ? RECUR_GPU_ATTN_CAUSAL : 0) |
              (joined ? RECUR_GPU_ATTN_CAUSAL_LAST : 0);
    a.batch = B, a.heads = 1, a.q_steps = Tq, a.v_steps = Tv, a.key_dim = d, a.value_dim = dv;
    a.query = q.device->data(), a.query_stride = d;
    if (joined) {
      a.key = joined->device->data(), a.key_stride = d + dv;
      a.value = joined->device->data() + d, a.value_stride = d + dv;
    } else {
      a.key = k.device->data(), a.key_stride = d;
      a.value = v.device->data(), a.value_stride = dv;
    }
    a.scale = scale_[0], a.concat_weight = concat_weight_;
    // AdditiveAttention's scale per feature (all 1 without use_scale).
    if (additive_) a.feature_scale = weights_.on(dev, {{scale_.data(), scale_.size()}})[0];
    a.host_query_mask = mask_data(in.drop_mask ? nullptr : q.mask.get());
    a.host_value_mask = mask_data(joined ? joined->mask.get() : in.drop_mask ? nullptr : v.mask.get());
    a.scores = s.device->data();
    a.output = y.device->data(), a.output_stride = dv;
    attention_on_device(dev, a, what);
    if (q.mask && !in.drop_mask) y.mask = q.mask;
    if (joined) ctx.stream->history[{this, site}] = std::move(*joined);
    out.clear();
    out.push_back(std::move(y));
    if (call_flag(ctx.call, "return_attention_scores")) out.push_back(std::move(s));
    return true;
  }

  // None before a build (one that failed leaves the layer's own error to report, not the weights').
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    if (main.size() < 2 || main[0].dims.size() != 3 || main[1].dims.size() != 3) return Op::work(main, out);
    auto d = [](Index v) { return double(std::max<Index>(v, 1)); };
    const double pairs = d(main[0].dims[0]) * d(main[0].dims[1]) * d(main[1].dims[1]);
    // Scores: a tanh per feature (additive, concat) or a dot product; then a softmax and the sum
    // of the values.
    const bool tanh_scores = additive_ || score_mode_ == "concat";
    const double scores = pairs * d(main[0].dims[2]) * (tanh_scores ? kScalarMathWork : kScalarMacWork);
    return scores + pairs * (kScalarMathWork + d(main[1].dims[2]) * kScalarMacWork) + Op::work(main, out);
  }
  std::size_t num_weights() const override { return built_ ? (use_scale_ ? 1 : 0) + (score_mode_ == "concat" ? 1 : 0) : 0; }
  std::uint64_t weight_floats() const override { return static_cast<std::uint64_t>(dim_) + 1; }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    weights_.reset();
    if (use_scale_) {
      if (additive_) scale_ = take_weight(w, {dim_}, where);
      else scale_ = take_weight(w, {}, where);
    }
    if (score_mode_ == "concat") concat_weight_ = take_weight(w, {}, where).at(0);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  void check_fit(const Value& q, const Value& v, const Value& k) const {
    if (k.shape[1] != v.shape[1] || v.shape[0] != q.shape[0] || k.shape[0] != q.shape[0])
      fail(Code::shape, "layer '", name, "' (", who_, "): query ", shape_string(q.shape), ", value ", shape_string(v.shape),
           " and key ", shape_string(k.shape), " do not fit");
  }

  bool additive_, keras3_;
  std::string who_;
  bool use_scale_ = false, causal_ = false, built_ = false;
  std::string score_mode_ = "dot";
  Index dim_ = 0, features_ = 0;
  std::vector<float> scale_;
  float concat_weight_ = 1.0f;
  DeviceWeights weights_;
};

// ---- MultiHeadAttention -----------------------------------------------------------------------

// Which main input is which: positional query, value, key, then those passed by keyword.
struct MhaSlots {
  int query = -1, value = -1, key = -1, attention_mask = -1;
};

MhaSlots mha_slots(const CallArgs* call, std::size_t n) {
  MhaSlots s;
  int positional = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string role = call && i < call->roles.size() ? call->roles[i] : std::string();
    int* slot = nullptr;
    if (role.empty()) {
      slot = positional == 0 ? &s.query : positional == 1 ? &s.value : positional == 2 ? &s.key : nullptr;
      ++positional;
      if (!slot) fail(Code::unsupported, "MultiHeadAttention: more than 3 positional tensors (query, value, key)");
    } else if (role == "query") {
      slot = &s.query;
    } else if (role == "value") {
      slot = &s.value;
    } else if (role == "key") {
      slot = &s.key;
    } else if (role == "attention_mask") {
      slot = &s.attention_mask;
    } else {
      fail(Code::unsupported, "MultiHeadAttention: a tensor passed as '", role, "'");
    }
    if (*slot >= 0) fail(Code::invalid_argument, "MultiHeadAttention: two tensors for the same argument ('", role.empty() ? "positional" : role, "')");
    *slot = static_cast<int>(i);
  }
  if (s.query < 0 || s.value < 0) fail(Code::invalid_argument, "MultiHeadAttention: takes a query and a value");
  if (s.key < 0) s.key = s.value;
  return s;
}

int positive_dim(const json& cfg, const char* key, int fallback) {
  const int v = int_of(cfg, key, fallback);
  if (v <= 0 || v > kMaxAttentionDim)
    fail(Code::invalid_argument, "MultiHeadAttention: ", key, ": expected a positive integer up to ", kMaxAttentionDim, ", got ",
         io::excerpt(cfg.contains(key) ? cfg[key] : json(v)));
  return v;
}

class MultiHeadAttentionOp : public Op {
 public:
  MultiHeadAttentionOp(const json& cfg, const DialectInfo& d) : keras3_(d.dialect == Dialect::keras3) {
    if (!cfg.contains("num_heads") || !cfg.contains("key_dim"))
      fail(Code::invalid_argument, "MultiHeadAttention: the config needs num_heads and key_dim");
    heads_ = positive_dim(cfg, "num_heads", 0);
    key_dim_ = positive_dim(cfg, "key_dim", 0);
    value_dim_ = cfg.contains("value_dim") && !cfg["value_dim"].is_null() ? positive_dim(cfg, "value_dim", 0) : key_dim_;
    use_bias_ = bool_of(cfg, "use_bias", true);
    dropout_ = num_of(cfg, "dropout", 0.0);
    if (!(dropout_ >= 0.0 && dropout_ <= 1.0)) fail(Code::invalid_argument, "MultiHeadAttention: dropout: expected a rate in [0, 1], got ", dropout_);
    robust_ = bool_of(cfg, "softmax_robust_masking", false);
    if (cfg.contains("output_shape") && !cfg["output_shape"].is_null()) {
      const json& o = cfg["output_shape"];
      const json& x = o.is_array() && o.size() == 1 ? o[0] : o;
      if (o.is_array() && o.size() != 1)
        fail(Code::unsupported, "MultiHeadAttention: output_shape ", io::excerpt(o), " (recur projects to one feature axis)");
      if (!x.is_number_integer() || x.get<std::int64_t>() <= 0 || x.get<std::int64_t>() > kMaxAttentionDim)
        fail(Code::invalid_argument, "MultiHeadAttention: output_shape: expected an integer in [1, ", kMaxAttentionDim, "], got ", io::excerpt(o));
      output_dim_ = x.get<Index>();
    }
    if (cfg.contains("attention_axes") && !cfg["attention_axes"].is_null()) {
      const json& a = cfg["attention_axes"];
      const json& x = a.is_array() && a.size() == 1 ? a[0] : a;
      if (!x.is_number_integer() || (x.get<std::int64_t>() != 1 && x.get<std::int64_t>() != -2))
        fail(Code::unsupported, "MultiHeadAttention: attention_axes=", io::excerpt(a),
             " (recur attends over the steps axis of (batch, steps, features) inputs: attention_axes None or [1])");
    }
    if (bool_of(cfg, "use_gate", false)) fail(Code::unsupported, "MultiHeadAttention: use_gate=True");
    if (cfg.contains("sliding_window") && !cfg["sliding_window"].is_null())
      fail(Code::unsupported, "MultiHeadAttention: sliding_window=", io::excerpt(cfg["sliding_window"]));
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    const MhaSlots sl = mha_slots(ctx.call, in.size());
    check_call_flags(ctx.call);
    const Spec& q = in[static_cast<std::size_t>(sl.query)];
    const Spec& v = in[static_cast<std::size_t>(sl.value)];
    const Spec& k = in[static_cast<std::size_t>(sl.key)];
    for (const Spec* s : {&q, &v, &k})
      if (s->dims.size() != 3)
        fail(Code::unsupported, "MultiHeadAttention: recur runs (batch, steps, features) query, value and key, got ", spec_string(*s));
    const Index dq = known_last(q, "MultiHeadAttention"), dv = known_last(v, "MultiHeadAttention"), dk = known_last(k, "MultiHeadAttention");
    if (v.dims[1] >= 0 && k.dims[1] >= 0 && v.dims[1] != k.dims[1])
      fail(Code::shape, "MultiHeadAttention: the value and the key must have the same steps; got value ", spec_string(v), ", key ",
           spec_string(k));
    if (sl.attention_mask >= 0) {
      const Spec& m = in[static_cast<std::size_t>(sl.attention_mask)];
      const bool fits = m.dims.size() == 3 && (m.dims[1] < 0 || q.dims[1] < 0 || m.dims[1] == q.dims[1]) &&
                        (m.dims[2] < 0 || v.dims[1] < 0 || m.dims[2] == v.dims[1]);
      if (!fits)
        fail(Code::unsupported, "MultiHeadAttention: attention_mask ", spec_string(m), " (recur takes a (batch, query steps, value steps) mask, ",
             "here (batch, ", q.dims[1], ", ", v.dims[1], "))");
    }
    const Index out_dim = output_dim_ ? output_dim_ : dq;
    if (!built_) {
      const double hk = double(heads_) * key_dim_, hv = double(heads_) * value_dim_;
      const double floats = double(dq) * hk + double(dk) * hk + double(dv) * hv + hv * double(out_dim) +
                            (use_bias_ ? 2 * hk + hv + double(out_dim) : 0);
      ctx.reserve_weights(floats, "MultiHeadAttention: num_heads=" + std::to_string(heads_) + ", key_dim=" + std::to_string(key_dim_) +
                                      ", value_dim=" + std::to_string(value_dim_));
      dq_ = dq, dk_ = dk, dv_ = dv, out_ = out_dim;
      const Index HK = heads_ * key_dim_, HV = heads_ * value_dim_;
      wq_.assign(static_cast<std::size_t>(dq * HK), 0.0f);
      wk_.assign(static_cast<std::size_t>(dk * HK), 0.0f);
      wv_.assign(static_cast<std::size_t>(dv * HV), 0.0f);
      wo_.assign(static_cast<std::size_t>(HV * out_dim), 0.0f);
      if (use_bias_) {
        bq_.assign(static_cast<std::size_t>(HK), 0.0f);
        bk_.assign(static_cast<std::size_t>(HK), 0.0f);
        bv_.assign(static_cast<std::size_t>(HV), 0.0f);
        bo_.assign(static_cast<std::size_t>(out_dim), 0.0f);
      }
      built_ = true;
    } else if (dq != dq_ || dk != dk_ || dv != dv_) {
      fail(Code::shape, "MultiHeadAttention: built for query, value and key features ", dq_, ", ", dv_, " and ", dk_, ", called on ",
           spec_string(q), ", ", spec_string(v), ", ", spec_string(k));
    }
    Spec out = q;
    out.ids = false;
    out.dims[2] = out_;
    std::vector<Spec> outs = {out};
    if (call_flag(ctx.call, "return_attention_scores")) {
      Spec s;
      s.dims = {q.dims[0], heads_, q.dims[1], v.dims[1]};
      outs.push_back(s);
    }
    return outs;
  }

  std::string stream_rule_at(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out,
                             const CallArgs* call) const override {
    const MhaSlots sl = mha_slots(call, stepped_in.size());
    bool any = false;
    for (bool s : stepped_in) any = any || s;
    if (any && sl.attention_mask >= 0) {
      stepped_out.assign(stepped_out.size(), false);
      return "its attention_mask covers the whole sequence";
    }
    if (any && call_flag(call, "return_attention_scores")) {
      stepped_out.assign(stepped_out.size(), false);
      return "its attention scores (batch, heads, query steps, value steps) do not stream (return_attention_scores=True)";
    }
    return attention_stream_rule(stepped_in, static_cast<std::size_t>(sl.query), static_cast<std::size_t>(sl.value),
                                 static_cast<std::size_t>(sl.key), call_flag(call, "use_causal_mask"), false, stepped_out);
  }

  // x (rows, c) @ kernel (c, n) + bias.
  static void project(const float* x, Index rows, Index c, const std::vector<float>& w, const std::vector<float>& bias, Index n,
                      float* out, Index out_stride) {
    std::vector<double> acc(static_cast<std::size_t>(n));
    for (Index r = 0; r < rows; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (Index i = 0; i < c; ++i) {
        const double xi = x[r * c + i];
        const float* wr = w.data() + i * n;
        for (Index o = 0; o < n; ++o) acc[static_cast<std::size_t>(o)] += xi * wr[o];
      }
      for (Index o = 0; o < n; ++o) {
        float y = static_cast<float>(acc[static_cast<std::size_t>(o)]);
        if (!bias.empty()) y += bias[static_cast<std::size_t>(o)];
        out[r * out_stride + o] = y;
      }
    }
  }

  // A call's tensors by role, their shapes checked against each other.
  struct CallTensors {
    const Value *q, *v, *k, *am;
    bool causal, scores_out;
    Index B, Tq, Tv;
  };
  CallTensors call_tensors(const CallInputs& in, const RunContext& ctx) const {
    const MhaSlots sl = mha_slots(ctx.call, in.main.size());
    const Value* q = in.main[static_cast<std::size_t>(sl.query)];
    const Value* v = in.main[static_cast<std::size_t>(sl.value)];
    const Value* k = in.main[static_cast<std::size_t>(sl.key)];
    const Value* am = sl.attention_mask >= 0 ? in.main[static_cast<std::size_t>(sl.attention_mask)] : nullptr;
    const Index B = q->shape[0], Tq = q->shape[1], Tv = v->shape[1];
    if (k->shape[1] != Tv || v->shape[0] != B || k->shape[0] != B)
      fail(Code::shape, "layer '", name, "' (MultiHeadAttention): query ", shape_string(q->shape), ", value ",
           shape_string(v->shape), " and key ", shape_string(k->shape), " do not fit");
    if (am && (am->shape.size() != 3 || am->shape[0] != B || am->shape[1] != Tq || am->shape[2] != Tv))
      fail(Code::shape, "layer '", name, "' (MultiHeadAttention): attention_mask has shape ", shape_string(am->shape),
           ", expected ", shape_string({B, Tq, Tv}));
    return {q, v, k, am, call_flag(ctx.call, "use_causal_mask"), call_flag(ctx.call, "return_attention_scores"), B, Tq, Tv};
  }
  // The value and key masks ANDed (null when neither has one).
  static std::shared_ptr<std::vector<std::uint8_t>> kv_mask(const Value& v, const Value& k, Index rows) {
    if (!v.mask && !k.mask) return nullptr;
    auto m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(rows), 1);
    for (std::size_t r = 0; r < m->size(); ++r) (*m)[r] = (!v.mask || (*v.mask)[r]) && (!k.mask || (*k.mask)[r]);
    return m;
  }

  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const CallTensors t = call_tensors(in, ctx);
    const Value &q = *t.q, &v = *t.v, &k = *t.k;
    const Value* am = t.am;
    const bool causal = t.causal, scores_out = t.scores_out;
    const Index B = t.B, Tq = t.Tq, Tn = t.Tv;
    const Index H = heads_, dk = key_dim_, dv = value_dim_, HK = H * dk, HV = H * dv;
    Value Q = make_value({B, Tq, HK}, "MultiHeadAttention");
    project(q.data.data(), B * Tq, dq_, wq_, bq_, HK, Q.data.data(), HK);
    // Keys and values side by side (B, Tv, HK + HV), with the value and key masks ANDed.
    Value now = make_value({B, Tn, HK + HV}, "MultiHeadAttention");
    project(k.data.data(), B * Tn, dk_, wk_, bk_, HK, now.data.data(), HK + HV);
    project(v.data.data(), B * Tn, dv_, wv_, bv_, HV, now.data.data() + HK, HK + HV);
    now.mask = kv_mask(v, k, B * Tn);
    const bool streaming = ctx.stream && ctx.stepped && causal;
    if (streaming) now = with_history(ctx, this, site, std::move(now));
    const Value* kv = &now;
    const Index past = kv->shape[1] - Tn;
    const Index Tv = kv->shape[1], W = HK + HV;
    const std::vector<std::uint8_t>* kvmask = kv->mask.get();
    const std::vector<std::uint8_t>* qmask = q.mask.get();
    const bool any_mask = kvmask || qmask || causal || am;
    // Keras 3 without scores or dropout runs ops.dot_product_attention, which scales the logits;
    // otherwise the query is scaled before the product and the Softmax layer masks (both dialects),
    // Keras 3's zeroing the masked weights after it (a fully masked row gives zeros, not 1/Tv).
    const float inv_sqrt = static_cast<float>(1.0 / std::sqrt(double(dk)));
    const bool scale_after = keras3_ && !scores_out && dropout_ == 0.0;
    const bool zero_masked = keras3_ && !scale_after;

    Value s = make_value({B, H, Tq, Tv}, "MultiHeadAttention");
    Value o = make_value({B, Tq, HV}, "MultiHeadAttention");
    std::vector<float> qh(static_cast<std::size_t>(dk));
    for (Index b = 0; b < B; ++b)
      for (Index h = 0; h < H; ++h)
        for (Index i = 0; i < Tq; ++i) {
          const float* qi = Q.data.data() + (b * Tq + i) * HK + h * dk;
          for (Index c = 0; c < dk; ++c) qh[static_cast<std::size_t>(c)] = scale_after ? qi[c] : qi[c] * inv_sqrt;
          float* row = s.data.data() + ((b * H + h) * Tq + i) * Tv;
          const bool q_ok = !qmask || (*qmask)[static_cast<std::size_t>(b * Tq + i)];
          auto valid = [&](Index j) {
            return q_ok && (!kvmask || (*kvmask)[static_cast<std::size_t>(b * Tv + j)]) && (!causal || j <= past + i) &&
                   (!am || am->data[static_cast<std::size_t>((b * Tq + i) * Tv + j)] != 0.0f);
          };
          for (Index j = 0; j < Tv; ++j) {
            const float* kj = kv->data.data() + (b * Tv + j) * W + h * dk;
            double acc = 0;
            for (Index c = 0; c < dk; ++c) acc += double(qh[static_cast<std::size_t>(c)]) * kj[c];
            float x = static_cast<float>(acc);
            if (scale_after) x *= inv_sqrt;
            // Keras 2's Softmax adds (1 - mask) * -1e9; Keras 3's (and robust masking) puts -1e9 in place.
            if (any_mask && !valid(j)) x = keras3_ || robust_ ? -kMaskedScore : x + -kMaskedScore;
            row[j] = x;
          }
          softmax_row(row, Tv);
          if (zero_masked && any_mask)
            for (Index j = 0; j < Tv; ++j)
              if (!valid(j)) row[j] = 0.0f;
          if (streaming && any_mask && !zero_masked) {  // see no_valid_step
            bool any = false;
            for (Index j = 0; j < Tv && !any; ++j) any = valid(j);
            if (!any) no_valid_step(*this, b, past + i);
          }
          float* oi = o.data.data() + (b * Tq + i) * HV + h * dv;
          for (Index c = 0; c < dv; ++c) {
            double acc = 0;
            for (Index j = 0; j < Tv; ++j) acc += double(row[j]) * kv->data[static_cast<std::size_t>((b * Tv + j) * W + HK + h * dv + c)];
            oi[c] = static_cast<float>(acc);
          }
        }
    Value y = make_value({B, Tq, out_}, "MultiHeadAttention");
    project(o.data.data(), B * Tq, HV, wo_, bo_, out_, y.data.data(), out_);
    y.mask = q.mask;  // the output mask is the query's
    if (streaming) ctx.stream->history[{this, site}] = std::move(now);
    std::vector<Value> outs;
    outs.push_back(std::move(y));
    if (scores_out) outs.push_back(std::move(s));
    return outs;
  }

  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const override {
    const CallTensors t = call_tensors(in, ctx);
    const Value &q = *t.q, &v = *t.v, &k = *t.k;
    const Value* am = t.am;
    const bool causal = t.causal, scores_out = t.scores_out;
    const bool streaming = ctx.stream && ctx.stepped && causal;
    // forward checks each streamed step against attention_mask's floats, which live on the GPU.
    if (streaming && am) {
      ctx.device->declined = "a stream's causal step with an attention_mask runs on the host";
      return false;
    }
    const Index B = t.B, Tq = t.Tq, Tn = t.Tv;
    const Index H = heads_, HK = H * key_dim_, HV = H * value_dim_, W = HK + HV;
    DeviceRun& dev = *ctx.device;
    const auto w = weights_.on(dev, {{wq_.data(), wq_.size()}, {wk_.data(), wk_.size()}, {wv_.data(), wv_.size()},
                                     {wo_.data(), wo_.size()}, {bq_.data(), bq_.size()}, {bk_.data(), bk_.size()},
                                     {bv_.data(), bv_.size()}, {bo_.data(), bo_.size()}});
    const std::string what = "MultiHeadAttention '" + name + "'";
    auto project = [&](const Value& x, Index rows, Index c, int part, Index n, float* y, Index y_stride) {
      dev.call(what, [&](char* err, std::size_t len) {
        return dev.table().project(dev.ordinal(), x.device->data(), rows, c, w[static_cast<std::size_t>(part)],
                                   use_bias_ ? w[static_cast<std::size_t>(part + 4)] : nullptr, n, y, y_stride, err, len);
      });
    };
    // As forward: the projected query, and the keys and values side by side (B, Tv, HK + HV), after
    // a causal stream's past ones.
    Value Q = dev.make({B, Tq, HK}, "MultiHeadAttention");
    Value kv = dev.make({B, Tn, W}, "MultiHeadAttention");
    project(q, B * Tq, dq_, 0, HK, Q.device->data(), HK);
    project(k, B * Tn, dk_, 1, HK, kv.device->data(), W);
    project(v, B * Tn, dv_, 2, HV, kv.device->data() + HK, W);
    kv.mask = kv_mask(v, k, B * Tn);
    const bool scale_after = keras3_ && !scores_out && dropout_ == 0.0;
    if (streaming) {
      std::optional<Value> joined = with_history_on_device(ctx, this, site, std::move(kv));
      if (!joined) return false;
      kv = std::move(*joined);
      const bool zero_masked = keras3_ && !scale_after;
      if (!zero_masked) {  // forward's check (see no_valid_step)
        const std::vector<std::uint8_t>* kvmask = kv.mask.get();
        const std::vector<std::uint8_t>* qmask = q.mask.get();
        const Index Tj = kv.shape[1];
        check_each_step_sees_one(*this, B, Tq, Tj, [&](Index b, Index i, Index j) {
          return (!qmask || (*qmask)[static_cast<std::size_t>(b * Tq + i)]) &&
                 (!kvmask || (*kvmask)[static_cast<std::size_t>(b * Tj + j)]);
        });
      }
    }
    const Index Tv = kv.shape[1];
    const auto& kvm = kv.mask;
    const bool any_mask = kvm || q.mask || causal || am;
    Value s = dev.make({B, H, Tq, Tv}, "MultiHeadAttention");
    Value o = dev.make({B, Tq, HV}, "MultiHeadAttention");
    recur_gpu_attention a{};
    a.score = RECUR_GPU_ATTN_DOT;
    a.flags = (scale_after ? RECUR_GPU_ATTN_SCALE_LOGITS : RECUR_GPU_ATTN_PRESCALE_QUERY) | RECUR_GPU_ATTN_QUERY_MASKS_SCORES |
              (causal ? RECUR_GPU_ATTN_CAUSAL : 0) | (streaming ? RECUR_GPU_ATTN_CAUSAL_LAST : 0) |
              (keras3_ || robust_ ? RECUR_GPU_ATTN_REPLACE_MASKED : 0) |
              (keras3_ && !scale_after && any_mask ? RECUR_GPU_ATTN_ZERO_MASKED : 0);
    a.batch = B, a.heads = H, a.q_steps = Tq, a.v_steps = Tv, a.key_dim = key_dim_, a.value_dim = value_dim_;
    a.query = Q.device->data(), a.query_stride = HK;
    a.key = kv.device->data(), a.key_stride = W;
    a.value = kv.device->data() + HK, a.value_stride = W;
    a.scale = static_cast<float>(1.0 / std::sqrt(double(key_dim_)));
    a.host_query_mask = mask_data(q.mask.get());
    a.host_value_mask = mask_data(kvm.get());
    a.attention_mask = am ? am->device->data() : nullptr;
    a.scores = s.device->data();
    a.output = o.device->data(), a.output_stride = HV;
    attention_on_device(dev, a, what);
    Value y = dev.make({B, Tq, out_}, "MultiHeadAttention");
    project(o, B * Tq, HV, 3, out_, y.device->data(), out_);
    y.mask = q.mask;  // the output mask is the query's
    if (streaming) ctx.stream->history[{this, site}] = std::move(kv);
    out.clear();
    out.push_back(std::move(y));
    if (scores_out) out.push_back(std::move(s));
    return true;
  }

  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    if (main.empty() || main[0].dims.size() != 3) return Op::work(main, out);
    auto d = [](Index v) { return double(std::max<Index>(v, 1)); };
    // The longest of the tensors stands for both the query's and the key's steps (the slots
    // depend on the call's keywords): an upper bound.
    double steps = 1;
    for (const Spec& s : main)
      if (s.dims.size() == 3) steps = std::max(steps, d(s.dims[1]));
    const double rows = d(main[0].dims[0]) * steps;
    const double projections = rows * double(wq_.size() + wk_.size() + wv_.size() + wo_.size());
    const double pairs = d(main[0].dims[0]) * double(heads_) * steps * steps;
    return (projections + pairs * double(key_dim_ + value_dim_)) * kScalarMacWork + pairs * kScalarMathWork +
           Op::work(main, out);
  }
  std::size_t num_weights() const override { return built_ ? (use_bias_ ? 8 : 4) : 0; }
  std::uint64_t weight_floats() const override {
    return wq_.size() + wk_.size() + wv_.size() + wo_.size() + bq_.size() + bk_.size() + bv_.size() + bo_.size();
  }
  // Legacy .h5: query, key, value, attention_output, each kernel then bias.
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    for (int part = 0; part < 4; ++part) take_part(part, w, where);
  }
  // .keras: the four EinsumDense sublayers, query_dense... (Keras 3) or _query_dense... (Keras 2).
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    static const char* const kParts[4] = {"query_dense", "key_dense", "value_dense", "output_dense"};
    for (int part = 0; part < 4; ++part) {
      std::string sub = object + "/" + kParts[part];
      if (!h5.is_group(sub) && h5.is_group(object + "/_" + kParts[part])) sub = object + "/_" + kParts[part];
      auto w = read_vars(h5, sub, file, 2 * weight_floats() + 16);
      const std::string where = file + ": model.weights.h5:/" + sub;
      check_count(w, use_bias_ ? 2 : 1, where, name);
      take_part(part, w, where);
    }
  }

 private:
  void take_part(int part, std::vector<StoredWeight>& w, const std::string& where) {
    weights_.reset();
    const std::int64_t H = heads_, dk = key_dim_, dv = value_dim_;
    switch (part) {
      case 0:
        wq_ = take_weight(w, {dq_, H, dk}, where);
        if (use_bias_) bq_ = take_weight(w, {H, dk}, where);
        break;
      case 1:
        wk_ = take_weight(w, {dk_, H, dk}, where);
        if (use_bias_) bk_ = take_weight(w, {H, dk}, where);
        break;
      case 2:
        wv_ = take_weight(w, {dv_, H, dv}, where);
        if (use_bias_) bv_ = take_weight(w, {H, dv}, where);
        break;
      default:
        wo_ = take_weight(w, {H, dv, out_}, where);
        if (use_bias_) bo_ = take_weight(w, {out_}, where);
    }
  }

  bool keras3_;
  Index heads_ = 0, key_dim_ = 0, value_dim_ = 0, output_dim_ = 0;
  bool use_bias_ = true, robust_ = false, built_ = false;
  double dropout_ = 0.0;
  Index dq_ = 0, dk_ = 0, dv_ = 0, out_ = 0;
  std::vector<float> wq_, wk_, wv_, wo_, bq_, bk_, bv_, bo_;
  DeviceWeights weights_;
};

}  // namespace

void register_attention_layers(OpTable& t) {
  t.add({"Attention"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<DenseAttentionOp>(e.at("config"), false, ctx.dialect);
  });
  t.add({"AdditiveAttention"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<DenseAttentionOp>(e.at("config"), true, ctx.dialect);
  });
  t.add({"MultiHeadAttention"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<MultiHeadAttentionOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
