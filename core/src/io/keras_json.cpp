// SPDX-License-Identifier: Apache-2.0
#include "recur/keras_json.hpp"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "recur/error.hpp"

namespace recur {
namespace {

using json = nlohmann::json;
using Code = Error::Code;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

// "GlorotUniform" -> "glorot_uniform"; already snake names are returned as they are.
std::string snake(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (std::isupper(static_cast<unsigned char>(ch))) {
      if (i > 0 && s[i - 1] != '_') out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else {
      out += ch;
    }
  }
  return out;
}

json parse_text(std::string_view text, const char* field) {
  if (json_nesting_depth(text) > kMaxJsonDepth)
    fail(Code::parse, field, ": JSON nested deeper than ", kMaxJsonDepth, " levels");
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    fail(Code::parse, field, ": malformed JSON at byte ", e.byte, " (", e.what(), ")");
  } catch (const json::exception& e) {
    // Numbers out of double's range (1e309) and other malformed content.
    fail(Code::parse, field, ": malformed JSON (", e.what(), ")");
  }
}

// Reads {"class_name": ..., "config": {...}} or a bare name into (name, config).
void object_parts(const json& j, const char* field, std::string& name, json& cfg) {
  if (j.is_string()) {
    name = j.get<std::string>();
    cfg = json::object();
    return;
  }
  if (!j.is_object() || !j.contains("class_name") || !j["class_name"].is_string())
    fail(Code::invalid_argument, field, ": expected a name or an object with \"class_name\", got ", io::excerpt(j));
  name = j["class_name"].get<std::string>();
  cfg = j.value("config", json::object());
  if (cfg.is_null()) cfg = json::object();
  if (!cfg.is_object()) fail(Code::invalid_argument, field, ": \"config\" must be an object, got ", io::excerpt(cfg));
}

// `field`: the object holding `key` ("kernel_regularizer"), or NULL for the layer's own config.
double number(const json& cfg, const char* key, double fallback, const char* field) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  if (!cfg[key].is_number())
    fail(Code::invalid_argument, field ? std::string(field) + "." + key : std::string(key), ": expected a number, got ",
         io::excerpt(cfg[key]));
  return cfg[key].get<double>();
}

std::optional<std::uint64_t> seed_of(const json& cfg, const char* field) {
  if (!cfg.contains("seed") || cfg["seed"].is_null()) return std::nullopt;
  if (!cfg["seed"].is_number_integer() || cfg["seed"].get<long long>() < 0)
    fail(Code::invalid_argument, field, ".seed: expected a non-negative integer or null, got ", io::excerpt(cfg["seed"]));
  return cfg["seed"].get<std::uint64_t>();
}

void check_keys(const json& cfg, std::initializer_list<const char*> allowed, const char* field, const std::string& name) {
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) fail(Code::invalid_argument, field, ": '", io::printable(name), "' has no argument '", io::printable(it.key()), "'");
  }
}

