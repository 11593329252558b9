// SPDX-License-Identifier: Apache-2.0
#include "recur/model.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "gpu/runtime.hpp"
#include "model/device_run.hpp"
#include "io/hdf5_file.hpp"
#include "io/printable.hpp"
#include "io/zip_archive.hpp"
#include "model/graph.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/limits.hpp"
#include "recur/log.hpp"
#include "model/snapshot_bytes.hpp"
#include "model/stream_batch.hpp"

namespace recur {
namespace {

using json = nlohmann::json;
using Code = Error::Code;
using graph::Graph;
using graph::Spec;
using graph::Value;

constexpr std::uint64_t kMaxJsonBytes = std::uint64_t(1) << 26;     // config.json / metadata.json

json parse_json(const std::string& text, const std::string& where) {
  if (json_nesting_depth(text) > kMaxJsonDepth)
    fail(Code::io, where, ": malformed JSON (nested deeper than ", kMaxJsonDepth, " levels)");
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(Code::io, where, ": malformed JSON (", io::printable(e.what()), ")");
  }
}

// A last axis as the int32 the C ABI reports (recur_model_get_info, recur_model_layer); declared
// axes are within int32 already (graph.cpp), a computed one past it refuses the model.
int int_axis(Index d, const std::string& what) {
  if (d > static_cast<Index>(std::numeric_limits<std::int32_t>::max()))
    fail(Code::limit, what, ": the last axis has ", d, " entries, over ", std::numeric_limits<std::int32_t>::max(),
         " (the largest size recur reports); the model is too large to open");
  return static_cast<int>(std::max<Index>(d, 0));
}

std::size_t checked_total(const std::vector<Index>& dims, const char* what) {
  double n = 1;
  for (Index d : dims) {
    if (d < 0) fail(Code::shape, what, ": the shape ", shape_string(dims), " is not known");
    n *= static_cast<double>(d);
  }
  if (n > double(std::uint64_t(1) << 40))
    fail(Code::shape, what, ": the shape ", shape_string(dims), " has ", n, " entries, more than 2^40 (1099511627776); use a smaller batch or fewer timesteps");
  return static_cast<std::size_t>(n);
}

const char* dtype_name(DType d) {
  switch (d) {
    case DType::float32: return "RECUR_DTYPE_FLOAT32";
    case DType::int32: return "RECUR_DTYPE_INT32";
    case DType::int64: return "RECUR_DTYPE_INT64";
    default: return "RECUR_DTYPE_STRING";
  }
}

// `n` NUL-terminated strings, checked: no NULL pointer, valid UTF-8, all of them together under the
// tensor limit (their bytes are copied).
std::shared_ptr<const std::vector<std::string>> string_values(const char* const* p, std::size_t n, const std::string& at) {
  auto out = std::make_shared<std::vector<std::string>>();
  out->reserve(n);
  double bytes = 0;
  for (std::size_t e = 0; e < n; ++e) {
    if (!p[e]) fail(Code::invalid_argument, at, ".data[", e, "]: the string is NULL");
    const std::size_t len = std::strlen(p[e]);
    bytes += double(len);
    check_limit(Limit::tensor_bytes, bytes, at + ": the strings");
    const std::size_t bad = io::utf8_error_at(p[e], len);
    if (bad != std::string::npos)
      fail(Code::invalid_argument, at, ".data[", e, "]: not valid UTF-8 at byte ", bad, " (\"",
           io::printable(std::string(p[e], len), 80), "\"); text inputs must be UTF-8");
    out->emplace_back(p[e], len);
  }
  return out;
}

// What a stream of the model keeps between steps, learnt once per model from a stream stepped
// twice on ones: each (op, call site) with recurrent states (their count and units) or a causal
// layer's past inputs (dims past the batch, -1 for an axis that grows with the steps). Snapshots
// carry it so that bytes saved by another model are refused, saying what differs.
struct StreamLayout {
  struct Entry {
    std::pair<const graph::Op*, int> key;
    std::string name, cls;
    int site = 0;
    std::uint8_t kind = 0;                  // 0: recurrent states, 1: past inputs
    std::vector<std::pair<int, int>> states;  // kind 0: (num_states, units) per State
    std::vector<Index> dims;                // kind 1: dims past the batch
  };
  std::vector<Entry> entries;  // by site, then kind
  graph::StreamStates scopes;  // the nested models' call-site bases of this model
};

}  // namespace

// What streams share with the model: the graph and its layers.
struct ModelShared {
  std::unique_ptr<Graph> graph;
  std::vector<ModelTensorInfo> inputs, outputs;
  std::string path;
  mutable std::mutex stateful_mutex;  // runs of a stateful model, one at a time
  mutable std::mutex layout_mutex;    // guards stream_layout
  mutable std::shared_ptr<const StreamLayout> stream_layout;  // made by the first snapshot
  // The batched states of step_named_many's batches, kept between calls so that a repeated call
  // reuses their buffers instead of allocating them; shared by all the model's streams (and
  // threads), and together at most kBatchCacheRows rows, whichever streams led the batches.
  static constexpr Index kBatchCacheRows = 16384;
  mutable std::mutex batch_cache_mutex;
  mutable std::vector<std::unique_ptr<graph::StreamStates>> batch_caches;
  // A kept one of `rows` rows if there is one, else any kept one, else a new one.
  std::unique_ptr<graph::StreamStates> take_batch_cache(Index rows) const {
    std::lock_guard<std::mutex> lock(batch_cache_mutex);
    if (batch_caches.empty()) return std::make_unique<graph::StreamStates>();
    auto it = std::find_if(batch_caches.begin(), batch_caches.end(), [&](const auto& c) { return c->batch == rows; });
    if (it == batch_caches.end()) it = batch_caches.end() - 1;
    std::unique_ptr<graph::StreamStates> c = std::move(*it);
    batch_caches.erase(it);
    return c;
  }
  // Keeps `c` for a later call, unless the kept ones would pass kBatchCacheRows rows.
  void keep_batch_cache(std::unique_ptr<graph::StreamStates> c) const noexcept {
    if (!c) return;
    try {
      std::lock_guard<std::mutex> lock(batch_cache_mutex);
      Index rows = c->batch;
      for (const auto& k : batch_caches) rows += k->batch;
      if (rows <= kBatchCacheRows) batch_caches.push_back(std::move(c));
    } catch (...) {
      // (No room to keep it: it is freed, and a later call makes another.)
    }
  }
  // Device memory the graph's runs and its streams' steps reuse while the model is on a GPU (null
  // on the CPU).
  std::shared_ptr<graph::DevicePool> device_pool() const {
    if (!on_device_.load(std::memory_order_acquire)) return nullptr;  // a CPU step takes no lock
    std::lock_guard<std::mutex> lock(device_mutex);
    return device_pool_;
  }
  void set_device_pool(std::shared_ptr<graph::DevicePool> pool) {
    std::lock_guard<std::mutex> lock(device_mutex);
    device_pool_ = std::move(pool);
    on_device_.store(device_pool_ != nullptr, std::memory_order_release);
  }
  mutable std::mutex device_mutex;
  std::shared_ptr<graph::DevicePool> device_pool_;
  std::atomic<bool> on_device_{false};

  // Input i's concrete dims for a run or a stream step.
  std::vector<Index> input_dims(std::size_t i, Index batch, Index timesteps, bool stream) const {
    const ModelTensorInfo& info = inputs[i];
    std::vector<Index> d = info.dims;
    const Spec& spec = graph->input_specs[i];
    if (spec.dims[0] >= 0 && batch != spec.dims[0])
      fail(Code::shape, "batch: input '", info.name, "' has a fixed batch of ", spec.dims[0], " (a stateful model), got ", batch);
    d[0] = batch;
    // A sequence input runs for the timesteps asked (Keras runs other lengths than declared too).
    if (info.sequence && (stream || timesteps > 0)) d[1] = timesteps;
    int unknown = 0;
    for (std::size_t a = 1; a < d.size(); ++a)
      if (d[a] < 0) {
        if (++unknown > 1)
          fail(Code::unsupported, "input '", info.name, "' has more than one axis of unknown size ", shape_string(info.dims));
        d[a] = timesteps;
      }
    if (unknown && timesteps <= 0)
      fail(Code::invalid_argument, "timesteps: input '", info.name, "' needs a positive number of timesteps, got ", timesteps);
    return d;
  }

