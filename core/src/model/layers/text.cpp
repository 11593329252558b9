// SPDX-License-Identifier: Apache-2.0
// Keras's text preprocessing layers: StringLookup and TextVectorization, which turn the strings of
// a model input (Input(dtype="string")) into the integer ids an Embedding takes (exactly, through
// Value::ids), or into multi_hot / count vectors. Their vocabulary comes from the config (a list
// given to the layer) or from the .keras file's assets (an adapted layer's vocabulary.txt).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "io/printable.hpp"
#include "io/zip_archive.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/error.hpp"
#include "recur/limits.hpp"

namespace recur::graph {
namespace {

enum class OutputMode { ids, multi_hot, count };

OutputMode output_mode_of(const json& cfg, const std::string& cls) {
  const std::string m = str_of(cfg, "output_mode", "int");
  if (m == "int") return OutputMode::ids;
  if (m == "multi_hot" || m == "binary") return OutputMode::multi_hot;
  if (m == "count") return OutputMode::count;
  if (m == "one_hot" || m == "tf_idf" || m == "tf-idf")
    fail(Code::unsupported, cls, ": output_mode '", m, "' is not supported (recur runs \"int\", \"multi_hot\" and \"count\")");
  fail(Code::invalid_argument, cls, ": output_mode: expected \"int\", \"multi_hot\", \"count\", \"one_hot\" or \"tf_idf\", got '",
       io::printable(m, 80), "'");
}

// Keras's lookup table (IndexLookup): special tokens first (the mask token at 0 in "int" mode,
// then the OOV index), then the vocabulary's tokens in order.
class Lookup {
 public:
  std::string cls;  // for messages
  std::optional<std::string> mask_token;
  std::string oov_token = "[UNK]";
  int num_oov = 1;
  int max_tokens = 0;  // 0: none
  bool pad_to_max_tokens = false;
  OutputMode mode = OutputMode::ids;

  Index oov_start() const { return mask_token && mode == OutputMode::ids ? 1 : 0; }
  Index token_start() const { return oov_start() + num_oov; }
  Index vocab_size() const { return token_start() + static_cast<Index>(index_.size()); }
  // The width of a multi_hot / count vector.
  Index depth() const { return pad_to_max_tokens && max_tokens > 0 ? max_tokens : vocab_size(); }

  void read_common(const json& cfg) {
    mode = output_mode_of(cfg, cls);
    if (cfg.contains("max_tokens") && !cfg["max_tokens"].is_null()) {
      max_tokens = int_of(cfg, "max_tokens", 0);
      if (max_tokens <= 1) fail(Code::invalid_argument, cls, ": max_tokens must be greater than 1 (or null), got ", max_tokens);
    }
    pad_to_max_tokens = bool_of(cfg, "pad_to_max_tokens", false);
    if (bool_of(cfg, "sparse", false)) fail(Code::unsupported, cls, ": sparse=True (a tf.SparseTensor output) is not supported");
    const std::string enc = str_of(cfg, "encoding", "utf-8");
    if (enc != "utf-8" && enc != "UTF-8" && enc != "utf8")
      fail(Code::unsupported, cls, ": encoding '", io::printable(enc, 40), "' (recur reads UTF-8 text)");
  }