InitializerSpec initializer_from(const json& j, const DialectInfo&, const char* field) {
  if (j.is_null()) fail(Code::invalid_argument, field, ": an initializer is required, got null");
  std::string raw;
  json cfg;
  object_parts(j, field, raw, cfg);
  std::string n = snake(raw);
  if (n == "identity_initializer") n = "identity";
  if (n == "uniform") n = "random_uniform";
  if (n == "normal") n = "random_normal";
  if (n == "zero") n = "zeros";
  if (n == "one") n = "ones";
  InitializerSpec s;
  s.name = n;
  s.seed = seed_of(cfg, field);
  using K = InitializerSpec::Kind;
  using D = InitializerSpec::Distribution;
  using M = InitializerSpec::Mode;
  auto axes = [&](const char* key, std::vector<int>& out_axes) {
    if (!cfg.contains(key) || cfg[key].is_null()) return;
    if (!cfg[key].is_array()) fail(Code::invalid_argument, field, ".", key, ": expected a list of axes, got ", io::excerpt(cfg[key]));
    for (const auto& a : cfg[key]) {
      int x = 0;
      if (!io::int_in(a, io::kIntMin, io::kIntMax, x))
        fail(Code::invalid_argument, field, ".", key, ": expected integers, got ", io::excerpt(cfg[key]));
      out_axes.push_back(x);
    }
  };
  auto fan_axes = [&]() {
    axes("input_axes", s.input_axes);
    axes("output_axes", s.output_axes);
    if (s.input_axes.empty() != s.output_axes.empty()) {  // Keras uses them only as a pair
      s.input_axes.clear();
      s.output_axes.clear();
    }
  };
  auto vs = [&](double scale, M mode, D dist) {
    check_keys(cfg, {"seed", "input_axes", "output_axes"}, field, raw);
    fan_axes();
    s.kind = K::variance_scaling;
    s.scale = scale;
    s.mode = mode;
    s.distribution = dist;
  };
  if (n == "zeros" || n == "ones") {
    check_keys(cfg, {}, field, raw);
    s.kind = n == "zeros" ? K::zeros : K::ones;
  } else if (n == "constant") {
    check_keys(cfg, {"value"}, field, raw);
    s.kind = K::constant;
    s.value = number(cfg, "value", 0.0, field);
  } else if (n == "random_uniform") {
    check_keys(cfg, {"minval", "maxval", "seed"}, field, raw);
    s.kind = K::random_uniform;
    s.minval = number(cfg, "minval", -0.05, field);
    s.maxval = number(cfg, "maxval", 0.05, field);
  } else if (n == "random_normal" || n == "truncated_normal") {
    check_keys(cfg, {"mean", "stddev", "seed"}, field, raw);
    s.kind = n == "random_normal" ? K::random_normal : K::truncated_normal;
    s.mean = number(cfg, "mean", 0.0, field);
    s.stddev = number(cfg, "stddev", 0.05, field);
  } else if (n == "glorot_uniform") {
    vs(1.0, M::fan_avg, D::uniform);
  } else if (n == "glorot_normal") {
    vs(1.0, M::fan_avg, D::truncated_normal);
  } else if (n == "he_uniform") {
    vs(2.0, M::fan_in, D::uniform);
  } else if (n == "he_normal") {
    vs(2.0, M::fan_in, D::truncated_normal);
  } else if (n == "lecun_uniform") {
    vs(1.0, M::fan_in, D::uniform);
  } else if (n == "lecun_normal") {
    vs(1.0, M::fan_in, D::truncated_normal);
  } else if (n == "variance_scaling") {
    check_keys(cfg, {"scale", "mode", "distribution", "seed", "input_axes", "output_axes"}, field, raw);
    fan_axes();
    s.kind = K::variance_scaling;
    s.scale = number(cfg, "scale", 1.0, field);
    if (!(s.scale > 0.0)) fail(Code::invalid_argument, field, ".scale: expected a positive number, got ", s.scale);
    const std::string mode = string_field(cfg, "mode", "fan_in", field);
    if (mode == "fan_in") s.mode = M::fan_in;
    else if (mode == "fan_out") s.mode = M::fan_out;
    else if (mode == "fan_avg") s.mode = M::fan_avg;
    else fail(Code::invalid_argument, field, ".mode: expected fan_in, fan_out or fan_avg, got '", mode, "'");
    const std::string dist = lower(string_field(cfg, "distribution", "truncated_normal", field));
    if (dist == "truncated_normal" || dist == "normal") s.distribution = D::truncated_normal;
    else if (dist == "untruncated_normal") s.distribution = D::untruncated_normal;
    else if (dist == "uniform") s.distribution = D::uniform;
    else
      fail(Code::invalid_argument, field,
           ".distribution: expected truncated_normal, untruncated_normal, normal or uniform, got '", dist, "'");
  } else if (n == "orthogonal") {
    check_keys(cfg, {"gain", "seed"}, field, raw);
    s.kind = K::orthogonal;
    s.gain = number(cfg, "gain", 1.0, field);
  } else if (n == "identity") {
    check_keys(cfg, {"gain"}, field, raw);
    s.kind = K::identity;
    s.gain = number(cfg, "gain", 1.0, field);
  } else {
    fail(Code::invalid_argument, field, ": unknown initializer '", io::printable(raw),
         "' (known: zeros, ones, constant, random_uniform, random_normal, truncated_normal, glorot_uniform, "
         "glorot_normal, he_uniform, he_normal, lecun_uniform, lecun_normal, variance_scaling, orthogonal, identity)");
  }
  return s;
}

