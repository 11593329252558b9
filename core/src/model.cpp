#include "recur/model.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "gpu/runtime.hpp"
#include "io/hdf5_file.hpp"
#include "io/zip_archive.hpp"
#include "model/graph.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/limits.hpp"

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

std::size_t checked_total(const std::vector<Index>& dims, const char* what) {
  double n = 1;
  for (Index d : dims) {
    if (d < 0) fail(Code::shape, what, ": the shape ", shape_string(dims), " is not known");
    n *= static_cast<double>(d);
  }
  if (n > double(std::uint64_t(1) << 40)) fail(Code::shape, what, ": the shape ", shape_string(dims), " is too large");
  return static_cast<std::size_t>(n);
}

}  // namespace

// What streams share with the model: the graph and its layers.
struct ModelShared {
  std::unique_ptr<Graph> graph;
  std::vector<ModelTensorInfo> inputs, outputs;
  std::string path;
  mutable std::mutex stateful_mutex;  // runs of a stateful model, one at a time

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

  std::vector<std::string> stateful_names;  // "<name>" or "<name>/forward|backward"
  Graph& graph() const { return *shared->graph; }
  std::vector<Layer*> layers() const {
    std::vector<Layer*> out;
    shared->graph->collect_layers(out);
    return out;
  }
  // The layer `name` ("<name>/forward" / "/backward" for a Bidirectional half).
  Layer* find_layer(const std::string& name, const char* what) const;
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
  auto build = [&](json model_config, std::uint64_t weights_bytes) {
    graph::BuildContext ctx;
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
      build(parse_json(h5.attribute_string("", "model_config"), path + ": /model_config"), file_size);
      impl->graph().load_legacy(h5, h5.is_group("model_weights") ? "model_weights" : "", path);
    } else if (std::memcmp(sig, "PK\x03\x04", 4) == 0) {
      const io::ZipArchive zip = bytes ? io::ZipArchive::open_memory(bytes, path) : io::ZipArchive::open(path_on_disk);
      const std::vector<char> meta = zip.read("metadata.json", kMaxJsonBytes);
      const json m = parse_json(std::string(meta.begin(), meta.end()), path + ": metadata.json");
      if (!m.is_object() || !m.contains("keras_version") || !m["keras_version"].is_string())
        fail(Code::io, path, ": metadata.json: no keras_version");
      set_version(m["keras_version"].get<std::string>(), "metadata.json");
      const std::vector<char> cfg = zip.read("config.json", kMaxJsonBytes);
      std::vector<char> weights = zip.read("model.weights.h5", limit(Limit::file_bytes));
      const std::uint64_t weights_bytes = weights.size();
      const io::H5File h5 = io::H5File::open_image(std::move(weights), path + ": model.weights.h5");
      build(parse_json(std::string(cfg.begin(), cfg.end()), path + ": config.json"), weights_bytes);
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
                     le.class_name == "CuDNNLSTM" || le.class_name == "SimpleRNN" || le.class_name == "Bidirectional";
    info.supported = le.why.empty();
    if (!le.nodes.empty()) {
      const graph::Node& n = g.nodes[static_cast<std::size_t>(le.nodes[0])];
      if (n.is_input && !n.out.empty()) info.input_size = static_cast<int>(std::max<Index>(n.out[0].dims.back(), 0));
      if (!n.main.empty()) {
        const graph::Node& src = g.nodes[static_cast<std::size_t>(n.main[0].node)];
        if (static_cast<std::size_t>(n.main[0].output) < src.out.size())
          info.input_size = static_cast<int>(std::max<Index>(src.out[static_cast<std::size_t>(n.main[0].output)].dims.back(), 0));
      }
      if (!n.out.empty()) info.output_size = static_cast<int>(std::max<Index>(n.out[0].dims.back(), 0));
      if (le.class_name == "Embedding") info.input_size = 1;
    }
    infos.push_back(std::move(info));
  }
  for (std::size_t i = 0; i < g.input_nodes.size(); ++i) {
    ModelTensorInfo t;
    t.name = g.input_names[i];
    t.dims = g.input_specs[i].dims;  // dims[0]: -1, or the batch a stateful model fixes
    t.token_ids = g.input_specs[i].ids;
    for (const graph::Node& n : g.nodes)
      for (const graph::Ref& r : n.main)
        if (r.node == g.input_nodes[i] && n.op && n.op->class_name == "Embedding") t.token_ids = true;
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

Layer* Model::Impl::find_layer(const std::string& name, const char* what) const {
  std::string base = name, half;
  const auto slash = name.rfind('/');
  if (slash != std::string::npos) {
    base = name.substr(0, slash);
    half = name.substr(slash + 1);
  }
  for (const graph::LayerEntry& le : graph().layers) {
    if (le.name != base) continue;
    std::vector<Layer*> ls;
    if (le.op) le.op->collect_layers(ls);
    const bool recurrent = le.class_name == "GRU" || le.class_name == "LSTM" || le.class_name == "CuDNNGRU" ||
                           le.class_name == "CuDNNLSTM" || le.class_name == "SimpleRNN" || le.class_name == "Bidirectional";
    if (ls.empty() || !recurrent) {
      if (recurrent) fail(Code::unsupported, "layer '", name, "': ", le.why);
      fail(Code::invalid_argument, what, ": layer '", name, "' is ", with_article(le.class_name), ", not a recurrent layer");
    }
    if (le.class_name == "Bidirectional") {
      if (half == "backward") return ls.at(1);
      if (half == "forward") return ls.at(0);
      fail(Code::invalid_argument, what, ": '", base, "' is a Bidirectional; ask for '", base, "/forward' or '", base, "/backward'");
    }
    if (!half.empty()) fail(Code::invalid_argument, what, ": layer '", name, "' does not exist");
    return ls.at(0);
  }
  fail(Code::invalid_argument, what, ": the model has no layer '", name, "'");
}

Model Model::open(const std::string& path) { return Model(open_image(path, nullptr, path)); }

Model Model::open_memory(const void* data, std::size_t len, const std::string& name) {
  const std::string display = name.empty() ? "<memory>" : name;
  if (len == 0) fail(Code::invalid_argument, "len: the model image is empty");
  if (!data) fail(Code::invalid_argument, "data: is NULL");
  check_limit(Limit::file_bytes, double(len), "len: the model image");
  auto bytes = std::make_shared<std::vector<char>>(static_cast<const char*>(data), static_cast<const char*>(data) + len);
  return Model(open_image(display, bytes, ""));
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
  return static_cast<int>(std::max<Index>(in[0].dims.back(), 0));
}
bool Model::takes_token_ids() const { return !inputs().empty() && inputs()[0].token_ids; }
int Model::output_size() const {
  return outputs().empty() ? 0 : static_cast<int>(std::max<Index>(outputs()[0].dims.back(), 0));
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

void Model::run_inputs(Index batch, const std::vector<Index>& timesteps, const float* inputs_data, std::size_t inputs_len,
                       const std::uint8_t* masks, std::size_t masks_len, float* outputs_data, std::size_t outputs_len) const {
  const ModelShared& s = *impl_->shared;
  if (!s.graph->unsupported.empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", s.graph->unsupported);
  if (!outputs_data) fail(Code::invalid_argument, "outputs: is NULL");
  std::vector<Value> in = s.make_inputs(batch, timesteps, inputs_data, inputs_len, masks, masks_len, false);
  const std::size_t want = outputs_length(batch, timesteps);
  if (outputs_len != want) fail(Code::shape, "outputs: expected ", want, " floats, got ", outputs_len);
  graph::RunContext ctx;
  for (std::size_t i = 0; i < in.size(); ++i)
    ctx.free_time = ctx.free_time || (s.inputs[i].sequence && s.graph->input_specs[i].dims[1] >= 0 &&
                                       in[i].shape[1] != s.graph->input_specs[i].dims[1]);
  std::unique_lock<std::mutex> lock(s.stateful_mutex, std::defer_lock);
  if (stateful()) lock.lock();
  s.write_outputs(s.graph->run(in, ctx), outputs_data, outputs_len);
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
  return false;
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
    }
  }
  return out;
}

const Layer& Model::stateful_layer(const std::string& name) const { return *impl_->find_layer(name, "layer"); }

void Model::reset_states() {
  std::lock_guard<std::mutex> lock(impl_->shared->stateful_mutex);
  for (Layer* l : impl_->layers())
    if (l->config().stateful) l->reset_states();
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
    p.reason = "the recurrent layers run on " + p.backend + " (each reports its own route); the other layers on the CPU";
    p.device_name = gpu::device_name(ordinal);
  } else {
    p.backend = "cpu";
    p.path = "cpu";
  }
  m.placement = std::move(p);
}

Placement Model::placement() const { return impl_->placement; }

void Model::set_num_threads(int num_threads) {
  for (Layer* l : impl_->layers()) l->set_num_threads(num_threads);
  impl_->num_threads = num_threads;
}

int Model::num_threads() const { return impl_->num_threads; }

Placement Model::layer_placement(int index) const {
  const Impl& m = *impl_;
  if (index < 0 || static_cast<std::size_t>(index) >= m.infos.size())
    fail(Code::invalid_argument, "layer_index: expected -1 (the model) or 0..", m.infos.size() - 1, ", got ", index);
  const std::string& name = m.infos[static_cast<std::size_t>(index)].name;
  for (const graph::LayerEntry& le : m.graph().layers) {
    if (le.name != name || !le.op) continue;
    std::vector<Layer*> ls;
    le.op->collect_layers(ls);
    if (!ls.empty()) return ls[0]->placement();
  }
  return m.placement;
}

// ---- streams ---------------------------------------------------------------------------------

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
  for (std::size_t i = 0; i < s.inputs.size(); ++i)
    if (s.graph->input_specs[i].dims[0] >= 0 && s.graph->input_specs[i].dims[0] != batch)
      fail(Code::invalid_argument, "batch: input '", s.inputs[i].name, "' has a fixed batch of ", s.graph->input_specs[i].dims[0],
           ", got ", batch);
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
  const std::size_t want = outputs_length(timesteps);
  if (outputs_len != want) fail(Code::shape, "outputs: expected ", want, " floats, got ", outputs_len);
  graph::RunContext ctx;
  ctx.stream = &impl_->states;
  s.write_outputs(s.graph->run(in, ctx), outputs, outputs_len);
}

}  // namespace recur