  std::vector<Value> make_inputs(Index batch, const std::vector<Index>& timesteps, const float* data, std::size_t len,
                                 const std::uint8_t* masks, std::size_t masks_len, bool stream) const {
    if (batch <= 0) fail(Code::invalid_argument, "batch: expected a positive value, got ", batch);
    if (timesteps.size() != inputs.size())
      fail(Code::invalid_argument, "timesteps: expected one value per input (", inputs.size(), "), got ", timesteps.size());
    if (!data) fail(Code::invalid_argument, "inputs: is NULL");
    for (const ModelTensorInfo& info : inputs)
      if (info.strings)
        fail(Code::invalid_argument, "inputs: input '", info.name, "' holds strings, which floats cannot carry; pass it by "
             "name as RECUR_DTYPE_STRING (recur_model_run_named)");
    std::size_t want = 0, want_masks = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<Index> d = input_dims(i, batch, timesteps[i], stream);
      want += checked_total(d, "inputs");
      if (inputs[i].sequence) want_masks += static_cast<std::size_t>(d[0] * d[1]);
    }
    if (len != want) fail(Code::shape, "inputs: expected ", want, " floats for ", describe(batch, timesteps, stream), ", got ", len);
    if (masks && masks_len != want_masks)
      fail(Code::shape, "masks: expected ", want_masks, " values (B x T of each sequence input), got ", masks_len);
    std::vector<Value> vals(inputs.size());
    std::size_t off = 0, moff = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      Value& v = vals[i];
      v.shape = input_dims(i, batch, timesteps[i], stream);
      const std::size_t n = checked_total(v.shape, "inputs");
      v.data.assign(data + off, data + off + n);
      off += n;
      if (masks && inputs[i].sequence) {
        const std::size_t m = static_cast<std::size_t>(v.shape[0] * v.shape[1]);
        v.mask = std::make_shared<const std::vector<std::uint8_t>>(masks + moff, masks + moff + m);
        moff += m;
      }
    }
    return vals;
  }

  std::string describe(Index batch, const std::vector<Index>& timesteps, bool stream) const {
    std::string s;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (i) s += ", ";
      s += "'" + inputs[i].name + "' " + shape_string(input_dims(i, batch, timesteps[i], stream));
    }
    return s;
  }

  std::vector<std::vector<Index>> output_dims(Index batch, const std::vector<Index>& timesteps, bool stream) const {
    if (batch <= 0) fail(Code::invalid_argument, "batch: expected a positive value, got ", batch);
    if (timesteps.size() != inputs.size())
      fail(Code::invalid_argument, "timesteps: expected one value per input (", inputs.size(), "), got ", timesteps.size());
    std::vector<Spec> specs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      Spec s = graph->input_specs[i];
      s.dims = input_dims(i, batch, timesteps[i], stream);
      specs.push_back(s);
    }
    std::vector<std::vector<Index>> out;
    for (const Spec& s : graph->infer(specs)) {
      std::vector<Index> d = s.dims;
      d[0] = batch;
      for (std::size_t a = 1; a < d.size(); ++a)
        if (d[a] < 0) fail(Code::shape, "the output's shape ", graph::spec_string(s), " cannot be told before the run");
      out.push_back(d);
    }
    return out;
  }

  // ---- named runs and steps ----

  // "(B, T, 8)": input i's dims as a caller gives them, B and T for what the run decides.
  std::string expected_dims(std::size_t i) const {
    const ModelTensorInfo& info = inputs[i];
    std::string s = "(";
    for (std::size_t a = 0; a < info.dims.size(); ++a) {
      if (a) s += ", ";
      if (a == 0) s += info.dims[0] >= 0 ? std::to_string(info.dims[0]) : "B";
      else if (a == 1 && info.sequence) s += "T";
      else s += info.dims[a] >= 0 ? std::to_string(info.dims[a]) : "?";
    }
    return s + (info.dims.size() == 1 ? ",)" : ")");
  }

  static std::string quoted_list(const std::vector<std::string>& names) {
    std::string s;
    for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
    return s;
  }

  std::vector<std::string> input_names() const {
    std::vector<std::string> out;
    for (const auto& t : inputs) out.push_back(t.name);
    return out;
  }

  // The name that selects output i alone: its Keras name, or "name:k" where a Keras 3 layer with
  // several outputs gives them one name.
  std::string output_address(std::size_t i) const {
    std::size_t same = 0, before = 0;
    for (std::size_t j = 0; j < outputs.size(); ++j)
      if (outputs[j].name == outputs[i].name) {
        if (j < i) ++before;
        ++same;
      }
    return same > 1 ? outputs[i].name + ":" + std::to_string(before) : outputs[i].name;
  }

  std::vector<std::string> output_addresses() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < outputs.size(); ++i) out.push_back(output_address(i));
    return out;
  }

  // The given inputs, checked, as values in model input order. `stream_batch` > 0: a step of a
  // stream of that many rows, where every sequence input holds the same number of steps.
  // `shapes_only`: only the dims matter (data may be null and is not read).
  std::vector<Value> named_values(const std::vector<NamedInput>& given, Index stream_batch, bool& free_time,
                                  bool shapes_only = false) const {
    std::vector<std::size_t> slot(inputs.size(), SIZE_MAX);
    for (std::size_t k = 0; k < given.size(); ++k) {
      std::size_t idx = SIZE_MAX;
      for (std::size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].name == given[k].name) idx = i;
      if (idx == SIZE_MAX)
        fail(Code::invalid_argument, "inputs[", k, "].name: the model has no input '", given[k].name, "' (its inputs: ",
             quoted_list(input_names()), ")");
      if (slot[idx] != SIZE_MAX)
        fail(Code::invalid_argument, "inputs[", k, "].name: input '", given[k].name, "' is given twice (inputs[", slot[idx],
             "] and inputs[", k, "])");
      slot[idx] = k;
    }
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (slot[i] == SIZE_MAX)
        fail(Code::invalid_argument, "inputs: input '", inputs[i].name, "' is missing (the model's inputs: ",
             quoted_list(input_names()), "; give each exactly once)");
    std::vector<Value> vals(inputs.size());
    Index batch = -1, steps = -1;
    std::size_t batch_from = 0, steps_from = 0;
    free_time = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::size_t k = slot[i];
      const NamedInput& g = given[k];
      const ModelTensorInfo& info = inputs[i];
      const std::string at = "inputs[" + std::to_string(k) + "] ('" + info.name + "')";
      if (g.dtype != DType::float32 && g.dtype != DType::int32 && g.dtype != DType::int64 && g.dtype != DType::string)
        fail(Code::invalid_argument, at, ".dtype: expected RECUR_DTYPE_FLOAT32 (1), RECUR_DTYPE_INT32 (2), "
             "RECUR_DTYPE_INT64 (3) or RECUR_DTYPE_STRING (4), got ", static_cast<int>(g.dtype));
      if (info.strings && g.dtype != DType::string)
        fail(Code::invalid_argument, at, ".dtype: the input holds strings (Keras dtype \"string\"); pass them as "
             "RECUR_DTYPE_STRING, got ", dtype_name(g.dtype));
      if (!info.strings && g.dtype == DType::string)
        fail(Code::invalid_argument, at, ".dtype: RECUR_DTYPE_STRING, but the input holds ",
             info.token_ids ? "token ids (pass int32, int64 or float32)" : "numbers (pass float32)");
      bool fits = g.dims.size() == info.dims.size();
      for (std::size_t a = 0; fits && a < g.dims.size(); ++a)
        fits = (a == 0 || (a == 1 && info.sequence) ? g.dims[a] > 0 : g.dims[a] >= 0) &&
               (a == 0 || info.dims[a] < 0 || info.dims[a] == g.dims[a] || (a == 1 && info.sequence));
      if (!fits)
        fail(Code::shape, at, ".dims: expected ", expected_dims(i), " (rank ", info.dims.size(), "; B and T at least 1), got ",
             shape_string(g.dims), " (rank ", g.dims.size(), ")");
      const Index b = g.dims[0];
      if (batch < 0) {
        batch = b;
        batch_from = i;
      } else if (b != batch) {
        fail(Code::shape, at, ".dims: batch ", b, " differs from the batch ", batch, " of input '", inputs[batch_from].name,
             "' (every input has the same batch)");
      }
      const Index fixed = graph->input_specs[i].dims[0];
      if (fixed >= 0 && b != fixed)
        fail(Code::shape, at, ".dims: the model fixes the batch at ", fixed, " (a stateful model), got ", b);
      if (stream_batch > 0 && b != stream_batch)
        fail(Code::shape, at, ".dims: the stream has ", stream_batch, " rows, got a batch of ", b);
      if (info.sequence) {
        if (stream_batch > 0 && steps >= 0 && g.dims[1] != steps)
          fail(Code::shape, at, ".dims: ", g.dims[1], " timesteps, but input '", inputs[steps_from].name, "' has ", steps,
               " (a step feeds every sequence input the same number of steps)");
        if (steps < 0) {
          steps = g.dims[1];
          steps_from = i;
        }
        const Index declared = graph->input_specs[i].dims[1];
        free_time = free_time || (declared >= 0 && declared != g.dims[1]);
      }
      const std::size_t n = checked_total(g.dims, "inputs");
      if (g.length != n)
        fail(Code::shape, at, ".length: dims ", shape_string(g.dims), " hold ", n, " values, got ", g.length);
      Value& v = vals[i];
      v.shape = g.dims;
      if (shapes_only) continue;
      if (!g.data) fail(Code::invalid_argument, at, ".data: is NULL");
      check_limit(Limit::tensor_bytes, 4.0 * double(n), at);
      if (g.dtype == DType::string) {
        v.strings = string_values(static_cast<const char* const*>(g.data), n, at);
      } else if (g.dtype == DType::float32) {
        const float* f = static_cast<const float*>(g.data);
        v.data.assign(f, f + n);
      } else {
        // Keras casts integer inputs to the layer's float dtype; ids also go on exact.
        std::vector<std::int64_t> ids(n);
        if (g.dtype == DType::int32)
          std::copy_n(static_cast<const std::int32_t*>(g.data), n, ids.begin());
        else
          std::copy_n(static_cast<const std::int64_t*>(g.data), n, ids.begin());
        v.data.resize(n);
        for (std::size_t e = 0; e < n; ++e) v.data[e] = static_cast<float>(ids[e]);
        if (info.token_ids) v.ids = std::make_shared<const graph::Ids>(graph::Ids{std::move(ids), info.name});
      }
      if (g.mask) {
        if (!info.sequence)
          fail(Code::invalid_argument, at, ".mask: the input has no timesteps axis, so it takes no mask (pass NULL)");
        const std::size_t m = static_cast<std::size_t>(g.dims[0] * g.dims[1]);
        if (g.mask_length != m)
          fail(Code::shape, at, ".mask_length: expected B x T = ", m, " values for dims ", shape_string(g.dims), ", got ",
               g.mask_length);
        v.mask = std::make_shared<const std::vector<std::uint8_t>>(g.mask, g.mask + m);
      } else if (g.mask_length != 0) {
        fail(Code::invalid_argument, at, ".mask: is NULL, but mask_length is ", g.mask_length);
      }
    }
    return vals;
  }

  // Model output indices of the requested outputs.
  std::vector<std::size_t> named_output_indices(const std::vector<NamedOutput>& wanted) const {
    std::vector<std::size_t> idx;
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      const std::string& n = wanted[k].name;
      std::size_t found = SIZE_MAX, same = 0;
      for (std::size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i].name == n && same++ == 0) found = i;
      if (same > 1)
        fail(Code::invalid_argument, "outputs[", k, "].name: '", n, "' names ", same, " outputs of this model (one layer's "
             "outputs); ask for '", n, ":0' to '", n, ":", same - 1, "'");
      for (std::size_t i = 0; found == SIZE_MAX && i < outputs.size(); ++i)
        if (output_address(i) == n) found = i;
      if (found == SIZE_MAX)
        fail(Code::invalid_argument, "outputs[", k, "].name: the model has no output '", n, "' (its outputs: ",
             quoted_list(output_addresses()), ")");
      for (std::size_t j = 0; j < idx.size(); ++j)
        if (idx[j] == found)
          fail(Code::invalid_argument, "outputs[", k, "].name: output '", n, "' is asked for twice (outputs[", j,
               "] and outputs[", k, "])");
      idx.push_back(found);
    }
    return idx;
  }

  // The dims of every output for these input values.
  std::vector<std::vector<Index>> dims_for(const std::vector<Value>& in) const {
    std::vector<std::vector<Index>> out;
    for (const Spec& sp : graph->infer_for(in)) {
      for (std::size_t a = 1; a < sp.dims.size(); ++a)
        if (sp.dims[a] < 0) fail(Code::shape, "the output's shape ", graph::spec_string(sp), " cannot be told before the run");
      std::vector<Index> d = sp.dims;
      d[0] = in.empty() ? d[0] : in[0].shape[0];
      out.push_back(d);
    }
    return out;
  }

  // Checks the requested outputs against `dims` and fills their dims and length.
  void shape_outputs(const std::vector<std::size_t>& idx, const std::vector<std::vector<Index>>& dims,
                     std::vector<NamedOutput>& wanted, bool check_buffers) const {
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      const std::vector<Index>& d = dims[idx[k]];
      const std::size_t n = checked_total(d, "outputs");
      if (check_buffers) {
        const std::string at = "outputs[" + std::to_string(k) + "] ('" + wanted[k].name + "')";
        if (!wanted[k].data) fail(Code::invalid_argument, at, ".data: is NULL");
        if (wanted[k].capacity < n)
          fail(Code::shape, at, ".capacity: dims ", shape_string(d), " need ", n, " floats, got ", wanted[k].capacity);
      }
    }
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      wanted[k].dims = dims[idx[k]];
      wanted[k].length = checked_total(wanted[k].dims, "outputs");
    }
  }

  bool any_strings() const {
    for (const ModelTensorInfo& t : inputs)
      if (t.strings) return true;
    return false;
  }

  static std::vector<std::vector<Index>> dims_of(const std::vector<Value>& vals) {
    std::vector<std::vector<Index>> out;
    for (const Value& v : vals) out.push_back(v.shape);
    return out;
  }

  static void copy_outputs(const std::vector<std::size_t>& idx, const std::vector<Value>& vals,
                           std::vector<NamedOutput>& wanted) {
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      const Value& v = vals[idx[k]];
      std::copy_n(v.data.data(), v.data.size(), wanted[k].data);
    }
  }

  void write_outputs(const std::vector<Value>& vals, float* out, std::size_t out_len) const {
    std::size_t total = 0;
    for (const Value& v : vals) total += v.data.size();
    if (total != out_len) fail(Code::shape, "outputs: expected ", total, " floats, got ", out_len);
    // copy_n, not memcpy: a tensor with a zero-size axis (an InputLayer may declare one) holds an
    // empty vector, whose data() may be NULL, and memcpy from NULL is undefined even for 0 bytes.
    for (const Value& v : vals) {
      std::copy_n(v.data.data(), v.data.size(), out);
      out += v.data.size();
    }
  }
};