RegularizerSpec regularizer_from(const json& j, const DialectInfo& d, const char* field) {
  RegularizerSpec s;
  if (j.is_null()) return s;
  std::string raw;
  json cfg;
  object_parts(j, field, raw, cfg);
  const bool by_name = j.is_string();
  const std::string n = lower(raw);
  if (n == "l1") {
    check_keys(cfg, {"l1"}, field, raw);
    s.kind = RegularizerSpec::Kind::l1l2;
    s.l1 = static_cast<float>(number(cfg, "l1", 0.01, field));
  } else if (n == "l2") {
    check_keys(cfg, {"l2"}, field, raw);
    s.kind = RegularizerSpec::Kind::l1l2;
    s.l2 = static_cast<float>(number(cfg, "l2", 0.01, field));
  } else if (n == "l1_l2" && by_name) {
    // Keras 2's l1_l2() defaults to 0.01 each; Keras 3 does not know the string.
    if (d.dialect == Dialect::keras3)
      fail(Code::invalid_argument, field, ": Keras 3 does not accept the regularizer name 'l1_l2' (use 'L1L2' or a config)");
    s.kind = RegularizerSpec::Kind::l1l2;
    s.l1 = s.l2 = 0.01f;
  } else if (n == "l1l2" || n == "l1_l2") {
    check_keys(cfg, {"l1", "l2"}, field, raw);
    s.kind = RegularizerSpec::Kind::l1l2;
    s.l1 = static_cast<float>(number(cfg, "l1", 0.0, field));
    s.l2 = static_cast<float>(number(cfg, "l2", 0.0, field));
  } else if (n == "orthogonalregularizer" || n == "orthogonal_regularizer") {
    check_keys(cfg, {"factor", "mode"}, field, raw);
    s.kind = RegularizerSpec::Kind::orthogonal;
    s.factor = static_cast<float>(number(cfg, "factor", 0.01, field));
    const std::string mode = string_field(cfg, "mode", "rows", field);
    if (mode != "rows" && mode != "columns")
      fail(Code::invalid_argument, field, ".mode: expected 'rows' or 'columns', got '", mode, "'");
    s.rows_mode = mode == "rows";
  } else {
    fail(Code::invalid_argument, field, ": unknown regularizer '", raw, "' (known: l1, l2, ",
         d.dialect == Dialect::keras2 ? "l1_l2, " : "", "L1L2, OrthogonalRegularizer)");
  }
  if (s.l1 < 0 || s.l2 < 0 || std::isnan(s.l1) || std::isnan(s.l2))
    fail(Code::invalid_argument, field, ": regularization factors must be >= 0");
  return s;
}

ConstraintSpec constraint_from(const json& j, const DialectInfo&, const char* field) {
  ConstraintSpec s;
  if (j.is_null()) return s;
  std::string raw;
  json cfg;
  object_parts(j, field, raw, cfg);
  const std::string n = lower(snake(raw));
  auto axis = [&]() {
    if (!cfg.contains("axis") || cfg["axis"].is_null()) return;
    if (!io::int_or_ints(cfg["axis"], s.axis))
      fail(Code::invalid_argument, field, ".axis: expected an integer or a list of integers, got ", io::excerpt(cfg["axis"]));
  };
  if (n == "max_norm" || n == "maxnorm") {
    check_keys(cfg, {"max_value", "axis"}, field, raw);
    s.kind = ConstraintSpec::Kind::max_norm;
    s.max_value = static_cast<float>(number(cfg, "max_value", 2.0, field));
    axis();
  } else if (n == "non_neg" || n == "nonneg") {
    check_keys(cfg, {}, field, raw);
    s.kind = ConstraintSpec::Kind::non_neg;
  } else if (n == "unit_norm" || n == "unitnorm") {
    check_keys(cfg, {"axis"}, field, raw);
    s.kind = ConstraintSpec::Kind::unit_norm;
    axis();
  } else if (n == "min_max_norm" || n == "minmaxnorm") {
    check_keys(cfg, {"min_value", "max_value", "rate", "axis"}, field, raw);
    s.kind = ConstraintSpec::Kind::min_max_norm;
    s.min_value = static_cast<float>(number(cfg, "min_value", 0.0, field));
    s.max_value = static_cast<float>(number(cfg, "max_value", 1.0, field));
    s.rate = static_cast<float>(number(cfg, "rate", 1.0, field));
    axis();
  } else {
    fail(Code::invalid_argument, field, ": unknown constraint '", io::printable(raw),
         "' (known: max_norm, non_neg, unit_norm, min_max_norm)");
  }
  return s;
}

