// SPDX-License-Identifier: Apache-2.0
// The model runner's graph: Keras layers (ops) applied at call sites (nodes), tensors with their
// masks, shape inference at build, and the per-stream states of model streaming. Internal to the
// core; recur::Model is its public face.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/hdf5_file.hpp"
#include "recur/dialect.hpp"
#include "recur/limits.hpp"
#include "recur/layer.hpp"
#include "recur/state.hpp"

namespace recur::io {
class ZipArchive;
}

namespace recur::graph {

struct DeviceArray;
class DeviceRun;

using json = nlohmann::json;

constexpr std::size_t RECUR_MAX_RANK_CORE = 8;  // the largest tensor rank (batch included)
constexpr int kMaxGraphNodes = 100000;           // the most call sites one graph holds

// A tensor's static shape: dims[0] is the batch; -1 marks a size known only at run time.
struct Spec {
  std::vector<Index> dims;
  bool ids = false;  // integer ids (an int Input), carried as floats
  bool strings = false;  // strings (a string Input): only the text layers take them
};
std::string spec_string(const Spec& s);
// Elements of a spec (a size the run tells counts as 1), and of several.
double elements(const Spec& s);
double elements(const std::vector<Spec>& specs);

// The work a run plans (the run_work limit), in units of about one multiply-add of a large
// matrix product on one core (10 ps or so on a server core). Each op counts its own from the
// shapes: what its loops do, weighted by what each step of them costs against that unit, so that
// the budget bounds time whichever layers a model holds (docs/budgets.md has the measurements).
constexpr double kMacWork = 1;           // a multiply-add of recur's blocked matrix products (recurrent layers)
constexpr double kEigenMacWork = 4;      // one of Eigen's products (Dense, ConvLSTM)
constexpr double kVectorMacWork = 6;     // one of a plain loop the compiler vectorizes (Conv1D)
constexpr double kScalarMacWork = 40;    // one of a plain scalar loop (attention, Dot, transposed convolution, pooling)
constexpr double kIndexedMacWork = 300;  // one of EinsumDense's general loop, which steps every index
constexpr double kLoopWork = 200;        // starting an inner loop (small convolutions)
constexpr double kElementWork = 256;     // an element read or written (a copy, an activation, a norm)
constexpr double kGateWork = 300;        // a recurrent gate's element at one step (bias, activation)
constexpr double kScalarMathWork = 1200; // a scalar tanh or exp (attention scores, softmax)
constexpr double kLookupWork = 2400;     // a hash-table probe or a string (lookups, text)

// Integer ids as the caller gave them (an int32/int64 model input), so that an Embedding looks up
// rows above 2^24 exactly, where their float values in Value::data are not.
struct Ids {
  std::vector<std::int64_t> values;
  std::string input;  // the model input they came from, for messages
};

// A tensor at run time: row-major floats, batch first, with Keras's mask over the first two axes
// (batch, time), when it has one.
struct Value {
  std::vector<Index> shape;
  std::vector<float> data;
  std::shared_ptr<const std::vector<std::uint8_t>> mask;
  std::shared_ptr<const Ids> ids;  // the same values as data, exact; only from ops that pass them
  // A string model input (UTF-8, row-major over shape; data is then empty), only between the
  // input and the text layers (layers/text.cpp) that turn it into ids.
  std::shared_ptr<const std::vector<std::string>> strings;
  // The floats in GPU memory (a model run on a GPU). With `data` empty they live only there; the
  // run copies them to the host for an op that has no GPU kernel (model/device_run.hpp).
  std::shared_ptr<const DeviceArray> device;
  Index rows() const { return shape.empty() ? 0 : shape[0]; }
};

struct StoredWeight {
  std::string path;
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

class Graph;
struct StreamStates;

// A call site's arguments besides its main tensors: the non-tensor keyword arguments (Keras 3's
// "kwargs", Keras 2's dict beside each tensor: use_causal_mask, return_attention_scores...) and
// the argument each main tensor was passed as ("" positional, else its keyword: "value", "key").
struct CallArgs {
  json kwargs = json::object();
  std::vector<std::string> roles;
};

// What a run needs besides the inputs: the stream being stepped (null for a whole-sequence run).
struct RunContext {
  StreamStates* stream = nullptr;
  bool stepped = false;  // the current call site's main input carries the stream's time axis
  // A sequence input has another length than the model declares (Keras warns and runs it): the
  // timesteps axis of every tensor may differ from its declared size.
  bool free_time = false;
  const CallArgs* call = nullptr;  // the call site's arguments (null: none besides its tensors)
  // Added to the node ids of the graph being run to give the call sites of StreamStates' keys: a
  // nested model's graph runs with a base of its own at each of its call sites (StreamStates::scope).
  int site_base = 0;
  // The graph whose run_bytes plan the caller already checked for these inputs (before it checked
  // the output buffers): its run skips planning again.
  const void* planned = nullptr;
  // The GPU the run keeps its tensors on (null: host memory). Ops with forward_device run there.
  DeviceRun* device = nullptr;
  // Leave the outputs where they are made (a nested model's run inside a device run).
  bool device_outputs = false;
};

// What build() knows about the model being read.
struct BuildContext {
  std::string file;  // for messages
  // The parsed model config. Layer entries and ops point into it instead of copying their part
  // (copies were a fifth of opening a model); whatever holds such a pointer holds this too.
  std::shared_ptr<const json> document;
  DialectInfo dialect;
  std::string keras_version;
  int batch_size = 0;  // the batch of the Input feeding the call site, when fixed (stateful layers)
  bool legacy_h5 = false;  // the config is a legacy .h5 file's (Keras 3 reads some arguments of it differently)
  // Weights created so far across the whole model (nested models included), checked against the
  // most recur loads after every layer, before the next allocates.
  std::shared_ptr<std::uint64_t> weight_floats = std::make_shared<std::uint64_t>(0);
  std::uint64_t max_weight_floats = limit(Limit::weight_bytes) / 4;
  // The most weights the file's weights can hold (its bytes over the narrowest float), so that a
  // small file cannot make the layers allocate up to the weight limit before loading fails.
  std::uint64_t file_weight_floats = UINT64_MAX;
  // Called before a layer allocates `floats` weights: Error(io) past what the file holds,
  // Error(limit) past the weight_bytes limit, counting the layers built before it.
  void reserve_weights(double floats, const std::string& what) const;
  // Bytes of the states the model's stateful layers hold so far (nested models included), checked
  // against the total_state_bytes limit before the next stateful layer allocates its own.
  std::shared_ptr<double> state_bytes = std::make_shared<double>(0);
  void reserve_states(double bytes, const std::string& what) const;
  const CallArgs* call = nullptr;  // the call site being built (null: none besides its tensors)
  // A .keras file's member (e.g. a layer's asset) into `out`, at most `max_bytes`: false when the
  // file has no such member. Empty for .h5 files; valid only while the model is being opened.
  std::function<bool(const std::string& member, std::uint64_t max_bytes, std::vector<char>& out)> read_member;
};

// One call site's view of its inputs: the main tensors and, for recurrent layers, the initial
// states given as tensors.
struct CallInputs {
  std::vector<const Value*> main;
  std::vector<const Value*> initial_state;
  bool drop_mask = false;  // the call runs without the inputs' mask (Keras 3, see Node::drop_mask)
};

// A Keras layer (or a Keras 3 op node). One op may be called at several call sites (shared
// layers); it is built, with its weights, at the first.
class Op {
 public:
  virtual ~Op() = default;
  // Output specs for these input specs. The first call creates the weights; later calls (shared
  // layers) must fit them. Throws Error naming what does not fit.
  virtual std::vector<Spec> build(const std::vector<Spec>& main, const std::vector<Spec>& initial_state,
                                  const BuildContext& ctx) = 0;
  virtual std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const = 0;

