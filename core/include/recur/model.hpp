// Model: a Keras model file (.keras zip or legacy .h5) read as it is, with its recurrent layers
// usable one by one and, for chains of supported layers, runnable end to end with Keras's mask
// propagation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recur/device.hpp"
#include "recur/dialect.hpp"
#include "recur/layer.hpp"

namespace recur {

struct ModelLayerInfo {
  std::string name;
  std::string class_name;
  std::string config_json;  // the layer's entry in the model config, as the file has it
  int input_size = 0;       // size of the last input axis (0 if not known)
  int output_size = 0;      // size of the last output axis (0 if not known)
  bool recurrent = false;   // GRU/LSTM/CuDNN*: available as a Layer
  bool supported = true;    // recur can run it inside a chain
};

class Model {
 public:
  // Opens a .keras (zip) or legacy .h5 file, chosen by its signature. The dialect comes from the
  // file's keras_version. Throws Error(io) for unreadable or malformed files, naming the file,
  // the object path and the problem.
  static Model open(const std::string& path);

  Model(Model&&) noexcept;
  ~Model();

  const DialectInfo& dialect() const;
  const std::string& keras_version() const;
  const std::vector<ModelLayerInfo>& layers() const;

  // A new layer with the config and weights of the recurrent layer `name` ("name/forward" and
  // "name/backward" address the halves of a Bidirectional). Throws Error(invalid_argument).
  std::unique_ptr<Layer> recurrent_layer(const std::string& name) const;

  // Why the chain cannot run ("" when it can), e.g. "unsupported layer Conv1D at conv1d".
  const std::string& unsupported() const;
  int input_size() const;        // features per timestep (1 for token ids into an Embedding)
  bool takes_token_ids() const;  // the first layer is an Embedding
  int output_size() const;       // last axis of the output
  bool returns_sequences() const;
  int num_outputs() const;       // 2 for a final Bidirectional with merge_mode=None, else 1
  std::size_t output_length(Index batch, Index timesteps) const;  // all outputs together

  // CPU threads for every layer (Layer::set_num_threads), including those recurrent_layer returns.
  void set_num_threads(int num_threads);
  int num_threads() const;

  // Moves every layer the chain runs to a device; the chain then runs there end to end.
  void set_device(const DeviceRequest& request);
  Placement placement() const;
  Placement layer_placement(int index) const;  // recur_model_layer order

  // Runs the chain: input (B, T, input_size) floats (token ids as floats for an Embedding),
  // optional (B, T) mask. Outputs are concatenated in order. Safe to call concurrently.
  void run(const float* input, std::size_t input_len, Index batch, Index timesteps, const std::uint8_t* mask,
           std::size_t mask_len, float* output, std::size_t output_len) const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace recur