json text_to_json(std::string_view text, const char* field) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && text[i] == '{') return parse_text(text, field);
  return json(std::string(text));
}

bool get_bool(const json& cfg, const char* key, bool fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  if (!cfg[key].is_boolean()) fail(Code::invalid_argument, key, ": expected true or false, got ", io::excerpt(cfg[key]));
  return cfg[key].get<bool>();
}

int get_int(const json& cfg, const char* key, int fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  const json& v = cfg[key];
  if (v.is_number_integer()) {
    int x = 0;
    if (!io::int_in(v, io::kIntMin, io::kIntMax, x))
      fail(Code::invalid_argument, key, ": ", io::excerpt(v), " is out of range (expected an integer in [", io::kIntMin, ", ",
           io::kIntMax, "])");
    return x;
  }
  // Keras writes integral floats in some configs (e.g. units=8.0 after arithmetic).
  // (Range first: converting an out-of-range double to an integer is undefined behaviour.)
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= -2147483648.0 && d <= 2147483647.0 && d == static_cast<double>(static_cast<int>(d)))
      return static_cast<int>(d);
  }
  fail(Code::invalid_argument, key, ": expected an integer, got ", io::excerpt(v));
}

float rate(const json& cfg, const char* key) {
  const double r = number(cfg, key, 0.0, nullptr);
  if (std::isnan(r)) fail(Code::invalid_argument, key, ": expected a rate in [0, 1], got NaN");
  return static_cast<float>(std::min(1.0, std::max(0.0, r)));  // Keras clips rates into [0, 1]
}

Dialect detect(const json& root, const json& cfg) {
  if (root.contains("module") || root.contains("registered_name") || root.contains("build_config")) return Dialect::keras3;
  for (const char* k : {"time_major", "enable_caching_device", "batch_input_shape"})
    if (cfg.contains(k)) return Dialect::keras2;
  const std::string cls = string_field(root, "class_name", "");
  if (cls == "CuDNNGRU" || cls == "CuDNNLSTM") return Dialect::keras2;
  if (cfg.contains("dtype") && cfg["dtype"].is_object()) return Dialect::keras3;
  if (cfg.contains("seed") || cfg.contains("use_cudnn")) return Dialect::keras3;
  if (cfg.contains("implementation")) return Dialect::keras2;  // Keras 3 does not serialize it
  return Dialect::keras3;
}

void check_dtype(const json& cfg) {
  const std::string name = dtype_policy_name(cfg);
  if (!name.empty() && name != "float32")
    fail(Code::unsupported, "dtype: recur computes in float32; the layer's dtype policy is '", io::printable(name), "'");
}

// The first and last axes of a serialized input shape: [batch, T, F].
bool shape_dims(const json& shape_or_list, int& batch, int& features, int& axis1) {
  // Keras 2 records a layer called with initial_state tensors as a list of shapes, the input's
  // first.
  const bool listed = shape_or_list.is_array() && !shape_or_list.empty() && shape_or_list[0].is_array();
  const json& shape = listed ? shape_or_list[0] : shape_or_list;
  if (!shape.is_array() || shape.size() < 2) return false;
  // An integer dimension; anything else (null) is unknown.
  auto dim = [&](const json& d) {
    int x = 0;
    if (d.is_number_integer() && !io::int_in(d, io::kIntMin, io::kIntMax, x))
      fail(Code::invalid_argument, "input shape: dimension ", io::excerpt(d), " is out of range in ", io::excerpt(shape),
           " (expected null or an integer in [", io::kIntMin, ", ", io::kIntMax, "])");
    return x;
  };
  features = dim(shape.back());
  batch = dim(shape[0]);
  axis1 = dim(shape[1]);
  return true;
}

}  // namespace