  // The vocabulary: the config's list, or the .keras file's assets/<object>/vocabulary.txt.
  void load(const json& cfg, const BuildContext& ctx, const std::string& object_path) {
    const json* v = cfg.contains("vocabulary") ? &cfg["vocabulary"] : nullptr;
    // tf_keras reads the assets when the config's list is empty too (`if self.input_vocabulary`).
    const bool from_assets = !v || v->is_null() || (ctx.dialect.dialect == Dialect::keras2 && v->is_array() && v->empty());
    if (!from_assets) {
      if (v->is_string())
        fail(Code::unsupported, cls, ": vocabulary: '", io::printable(v->get<std::string>(), 200), "' is a file outside the "
             "model file; recur reads a vocabulary the model holds (a list given to the layer, or an adapted one in a .keras "
             "file)");
      if (!v->is_array())
        fail(Code::invalid_argument, cls, ": vocabulary: expected a list of strings, a file path or null, got ", io::excerpt(*v));
      std::vector<std::string> tokens;
      tokens.reserve(v->size());
      for (std::size_t i = 0; i < v->size(); ++i) {
        if (!(*v)[i].is_string())
          fail(Code::invalid_argument, cls, ": vocabulary[", i, "]: expected a string, got ", io::excerpt((*v)[i]));
        tokens.push_back((*v)[i].get<std::string>());
      }
      set_vocabulary(std::move(tokens), "vocabulary");
      return;
    }
    const std::string member = "assets/" + object_path + "/vocabulary.txt";
    if (!ctx.read_member)
      fail(Code::unsupported, cls, ": the vocabulary is not in this file: Keras keeps an adapted vocabulary only in a .keras "
           "file (", member, "), not in a legacy .h5; save the model as .keras");
    std::vector<char> bytes;
    if (!ctx.read_member(member, limit(Limit::file_bytes), bytes))
      fail(Code::io, ctx.file, ": ", member, ": missing (the layer has no vocabulary in its config, so Keras saved it there)");
    const std::string text(bytes.begin(), bytes.end());
    const std::size_t bad = io::utf8_error_at(text.data(), text.size());
    if (bad != std::string::npos)
      fail(Code::io, ctx.file, ": ", member, ": not valid UTF-8 at byte ", bad, " (Keras reads it as UTF-8 text)");
    set_vocabulary(lines_of(text, ctx.dialect.dialect), member);
  }

  // Keras's set_vocabulary: the special tokens may lead the list (as get_vocabulary() gives it);
  // the tokens must be unique, hold no mask token and fit max_tokens.
  void set_vocabulary(std::vector<std::string> tokens, const std::string& where) {
    if (tokens.empty()) fail(Code::invalid_argument, cls, ": ", where, ": the vocabulary is empty");
    std::vector<std::string> special(static_cast<std::size_t>(oov_start()), mask_token.value_or(""));
    special.insert(special.end(), static_cast<std::size_t>(num_oov), oov_token);
    std::size_t first = 0;
    if (tokens.size() >= special.size() && std::equal(special.begin(), special.end(), tokens.begin())) first = special.size();
    index_.clear();
    index_.reserve(tokens.size() - first);
    for (std::size_t i = first; i < tokens.size(); ++i) {
      if (mask_token && tokens[i] == *mask_token)
        fail(Code::invalid_argument, cls, ": ", where, ": the mask token '", io::printable(*mask_token, 80), "' at index ", i,
             " (it may only lead the vocabulary, before the OOV token)");
      if (!index_.emplace(tokens[i], token_start() + static_cast<Index>(i - first)).second)
        fail(Code::invalid_argument, cls, ": ", where, ": the token '", io::printable(tokens[i], 80), "' repeats (index ", i, ")");
    }
    if (max_tokens > 0 && vocab_size() > max_tokens)
      fail(Code::invalid_argument, cls, ": ", where, ": ", vocab_size(), " tokens (special ones included), more than max_tokens=",
           max_tokens);
  }

  // The id of a token; -1 for the mask token outside "int" mode (Keras drops it from the counts).
  Index id(const std::string& token, const std::string& layer) const {
    if (mask_token && token == *mask_token) return mode == OutputMode::ids ? 0 : -1;
    const auto it = index_.find(token);
    if (it != index_.end()) return it->second;
    if (num_oov == 0)
      fail(Code::invalid_argument, "layer '", layer, "' (", cls, "): '", io::printable(token, 80), "' is not in the vocabulary, "
           "and num_oov_indices=0 refuses unknown tokens (as Keras does)");
    return oov_start();
  }

