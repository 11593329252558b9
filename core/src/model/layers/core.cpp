// SPDX-License-Identifier: Apache-2.0
// Keras's core layers: Dropout and the other identities at inference, Masking, Embedding, Dense.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/activations.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/limits.hpp"
#include "recur/weights.hpp"

namespace recur::graph {
namespace {

// Dropout, SpatialDropout1D, GaussianNoise, ...: the identity at inference; masks pass.
class IdentityOp : public Op {
 public:
  IdentityOp() { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, class_name.c_str());
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override { return {*in.main[0]}; }
  bool passes_ids() const override { return true; }
};

class MaskingOp : public Op {
 public:
  explicit MaskingOp(const json& cfg) : value_(static_cast<float>(num_of(cfg, "mask_value", 0.0))) { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 3, "Masking");
    if (in[0].dims.size() != 3) fail(Code::unsupported, "Masking: recur masks (batch, timesteps, features) inputs, got ", spec_string(in[0]));
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value v = *in.main[0];
    const Index rows = v.shape[0] * v.shape[1], w = v.shape[2];
    auto m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(rows));
    for (Index r = 0; r < rows; ++r) {
      float* x = v.data.data() + r * w;
      bool any = false;
      for (Index j = 0; j < w; ++j) any = any || x[j] != value_;
      (*m)[static_cast<std::size_t>(r)] = any;
      if (!any) std::fill_n(x, w, 0.0f);  // Keras multiplies by the mask
    }
    v.mask = std::move(m);
    return {std::move(v)};
  }

 private:
  float value_;
};

// "(b, t)": the index of flat element r of a tensor of `shape` without its last axis (`shape`
// holds that axis: the Embedding's output_dim).
std::string position_string(const std::vector<Index>& shape, Index r) {
  std::vector<Index> idx(shape.size() - 1);
  for (std::size_t a = idx.size(); a-- > 0;) {
    idx[a] = r % shape[a];
    r /= shape[a];
  }
  std::string s = "(";
  for (std::size_t a = 0; a < idx.size(); ++a) s += (a ? ", " : "") + std::to_string(idx[a]);
  return s + ")";
}

class EmbeddingOp : public Op {
 public:
  EmbeddingOp(const json& cfg, const BuildContext& ctx) {
    input_dim_ = int_of(cfg, "input_dim", 0);
    output_dim_ = int_of(cfg, "output_dim", 0);
    if (input_dim_ <= 0 || output_dim_ <= 0)
      fail(Code::invalid_argument, "Embedding: input_dim and output_dim must be positive, got ", input_dim_, " and ",
           output_dim_);
    ctx.reserve_weights(double(input_dim_) * output_dim_,
                "Embedding: input_dim=" + std::to_string(input_dim_) + " and output_dim=" + std::to_string(output_dim_));
    mask_zero_ = bool_of(cfg, "mask_zero", false);
    table_.assign(static_cast<std::size_t>(input_dim_) * output_dim_, 0.0f);
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Embedding");
    // Keras's mask has the ids' shape; recur carries (batch, timesteps) masks only.
    if (mask_zero_ && in[0].dims.size() > 2)
      fail(Code::unsupported, "Embedding: mask_zero=True on ids of shape ", spec_string(in[0]),
           ": Keras's mask would have that shape, and recur carries (batch, timesteps) masks only");
    Spec s = in[0];  // (B, T, 1) ids give (B, T, 1, output_dim), as in Keras
    s.dims.push_back(output_dim_);
    s.ids = false;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
    const Index n = product(shape);
    shape.push_back(output_dim_);
    Value y = make_value(shape, "Embedding");
    std::shared_ptr<std::vector<std::uint8_t>> m;
    if (mask_zero_ && shape.size() == 3) m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(n));
    if (x.ids && x.ids->values.size() == static_cast<std::size_t>(n)) {
      // Integer ids, exact at any size: no float round trip.
      for (Index r = 0; r < n; ++r) {
        const std::int64_t id = x.ids->values[static_cast<std::size_t>(r)];
        if (id < 0 || id >= input_dim_)
          fail(Code::invalid_argument, "input '", x.ids->input, "': token id ", id, " at position ", r, " ",
               position_string(shape, r), " is out of range [0, ", input_dim_, ") for Embedding '", name, "'");
        std::copy_n(table_.data() + id * output_dim_, output_dim_, y.data.data() + r * output_dim_);
        if (m) (*m)[static_cast<std::size_t>(r)] = id != 0;
      }
    } else {
      for (Index r = 0; r < n; ++r) {
        const float id = x.data[static_cast<std::size_t>(r)];
        if (!(id >= 0.0f) || id != std::floor(id) || id >= static_cast<float>(input_dim_))
          fail(Code::invalid_argument, "input: token id ", id, " at position ", r, " is not an integer in [0, ", input_dim_,
               ") for Embedding '", name, "'");
        std::copy_n(table_.data() + static_cast<Index>(id) * output_dim_, output_dim_, y.data.data() + r * output_dim_);
        if (m) (*m)[static_cast<std::size_t>(r)] = id != 0.0f;
      }
    }
    y.mask = m;  // without mask_zero, no mask comes out (Keras's compute_mask), whatever came in
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return 1; }
  std::uint64_t weight_floats() const override { return table_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    table_ = take_weight(w, {input_dim_, output_dim_}, where);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int input_dim_ = 0, output_dim_ = 0;
  bool mask_zero_ = false;
  std::vector<float> table_;
};