std::string string_field(const json& obj, const char* key, const std::string& fallback, const std::string& field) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string())
    fail(Code::invalid_argument, field.empty() ? std::string() : field + ".", key, ": expected a string, got ", io::excerpt(*it));
  return it->get<std::string>();
}

std::string dtype_policy_name(const json& cfg) {
  if (!cfg.is_object() || !cfg.contains("dtype") || cfg["dtype"].is_null()) return "";
  const json& d = cfg["dtype"];
  if (d.is_string()) return d.get<std::string>();
  if (!d.is_object())
    fail(Code::invalid_argument, "dtype: expected a string or a DTypePolicy object, got ", io::excerpt(d));
  string_field(d, "class_name", "", "dtype");
  string_field(d, "module", "", "dtype");
  if (!d.contains("config") || d["config"].is_null()) return "float32";
  const json& inner = d["config"];
  if (!inner.is_object())
    fail(Code::invalid_argument, "dtype.config: expected an object {\"name\": \"float32\"}, got ", io::excerpt(inner));
  if (inner.contains("name") && !inner["name"].is_null() && !inner["name"].is_string())
    fail(Code::invalid_argument, "dtype.config.name: expected a string (a dtype policy name such as \"float32\"), got ",
         io::excerpt(inner["name"]));
  return string_field(inner, "name", "float32");
}

InitializerSpec parse_initializer_text(std::string_view text, const DialectInfo& d, const char* field) {
  if (text.empty()) fail(Code::invalid_argument, field, ": an initializer is required, got an empty name");
  return initializer_from(text_to_json(text, field), d, field);
}

RegularizerSpec parse_regularizer_text(std::string_view text, const DialectInfo& d, const char* field) {
  if (text.empty()) return {};
  return regularizer_from(text_to_json(text, field), d, field);
}

ConstraintSpec parse_constraint_text(std::string_view text, const DialectInfo& d, const char* field) {
  if (text.empty()) return {};
  return constraint_from(text_to_json(text, field), d, field);
}

std::optional<LayerKind> layer_kind_of_class(std::string_view cls) {
  if (cls == "GRU" || cls == "GRUV1" || cls == "GRUV2") return LayerKind::gru;
  if (cls == "LSTM" || cls == "LSTMV1" || cls == "LSTMV2") return LayerKind::lstm;
  if (cls == "CuDNNGRU") return LayerKind::cudnn_gru;
  if (cls == "CuDNNLSTM") return LayerKind::cudnn_lstm;
  if (cls == "GRUCell") return LayerKind::gru_cell;
  if (cls == "LSTMCell") return LayerKind::lstm_cell;
  if (cls == "SimpleRNN") return LayerKind::simple_rnn;
  if (cls == "SimpleRNNCell") return LayerKind::simple_rnn_cell;
  return std::nullopt;
}

LayerConfig parse_layer_json(std::string_view text, int input_size, std::optional<Dialect> dialect,
                             std::optional<std::string_view> keras_version) {
  return parse_layer_entry(parse_text(text, "json"), input_size, dialect, keras_version);
}