  // Keras 3 reads the file with str.splitlines() and drops trailing empty lines; tf_keras splits
  // on "\n" alone. Both read it in text mode, where "\r\n" and "\r" become "\n".
  static std::vector<std::string> lines_of(const std::string& text, Dialect d) {
    std::vector<std::string> lines(1);
    for (std::size_t i = 0; i < text.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      std::size_t skip = 0;  // bytes of a line break past this one
      bool brk = c == '\n' || c == '\r';
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') skip = 1;
      if (d == Dialect::keras3 && !brk) {
        if (c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E) brk = true;
        else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) brk = true, skip = 1;
        else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                 (static_cast<unsigned char>(text[i + 2]) == 0xA8 || static_cast<unsigned char>(text[i + 2]) == 0xA9))
          brk = true, skip = 2;
      }
      if (brk) {
        lines.emplace_back();
        i += skip;
      } else {
        lines.back() += text[i];
      }
    }
    if (d == Dialect::keras3) {
      // splitlines() gives no line after a final break; Keras 3 then drops trailing empty lines.
      while (!lines.empty() && lines.back().empty()) lines.pop_back();
    }
    return lines;
  }

 private:
  std::unordered_map<std::string, Index> index_;
};

// The ids (or a multi_hot / count vector) of rows of tokens, as one Value: "int" rows are padded
// with 0 (or cut) to `length`, or to the longest row when `length` < 0.
Value encode_rows(const std::vector<std::vector<Index>>& rows, const Lookup& lk, Index length, const std::string& layer,
                  const char* what) {
  const Index B = static_cast<Index>(rows.size());
  if (lk.mode == OutputMode::ids) {
    Index L = length;
    if (L < 0) {
      L = 0;
      for (const auto& r : rows) L = std::max<Index>(L, static_cast<Index>(r.size()));
    }
    Value y = make_value({B, L}, what);
    std::vector<std::int64_t> ids(static_cast<std::size_t>(B * L), 0);
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < L && t < static_cast<Index>(rows[static_cast<std::size_t>(b)].size()); ++t)
        ids[static_cast<std::size_t>(b * L + t)] = rows[static_cast<std::size_t>(b)][static_cast<std::size_t>(t)];
    for (std::size_t e = 0; e < ids.size(); ++e) y.data[e] = static_cast<float>(ids[e]);
    y.ids = std::make_shared<const Ids>(Ids{std::move(ids), layer});
    return y;
  }
  const Index depth = lk.depth();
  Value y = make_value({B, depth}, what);
  for (Index b = 0; b < B; ++b)
    for (const Index id : rows[static_cast<std::size_t>(b)]) {
      if (id < 0 || id >= depth) continue;  // the mask token (and nothing else) is dropped
      float& slot = y.data[static_cast<std::size_t>(b * depth + id)];
      slot = lk.mode == OutputMode::multi_hot ? 1.0f : slot + 1.0f;
    }
  return y;
}

const std::vector<std::string>& strings_of(const Value& x, const std::string& layer, const std::string& cls) {
  if (!x.strings)
    fail(Code::invalid_argument, "layer '", layer, "' (", cls, "): its input holds numbers, not strings; pass the model's "
         "string input by name as RECUR_DTYPE_STRING (recur_model_run_named)");
  return *x.strings;
}

void check_string_spec(const std::vector<Spec>& in, const char* cls) {
  check_rank(in, 1, 1, cls);
  if (!in[0].strings)
    fail(Code::unsupported, cls, ": expected a string tensor (from an Input with dtype \"string\"), got numbers ",
         spec_string(in[0]));
}

