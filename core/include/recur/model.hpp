// SPDX-License-Identifier: Apache-2.0
// Model: a Keras model file (.keras zip or legacy .h5) read as it is: a graph of Keras layers with
// its inputs and outputs, runnable end to end with Keras's mask propagation, stateful layers and
// streaming, and with its recurrent layers usable one by one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recur/device.hpp"
#include "recur/dialect.hpp"
#include "recur/layer.hpp"

namespace recur {

namespace graph {
struct Value;
struct RunContext;
}  // namespace graph

struct ModelLayerInfo {
  std::string name;
  std::string class_name;
  std::string config_json;  // the layer's entry in the model config, as the file has it
  int input_size = 0;       // size of the last input axis (0 if not known)
  int output_size = 0;      // size of the last output axis (0 if not known)
  bool recurrent = false;   // GRU/LSTM/SimpleRNN/CuDNN*/RNN: available as a Layer (a stacked RNN's cells one by one)
  bool supported = true;    // recur can run it inside a chain
};

// A model input or output: its name and dims (batch first; -1 where the size is given at run time).
struct ModelTensorInfo {
  std::string name;
  std::vector<Index> dims;
  bool token_ids = false;  // integer ids (an int Input, or one that feeds an Embedding)
  bool sequence = false;   // has a timesteps axis (axis 1) that masks and streams address
  bool strings = false;    // UTF-8 strings (an Input with dtype "string", read by text layers)
};

// Element types of a named input (values as recur_dtype).
enum class DType : int { float32 = 1, int32 = 2, int64 = 3, string = 4 };

// One input of a named run or step: the model input `name`, its row-major data and dims (the
// batch first; the timesteps come from the dims), and an optional (B, T) mask.
struct NamedInput {
  std::string name;
  DType dtype = DType::float32;
  const void* data = nullptr;  // DType::string: `length` pointers to NUL-terminated UTF-8 strings
  std::size_t length = 0;  // elements
  std::vector<Index> dims;
  const std::uint8_t* mask = nullptr;
  std::size_t mask_length = 0;
};

// One requested output: the model output `name` and the caller's buffer; the run writes `dims`
// and `length` (elements written).
struct NamedOutput {
  std::string name;
  float* data = nullptr;
  std::size_t capacity = 0;  // elements `data` holds
  std::vector<Index> dims;
  std::size_t length = 0;
};

class ModelStream;

class Model {
 public:
  // Opens a .keras (zip) or legacy .h5 file, chosen by its signature. The dialect comes from the
  // file's keras_version. Throws Error(io) for unreadable or malformed files, naming the file,
  // the object path and the problem.
  static Model open(const std::string& path);
  // The same from a file image in memory (copied); `name` stands for the file in messages.
  static Model open_memory(const void* data, std::size_t len, const std::string& name);

  Model(Model&&) noexcept;
  ~Model();

  const DialectInfo& dialect() const;
  const std::string& keras_version() const;
  const std::vector<ModelLayerInfo>& layers() const;
  std::size_t num_layers() const;  // layers().size(), without preparing the infos' config_json

  // A new layer with the config and weights of the recurrent layer `name` ("name/forward" and
  // "name/backward" address the halves of a Bidirectional). Throws Error(invalid_argument).
  std::unique_ptr<Layer> recurrent_layer(const std::string& name) const;

  // Why the graph cannot run ("" when it can), e.g. "unsupported layer Cropping1D at crop".
  const std::string& unsupported() const;
  // The first input and output (the single-input API: recur_model_run).
  int input_size() const;        // last axis of input 0 (1 for token ids)
  bool takes_token_ids() const;  // input 0 holds token ids
  int output_size() const;       // last axis of output 0
  bool returns_sequences() const;  // output 0 has a timesteps axis
  int num_outputs() const;
  std::size_t output_length(Index batch, Index timesteps) const;  // all outputs together, one input

  // --- graphs: inputs and outputs in the file's order ---
  const std::vector<ModelTensorInfo>& inputs() const;
  const std::vector<ModelTensorInfo>& outputs() const;
  // Concrete dims of every output for `batch` rows and timesteps[i] steps of input i.
  std::vector<std::vector<Index>> output_dims(Index batch, const std::vector<Index>& timesteps) const;
  std::size_t inputs_length(Index batch, const std::vector<Index>& timesteps) const;
  std::size_t outputs_length(Index batch, const std::vector<Index>& timesteps) const;
  // Runs the graph: every input concatenated in order; masks (B, T_i) of the sequence inputs
  // concatenated, or null; every output concatenated in order. Stateful layers carry their states
  // from call to call (one run at a time then).
  void run_inputs(Index batch, const std::vector<Index>& timesteps, const float* inputs, std::size_t inputs_len,
                  const std::uint8_t* masks, std::size_t masks_len, float* outputs, std::size_t outputs_len) const;
  // The same by name: every model input exactly once, in any order, as float32, int32 or int64
  // (integer ids reach an Embedding exactly; other integer inputs are cast to float as Keras
  // does); any subset of the outputs, in any order. Throws Error naming the input or output at
  // fault. A stateful model's states are restored when the run fails or is cancelled.
  void run_named(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) const;
  // Fills dims and length of each requested output for these inputs (data may be null).
  void named_output_shapes(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) const;