  // Weights in Keras's order (legacy .h5: the layer's weight_names). `take` consumes from the
  // front of `w`. Default: none.
  virtual std::size_t num_weights() const { return 0; }
  virtual void load(std::vector<StoredWeight>& w, bool legacy, const std::string& where);
  // .keras: reads the variables under `object` (e.g. "layers/dense_1") from model.weights.h5.
  virtual void load_keras(const io::H5File& h5, const std::string& object, const std::string& file);
  virtual std::uint64_t weight_floats() const { return 0; }

  // The work of one call on main inputs of these specs making these outputs (see kElementWork),
  // planned before a run starts. Default: each element of the inputs and outputs once; ops whose
  // work grows faster (products, recurrences, windows, nested models) count their own.
  virtual double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const {
    return kElementWork * (elements(main) + elements(out));
  }

  // Streaming: "" when a call site with these stepped inputs (inputs carrying the stream's time
  // axis) can run on pieces of the sequence; else why not. `stepped_out` says which outputs carry
  // the stream's time axis.
  virtual std::string stream_rule(const std::vector<bool>& stepped_in, bool has_initial_state,
                                  std::vector<bool>& stepped_out) const;
  // The same for one call site, whose arguments (`call`, may be null) can change the rule (a
  // causal attention call). Default: stream_rule.
  virtual std::string stream_rule_at(const std::vector<bool>& stepped_in, bool has_initial_state,
                                     std::vector<bool>& stepped_out, const CallArgs* call) const {
    (void)call;
    return stream_rule(stepped_in, has_initial_state, stepped_out);
  }