class StringLookupOp : public Op {
 public:
  StringLookupOp(const json& cfg, const BuildContext& ctx, const std::string& object_path) {
    lk_.cls = "StringLookup";
    if (bool_of(cfg, "invert", false)) fail(Code::unsupported, "StringLookup: invert=True (ids back to strings) is not supported");
    lk_.read_common(cfg);
    lk_.num_oov = int_of(cfg, "num_oov_indices", 1);
    if (lk_.num_oov < 0) fail(Code::invalid_argument, "StringLookup: num_oov_indices must be >= 0, got ", lk_.num_oov);
    if (lk_.num_oov > 1)
      fail(Code::unsupported, "StringLookup: num_oov_indices=", lk_.num_oov, " (Keras hashes unknown tokens into them with "
           "FarmHash; recur supports 0 or 1)");
    lk_.oov_token = str_of(cfg, "oov_token", "[UNK]");
    if (cfg.contains("mask_token") && !cfg["mask_token"].is_null()) lk_.mask_token = str_of(cfg, "mask_token", "");
    lk_.load(cfg, ctx, object_path);
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_string_spec(in, "StringLookup");
    Spec s = in[0];
    s.strings = false;
    if (lk_.mode == OutputMode::ids) {
      s.ids = true;
      return {s};
    }
    if (s.dims.size() > 2)
      fail(Code::shape, "StringLookup: output_mode multi_hot/count takes (batch,) or (batch, tokens), got ", spec_string(s));
    return {Spec{{s.dims[0], lk_.depth()}, false, false}};
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    return (elements(main) + elements(out)) * kLookupWork + Op::work(main, out);  // a string and a hash-table probe per token
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const std::vector<std::string>& str = strings_of(x, name, class_name);
    if (lk_.mode == OutputMode::ids) {
      Value y = make_value(x.shape, "StringLookup");
      std::vector<std::int64_t> ids(str.size());
      for (std::size_t e = 0; e < str.size(); ++e) {
        ids[e] = lk_.id(str[e], name);
        y.data[e] = static_cast<float>(ids[e]);
      }
      y.ids = std::make_shared<const Ids>(Ids{std::move(ids), name});
      y.mask = x.mask;
      return {std::move(y)};
    }
    const Index B = x.shape[0], per = B > 0 ? static_cast<Index>(str.size()) / B : 0;
    std::vector<std::vector<Index>> rows(static_cast<std::size_t>(B));
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < per; ++t) rows[static_cast<std::size_t>(b)].push_back(lk_.id(str[static_cast<std::size_t>(b * per + t)], name));
    return {encode_rows(rows, lk_, -1, name, "StringLookup")};
  }
  bool takes_strings() const override { return true; }
  bool passes_ids() const override { return true; }  // it makes them, exact

 private:
  Lookup lk_;
};

class TextVectorizationOp : public Op {
 public:
  enum class Standardize { none, lower_and_strip, lower, strip };
  enum class Split { none, whitespace, character };