  // --- stateful layers ---
  bool stateful() const;
  // The stateful layers' names as get_states takes them ("<name>/forward" for a Bidirectional half).
  const std::vector<std::string>& stateful_layers() const;
  const Layer& stateful_layer(const std::string& name) const;
  void reset_states();
  // `layer`: a stateful layer's name ("<name>/forward" or "/backward" for a Bidirectional's halves).
  std::size_t states_length(const std::string& layer) const;
  void get_states(const std::string& layer, float* out, std::size_t len) const;
  void set_states(const std::string& layer, const float* states, std::size_t len);

  // Keras 3 backend semantics for every recurrent layer: "tensorflow" or "jax".
  void set_keras_backend(const std::string& backend);

  // --- streaming ---
  const std::string& not_streamable() const;  // "" when the model streams
  // A stream of `batch` rows; throws Error(unsupported) naming the layer that prevents it.
  std::unique_ptr<ModelStream> make_stream(Index batch) const;

  // CPU threads for every layer (Layer::set_num_threads), including those recurrent_layer returns.
  void set_num_threads(int num_threads);
  int num_threads() const;
  // The precision of every recurrent layer's kernels (Layer::set_precision), including those
  // recurrent_layer returns; the other layers stay float32. Throws Error(unsupported) on a GPU,
  // for a model without recurrent layers (a reduced precision only), or when a layer cannot take
  // it (then no layer changes).
  void set_precision(Precision precision);
  Precision precision() const;

  // Moves every recurrent layer to a device (the other layers run on the CPU between them).
  void set_device(const DeviceRequest& request);
  Placement placement() const;
  Placement layer_placement(int index) const;  // recur_model_layer order

  // Runs a one-input model: input (B, T, input_size) floats (token ids as floats for an
  // Embedding), optional (B, T) mask. Outputs are concatenated in order. Safe to call
  // concurrently unless the model is stateful.
  void run(const float* input, std::size_t input_len, Index batch, Index timesteps, const std::uint8_t* mask,
           std::size_t mask_len, float* output, std::size_t output_len) const;

  struct Impl;  // opaque

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  // Runs the graph, one run at a time for a stateful model, whose states are restored on failure
  // (and after the run too when `always`: a run that only measures the outputs).
  std::vector<graph::Value> run_restoring(const std::vector<graph::Value>& in, graph::RunContext& ctx,
                                          bool always = false) const;
  std::unique_ptr<Impl> impl_;
};

// One stream through a model: the recurrent states of its call sites. Keeps the model's graph
// alive; one thread at a time per stream, any number of streams on one model.
class ModelStream {
 public:
  ~ModelStream();
  Index batch() const;
  void reset();
  // Floats step() reads and writes for `timesteps` steps.
  std::size_t inputs_length(Index timesteps) const;
  std::size_t outputs_length(Index timesteps) const;
  std::vector<std::vector<Index>> output_dims(Index timesteps) const;
  void step(Index timesteps, const float* inputs, std::size_t inputs_len, const std::uint8_t* masks,
            std::size_t masks_len, float* outputs, std::size_t outputs_len);
  // A step by name (as Model::run_named): every sequence input holds the same number of steps.
  // When it fails or is cancelled, the stream is left as it was before the call.
  void step_named(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs);
  void named_output_shapes(const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs) const;
  // A snapshot of everything the stream carries to its next step (recurrent states, causal layers'
  // past inputs), versioned little-endian bytes with the model's stream layout; load() takes one
  // into a stream of the same model and batch, all or nothing (Error(invalid_argument) for
  // malformed bytes or another batch, Error(state) for another model's).
  std::vector<std::uint8_t> save() const;
  void load(const void* data, std::size_t len);

  // Steps many streams of one model as one batch: inputs and outputs hold the rows of every
  // stream concatenated in the order of `streams` (batch = the sum of theirs). The same numbers as
  // stepping each alone (up to the rounding of a GEMM over more rows). On any error every stream
  // is left as it was before the call. Each stream appears once; all come from the same model.
  static void step_named_many(const std::vector<ModelStream*>& streams, const std::vector<NamedInput>& inputs,
                              std::vector<NamedOutput>& outputs);
  static void named_output_shapes_many(const std::vector<const ModelStream*>& streams,
                                       const std::vector<NamedInput>& inputs, std::vector<NamedOutput>& outputs);

 private:
  friend class Model;
  struct Impl;
  explicit ModelStream(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace recur