  // A model on a GPU: "" when forward_device runs this op's calls there, else why not (named by
  // recur_model_get_device: that layer's inputs cross to the host and its outputs back).
  virtual std::string device_rule() const;
  // The call on the run's GPU (ctx.device): the main inputs and initial states are on the device
  // (on the host instead for an op whose device_reads_host() is true), the outputs are made there.
  // False when this call cannot run there after all: the run then copies its inputs to the host and
  // calls forward, and records why.
  virtual bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const;
  // Reads its main input on the host (an Embedding's ids) even on a GPU.
  virtual bool device_reads_host() const { return false; }
  // With device_rule() empty, on a GPU: runs on the host when every reader of its outputs takes
  // them there (as a mask, on the CPU, or as another such op that runs there) and none of its
  // inputs lives only on the device (Keras 3's op nodes, which mostly compute masks from a model's
  // inputs, whose floats the host has); else on the GPU.
  virtual bool follows_inputs() const { return false; }
  // Reads only its inputs' shapes (ZerosLike): on a GPU its inputs are not copied to the host, and
  // forward must not read their floats.
  virtual bool reads_shapes_only() const { return false; }

  // Recurrent layers (and models holding them).
  virtual void collect_layers(std::vector<Layer*>&) {}
  virtual bool stateful() const { return false; }
  // Ops that keep states across calls themselves (a stateful ConvLSTM; recurrent layers keep
  // theirs in their recur::Layer): they add themselves (a nested model, its ops), are reset to
  // zeros, and give a copy to put back after a failed run.
  virtual void collect_state_ops(std::vector<Op*>&) {}
  virtual void reset_states() {}
  virtual std::vector<float> saved_states() const { return {}; }
  virtual void restore_states(const std::vector<float>&) {}
  // Returns its input unchanged (Dropout at inference...), so integer ids stay exact through it.
  virtual bool passes_ids() const { return false; }
  // Makes integer ids of its own (Discretization, IntegerLookup), in Value::ids.
  virtual bool makes_ids() const { return false; }
  // Reads string tensors (the text layers); every other op given one is refused at build.
  virtual bool takes_strings() const { return false; }

  std::string name, class_name;
  bool per_step = false;
  std::string graph_issue;  // usable alone (a recurrent layer), but not inside this graph  // acts on each timestep alone (Dense, masks, merges...)
};

struct Ref {
  int node = -1;
  int output = 0;
};

// A call site: an op applied to tensors made by earlier nodes.
struct Node {
  std::shared_ptr<Op> op;
  int layer = -1;  // index into Graph::layers
  std::vector<Ref> main, initial_state;
  std::vector<Spec> out;
  bool is_input = false;
  int input_index = -1;
  bool stepped_main = false;  // streaming: its main input carries the stream's time axis
  bool drop_mask = false;     // Keras 3 passes no mask to this call (several tensor arguments)
  Ref mask;                   // Keras 3: the mask the call names (node -1: none)
  std::shared_ptr<const CallArgs> call;  // null when the call passes nothing but its tensors
};

// A Keras layer entry of the model config.
struct LayerEntry {
  std::string name, class_name;
  const json* entry = nullptr;  // in BuildContext::document
  std::shared_ptr<Op> op;
  std::vector<int> nodes;     // its call sites in this graph
  std::string object_path;    // .keras object path
  bool is_op = false;         // a Keras 3 op node (not a layer: no weights, no object path)
  std::string why;            // why it cannot run ("" when it can)
};

class Graph {
 public:
  // Builds a model config ({"class_name": "Functional"/"Sequential"/"Model", "config": {...}}).
  // `input_specs` overrides the InputLayers' shapes (a nested model takes its caller's tensors).
  static std::unique_ptr<Graph> build(const json& model_config, const BuildContext& ctx, const std::string& object_path,
                                      const std::vector<Spec>* input_specs);