namespace {

LayerConfig parse_entry_fields(const json& root, int input_size, std::optional<Dialect> dialect,
                               std::optional<std::string_view> keras_version) {
  if (!root.is_object()) fail(Code::parse, "json: expected an object {\"class_name\": ..., \"config\": {...}}");
  if (!root.contains("class_name") || !root["class_name"].is_string())
    fail(Code::parse, "json: missing the string field \"class_name\"");
  if (!root.contains("config") || !root["config"].is_object())
    fail(Code::parse, "json: missing the object field \"config\"");
  const std::string cls = root["class_name"].get<std::string>();
  const json& cfg = root["config"];

  const std::optional<LayerKind> known = layer_kind_of_class(cls);
  if (!known)
    fail(Code::unsupported, "class_name: '", io::printable(cls),
         "' is not a layer recur runs (GRU, LSTM, CuDNNGRU, CuDNNLSTM, GRUCell, LSTMCell, SimpleRNN, SimpleRNNCell)");
  const LayerKind kind = *known;

  const Dialect dia = dialect ? *dialect : detect(root, cfg);
  const DialectInfo info = keras_version ? DialectInfo::parse(dia, *keras_version) : DialectInfo::latest(dia);
  LayerConfig c = LayerConfig::defaults(kind, info);
  const bool k3 = dia == Dialect::keras3;
  const bool cudnn = c.is_cudnn();
  const bool cell = c.is_cell();
  const bool simple = c.is_simple_rnn();

  std::set<std::string> allowed{"name", "trainable", "dtype", "units", "kernel_initializer", "recurrent_initializer",
                                "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
                                "bias_regularizer", "activity_regularizer", "kernel_constraint",
                                "recurrent_constraint", "bias_constraint", "input_shape", "batch_size",
                                "input_dim"};
  if (!cell)
    for (const char* k : {"return_sequences", "return_state", "go_backwards", "stateful"}) allowed.insert(k);
  if (!cell && !k3) allowed.insert("time_major");  // Keras 3 rejects it, even time_major=False
  if (!cell && !cudnn)
    for (const char* k : {"unroll", "zero_output_for_mask", "num_constants", "input_length"}) allowed.insert(k);
  if (!cudnn)
    for (const char* k : {"activation", "use_bias", "dropout", "recurrent_dropout"}) allowed.insert(k);
  if (!cudnn && !simple)
    for (const char* k : {"recurrent_activation", "implementation", "seed"}) allowed.insert(k);
  // SimpleRNN has no recurrent_activation, reset_after, unit_forget_bias or use_cudnn. Keras 2
  // drops `implementation` (with a deprecation warning), Keras 3 rejects it; Keras 2's SimpleRNN
  // rejects `seed`, its cell and both Keras 3 classes take it.
  if (simple && !k3) allowed.insert("implementation");
  if (simple && (k3 || cell)) allowed.insert("seed");
  if (c.is_gru() && !cudnn) allowed.insert("reset_after");
  if (c.is_lstm()) allowed.insert("unit_forget_bias");
  if (k3) {
    if (!simple) allowed.insert("use_cudnn");
  } else {
    allowed.insert("batch_input_shape");
    allowed.insert("enable_caching_device");
  }
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    if (allowed.count(it.key())) continue;
    if (k3 && (it.key() == "time_major" || it.key() == "batch_input_shape" || it.key() == "enable_caching_device"))
      fail(Code::unsupported, io::printable(it.key()), ": Keras 3 does not accept this Keras 2 argument (it raises \"Unrecognized ",
           "keyword arguments passed to ", cls, ": {'", io::printable(it.key()), "': ...}\"); load the config as Keras 2");
    fail(Code::invalid_argument, "config: ", cls, " (", info.name(), ") has no argument '", io::printable(it.key()), "'");
  }