  TextVectorizationOp(const json& cfg, const BuildContext& ctx, const std::string& object_path) {
    lk_.cls = "TextVectorization";
    lk_.read_common(cfg);
    if (bool_of(cfg, "ragged", false)) fail(Code::unsupported, "TextVectorization: ragged=True (a tf.RaggedTensor output) is not supported");
    lk_.mask_token = std::string();  // TextVectorization's lookup: mask "" and one OOV index
    lk_.num_oov = 1;
    // Keras's defaults when a key is absent; null is "none".
    const json lower_strip = "lower_and_strip_punctuation", whitespace = "whitespace";
    const json& st = cfg.contains("standardize") ? cfg["standardize"] : lower_strip;
    if (st.is_null()) standardize_ = Standardize::none;
    else if (st == "lower_and_strip_punctuation") standardize_ = Standardize::lower_and_strip;
    else if (st == "lower") standardize_ = Standardize::lower;
    else if (st == "strip_punctuation") standardize_ = Standardize::strip;
    else
      fail(Code::unsupported, "TextVectorization: standardize: ", io::excerpt(st), " (recur runs null, "
           "\"lower_and_strip_punctuation\", \"lower\" and \"strip_punctuation\"; a custom function cannot be loaded)");
    const json& sp = cfg.contains("split") ? cfg["split"] : whitespace;
    if (sp.is_null()) split_ = Split::none;
    else if (sp == "whitespace") split_ = Split::whitespace;
    else if (sp == "character") split_ = Split::character;
    else
      fail(Code::unsupported, "TextVectorization: split: ", io::excerpt(sp), " (recur runs null, \"whitespace\" and "
           "\"character\"; a custom function cannot be loaded)");
    // ngrams: n means the widths 1..n; a list gives them.
    if (cfg.contains("ngrams") && !cfg["ngrams"].is_null()) {
      const json& ng = cfg["ngrams"];
      if (ng.is_number_integer()) {
        const int n = int_of(cfg, "ngrams", 0);
        if (n < 1 || n > kMaxNgram)
          fail(Code::invalid_argument, "TextVectorization: ngrams: expected 1 to ", kMaxNgram, ", got ", n);
        for (int w = 1; w <= n; ++w) widths_.push_back(w);
      } else if (ng.is_array() && !ng.empty() && ng.size() <= static_cast<std::size_t>(kMaxNgram)) {
        for (const json& w : ng) {
          if (!w.is_number_integer() || w.get<std::int64_t>() < 1 || w.get<std::int64_t>() > kMaxNgram)
            fail(Code::invalid_argument, "TextVectorization: ngrams: expected widths from 1 to ", kMaxNgram, ", got ",
                 io::excerpt(ng));
          widths_.push_back(w.get<int>());
        }
      } else {
        fail(Code::invalid_argument, "TextVectorization: ngrams: expected null, an integer or a list of 1 to ", kMaxNgram,
             " integers, got ", io::excerpt(ng));
      }
    }
    if (cfg.contains("output_sequence_length") && !cfg["output_sequence_length"].is_null()) {
      if (lk_.mode != OutputMode::ids)
        fail(Code::invalid_argument, "TextVectorization: output_sequence_length is set only with output_mode \"int\"");
      length_ = int_of(cfg, "output_sequence_length", 0);
      if (length_ < 1) fail(Code::invalid_argument, "TextVectorization: output_sequence_length must be positive, got ", length_);
    }
    lk_.load(cfg, ctx, object_path);
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_string_spec(in, "TextVectorization");
    const Spec& s = in[0];
    if (split_ != Split::none && !(s.dims.size() == 1 || (s.dims.size() == 2 && s.dims[1] == 1)))
      fail(Code::shape, "TextVectorization: a split input must be (batch,) or (batch, 1), got ", spec_string(s));
    if (split_ == Split::none && s.dims.size() != 2)
      fail(Code::shape, "TextVectorization: with split=None the input must be (batch, tokens), got ", spec_string(s));
    if (lk_.mode != OutputMode::ids) return {Spec{{s.dims[0], lk_.depth()}, false, false}};
    const Index L = length_ > 0 ? length_ : split_ == Split::none && widths_.empty() ? s.dims[1] : -1;
    return {Spec{{s.dims[0], L}, true, false}};
  }

  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    return (elements(main) + elements(out)) * kLookupWork + Op::work(main, out);  // a string and a hash-table probe per token
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const std::vector<std::string>& str = strings_of(x, name, class_name);
    const Index B = x.shape[0], per = B > 0 ? static_cast<Index>(str.size()) / B : 0;
    std::vector<std::vector<Index>> rows(static_cast<std::size_t>(B));
    std::vector<std::string> tokens;
    for (Index b = 0; b < B; ++b) {
      tokens.clear();
      for (Index k = 0; k < per; ++k) {
        const std::string text = standardized(str[static_cast<std::size_t>(b * per + k)]);
        if (split_ == Split::none) tokens.push_back(text);
        else if (split_ == Split::whitespace) split_whitespace(text, tokens);
        else split_characters(text, tokens);
      }
      lookup_row(tokens, b, rows[static_cast<std::size_t>(b)]);
    }
    return {encode_rows(rows, lk_, length_ > 0 ? length_ : -1, name, "TextVectorization")};
  }
  bool takes_strings() const override { return true; }
  bool passes_ids() const override { return true; }  // it makes them, exact

 private:
  static constexpr int kMaxNgram = 1024;

  // tf.strings.lower (ASCII letters only: Keras passes no encoding) and Keras's punctuation regex
  // [!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\'], the 32 ASCII punctuation characters; bytes of
  // other characters are never ASCII in UTF-8, so they are kept as they are.
  std::string standardized(const std::string& s) const {
    if (standardize_ == Standardize::none) return s;
    const bool lower = standardize_ != Standardize::strip, strip = standardize_ != Standardize::lower;
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
      const unsigned char c = static_cast<unsigned char>(ch);
      const bool punct = c >= 0x21 && c <= 0x7E && !((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
      if (strip && punct) continue;
      out += lower && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : ch;
    }
    return out;
  }

  // tf.strings.split: runs of ASCII whitespace (" \t\n\v\f\r") separate tokens.
  static void split_whitespace(const std::string& s, std::vector<std::string>& out) {
    std::size_t i = 0;
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
    while (i < s.size()) {
      while (i < s.size() && space(s[i])) ++i;
      const std::size_t start = i;
      while (i < s.size() && !space(s[i])) ++i;
      if (i > start) out.push_back(s.substr(start, i - start));
    }
  }

  // tf.strings.unicode_split(..., "UTF-8"): one token per code point (the input is valid UTF-8).
  static void split_characters(const std::string& s, std::vector<std::string>& out) {
    for (std::size_t i = 0; i < s.size();) {
      const int lead = io::utf8_lead_length(static_cast<unsigned char>(s[i]));
      const std::size_t len = lead > 0 ? static_cast<std::size_t>(lead) : 4;
      out.push_back(s.substr(i, std::min(len, s.size() - i)));
      i += len;
    }
  }

  // The ids of a row's tokens, or of its ngrams (tf.strings.ngrams with separator " ": every
  // n-gram of the first width, then of the next; none of a width longer than the row).
  void lookup_row(const std::vector<std::string>& tokens, Index row, std::vector<Index>& ids) const {
    if (widths_.empty()) {
      for (const std::string& t : tokens) ids.push_back(lk_.id(t, name));
      return;
    }
    const std::size_t n = tokens.size();
    std::vector<double> prefix(n + 1, 0.0);
    for (std::size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + double(tokens[i].size());
    double bytes = 0;  // what the ngrams of this row take: checked before any is made
    for (const int w : widths_)
      for (std::size_t i = 0; i + static_cast<std::size_t>(w) <= n; ++i)
        bytes += prefix[i + static_cast<std::size_t>(w)] - prefix[i] + w;
    check_limit(Limit::tensor_bytes, bytes, "layer '" + name + "' (TextVectorization): the ngrams of row " + std::to_string(row));
    std::string gram;
    for (const int w : widths_)
      for (std::size_t i = 0; i + static_cast<std::size_t>(w) <= n; ++i) {
        gram = tokens[i];
        for (std::size_t k = 1; k < static_cast<std::size_t>(w); ++k) (gram += ' ') += tokens[i + k];
        ids.push_back(lk_.id(gram, name));
      }
  }

  Lookup lk_;
  Standardize standardize_ = Standardize::lower_and_strip;
  Split split_ = Split::whitespace;
  std::vector<int> widths_;
  int length_ = 0;  // output_sequence_length; 0: none
};

}  // namespace

void register_text_layers(OpTable& t) {
  t.add({"StringLookup"}, [](const json& e, const BuildContext& ctx, const std::string& path) -> std::shared_ptr<Op> {
    return std::make_shared<StringLookupOp>(e.at("config"), ctx, path);
  });
  t.add({"TextVectorization"}, [](const json& e, const BuildContext& ctx, const std::string& path) -> std::shared_ptr<Op> {
    return std::make_shared<TextVectorizationOp>(e.at("config"), ctx, path);
  });
}

}  // namespace recur::graph