struct Model::Impl {
  std::string path;
  DialectInfo dialect;
  std::string keras_version;
  std::shared_ptr<ModelShared> shared;
  std::vector<ModelLayerInfo> infos;
  // Each info's config entry, dumped into config_json on the first layers() call: most callers
  // never read it, and dumping every entry was about 7% of opening a model.
  std::vector<const json*> entries;
  std::once_flag configs_dumped;
  Placement placement;
  int num_threads = 1;
  Precision precision = Precision::float32;

  std::vector<std::string> stateful_names;  // "<name>", "<name>/forward|backward" or "<name>/cell_<k>"
  Graph& graph() const { return *shared->graph; }
  std::vector<Layer*> layers() const {
    std::vector<Layer*> out;
    shared->graph->collect_layers(out);
    return out;
  }
  // The layer `name` ("<name>/forward" / "/backward" for a Bidirectional half).
  Layer* find_layer(const std::string& name, const char* what) const;
  std::vector<graph::Op*> state_ops() const {
    std::vector<graph::Op*> out;
    for (const graph::LayerEntry& le : shared->graph->layers)
      if (le.op) le.op->collect_state_ops(out);
    return out;
  }
  void finish();
};

namespace {

std::unique_ptr<Model::Impl> open_image(const std::string& display, const std::shared_ptr<const std::vector<char>>& bytes,
                                        const std::string& path_on_disk) {
#if !RECUR_WITH_FILES
  // A build for targets without libzip/zlib (RECUR_WITH_FILES=OFF): layers come from their JSON.
  (void)bytes;
  (void)path_on_disk;
  fail(Code::unsupported, display, ": recur was built without model-file support (RECUR_WITH_FILES=OFF); build the "
       "layers from their JSON config and weights instead");
#endif
  auto impl = std::make_unique<Model::Impl>();
  impl->path = display;
  const std::string& path = display;
  // `where`: what holds the keras_version ("metadata.json", or the HDF5 group with the attribute).
  auto set_version = [&](const std::string& v, const std::string& where) {
    impl->keras_version = v;
    if (v.empty() || (v[0] != '2' && v[0] != '3'))
      fail(Code::unsupported, path, ": ", where, ": keras_version '", io::printable(v),
           "' (recur reads files from Keras 2 and Keras 3)");
    try {
      impl->dialect = DialectInfo::parse(v[0] == '2' ? Dialect::keras2 : Dialect::keras3, v);
    } catch (const Error& e) {
      // A malformed version is a corrupt file, and the message names it.
      fail(Code::io, path, ": ", where, ": ", io::printable(e.what()));
    }
  };
  // `weights_bytes`: the size of the file holding the weights, which bounds how many there can be.
  auto build = [&](json model_config, std::uint64_t weights_bytes, bool legacy_h5,
                   std::shared_ptr<const io::ZipArchive> zip = nullptr) {
    graph::BuildContext ctx;
    ctx.legacy_h5 = legacy_h5;
    if (zip) {
      // Layers' assets (an adapted lookup's vocabulary). A weak reference: contexts kept
      // by the graph must not hold the archive open, and it reads nothing once the file is open.
      std::weak_ptr<const io::ZipArchive> weak = zip;
      ctx.read_member = [weak](const std::string& member, std::uint64_t max_bytes, std::vector<char>& out) {
        const auto z = weak.lock();
        if (!z || !z->contains(member)) return false;
        out = z->read(member, max_bytes);
        return true;
      };
    }
    ctx.document = std::make_shared<const json>(std::move(model_config));
    ctx.file_weight_floats = weights_bytes / 2 + (std::uint64_t(1) << 20);
    ctx.file = path;
    ctx.dialect = impl->dialect;
    ctx.keras_version = impl->keras_version;
    impl->shared = std::make_shared<ModelShared>();
    impl->shared->path = path;
    impl->shared->graph = Graph::build(*ctx.document, ctx, "", nullptr);
    check_limit(Limit::weight_bytes, 4.0 * double(impl->shared->graph->weight_floats()),
                path + ": model_config: the weights of all layers");
  };
  char sig[8] = {0};
  std::uint64_t file_size = bytes ? bytes->size() : UINT64_MAX;
  if (bytes) {
    std::memcpy(sig, bytes->data(), std::min<std::size_t>(8, bytes->size()));
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path_on_disk, ec)) {
      if (std::filesystem::exists(std::filesystem::path(path_on_disk) / "saved_model.pb", ec))
        fail(Code::io, path, ": is a TensorFlow SavedModel folder; recur reads Keras model files (.keras or .h5): "
                             "save one with model.save(\"model.keras\")");
      fail(Code::io, path, ": is a directory, not a model file (recur reads .keras and .h5 files)");
    }
    errno = 0;
    std::ifstream f(path_on_disk, std::ios::binary);
    if (!f) fail(Code::io, path, ": cannot open the file: ", errno ? std::strerror(errno) : "unknown reason");
    const std::uintmax_t size = std::filesystem::file_size(path_on_disk, ec);
    if (!ec) check_limit(Limit::file_bytes, double(size), path + ": the model file");
    if (!ec) file_size = size;
    f.read(sig, 8);
  }
  // A config entry of the wrong JSON type (e.g. a layer name that is a number) throws json's own
  // exceptions: report them as a problem of this file, not as an internal error.
  try {
    if (std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0) {
      const io::H5File h5 = bytes ? io::H5File::open_image(*bytes, path) : io::H5File::open_path(path_on_disk);
      if (!h5.has_attribute("", "model_config"))
        fail(Code::io, path, ": /: no 'model_config' attribute (a weights-only file from save_weights has no "
                             "architecture; build the layers from their JSON instead)");
      std::string version, holder = "/";
      if (h5.has_attribute("", "keras_version")) {
        version = h5.attribute_string("", "keras_version");
      } else if (h5.has_attribute("model_weights", "keras_version")) {
        version = h5.attribute_string("model_weights", "keras_version");
        holder = "/model_weights";
      }
      set_version(version, holder);
      build(parse_json(h5.attribute_string("", "model_config"), path + ": /model_config"), file_size, true);
      impl->graph().load_legacy(h5, h5.is_group("model_weights") ? "model_weights" : "", path);
    } else if (std::memcmp(sig, "PK\x03\x04", 4) == 0) {
      const auto zip_ptr = std::make_shared<const io::ZipArchive>(
          bytes ? io::ZipArchive::open_memory(bytes, path) : io::ZipArchive::open(path_on_disk));
      const io::ZipArchive& zip = *zip_ptr;
      const std::vector<char> meta = zip.read("metadata.json", kMaxJsonBytes);
      const json m = parse_json(std::string(meta.begin(), meta.end()), path + ": metadata.json");
      if (!m.is_object() || !m.contains("keras_version") || !m["keras_version"].is_string())
        fail(Code::io, path, ": metadata.json: no keras_version");
      set_version(m["keras_version"].get<std::string>(), "metadata.json");
      const std::vector<char> cfg = zip.read("config.json", kMaxJsonBytes);
      std::vector<char> weights = zip.read("model.weights.h5", limit(Limit::file_bytes));
      const std::uint64_t weights_bytes = weights.size();
      const io::H5File h5 = io::H5File::open_image(std::move(weights), path + ": model.weights.h5");
      build(parse_json(std::string(cfg.begin(), cfg.end()), path + ": config.json"), weights_bytes, false, zip_ptr);
      impl->graph().load_keras(h5, path);
    } else {
      fail(Code::io, path, ": neither a .keras (zip) nor an .h5 (HDF5) file");
    }
  } catch (const json::exception& e) {
    fail(Code::io, path, ": model_config: unexpected JSON (", io::printable(e.what()), ")");
  }
  impl->finish();
  return impl;
}

}  // namespace

std::vector<std::string> stateful_names_of(const Graph& g);

void Model::Impl::finish() {
  Graph& g = graph();
  // Layer infos, in config order (Keras 3's op nodes are not layers).
  for (const graph::LayerEntry& le : g.layers) {
    if (le.is_op) continue;
    ModelLayerInfo info;
    info.name = le.name;
    info.class_name = le.class_name;
    entries.push_back(le.entry);
    info.recurrent = le.class_name == "GRU" || le.class_name == "LSTM" || le.class_name == "CuDNNGRU" ||
                     le.class_name == "CuDNNLSTM" || le.class_name == "SimpleRNN" || le.class_name == "Bidirectional" ||
                     le.class_name == "RNN";
    info.supported = le.why.empty();
    if (!le.nodes.empty()) {
      const graph::Node& n = g.nodes[static_cast<std::size_t>(le.nodes[0])];
      const std::string what = "layer '" + io::printable(le.name) + "'";
      if (n.is_input && !n.out.empty()) info.input_size = int_axis(n.out[0].dims.back(), what);
      if (!n.main.empty()) {
        const graph::Node& src = g.nodes[static_cast<std::size_t>(n.main[0].node)];
        if (static_cast<std::size_t>(n.main[0].output) < src.out.size())
          info.input_size = int_axis(src.out[static_cast<std::size_t>(n.main[0].output)].dims.back(), what);
      }
      if (!n.out.empty()) info.output_size = int_axis(n.out[0].dims.back(), what);
      if (le.class_name == "Embedding") info.input_size = 1;
    }
    infos.push_back(std::move(info));
  }
  for (std::size_t i = 0; i < g.input_nodes.size(); ++i) {
    ModelTensorInfo t;
    t.name = g.input_names[i];
    t.dims = g.input_specs[i].dims;  // dims[0]: -1, or the batch a stateful model fixes
    t.token_ids = g.input_specs[i].ids;
    t.strings = g.input_specs[i].strings;
    for (const graph::Node& n : g.nodes)
      for (const graph::Ref& r : n.main)
        if (r.node == g.input_nodes[i] && n.op && n.op->class_name == "Embedding" && !t.strings) t.token_ids = true;
    t.sequence = t.dims.size() >= 3 || (t.dims.size() == 2 && (t.dims[1] < 0 || t.token_ids));
    shared->inputs.push_back(t);
  }
  for (std::size_t i = 0; i < g.outputs.size() && i < g.output_specs.size(); ++i) {
    ModelTensorInfo t;
    t.name = g.output_names[i];
    t.dims = g.output_specs[i].dims;
    t.sequence = t.dims.size() >= 3;
    shared->outputs.push_back(t);
  }
  if (g.unsupported.empty()) {
    std::vector<bool> stepped;
    for (const auto& t : shared->inputs) stepped.push_back(t.sequence);
    g.analyse_streaming(stepped);
    // A text layer reads whole strings: no time axis to step.
    for (int id : g.order) {
      const graph::Node& n = g.nodes[static_cast<std::size_t>(id)];
      if (g.not_streamable.empty() && n.op && n.op->takes_strings())
        g.not_streamable = "layer '" + n.op->name + "' (" + n.op->class_name + "): it reads whole strings, which do not "
                           "stream (stream the ids it makes instead)";
    }
  } else {
    g.not_streamable = "the model cannot run: " + g.unsupported;
  }
  placement.requested = "cpu";
  placement.backend = "cpu";
  placement.path = "cpu";
  stateful_names = stateful_names_of(g);
}