  std::vector<Value> run(const std::vector<Value>& inputs, RunContext& ctx) const;
  // The output specs for concrete input specs (shared-layer build rules; nothing is created).
  std::vector<Spec> infer(const std::vector<Spec>& inputs) const;
  // The most bytes of tensors live at once in a run on inputs of these specs: each node's outputs
  // from the node that makes them to their last reader, the inputs and outputs included.
  struct Plan {
    bool known = false;     // false: shapes only the run tells
    double peak = 0;        // bytes
    std::string peak_at;    // the layer where the peak falls
    double work = 0;        // the work of every layer together (Op::work)
    double top_work = 0;    // the most of it one layer does, and which
    std::string top_work_at;
    // Each tensor larger than every one before it, in the order the run makes them: the first of
    // these over tensor_bytes is the first tensor of the run over it.
    std::vector<std::pair<double, std::string>> records;
    std::vector<Spec> outputs;  // the model outputs' specs
  };
  Plan plan(const std::vector<Spec>& inputs) const;
  // Error(limit) when a run on these inputs would hold a tensor over tensor_bytes or tensors over
  // run_bytes together, before it allocates. Plans are kept by input shapes (a few dozen).
  void plan_run(const std::vector<Value>& inputs) const;
  // The plan for these input values' shapes, made once and kept (a few dozen shapes).
  std::shared_ptr<const Plan> plan_for(const std::vector<Value>& inputs) const;
  // infer() for input values, from the kept plan when there is one (every stream step asks).
  std::vector<Spec> infer_for(const std::vector<Value>& inputs) const;
  // The input specs with these values' shapes.
  std::vector<Spec> specs_of(const std::vector<Value>& inputs) const;
  struct PlanCache {
    std::mutex mutex;
    std::map<std::vector<std::vector<Index>>, std::shared_ptr<const Plan>> plans;
  };
  std::shared_ptr<PlanCache> plan_cache = std::make_shared<PlanCache>();
  BuildContext context;

  std::vector<LayerEntry> layers;
  std::vector<Node> nodes;
  std::vector<int> order;            // nodes in the order they run
  std::vector<char> required;        // nodes the outputs are computed from (not only masks)
  std::vector<int> input_nodes;      // model inputs
  std::vector<Ref> outputs;          // model outputs
  std::vector<std::string> input_names, output_names;
  std::vector<Spec> input_specs, output_specs;
  std::string unsupported;           // why the graph cannot run ("" when it can)
  std::string not_streamable;        // why it cannot stream ("" when it can)
  std::vector<bool> stepped_outputs; // outputs carrying the stream's time axis
  bool sequential = false;
  std::string object_path;           // "" for the top level, "layers/sequential" for a nested one
  // wanted_on_host(false) and (true), made once the graph is built (a GPU run reads the one for
  // where it leaves its outputs).
  std::array<std::vector<char>, 2> wanted_host;

  void load_legacy(const io::H5File& h5, const std::string& group, const std::string& file);
  void load_legacy_flat(std::vector<StoredWeight>& w, const std::string& where);
  void load_keras(const io::H5File& h5, const std::string& file);
  std::size_t num_weights() const;
  std::uint64_t weight_floats() const;
  void collect_layers(std::vector<Layer*>& out) const;
  // Decides streamability for these stepped inputs; fills not_streamable and stepped_outputs.
  void analyse_streaming(const std::vector<bool>& stepped_inputs);

 private:
  // The output specs of node n from the specs its inputs have so far (infer and plan walk alike).
  std::vector<Spec> build_node(const Node& n, const std::vector<std::vector<Spec>>& specs,
                               std::vector<Spec>* main_out = nullptr) const;
  // Per node, on a GPU run: whether its outputs are wanted on the host only (see follows_inputs);
  // a model output is, unless the run leaves its outputs on the device.
  std::vector<char> wanted_on_host(bool device_outputs) const;
};

// Per-stream states, keyed by op and call site: the recurrent layers' States, and the past inputs
// that causal layers keep (a causal Conv1D's last (kernel_size - 1) * dilation_rate steps, a causal
// attention's keys and values), as a Value whose axis 1 is time.
struct StreamStates {
  std::map<std::pair<const Op*, int>, std::vector<State>> states;
  std::map<std::pair<const Op*, int>, Value> history;
  Index batch = 0;
  void reset();
  // A causal layer stepped on a GPU keeps its past there: the host copies, for whatever reads
  // them on the host (a CPU step, a snapshot's bytes, a batch of streams).
  void history_to_host();
  // The site base for the graph of nested model `model` run at call site `site` (with its own
  // base added): a range of `nodes` sites past every other graph's, the same at every step.
  int scope(const Op* model, int site, std::size_t nodes);
  // Takes another stream's call-site bases (a batch of streams steps with the bases they share).
  void copy_scopes(const StreamStates& from) {
    if (next_base_ == from.next_base_ && scopes_.size() == from.scopes_.size()) return;  // bases only grow
    scopes_ = from.scopes_;
    next_base_ = from.next_base_;
  }

 private:
  std::map<std::pair<const Op*, int>, int> scopes_;
  int next_base_ = kMaxGraphNodes;  // the top-level graph's sites are its node ids
};

// The op for a layer entry's class ("" why when recur has none: the caller records it).
std::shared_ptr<Op> make_op(const json& entry, const BuildContext& ctx, const std::string& object_path);

bool is_sequence_model_class(const std::string& cls);

}  // namespace recur::graph