class DenseOp : public Op {
 public:
  DenseOp(const json& cfg, const DialectInfo& d) {
    units_ = int_of(cfg, "units", 0);
    if (units_ <= 0) fail(Code::invalid_argument, "units: expected a positive integer");
    use_bias_ = bool_of(cfg, "use_bias", true);
    act_ = activation_of(cfg, d);
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "Dense");
    const Index f = known_last(in[0], "Dense");
    if (in_ == 0) {
      ctx.reserve_weights((double(f) + 1) * units_,
                  "Dense: " + std::to_string(f) + " inputs and units=" + std::to_string(units_));
      in_ = f;
      kernel_ = RowMatrix::Zero(in_, units_);
      bias_ = RowVector::Zero(units_);
    } else if (f != in_) {
      fail(Code::shape, "Dense: built for inputs of ", in_, " features, called on ", spec_string(in[0]));
    }
    Spec s = in[0];
    s.dims.back() = units_;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
    shape.back() = units_;
    Value y = make_value(shape, "Dense");
    const Index rows = product(x.shape, 0, x.shape.size() - 1);
    Eigen::Map<const RowMatrix> a(x.data.data(), rows, in_);
    Eigen::Map<RowMatrix> out(y.data.data(), rows, units_);
    out.noalias() = a * kernel_;
    if (use_bias_) out.rowwise() += bias_;
    apply_activation(act_, out.data(), rows, units_);
    y.mask = x.mask;
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return use_bias_ ? 2 : 1; }
  std::uint64_t weight_floats() const override { return static_cast<std::uint64_t>(kernel_.size() + bias_.size()); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    auto k = take_weight(w, {in_, units_}, where);
    std::copy_n(k.data(), k.size(), kernel_.data());
    if (use_bias_) {
      auto b = take_weight(w, {units_}, where);
      std::copy_n(b.data(), b.size(), bias_.data());
    }
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int units_ = 0;
  Index in_ = 0;
  bool use_bias_ = true;
  ActivationFn act_;
  RowMatrix kernel_;
  RowVector bias_;
};

}  // namespace

void register_core_layers(OpTable& t) {
  t.add({"Dropout", "SpatialDropout1D", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
         "InputLayer", "Identity"},
        [](const json&, const BuildContext&, const std::string&) -> std::shared_ptr<Op> { return std::make_shared<IdentityOp>(); });
  t.add({"Masking"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<MaskingOp>(e.at("config"));
  });
  t.add({"Embedding"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<EmbeddingOp>(e.at("config"), ctx);
  });
  t.add({"Dense"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<DenseOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