namespace {

// "an Embedding", "a Dense", "an LSTM": the article a class name takes when read aloud.
std::string with_article(const std::string& cls) {
  if (cls.empty()) return "a layer";
  const char c = cls[0];
  const bool vowel = std::strchr("AEIOUaeiou", c) != nullptr;
  // Acronyms read letter by letter: F, H, L, M, N, R, S and X start with a vowel sound.
  const bool acronym = cls.size() > 1 && std::isupper(static_cast<unsigned char>(cls[1])) &&
                       std::strchr("FHLMNRSX", c) != nullptr;
  return (vowel || acronym ? "an " : "a ") + cls;
}

}  // namespace

// A name as recur_model_stateful_layer lists it: the layer's own name first (it may hold '/'),
// then "<name>/forward|backward" for a Bidirectional's halves and "<name>/cell_<k>" for a stack's
// cells.
Layer* Model::Impl::find_layer(const std::string& name, const char* what) const {
  auto entry_named = [&](const std::string& n) -> const graph::LayerEntry* {
    for (const graph::LayerEntry& le : graph().layers)
      if (le.name == n) return &le;
    return nullptr;
  };
  auto is_recurrent = [](const graph::LayerEntry& le) {
    return le.class_name == "GRU" || le.class_name == "LSTM" || le.class_name == "CuDNNGRU" || le.class_name == "CuDNNLSTM" ||
           le.class_name == "SimpleRNN" || le.class_name == "Bidirectional" || le.class_name == "RNN";
  };
  auto layers_of = [](const graph::LayerEntry& le) {
    std::vector<Layer*> ls;
    if (le.op) le.op->collect_layers(ls);
    return ls;
  };
  auto resolve = [&](const graph::LayerEntry& le, const std::string& base, const std::string& half) -> Layer* {
    const std::vector<Layer*> ls = layers_of(le);
    if (ls.empty() || !is_recurrent(le)) {
      if (is_recurrent(le)) fail(Code::unsupported, "layer '", io::printable(name), "': ", le.why);
      fail(Code::invalid_argument, what, ": layer '", io::printable(name), "' is ", with_article(le.class_name),
           ", not a recurrent layer");
    }
    const std::string shown = io::printable(base);
    if (le.class_name == "Bidirectional") {
      if (half == "backward") return ls.at(1);
      if (half == "forward") return ls.at(0);
      fail(Code::invalid_argument, what, ": '", shown, "' is a Bidirectional; ask for '", shown, "/forward' or '", shown,
           "/backward'");
    }
    if (ls.size() > 1) {  // RNN(StackedRNNCells): one per cell, "<name>/cell_<k>"
      for (std::size_t k = 0; k < ls.size(); ++k)
        if (half == "cell_" + std::to_string(k)) return ls[k];
      fail(Code::invalid_argument, what, ": '", shown, "' is an RNN over ", ls.size(), " stacked cells; ask for '", shown,
           "/cell_0' .. '", shown, "/cell_", ls.size() - 1, "'");
    }
    if (!half.empty()) fail(Code::invalid_argument, what, ": layer '", io::printable(name), "' does not exist");
    return ls.at(0);
  };
  const graph::LayerEntry* exact = entry_named(name);
  const auto slash = name.rfind('/');
  const graph::LayerEntry* split = slash == std::string::npos ? nullptr : entry_named(name.substr(0, slash));
  // The whole name wins when it is a one-layer recurrent layer, or when no prefix names a layer.
  if (exact && (!split || (is_recurrent(*exact) && layers_of(*exact).size() == 1 && exact->class_name != "Bidirectional")))
    return resolve(*exact, name, "");
  if (split) return resolve(*split, name.substr(0, slash), name.substr(slash + 1));
  fail(Code::invalid_argument, what, ": the model has no layer '", io::printable(name), "'");
}

namespace {

std::string tensors_summary(const std::vector<ModelTensorInfo>& ts, bool inputs) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    s += (i ? ", '" : "'") + ts[i].name + "' " + shape_string(ts[i].dims);
    if (inputs) s += ts[i].strings ? " strings" : ts[i].token_ids ? " token ids" : " float32";
  }
  return s;
}

// What opening found, for the log: the version, the inputs and outputs, and what cannot run.
Model logged_open(Model m, const std::string& path) {
  if (log::enabled(log::Level::info)) {
    const std::string& why = m.unsupported();
    log::write(log::Level::info, "opened model '", path, "': Keras ", m.keras_version(), ", ", m.num_layers(),
               " layers; inputs: ", tensors_summary(m.inputs(), true), "; outputs: ", tensors_summary(m.outputs(), false),
               why.empty() ? "; runnable" : "; cannot run: " + why,
               m.not_streamable().empty() ? ", streams" : "; does not stream: " + m.not_streamable());
  }
  return m;
}

}  // namespace

Model Model::open(const std::string& path) { return logged_open(Model(open_image(path, nullptr, path)), path); }

Model Model::open_memory(const void* data, std::size_t len, const std::string& name) {
  const std::string display = name.empty() ? "<memory>" : name;
  if (len == 0) fail(Code::invalid_argument, "len: the model image is empty");
  if (!data) fail(Code::invalid_argument, "data: is NULL");
  check_limit(Limit::file_bytes, double(len), "len: the model image");
  auto bytes = std::make_shared<std::vector<char>>(static_cast<const char*>(data), static_cast<const char*>(data) + len);
  return logged_open(Model(open_image(display, bytes, "")), display);
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model::~Model() = default;

const DialectInfo& Model::dialect() const { return impl_->dialect; }
const std::string& Model::keras_version() const { return impl_->keras_version; }
const std::vector<ModelLayerInfo>& Model::layers() const {
  std::call_once(impl_->configs_dumped, [this] {
    for (std::size_t i = 0; i < impl_->infos.size(); ++i) impl_->infos[i].config_json = impl_->entries[i]->dump();
  });
  return impl_->infos;
}

std::size_t Model::num_layers() const { return impl_->infos.size(); }
const std::string& Model::unsupported() const { return impl_->graph().unsupported; }
const std::vector<ModelTensorInfo>& Model::inputs() const { return impl_->shared->inputs; }
const std::vector<ModelTensorInfo>& Model::outputs() const { return impl_->shared->outputs; }

int Model::input_size() const {
  const auto& in = inputs();
  if (in.empty()) return 0;
  if (in[0].token_ids && in[0].dims.size() == 2) return 1;
  return int_axis(in[0].dims.back(), "input 0");
}
bool Model::takes_token_ids() const { return !inputs().empty() && inputs()[0].token_ids; }
int Model::output_size() const {
  return outputs().empty() ? 0 : int_axis(outputs()[0].dims.back(), "output 0");
}
bool Model::returns_sequences() const { return !outputs().empty() && outputs()[0].sequence; }
int Model::num_outputs() const { return static_cast<int>(outputs().size()); }

std::vector<std::vector<Index>> Model::output_dims(Index batch, const std::vector<Index>& timesteps) const {
  return impl_->shared->output_dims(batch, timesteps, false);
}

std::size_t Model::inputs_length(Index batch, const std::vector<Index>& timesteps) const {
  if (batch <= 0) fail(Code::invalid_argument, "batch: expected a positive value, got ", batch);
  if (timesteps.size() != inputs().size())
    fail(Code::invalid_argument, "timesteps: expected one value per input (", inputs().size(), "), got ", timesteps.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < inputs().size(); ++i)
    n += checked_total(impl_->shared->input_dims(i, batch, timesteps[i], false), "inputs");
  return n;
}

std::size_t Model::outputs_length(Index batch, const std::vector<Index>& timesteps) const {
  std::size_t n = 0;
  for (const auto& d : output_dims(batch, timesteps)) n += checked_total(d, "outputs");
  return n;
}

std::size_t Model::output_length(Index batch, Index timesteps) const {
  if (batch <= 0 || timesteps <= 0)
    fail(Code::invalid_argument, "batch/timesteps: expected positive values, got ", batch, " and ", timesteps);
  if (inputs().size() != 1)
    fail(Code::invalid_argument, "the model has ", inputs().size(), " inputs; use recur_model_outputs_length");
  return outputs_length(batch, {timesteps});
}

namespace {

// A whole-model run on the model's GPU, when it has one: ctx.device is set for the run, and the
// run's device buffers go back to the model's pool once its outputs are on the host.
class GpuRun {
 public:
  GpuRun(const std::shared_ptr<graph::DevicePool>& pool, graph::RunContext& ctx) {
    if (!pool) return;
    run_.emplace(pool);
    ctx.device = &*run_;
  }
  void done(const std::string& model) {
    if (!run_) return;
    run_->finish();
    // What crossed between host and device, and why: the inputs and outputs, and the layers
    // without a GPU kernel (the way to see that a model stays on the device).
    if (log::enabled(log::Level::debug)) {
      auto list = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& w : v) s += (s.empty() ? "" : " | ") + w;
        return s;
      };
      log::write(log::Level::debug, "model '", model, "' ran on cuda:", run_->ordinal(), ": ", run_->uploads.size(),
                 " upload(s) [", list(run_->uploads), "], ", run_->downloads.size(), " download(s) [",
                 list(run_->downloads), "]");
    }
  }

 private:
  std::optional<graph::DeviceRun> run_;
};

}  // namespace