  check_dtype(cfg);
  if (cfg.contains("name") && cfg["name"].is_string()) c.name = cfg["name"].get<std::string>();
  c.trainable = get_bool(cfg, "trainable", true);
  if (!cfg.contains("units")) fail(Code::invalid_argument, "units: missing from the ", cls, " config");
  c.units = get_int(cfg, "units", 0);
  if (!cudnn) {
    for (const char* key : {"activation", "recurrent_activation"}) {
      if (!cfg.contains(key)) continue;
      const json& a = cfg[key];
      if (!a.is_null() && !a.is_string())
        fail(Code::invalid_argument, key, ": expected an activation name, got ", io::excerpt(a),
             " (custom activations cannot be loaded)");
      const std::string name = a.is_null() ? "linear" : a.get<std::string>();
      (std::string(key) == "activation" ? c.activation : c.recurrent_activation) = parse_activation(name, info, key);
    }
    c.use_bias = get_bool(cfg, "use_bias", true);
    c.dropout = rate(cfg, "dropout");
    c.recurrent_dropout = rate(cfg, "recurrent_dropout");
    c.implementation = get_int(cfg, "implementation", 2);
    if (!k3 && c.implementation == 0) c.implementation = 1;  // Keras 2's from_config maps 0 to 1
    if (cfg.contains("seed") && !cfg["seed"].is_null()) c.seed = seed_of(cfg, "seed");
  }
  if (c.is_gru() && !cudnn) c.reset_after = get_bool(cfg, "reset_after", true);
  if (c.is_lstm()) c.unit_forget_bias = get_bool(cfg, "unit_forget_bias", true);
  if (simple) c.implementation = 2;  // Keras 2 drops it (read above, so it must be an integer)
  if (!cell) {
    c.return_sequences = get_bool(cfg, "return_sequences", false);
    c.return_state = get_bool(cfg, "return_state", false);
    c.go_backwards = get_bool(cfg, "go_backwards", false);
    c.stateful = get_bool(cfg, "stateful", false);
    c.time_major = get_bool(cfg, "time_major", false);
    if (!cudnn) {
      c.unroll = get_bool(cfg, "unroll", false);
      c.zero_output_for_mask = get_bool(cfg, "zero_output_for_mask", false);
      if (get_int(cfg, "num_constants", 0) != 0)
        fail(Code::unsupported, "num_constants: constants are not supported by GRU/LSTM/SimpleRNN cells");
    }
  }
  if (cfg.contains("kernel_initializer"))
    c.kernel_initializer = initializer_from(cfg["kernel_initializer"], info, "kernel_initializer");
  if (cfg.contains("recurrent_initializer"))
    c.recurrent_initializer = initializer_from(cfg["recurrent_initializer"], info, "recurrent_initializer");
  if (cfg.contains("bias_initializer"))
    c.bias_initializer = initializer_from(cfg["bias_initializer"], info, "bias_initializer");
  c.kernel_regularizer = regularizer_from(cfg.value("kernel_regularizer", json()), info, "kernel_regularizer");
  c.recurrent_regularizer = regularizer_from(cfg.value("recurrent_regularizer", json()), info, "recurrent_regularizer");
  c.bias_regularizer = regularizer_from(cfg.value("bias_regularizer", json()), info, "bias_regularizer");
  c.activity_regularizer = regularizer_from(cfg.value("activity_regularizer", json()), info, "activity_regularizer");
  // Keras 3's SimpleRNN takes activity_regularizer but never hands it on: the layer has none.
  if (k3 && c.kind == LayerKind::simple_rnn) c.activity_regularizer = {};
  c.kernel_constraint = constraint_from(cfg.value("kernel_constraint", json()), info, "kernel_constraint");
  c.recurrent_constraint = constraint_from(cfg.value("recurrent_constraint", json()), info, "recurrent_constraint");
  c.bias_constraint = constraint_from(cfg.value("bias_constraint", json()), info, "bias_constraint");

  // Input size and (for stateful layers) the batch size come from the recorded input shape.
  int batch = 0, features = 0, axis1 = 0;
  bool have_shape = false;
  if (!k3 && cfg.contains("batch_input_shape")) have_shape = shape_dims(cfg["batch_input_shape"], batch, features, axis1);
  if (!have_shape && root.contains("build_config") && root["build_config"].is_object()) {
    const json& bc = root["build_config"];
    if (bc.contains("input_shape")) have_shape = shape_dims(bc["input_shape"], batch, features, axis1);
  }
  if (cell && have_shape) axis1 = 0;
  if (have_shape && !cell && c.time_major) batch = axis1;  // (T, B, F)
  if (cfg.contains("batch_size") && cfg["batch_size"].is_number_integer()) batch = get_int(cfg, "batch_size", 0);
  c.input_size = input_size > 0 ? input_size : features;
  if (input_size > 0 && features > 0 && features != input_size)
    fail(Code::shape, "input_size: ", input_size, " was given, but the config records input size ", features);
  if (c.input_size <= 0)
    fail(Code::invalid_argument, "input_size: not given, and the config records no input shape (",
         k3 ? "build_config" : "batch_input_shape", ")");
  c.batch_size = c.stateful ? batch : 0;
  c.validate();
  return c;
}

}  // namespace

LayerConfig parse_layer_entry(const json& root, int input_size, std::optional<Dialect> dialect,
                              std::optional<std::string_view> keras_version) {
  try {
    return parse_entry_fields(root, input_size, dialect, keras_version);
  } catch (const json::exception& e) {
    // Each field is type-checked where it is read; this is the net for one that is not.
    fail(Code::invalid_argument, "json: a field of an unexpected type (", io::printable(e.what()), ")");
  }
}

int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace recur