void Model::run_inputs(Index batch, const std::vector<Index>& timesteps, const float* inputs_data, std::size_t inputs_len,
                       const std::uint8_t* masks, std::size_t masks_len, float* outputs_data, std::size_t outputs_len) const {
  const ModelShared& s = *impl_->shared;
  if (!s.graph->unsupported.empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", s.graph->unsupported);
  if (!outputs_data) fail(Code::invalid_argument, "outputs: is NULL");
  std::vector<Value> in = s.make_inputs(batch, timesteps, inputs_data, inputs_len, masks, masks_len, false);
  graph::RunContext ctx;
  s.graph->plan_run(in);  // over run_bytes: refused before the output buffer is looked at
  ctx.planned = s.graph.get();
  const std::size_t want = outputs_length(batch, timesteps);
  if (outputs_len != want) fail(Code::shape, "outputs: expected ", want, " floats, got ", outputs_len);
  for (std::size_t i = 0; i < in.size(); ++i)
    ctx.free_time = ctx.free_time || (s.inputs[i].sequence && s.graph->input_specs[i].dims[1] >= 0 &&
                                       in[i].shape[1] != s.graph->input_specs[i].dims[1]);
  std::unique_lock<std::mutex> lock(s.stateful_mutex, std::defer_lock);
  if (stateful()) lock.lock();
  GpuRun gpu(s.device_pool(), ctx);
  s.write_outputs(s.graph->run(in, ctx), outputs_data, outputs_len);
  gpu.done(s.path);
}

namespace {

// The states of a model's stateful layers, kept so that a failed or cancelled run leaves them as
// they were.
class StatefulSnapshot {
 public:
  StatefulSnapshot(const std::vector<Layer*>& layers, const std::vector<graph::Op*>& ops) {
    for (graph::Op* op : ops) kept_ops_.emplace_back(op, op->saved_states());
    for (Layer* l : layers) {
      if (!l->config().stateful) continue;
      std::vector<float> v(static_cast<std::size_t>(l->num_states()) * static_cast<std::size_t>(l->config().batch_size) *
                           static_cast<std::size_t>(l->config().units));
      l->get_states(v.data(), v.size());
      kept_.emplace_back(l, std::move(v));
    }
  }
  void restore() {
    for (auto& [l, v] : kept_) l->reset_states(v.data(), v.size(), l->num_states());
    for (auto& [op, v] : kept_ops_) op->restore_states(v);
  }

 private:
  std::vector<std::pair<graph::Op*, std::vector<float>>> kept_ops_;
  std::vector<std::pair<Layer*, std::vector<float>>> kept_;
};

}  // namespace

void Model::named_output_shapes(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) const {
  const ModelShared& s = *impl_->shared;
  if (!s.graph->unsupported.empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", s.graph->unsupported);
  bool free_time = false;
  const std::vector<Value> in = s.named_values(inputs, 0, free_time, true);
  const std::vector<std::size_t> idx = s.named_output_indices(outputs);
  std::vector<std::vector<Index>> dims;
  try {
    dims = s.dims_for(in);
  } catch (const Error& e) {
    // A TextVectorization without output_sequence_length gives as many ids as the longest text
    // has tokens: only a run tells.
    if (e.code() != Code::shape || !s.any_strings()) throw;
    graph::RunContext ctx;
    dims = ModelShared::dims_of(run_restoring(s.named_values(inputs, 0, ctx.free_time), ctx, true));
  }
  s.shape_outputs(idx, dims, outputs, false);
}

std::vector<Value> Model::run_restoring(const std::vector<Value>& in, graph::RunContext& ctx, bool always) const {
  const ModelShared& s = *impl_->shared;
  std::unique_lock<std::mutex> lock(s.stateful_mutex, std::defer_lock);
  const bool has_states = stateful();
  if (has_states) lock.lock();
  std::optional<StatefulSnapshot> before;
  if (has_states) before.emplace(impl_->layers(), impl_->state_ops());
  try {
    std::vector<Value> out = s.graph->run(in, ctx);
    if (always && before) before->restore();
    return out;
  } catch (...) {
    if (before) before->restore();
    throw;
  }
}

void Model::run_named(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) const {
  const ModelShared& s = *impl_->shared;
  if (!s.graph->unsupported.empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", s.graph->unsupported);
  graph::RunContext ctx;
  const std::vector<Value> in = s.named_values(inputs, 0, ctx.free_time);
  s.graph->plan_run(in);  // over run_bytes: refused before the output buffers are looked at
  ctx.planned = s.graph.get();
  const std::vector<std::size_t> idx = s.named_output_indices(outputs);
  const bool text = s.any_strings();
  // Text inputs: the outputs' dims may depend on the tokens (a TextVectorization without
  // output_sequence_length), so the buffers are checked after the run, before anything is written.
  if (!text) s.shape_outputs(idx, s.dims_for(in), outputs, true);
  GpuRun gpu(s.device_pool(), ctx);
  if (!text || !stateful()) {
    const std::vector<Value> vals = run_restoring(in, ctx);
    if (text) s.shape_outputs(idx, ModelShared::dims_of(vals), outputs, true);
    ModelShared::copy_outputs(idx, vals, outputs);
    gpu.done(s.path);
    return;
  }
  std::lock_guard<std::mutex> lock(s.stateful_mutex);
  StatefulSnapshot before(impl_->layers(), impl_->state_ops());
  try {
    const std::vector<Value> vals = s.graph->run(in, ctx);
    s.shape_outputs(idx, ModelShared::dims_of(vals), outputs, true);
    ModelShared::copy_outputs(idx, vals, outputs);
    gpu.done(s.path);
  } catch (...) {
    before.restore();
    throw;
  }
}

void Model::run(const float* input, std::size_t input_len, Index B, Index T, const std::uint8_t* mask,
                std::size_t mask_len, float* output, std::size_t output_len) const {
  if (!unsupported().empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", unsupported());
  if (inputs().size() != 1)
    fail(Code::invalid_argument, "the model has ", inputs().size(), " inputs; use recur_model_run_inputs");
  if (!input) fail(Code::invalid_argument, "input: is NULL");
  if (!output) fail(Code::invalid_argument, "output: is NULL");
  if (B <= 0 || T <= 0) fail(Code::invalid_argument, "batch/timesteps: expected positive values, got ", B, " and ", T);
  if (mask && !inputs()[0].sequence) fail(Code::invalid_argument, "mask: the model's input has no timesteps axis");
  if (mask && mask_len != static_cast<std::size_t>(B * T))
    fail(Code::shape, "mask: expected (B, T) = ", B * T, " values, got ", mask_len);
  run_inputs(B, {T}, input, input_len, mask, mask_len, output, output_len);
}

bool Model::stateful() const {
  for (Layer* l : impl_->layers())
    if (l->config().stateful) return true;
  return !impl_->state_ops().empty();
}

const std::vector<std::string>& Model::stateful_layers() const { return impl_->stateful_names; }

std::vector<std::string> stateful_names_of(const Graph& g) {
  std::vector<std::string> out;
  for (const graph::LayerEntry& le : g.layers) {
    if (!le.op || !le.op->stateful()) continue;
    std::vector<Layer*> ls;
    le.op->collect_layers(ls);
    if (le.class_name == "Bidirectional" && ls.size() == 2) {
      out.push_back(le.name + "/forward");
      out.push_back(le.name + "/backward");
    } else if (ls.size() == 1) {
      out.push_back(le.name);
    } else if (le.class_name == "RNN") {
      for (std::size_t k = 0; k < ls.size(); ++k) out.push_back(le.name + "/cell_" + std::to_string(k));
    }
  }
  return out;
}

const Layer& Model::stateful_layer(const std::string& name) const { return *impl_->find_layer(name, "layer"); }

void Model::reset_states() {
  std::lock_guard<std::mutex> lock(impl_->shared->stateful_mutex);
  for (Layer* l : impl_->layers())
    if (l->config().stateful) l->reset_states();
  for (graph::Op* op : impl_->state_ops()) op->reset_states();
}

std::size_t Model::states_length(const std::string& layer) const {
  const Layer* l = impl_->find_layer(layer, "layer");
  if (!l->config().stateful) fail(Code::invalid_argument, "layer: '", layer, "' is not stateful");
  return static_cast<std::size_t>(l->num_states()) * static_cast<std::size_t>(l->config().batch_size) *
         static_cast<std::size_t>(l->config().units);
}

void Model::get_states(const std::string& layer, float* out, std::size_t len) const {
  const std::size_t want = states_length(layer);
  if (!out) fail(Code::invalid_argument, "out: is NULL");
  if (len != want) fail(Code::shape, "len: layer '", layer, "' holds ", want, " state values, got ", len);
  std::lock_guard<std::mutex> lock(impl_->shared->stateful_mutex);
  impl_->find_layer(layer, "layer")->get_states(out, len);
}

void Model::set_states(const std::string& layer, const float* states, std::size_t len) {
  const std::size_t want = states_length(layer);
  if (!states) fail(Code::invalid_argument, "states: is NULL");
  if (len != want) fail(Code::shape, "len: layer '", layer, "' holds ", want, " state values, got ", len);
  std::lock_guard<std::mutex> lock(impl_->shared->stateful_mutex);
  Layer* l = impl_->find_layer(layer, "layer");
  l->reset_states(states, len, l->num_states());
}

void Model::set_keras_backend(const std::string& backend) {
  if (backend != "tensorflow" && backend != "jax")
    fail(Code::invalid_argument, "backend: expected \"tensorflow\" or \"jax\", got \"", backend, "\"");
  if (backend == "jax" && impl_->dialect.dialect == Dialect::keras2)
    fail(Code::unsupported, "backend: \"jax\" is a Keras 3 backend; this model is from Keras ", impl_->keras_version);
  for (Layer* l : impl_->layers()) l->set_keras_backend(backend);
}

const std::string& Model::not_streamable() const { return impl_->graph().not_streamable; }

std::unique_ptr<Layer> Model::recurrent_layer(const std::string& name) const {
  const Layer* src = impl_->find_layer(name, "name");
  auto copy = std::make_unique<Layer>(src->config());
  copy->set_num_threads(impl_->num_threads);
  copy->set_precision(impl_->precision);
  std::vector<float> w;
  for (std::size_t i = 0; i < src->num_weights(); ++i) {
    const std::size_t n = src->weight_length(i);
    w.resize(n);
    src->get_weight(i, w.data(), n);
    copy->set_weight(i, w.data(), n, nullptr, 0);
  }
  return copy;
}

void Model::set_device(const DeviceRequest& request) {
  Impl& m = *impl_;
  const std::vector<Layer*> layers = m.layers();
  Placement p;
  p.requested = request.to_string();
  int ordinal = -1;
  if (request.kind == DeviceRequest::Kind::cuda) {
    check_device(request);
    ordinal = request.ordinal;
  } else if (request.kind == DeviceRequest::Kind::automatic) {
    if (gpu_device_count() > 0) ordinal = 0;
    else p.reason = "auto: " + gpu::plugin().why + "; the model runs on the CPU";
  } else {
    p.reason = "the CPU backend was asked for";
  }
  const DeviceRequest before = m.placement.ordinal >= 0 ? DeviceRequest{DeviceRequest::Kind::cuda, m.placement.ordinal} : DeviceRequest{};
  try {
    for (Layer* l : layers) {
      l->set_device(request);
      if (ordinal >= 0 && l->placement().ordinal != ordinal)
        fail(Code::unsupported, "layer '", l->config().name, "': ", l->placement().reason);
    }
  } catch (const Error& e) {
    // Leave every layer where the model was, so a failed move changes nothing.
    for (Layer* l : layers) l->set_device(before);
    if (request.kind != DeviceRequest::Kind::automatic) throw;
    ordinal = -1;
    p.reason = std::string("auto: the GPU could not take the model (") + e.what() + "), so it runs on the CPU";
    for (Layer* l : layers) l->set_device(DeviceRequest{});
  }
  if (ordinal >= 0) {
    p.backend = "cuda:" + std::to_string(ordinal);
    p.ordinal = ordinal;
    p.path = "kernel";
    p.reason = "the model runs on " + p.backend +
               " with its tensors in device memory (the recurrent layers report their own route; a layer without a "
               "GPU kernel runs on the CPU and says so)";
    p.device_name = gpu::device_name(ordinal);
    m.shared->set_device_pool(std::make_shared<graph::DevicePool>(ordinal));
  } else {
    p.backend = "cpu";
    p.path = "cpu";
    m.shared->set_device_pool(nullptr);
  }
  log::write(request.kind == DeviceRequest::Kind::automatic && ordinal < 0 ? log::Level::warning : log::Level::info,
             "model '", m.path, "': device ", p.requested, " -> ", p.backend, ": ", p.reason);
  m.placement = std::move(p);
}

Placement Model::placement() const { return impl_->placement; }

void Model::set_num_threads(int num_threads) {
  for (Layer* l : impl_->layers()) l->set_num_threads(num_threads);
  impl_->num_threads = num_threads;
}

int Model::num_threads() const { return impl_->num_threads; }

void Model::set_precision(Precision precision) {
  Impl& m = *impl_;
  if (precision != Precision::float32 && m.placement.on_gpu())
    fail(Code::unsupported, "precision \"", precision_name(precision), "\": the model runs on ", m.placement.backend,
         " and the GPU runs float32 only; move it to the CPU first (device \"cpu\")");
  const std::vector<Layer*> layers = m.layers();
  if (precision != Precision::float32 && layers.empty())
    fail(Code::unsupported, "precision \"", precision_name(precision),
         "\": the model has no recurrent layer (GRU, LSTM, SimpleRNN, RNN, Bidirectional of them), and the "
         "precision applies to their kernels only");
  std::size_t done = 0;
  try {
    for (; done < layers.size(); ++done) layers[done]->set_precision(precision);
  } catch (const Error&) {
    // No layer changes when one cannot take it.
    for (std::size_t i = 0; i < done; ++i) layers[i]->set_precision(m.precision);
    throw;
  }
  m.precision = precision;
}

Precision Model::precision() const { return impl_->precision; }

Placement Model::layer_placement(int index) const {
  const Impl& m = *impl_;
  if (index < 0 || static_cast<std::size_t>(index) >= m.infos.size())
    fail(Code::invalid_argument, "layer_index: expected -1 (the model) or 0..", m.infos.size() - 1, ", got ", index);
  const std::string& name = m.infos[static_cast<std::size_t>(index)].name;
  std::string cls, rule = "recur has no GPU kernel for this layer";
  bool follows = false, shapes_only = false, mask_only = false;
  for (const graph::LayerEntry& le : m.graph().layers) {
    if (le.name != name) continue;
    cls = le.class_name;
    mask_only = !le.op && cls != "InputLayer";
    if (!le.op) continue;
    std::vector<Layer*> ls;
    le.op->collect_layers(ls);
    if (!ls.empty()) return ls[0]->placement();
    rule = le.op->device_rule();
    follows = le.op->follows_inputs();
    shapes_only = le.op->reads_shapes_only();
  }
  if (!m.placement.on_gpu()) return m.placement;
  Placement p;
  p.requested = m.placement.requested;
  if (rule.empty() || cls == "InputLayer") {
    p.backend = m.placement.backend;
    p.ordinal = m.placement.ordinal;
    p.device_name = m.placement.device_name;
    p.path = "kernel";
    p.reason = cls == "InputLayer" ? "a model input: copied to " + p.backend + " once, where a layer there first reads it"
               : follows ? "runs on " + p.backend + ", or on the CPU with nothing copied when its outputs are wanted "
                           "only there (a mask, a CPU layer) and its inputs are there already"
                         : "runs on " + p.backend + " on tensors in device memory";
    return p;
  }
  if (shapes_only) {
    p.reason = rule + ": it runs on the CPU, and nothing is copied";
    return p;
  }
  if (mask_only) {
    p.reason = "it does not run: recur computes the mask it makes by Keras's rules, on the host where masks live, "
               "and nothing is copied";
    return p;
  }
  // The one place a model on a GPU copies: this layer's inputs to the host, its outputs back.
  p.reason = rule + ": it runs on the CPU, its inputs copied from " + m.placement.backend +
             " and its outputs back to it";
  return p;
}

// ---- streams ---------------------------------------------------------------------------------

namespace {

// A stream's recurrent states and causal layers' histories, kept so that a failed or cancelled
// step leaves the stream as it was. Made per step (a copy of the states): kept in the stream
// instead, it saved 0.15 us per step of a small model but doubled every stream's resident state.
class StreamSnapshot {
 public:
  // Runs a step of `states` (`run`); when it throws, the states go back to where they were.
  template <typename Run>
  static std::vector<graph::Value> guard(graph::StreamStates& states, Run&& run) {
    StreamSnapshot before(states);
    try {
      return run();
    } catch (...) {
      before.restore();
      throw;
    }
  }

 private:
  explicit StreamSnapshot(graph::StreamStates& states) : states_(states), history_(states.history) {
    for (auto& [key, list] : states.states) {
      std::vector<Kept> k;
      for (State& st : list) {
        st.sync_to_host();
        Kept one;
        for (int i = 0; i < st.num_states(); ++i) one.tensors.push_back(st.tensor(i));
        one.carried = st.carried_output();
        k.push_back(std::move(one));
      }
      kept_.emplace(key, std::move(k));
    }
  }
  void restore() {
    for (auto it = states_.states.begin(); it != states_.states.end();) {
      auto k = kept_.find(it->first);
      if (k == kept_.end()) {  // created by the failed step: the stream had not reached it
        it = states_.states.erase(it);
        continue;
      }
      for (std::size_t j = 0; j < it->second.size() && j < k->second.size(); ++j) {
        State& st = it->second[j];
        st.detach_device();  // the host copy becomes current; the next step uploads it again
        for (int i = 0; i < st.num_states(); ++i) st.tensor(i) = k->second[j].tensors[static_cast<std::size_t>(i)];
        st.carried_output() = k->second[j].carried;
      }
      ++it;
    }
    states_.history = std::move(history_);
  }

  struct Kept {
    std::vector<RowMatrix> tensors;
    RowMatrix carried;
  };
  graph::StreamStates& states_;
  std::map<std::pair<const graph::Op*, int>, std::vector<Kept>> kept_;
  std::map<std::pair<const graph::Op*, int>, graph::Value> history_;
};

}  // namespace

struct ModelStream::Impl {
  std::shared_ptr<const ModelShared> shared;
  graph::StreamStates states;
  std::map<Index, std::size_t> outputs_length;  // per step length, so a step infers no shapes
};

std::unique_ptr<ModelStream> Model::make_stream(Index batch) const {
  const ModelShared& s = *impl_->shared;
  if (!s.graph->unsupported.empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", s.graph->unsupported);
  if (!s.graph->not_streamable.empty())
    fail(Code::unsupported, impl_->path, ": the model cannot stream: ", s.graph->not_streamable);
  if (batch <= 0) fail(Code::invalid_argument, "batch: expected a positive value, got ", batch);
  check_limit(Limit::batch, static_cast<double>(batch), "batch (model state)");
  for (std::size_t i = 0; i < s.inputs.size(); ++i)
    if (s.graph->input_specs[i].dims[0] >= 0 && s.graph->input_specs[i].dims[0] != batch)
      fail(Code::invalid_argument, "batch: input '", s.inputs[i].name, "' has a fixed batch of ", s.graph->input_specs[i].dims[0],
           ", got ", batch);
  // Every recurrent layer keeps states of its own in the stream: all of them together, before any is made.
  double state_bytes = 0;
  for (const Layer* l : impl_->layers())
    state_bytes += 4.0 * (l->num_states() + 1) * static_cast<double>(batch) * static_cast<double>(l->config().units);
  check_limit(Limit::total_state_bytes, state_bytes,
              "batch (model state): the states of its " + std::to_string(impl_->layers().size()) +
                  " recurrent layer(s) at batch " + std::to_string(batch));
  auto impl = std::make_unique<ModelStream::Impl>();
  impl->shared = impl_->shared;
  impl->states.batch = batch;
  return std::unique_ptr<ModelStream>(new ModelStream(std::move(impl)));
}

ModelStream::ModelStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ModelStream::~ModelStream() = default;
Index ModelStream::batch() const { return impl_->states.batch; }
void ModelStream::reset() { impl_->states.reset(); }

std::size_t ModelStream::inputs_length(Index timesteps) const {
  if (timesteps <= 0) fail(Code::invalid_argument, "timesteps: expected at least 1, got ", timesteps);
  const ModelShared& s = *impl_->shared;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.inputs.size(); ++i)
    n += checked_total(s.input_dims(i, impl_->states.batch, timesteps, true), "inputs");
  return n;
}

std::size_t ModelStream::outputs_length(Index timesteps) const {
  if (timesteps <= 0) fail(Code::invalid_argument, "timesteps: expected at least 1, got ", timesteps);
  auto it = impl_->outputs_length.find(timesteps);
  if (it != impl_->outputs_length.end()) return it->second;
  const ModelShared& s = *impl_->shared;
  std::size_t n = 0;
  for (const auto& d : s.output_dims(impl_->states.batch, std::vector<Index>(s.inputs.size(), timesteps), true))
    n += checked_total(d, "outputs");
  if (impl_->outputs_length.size() < 64) impl_->outputs_length[timesteps] = n;
  return n;
}

std::vector<std::vector<Index>> ModelStream::output_dims(Index timesteps) const {
  if (timesteps <= 0) fail(Code::invalid_argument, "timesteps: expected at least 1, got ", timesteps);
  const ModelShared& s = *impl_->shared;
  return s.output_dims(impl_->states.batch, std::vector<Index>(s.inputs.size(), timesteps), true);
}

void ModelStream::step(Index timesteps, const float* inputs, std::size_t inputs_len, const std::uint8_t* masks,
                       std::size_t masks_len, float* outputs, std::size_t outputs_len) {
  if (timesteps <= 0) fail(Code::invalid_argument, "timesteps: expected at least 1, got ", timesteps);
  if (!outputs) fail(Code::invalid_argument, "outputs: is NULL");
  const ModelShared& s = *impl_->shared;
  const std::vector<Index> ts(s.inputs.size(), timesteps);
  std::vector<Value> in = s.make_inputs(impl_->states.batch, ts, inputs, inputs_len, masks, masks_len, true);
  graph::RunContext ctx;
  s.graph->plan_run(in);
  ctx.planned = s.graph.get();
  const std::size_t want = outputs_length(timesteps);
  if (outputs_len != want) fail(Code::shape, "outputs: expected ", want, " floats, got ", outputs_len);
  ctx.stream = &impl_->states;
  GpuRun gpu(s.device_pool(), ctx);
  // A layer can fail after earlier ones took the steps in (an Embedding id out of range after a
  // causal Conv1D): the stream goes back to where it was.
  const std::vector<Value> vals = StreamSnapshot::guard(impl_->states, [&] { return s.graph->run(in, ctx); });
  s.write_outputs(vals, outputs, outputs_len);
  gpu.done(s.path);
}

void ModelStream::named_output_shapes(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) const {
  const ModelShared& s = *impl_->shared;
  bool free_time = false;
  const std::vector<Value> in = s.named_values(inputs, impl_->states.batch, free_time, true);
  s.shape_outputs(s.named_output_indices(outputs), s.dims_for(in), outputs, false);
}

void ModelStream::step_named(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) {
  const ModelShared& s = *impl_->shared;
  bool free_time = false;
  const std::vector<Value> in = s.named_values(inputs, impl_->states.batch, free_time);
  graph::RunContext ctx;
  s.graph->plan_run(in);  // over run_bytes: refused before the output buffers are looked at
  ctx.planned = s.graph.get();
  const std::vector<std::size_t> idx = s.named_output_indices(outputs);
  s.shape_outputs(idx, s.dims_for(in), outputs, true);
  ctx.stream = &impl_->states;
  GpuRun gpu(s.device_pool(), ctx);
  const std::vector<Value> vals = StreamSnapshot::guard(impl_->states, [&] { return s.graph->run(in, ctx); });
  ModelShared::copy_outputs(idx, vals, outputs);
  gpu.done(s.path);
}

// ---- stream snapshots --------------------------------------------------------------------------

namespace {

constexpr std::uint8_t kSnapshotMagic[4] = {'R', 'C', 'S', 'T'};
constexpr std::uint32_t kSnapshotVersion = 1;
constexpr std::size_t kMaxSnapshotName = 4096;

std::string dims_text(const std::vector<Index>& d) {
  std::string s = "(batch";
  for (Index v : d) s += ", " + (v < 0 ? std::string("steps") : std::to_string(v));
  return s + ")";
}

std::string entry_text(const StreamLayout::Entry& e) {
  std::string s = "layer '" + io::printable(e.name) + "' (" + io::printable(e.cls) + ") at call site " + std::to_string(e.site) + ": ";
  if (e.kind == 0) {
    s += "recurrent states";
    for (const auto& [n, u] : e.states) s += " (" + std::to_string(n) + " of " + std::to_string(u) + " units)";
  } else {
    s += "past inputs " + dims_text(e.dims);
  }
  return s;
}

bool same_entry(const StreamLayout::Entry& a, const StreamLayout::Entry& b) {
  return a.name == b.name && a.cls == b.cls && a.site == b.site && a.kind == b.kind && a.states == b.states && a.dims == b.dims;
}

// Steps a stream of the model twice, one step of ones each, to see what it keeps.
std::shared_ptr<const StreamLayout> stream_layout(const ModelShared& s) {
  std::lock_guard<std::mutex> lock(s.layout_mutex);
  if (s.stream_layout) return s.stream_layout;
  Index batch = 1;
  for (const Spec& spec : s.graph->input_specs)
    if (spec.dims[0] > 0) batch = spec.dims[0];
  auto layout = std::make_shared<StreamLayout>();
  graph::StreamStates& st = layout->scopes;
  st.batch = batch;
  std::map<std::pair<const graph::Op*, int>, std::vector<Index>> first_dims;
  try {
    for (int pass = 0; pass < 2; ++pass) {
      std::size_t n = 0;
      for (std::size_t i = 0; i < s.inputs.size(); ++i) n += checked_total(s.input_dims(i, batch, 1, true), "inputs");
      // Ones, not zeros: a Masking layer or mask_zero Embedding would mask every step of zeros.
      const std::vector<float> ones(n, 1.0f);
      std::vector<Value> in = s.make_inputs(batch, std::vector<Index>(s.inputs.size(), 1), ones.data(), ones.size(), nullptr, 0, true);
      graph::RunContext ctx;
      ctx.stream = &st;
      s.graph->run(in, ctx);
      if (pass == 0)
        for (const auto& [key, v] : st.history) first_dims[key] = v.shape;
    }
  } catch (const Error& e) {
    fail(e.code(), "model state snapshot: cannot learn what a stream of this model keeps (a step of ones failed: ", e.what(), ")");
  }
  auto entry = [](const std::pair<const graph::Op*, int>& key, int kind) {
    StreamLayout::Entry e;
    e.key = key;
    e.name = key.first->name;
    e.cls = key.first->class_name;
    e.site = key.second;
    e.kind = kind;
    return e;
  };
  for (const auto& [key, list] : st.states) {
    StreamLayout::Entry e = entry(key, 0);
    for (const State& one : list) e.states.emplace_back(one.num_states(), one.units());
    layout->entries.push_back(std::move(e));
  }
  for (const auto& [key, v] : st.history) {
    StreamLayout::Entry e = entry(key, 1);
    const auto f = first_dims.find(key);
    for (std::size_t a = 1; a < v.shape.size(); ++a)
      e.dims.push_back(f != first_dims.end() && a < f->second.size() && f->second[a] == v.shape[a] ? v.shape[a] : -1);
    layout->entries.push_back(std::move(e));
  }
  std::sort(layout->entries.begin(), layout->entries.end(), [](const StreamLayout::Entry& a, const StreamLayout::Entry& b) {
    return std::make_pair(a.site, a.kind) < std::make_pair(b.site, b.kind);
  });
  st.states.clear();
  st.history.clear();
  s.stream_layout = layout;
  return layout;
}

void write_layout_entry(snapshot::Writer& w, const StreamLayout::Entry& e) {
  w.str(e.name);
  w.str(e.cls);
  w.u32(static_cast<std::uint32_t>(e.site));
  w.u8(e.kind);
  if (e.kind == 0) {
    w.u32(static_cast<std::uint32_t>(e.states.size()));
    for (const auto& [n, u] : e.states) {
      w.u32(static_cast<std::uint32_t>(n));
      w.u32(static_cast<std::uint32_t>(u));
    }
  } else {
    w.u32(static_cast<std::uint32_t>(e.dims.size()));
    for (Index d : e.dims) w.i64(d);
  }
}

StreamLayout::Entry read_layout_entry(snapshot::Reader& r) {
  StreamLayout::Entry e;
  e.name = r.str("a layer name", kMaxSnapshotName);
  e.cls = r.str("a layer class", kMaxSnapshotName);
  const std::uint32_t site = r.u32("a call site");
  if (site > INT32_MAX) fail(Code::invalid_argument, "model state snapshot: call site ", site, " is over 2^31 - 1: the data is corrupt");
  e.site = static_cast<int>(site);
  e.kind = r.u8("an entry kind");
  if (e.kind > 1) fail(Code::invalid_argument, "model state snapshot: entry kind ", int(e.kind), " is unknown (0 or 1 expected): the data is corrupt");
  const std::uint32_t n = r.u32("an entry's count");
  // Each counted item takes at least 8 bytes: a larger count than the bytes left is corrupt.
  if (n > r.left() / 8) r.truncated("an entry's items");
  if (e.kind == 0) {
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t ns = r.u32("a state count"), u = r.u32("a state's units");
      // One encoding per layout: a count past INT32_MAX is corrupt, never read modulo 2^31.
      if (ns > INT32_MAX || u > INT32_MAX)
        fail(Code::invalid_argument, "model state snapshot: layer '", io::printable(e.name), "' has a state count or units over 2^31 - 1: the data is corrupt");
      e.states.emplace_back(static_cast<int>(ns), static_cast<int>(u));
    }
  } else {
    if (n > graph::RECUR_MAX_RANK_CORE) fail(Code::invalid_argument, "model state snapshot: past inputs of rank ", n, " (at most ", graph::RECUR_MAX_RANK_CORE, "): the data is corrupt");
    for (std::uint32_t i = 0; i < n; ++i) e.dims.push_back(r.i64("a dim"));
  }
  return e;
}

}  // namespace

std::vector<std::uint8_t> ModelStream::save() const {
  const ModelShared& s = *impl_->shared;
  const std::shared_ptr<const StreamLayout> layout = stream_layout(s);
  graph::StreamStates& st = impl_->states;
  const Index B = st.batch;
  snapshot::Writer w;
  w.bytes.insert(w.bytes.end(), kSnapshotMagic, kSnapshotMagic + 4);
  w.u32(kSnapshotVersion);
  w.i64(B);
  w.u32(static_cast<std::uint32_t>(layout->entries.size()));
  for (const StreamLayout::Entry& e : layout->entries) write_layout_entry(w, e);
  // The entries the stream holds (none before its first step), each as the layout says.
  std::vector<std::uint32_t> held;
  for (std::size_t i = 0; i < layout->entries.size(); ++i) {
    const StreamLayout::Entry& e = layout->entries[i];
    if (e.kind == 0 ? st.states.count(e.key) != 0 : st.history.count(e.key) != 0) held.push_back(static_cast<std::uint32_t>(i));
  }
  if (held.size() != (st.states.size() + st.history.size()))
    fail(Code::state, "model state snapshot: the stream holds states this model's layout does not list (a bug in recur)");
  w.u32(static_cast<std::uint32_t>(held.size()));
  for (std::uint32_t i : held) {
    const StreamLayout::Entry& e = layout->entries[i];
    w.u32(i);
    if (e.kind == 0) {
      std::vector<State>& list = st.states.at(e.key);
      for (State& one : list) {
        one.sync_to_host();
        for (int k = 0; k < one.num_states(); ++k) w.floats(one.tensor(k).data(), static_cast<std::size_t>(one.tensor(k).size()));
        // The last output (what a masked step repeats): always written, zeros when the State has
        // none yet (a State starts with zeros), so that each stream has one encoding.
        const RowMatrix& c = one.carried_output();
        w.u8(1);
        if (c.rows() == one.batch() && c.cols() == one.units()) {
          w.floats(c.data(), static_cast<std::size_t>(c.size()));
        } else {
          const std::vector<float> zeros(static_cast<std::size_t>(one.batch()) * static_cast<std::size_t>(one.units()), 0.0f);
          w.floats(zeros.data(), zeros.size());
        }
      }
    } else {
      Value& v = st.history.at(e.key);
      graph::download_to_host(v);
      if (v.ids || v.strings)
        fail(Code::unsupported, "model state snapshot: layer '", io::printable(e.name), "' (", io::printable(e.cls), ") keeps integer ids or strings, which snapshots do not hold");
      w.u32(static_cast<std::uint32_t>(v.shape.size()));
      for (Index d : v.shape) w.i64(d);
      w.floats(v.data.data(), v.data.size());
      w.u8(v.mask ? 1 : 0);
      if (v.mask) w.bytes.insert(w.bytes.end(), v.mask->begin(), v.mask->end());
    }
  }
  w.u32(snapshot::crc32(w.bytes.data(), w.bytes.size()));
  return std::move(w.bytes);
}

void ModelStream::load(const void* data, std::size_t len) {
  if (!data && len) fail(Code::invalid_argument, "data: is NULL");
  const ModelShared& s = *impl_->shared;
  const auto* p = static_cast<const std::uint8_t*>(data);
  if (len < 4 + 4 + 8 + 4 + 4 + 4)
    fail(Code::invalid_argument, "model state snapshot: ", len, " bytes is too short to be one (at least 28 expected); pass every byte recur_model_state_save wrote");
  if (std::memcmp(p, kSnapshotMagic, 4) != 0)
    fail(Code::invalid_argument, "model state snapshot: the data does not start with \"RCST\": not bytes written by recur_model_state_save");
  snapshot::Reader r(p, len - 4);
  r.u32("magic");
  const std::uint32_t version = r.u32("the format version");
  if (version != kSnapshotVersion)
    fail(Code::invalid_argument, "model state snapshot: format version ", version, " is not one this recur reads (", kSnapshotVersion,
         "); save it again with this recur, or load it with the recur that wrote it");
  snapshot::Reader tail(p + len - 4, 4);
  const std::uint32_t crc = tail.u32("the checksum");
  if (crc != snapshot::crc32(p, len - 4))
    fail(Code::invalid_argument, "model state snapshot: the checksum does not match: the data is corrupt or cut short");
  const std::int64_t batch = r.i64("the batch");
  graph::StreamStates& st = impl_->states;
  if (batch != st.batch)
    fail(Code::invalid_argument, "model state snapshot: saved from a state of batch ", batch, ", this state has batch ", st.batch,
         "; load it into a state created with batch ", batch);
  const std::shared_ptr<const StreamLayout> layout = stream_layout(s);
  const std::uint32_t n = r.u32("the entry count");
  if (n > r.left() / 14) r.truncated("the entries");
  std::vector<StreamLayout::Entry> saved;
  for (std::uint32_t i = 0; i < n; ++i) saved.push_back(read_layout_entry(r));
  const std::string again = "; snapshots load only into streams of the model (and model version) that saved them: reset the stream instead";
  for (std::size_t i = 0; i < std::max(saved.size(), layout->entries.size()); ++i) {
    if (i >= saved.size())
      fail(Code::state, "model state snapshot: saved by another model: this model keeps ", entry_text(layout->entries[i]), ", the snapshot does not", again);
    if (i >= layout->entries.size())
      fail(Code::state, "model state snapshot: saved by another model: the snapshot holds ", entry_text(saved[i]), ", this model does not", again);
    if (!same_entry(saved[i], layout->entries[i]))
      fail(Code::state, "model state snapshot: saved by another model: the snapshot holds ", entry_text(saved[i]), ", this model keeps ",
           entry_text(layout->entries[i]), again);
  }
  // Everything goes into a new StreamStates first: the stream changes only when all of it reads.
  graph::StreamStates next;
  next.batch = st.batch;
  const std::uint32_t held = r.u32("the held entry count");
  if (held > layout->entries.size())
    fail(Code::invalid_argument, "model state snapshot: ", held, " held entries, the layout lists ", layout->entries.size(), ": the data is corrupt");
  const Index B = st.batch;
  std::uint32_t last = 0;
  for (std::uint32_t h = 0; h < held; ++h) {
    const std::uint32_t i = r.u32("an entry index");
    if (i >= layout->entries.size() || (h > 0 && i <= last))
      fail(Code::invalid_argument, "model state snapshot: entry index ", i, " is out of order or range: the data is corrupt");
    last = i;
    const StreamLayout::Entry& e = layout->entries[i];
    if (e.kind == 0) {
      std::vector<State>& list = next.states[e.key];
      for (const auto& [ns, u] : e.states) {
        if (static_cast<double>(ns) * B * u * 4 > static_cast<double>(r.left())) r.truncated("a recurrent state");
        State one(ns, B, u);
        for (int k = 0; k < ns; ++k) r.floats(one.tensor(k).data(), static_cast<std::uint64_t>(B) * static_cast<std::uint64_t>(u), "a recurrent state");
        const std::uint8_t carried = r.u8("a carried-output flag");
        if (carried != 1)
          fail(Code::invalid_argument, "model state snapshot: carried-output flag ", int(carried), " (format 1 always has 1): the data is corrupt");
        if (static_cast<double>(B) * u * 4 > static_cast<double>(r.left())) r.truncated("a carried output");
        one.carried_output().resize(B, u);
        r.floats(one.carried_output().data(), static_cast<std::uint64_t>(B) * static_cast<std::uint64_t>(u), "a carried output");
        list.push_back(std::move(one));
      }
    } else {
      const std::uint32_t rank = r.u32("a rank");
      if (rank != e.dims.size() + 1)
        fail(Code::invalid_argument, "model state snapshot: layer '", io::printable(e.name), "' past inputs of rank ", rank, ", expected ", e.dims.size() + 1, ": the data is corrupt");
      std::vector<Index> shape;
      double total = 1;
      for (std::uint32_t a = 0; a < rank; ++a) {
        const Index d = r.i64("a dim");
        const Index want = a == 0 ? B : e.dims[a - 1];
        if (d < 0 || (want >= 0 && d != want))
          fail(Code::invalid_argument, "model state snapshot: layer '", io::printable(e.name), "' (", io::printable(e.cls), ") past inputs dim ", a, " is ", d,
               ", expected ", want < 0 ? std::string("a size >= 0") : std::to_string(want), ": the data is corrupt");
        shape.push_back(d);
        total *= static_cast<double>(d);
      }
      if (total * 4 > static_cast<double>(r.left())) r.truncated("past inputs");
      check_limit(Limit::tensor_bytes, total * 4, "model state snapshot: past inputs of layer '" + io::printable(e.name) + "'");
      Value v;
      v.shape = shape;
      r.floats(v.data, static_cast<std::uint64_t>(total), "past inputs");
      const std::uint8_t masked = r.u8("a mask flag");
      if (masked > 1) fail(Code::invalid_argument, "model state snapshot: mask flag ", int(masked), ": the data is corrupt");
      if (masked) {
        auto m = std::make_shared<std::vector<std::uint8_t>>();
        r.bytes(*m, static_cast<std::uint64_t>(shape[0]) * static_cast<std::uint64_t>(shape.size() > 1 ? shape[1] : 1), "a mask");
        v.mask = std::move(m);
      }
      next.history[e.key] = std::move(v);
    }
  }
  if (r.left() != 0)
    fail(Code::invalid_argument, "model state snapshot: ", r.left(), " bytes follow the last entry: the data is corrupt");
  st.states = std::move(next.states);
  st.history = std::move(next.history);
  st.copy_scopes(layout->scopes);
}

// ---- many streams in one call ----------------------------------------------------------------

namespace {

using graph::StreamStates;

// The rows of one batch of streams on the CPU. Measured on Zen 4 (1 MB L2) with GRU(64) and
// LSTM(64): 4096 streams in one batch 3.28 us per stream-step, in batches of 128 to 1024 rows
// 2.45-2.84 us; 256 streams the same either way (1.33 us).
constexpr Index kCpuRowsPerBatch = 256;

}  // namespace

namespace {

// The model all streams step, checked: each stream once, all from one model. Returns the sum of
// their batches in `total`.
template <typename Stream>
const std::shared_ptr<const ModelShared>* shared_of(const std::vector<Stream*>& streams, Index& total,
                                                    const std::shared_ptr<const ModelShared>& (*get)(Stream*),
                                                    Index (*batch)(Stream*)) {
  if (streams.empty()) fail(Code::invalid_argument, "num_states: expected at least 1 state, got 0");
  const std::shared_ptr<const ModelShared>* first = nullptr;
  double sum = 0;
  // Repeats found by sorting (no allocation per state, as a map would make).
  std::vector<std::pair<const void*, std::size_t>> seen(streams.size());
  for (std::size_t i = 0; i < streams.size(); ++i) seen[i] = {streams[i], i};
  std::sort(seen.begin(), seen.end());
  for (std::size_t k = 1; k < seen.size(); ++k)
    if (seen[k].first && seen[k].first == seen[k - 1].first)
      fail(Code::invalid_argument, "states[", seen[k - 1].second, "] and states[", seen[k].second,
           "] are the same state (each stream may appear once per call)");
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (!streams[i]) fail(Code::invalid_argument, "states[", i, "] is NULL");
    const auto& sh = get(streams[i]);
    if (!first) first = &sh;
    else if (sh.get() != first->get())
      fail(Code::invalid_argument, "states[", i, "] was created from another model than states[0] (one call steps the "
           "states of one model; step each model's states in a call of their own)");
    sum += static_cast<double>(batch(streams[i]));
  }
  check_limit(Limit::batch, sum, "states: the sum of the states' batches");
  total = static_cast<Index>(sum);
  return first;
}

// A step's inputs must hold the rows of every stream: say so before the model checks the rest.
void check_batch_rows(const std::vector<NamedInput>& inputs, Index total, std::size_t num_streams) {
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (!inputs[k].dims.empty() && inputs[k].dims[0] != total)
      fail(Code::shape, "inputs[", k, "] ('", inputs[k].name, "').dims: batch ", inputs[k].dims[0], ", expected ", total,
           " (the rows of the ", num_streams, " states, one after another in the order of states)");
}

}  // namespace

void ModelStream::named_output_shapes_many(const std::vector<const ModelStream*>& streams,
                                           const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) {
  Index total = 0;
  const auto& shared = *shared_of<const ModelStream>(
      streams, total, [](const ModelStream* m) -> const std::shared_ptr<const ModelShared>& { return m->impl_->shared; },
      [](const ModelStream* m) { return m->impl_->states.batch; });
  const ModelShared& s = *shared;
  check_batch_rows(inputs, total, streams.size());
  bool free_time = false;
  const std::vector<Value> in = s.named_values(inputs, total, free_time, true);
  s.shape_outputs(s.named_output_indices(outputs), s.dims_for(in), outputs, false);
}

void ModelStream::step_named_many(const std::vector<ModelStream*>& streams, const std::vector<NamedInput>& inputs,
                                  std::vector<NamedOutput>& outputs) {
  Index total = 0;
  const auto& shared = *shared_of<ModelStream>(
      streams, total, [](ModelStream* m) -> const std::shared_ptr<const ModelShared>& { return m->impl_->shared; },
      [](ModelStream* m) { return m->impl_->states.batch; });
  const ModelShared& s = *shared;
  check_batch_rows(inputs, total, streams.size());
  bool free_time = false;
  const std::vector<Value> in = s.named_values(inputs, total, free_time);
  const std::vector<std::size_t> idx = s.named_output_indices(outputs);
  const std::vector<std::vector<Index>> dims = s.dims_for(in);
  s.shape_outputs(idx, dims, outputs, true);

  // Groups of streams whose states line up (after their first step, all of them), in any order:
  // a call that mixes fresh streams with stepped ones makes one batch of each kind, not one per
  // run of them. A model with a fixed batch steps each stream alone. On the CPU a group stops at
  // kCpuRowsPerBatch rows, so that its layers' intermediate values stay in the core's L2.
  bool fixed = false;
  for (const Spec& sp : s.graph->input_specs) fixed = fixed || sp.dims[0] >= 0;
  struct Group {
    std::vector<StreamStates*> members;
    graph::RowRanges ranges;  // the members' rows in the call's batch (adjacent ones merged)
    Index rows = 0;
    std::unique_ptr<StreamStates> batched;
    std::vector<Value> vals;
  };
  std::vector<Group> groups;
  // The batches' states go back to the model's kept ones however the call ends.
  struct KeepCaches {
    const ModelShared& s;
    std::vector<Group>& groups;
    ~KeepCaches() {
      for (Group& g : groups) s.keep_batch_cache(std::move(g.batched));
    }
  } keep{s, groups};
  Index row = 0;
  const bool on_cpu = !s.device_pool();
  // The groups still taking streams, newest last; a stream looks for its own among the last few
  // (streams whose causal pasts all differ in length would otherwise cost a look at every group).
  constexpr std::size_t kOpenGroups = 8;
  std::vector<std::size_t> open;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    StreamStates& st = streams[i]->impl_->states;
    std::size_t gi = groups.size();
    if (!fixed)
      for (std::size_t j = open.size(); j-- > 0 && j + kOpenGroups >= open.size();)
        if (graph::same_layout(*groups[open[j]].members.front(), st)) {
          gi = open[j];
          if (on_cpu && groups[gi].rows + st.batch > kCpuRowsPerBatch) {
            open.erase(open.begin() + static_cast<std::ptrdiff_t>(j));  // full: a new batch takes its kind
            gi = groups.size();
          }
          break;
        }
    if (gi == groups.size()) {
      groups.emplace_back();
      open.push_back(gi);
    }
    Group& g = groups[gi];
    g.members.push_back(&st);
    if (!g.ranges.empty() && g.ranges.back().first + g.ranges.back().second == row) g.ranges.back().second += st.batch;
    else g.ranges.emplace_back(row, st.batch);
    g.rows += st.batch;
    row += st.batch;
  }
  for (Group& g : groups) g.batched = s.take_batch_cache(g.rows);
  // Every group runs before any stream changes: a failure leaves them all as they were. On a GPU
  // the states living there are gathered there, all groups' in one copy, and scattered alike.
  const int device = s.device_pool() ? s.device_pool()->ordinal() : -1;
  graph::BlockCopies copies;
  for (Group& g : groups) graph::gather_states(g.members, g.rows, *g.batched, device, copies);
  copies.run(device, "gathering the states of a batch of streams");
  for (Group& g : groups) {
    graph::RunContext ctx;
    ctx.stream = g.batched.get();
    GpuRun gpu(s.device_pool(), ctx);  // a model on a GPU steps the batch there
    if (groups.size() == 1) {
      g.vals = s.graph->run(in, ctx);
    } else {
      std::vector<Value> part;
      for (const Value& v : in) part.push_back(graph::rows_of(v, g.ranges, total));
      g.vals = s.graph->run(part, ctx);
    }
    gpu.done(s.path);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const Value& v = g.vals[idx[k]];
      const std::vector<Index>& d = dims[idx[k]];
      if (v.shape.size() != d.size() || v.shape[0] != g.rows || !std::equal(d.begin() + 1, d.end(), v.shape.begin() + 1))
        fail(Code::shape, "outputs[", k, "] ('", outputs[k].name, "'): states ", shape_string(v.shape),
             " of one group of states differ from the batch's ", shape_string(d), "; step these states one by one");
    }
  }
  // Each group's output rows go back where its streams' rows were.
  for (std::size_t k = 0; k < outputs.size(); ++k)
    for (const Group& g : groups) {
      const Value& v = g.vals[idx[k]];
      const std::size_t per = v.data.size() / static_cast<std::size_t>(g.rows);
      const float* from = v.data.data();
      for (const auto& [r, b] : g.ranges) {
        const std::size_t n = per * static_cast<std::size_t>(b);
        std::copy_n(from, n, outputs[k].data + per * static_cast<std::size_t>(r));
        from += n;
      }
    }
  std::vector<State*> fresh;
  for (Group& g : groups) graph::scatter_device_states(*g.batched, g.members, copies, fresh);
  try {
    copies.run(device, "handing a batch of streams their states");
  } catch (...) {
    for (State* st : fresh) st->drop_device();  // their host copies still hold the states before the call
    throw;
  }
  for (Group& g : groups) graph::scatter_states(*g.batched, g.members);
}

}  // namespace recur
