// SPDX-License-Identifier: Apache-2.0
// Layer: a Keras recurrent layer (the RNN wrapper: sequence loop, masks, go_backwards,
// return_sequences/return_state, initial_state, stateful) or, for GRUCell/LSTMCell/SimpleRNNCell
// configs, the cell itself. Weights are set and read in Keras's own order and shapes; the kernels of
// Keras's own layouts are stored only packed, in the cell.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recur/backend.hpp"
#include "recur/cell.hpp"
#include "recur/config.hpp"
#include "recur/device.hpp"
#include "recur/error.hpp"
#include "recur/random.hpp"
#include "recur/state.hpp"
#include "recur/weights.hpp"

namespace recur {

namespace gpu {
class GpuLayer;
class DeviceState;
}

// One call of a sequence layer. Buffers are dense row-major float32 with explicit lengths; the
// layer checks every length against the dims and keeps no pointer after the call.
struct LayerCall {
  const float* input = nullptr;  // (B,T,F), or (T,B,F) for time_major
  std::size_t input_len = 0;
  Index batch = 0;
  Index timesteps = 0;
  const std::uint8_t* mask = nullptr;  // (B,T) or (T,B) for time_major; nonzero = valid; may be null
  std::size_t mask_len = 0;
  const float* initial_state = nullptr;  // num_initial_states tensors (B,u), concatenated
  std::size_t initial_state_len = 0;
  int num_initial_states = 0;
  bool training = false;
  float* output = nullptr;  // (B,T,u) / (T,B,u) with return_sequences, else (B,u)
  std::size_t output_len = 0;
  float* final_state = nullptr;  // optional: num_states tensors (B,u), concatenated
  std::size_t final_state_len = 0;
};

struct Loss {
  std::string name;  // "activity:output", "activity:state_h", "kernel", "recurrent_kernel", "bias"
  float value;
};

class Layer {
 public:
  static constexpr int kMaxThreads = 1024;
  // Validates the config. The initializers run on first use, only if some weight was never set.
  explicit Layer(LayerConfig config);
  ~Layer();

  const LayerConfig& config() const { return config_; }
  const Cell& cell() const {
    materialize();
    return cell_;
  }
  // The weights in the form the equations use (CuDNN layouts converted).
  CellParams params() const;
  int num_states() const { return config_.num_states(); }

  // --- weights (Keras get_weights / set_weights order) ---
  std::size_t num_weights() const { return weights_.size(); }
  const WeightSpec& weight_spec(std::size_t i) const;
  const Tensor& weight(std::size_t i) const;
  void get_weight(std::size_t i, float* out, std::size_t len) const;
  // `dims` may be null (only the length is checked); otherwise it must equal Keras's shape.
  void set_weight(std::size_t i, const float* data, std::size_t len, const std::int64_t* dims, int ndims);
  // All weights concatenated in get_weights order; validated before anything changes.
  void set_weights(const float* data, std::size_t len);
  std::size_t weights_size() const;
  // Floats in weight i (the product of its Keras shape). Throws for an index that does not exist.
  std::size_t weight_length(std::size_t i) const;

  // --- sequence layers ---
  std::size_t output_size(Index batch, Index timesteps) const;
  // Keras's layer call. Not safe to run concurrently on a stateful layer or in training mode.
  void call(const LayerCall& args);
  // Streams `state` forward over `timesteps` steps (inference). Safe to run concurrently on one
  // layer with different states.
  void call_state(State& state, const float* input, std::size_t input_len, Index timesteps, const std::uint8_t* mask,
                  std::size_t mask_len, float* output, std::size_t output_len) const;

  // Keras 3 backend semantics at masked steps: "tensorflow" (default) or "jax". Not safe to change
  // while the layer runs.
  void set_keras_backend(const std::string& backend);

  // --- stateful layers ---
  void reset_states();
  void reset_states(const float* states, std::size_t len, int num_given);
  void get_states(float* out, std::size_t len) const;

  // --- cells (GRUCell / LSTMCell) ---
  void cell_call(const float* input, std::size_t input_len, Index batch, const float* states, std::size_t states_len,
                 int num_given, bool training, float* output, std::size_t output_len, float* new_states,
                 std::size_t new_states_len);
  // The cached masks (count x (B,F) / (B,u)); generated on first use, kept until reset. Empty
  // when the rate is 0.
  std::vector<RowMatrix> dropout_mask(Index batch, bool training);
  std::vector<RowMatrix> recurrent_dropout_mask(Index batch, bool training);
  void reset_dropout_mask();
  void reset_recurrent_dropout_mask();

  // --- losses and constraints ---
  std::vector<Loss> losses() const;
  // The names of losses(), in its order, without computing the penalties.
  std::vector<std::string> loss_names() const;
  void apply_constraints();

  // --- CPU threads ---
  // Threads one CPU call may use (1: the calling thread only; 0: one per core). Results do not
  // depend on it. Not safe to change while the layer runs.
  void set_num_threads(int num_threads);
  int num_threads() const { return num_threads_; }

  // --- precision ---
  // The precision of the kernel and recurrent kernel in the GEMMs (Cell::set_precision): the
  // reduced copy is made from the float32 weights, which stay (get_weights is unchanged). Throws
  // Error(unsupported) on a GPU (float32 only) or for int8 past its depth limit; nothing changes
  // then. Not safe while the layer runs.
  void set_precision(Precision precision);
  Precision precision() const { return cell_.precision(); }

  // --- devices ---
  // Moves the layer to a device (weights uploaded once; re-uploaded on every weight change).
  // Throws Error(unsupported) when a GPU was asked for and cannot run; the layer stays put.
  void set_device(const DeviceRequest& request);
  Placement placement() const;
  // One timestep for many independent states as one batch: input (sum of their batches, F),
  // output (same rows, units). States stay resident on the layer's device.
  void call_states(State* const* states, std::size_t count, const float* input, std::size_t input_len,
                   const std::uint8_t* mask, std::size_t mask_len, float* output, std::size_t output_len) const;
  // call_states on caller-held device buffers: d_input (rows, F) and d_output (rows, units) on the
  // layer's GPU, ordered on `stream` (a cudaStream_t, or null); the mask on the host.
  void call_states_device(void* stream, State* const* states, std::size_t count, const float* d_input,
                          const std::uint8_t* mask, std::size_t mask_len, float* d_output) const;
  // A Keras call on caller-held device buffers (mask on the host). Throws Error(state) when the
  // layer is not on a GPU.
  void call_device(void* stream, const float* d_input, Index batch, Index timesteps, const std::uint8_t* mask,
                   std::size_t mask_len, const float* d_initial_state, int num_initial_states, float* d_output,
                   float* d_final_state);
  // call_state on device buffers (the model runner on a GPU): the state stays resident on the
  // layer's GPU. Throws Error(unsupported) where device_call_issue says why not.
  void call_state_device(State& state, const float* d_input, Index timesteps, const std::uint8_t* mask,
                         std::size_t mask_len, float* d_output) const;
  // Why call_device cannot run a call on this layer's GPU, or "".
  std::string device_call_issue() const;
  // Puts a state made for this layer where the layer runs (its tensors resident on the GPU).
  void place_state(State& state) const;
  // The device twin, or null on the CPU (for the model runner, which keeps tensors on the GPU).
  gpu::GpuLayer* gpu_layer() const { return gpu_.get(); }

 private:
  void require_sequence_layer(const char* what) const;
  Index stream_rows(State* const* states, std::size_t count) const;
  void step_rows_on_gpu(State* const* states, std::size_t count, Index rows, const float* input,
                        const std::uint8_t* mask, float* output, int memory, void* stream) const;
  // The state's copy on this layer's GPU, made (from its host tensors) when it lives elsewhere.
  gpu::DeviceState* resident_state(State& state) const;
  void require_cell(const char* what) const;
  // Kernel and recurrent kernel of Keras's own layouts live only packed in the cell.
  bool packed_only(std::size_t i) const;
  // Puts weight i (Keras layout) where it lives: packed in the cell, or in weights_.
  void store_weight(std::size_t i, const float* data);
  // Updates the cell's biases (or, for CuDNN layouts, converts and packs everything) and the GPU twin.
  void refresh_cell();
  // Every weight in Keras's layout (copies).
  std::vector<Tensor> keras_weights() const;
  // Runs the initializers of the weights never set (all of them, in Keras's order, for the RNG)
  // and packs the cell: on first use, once.
  void materialize() const;
  void initialize_weight(std::size_t i, Tensor& w);
  void mark_given(std::size_t i);
  void check_states_arg(const float* states, std::size_t len, int num_given, Index batch, const char* what) const;
  std::vector<RowMatrix> make_masks(int count, Index rows, Index cols, float rate);
  // A cell's mask cache (Keras get_*dropout_mask_for_cell): made on first use, kept until reset.
  std::vector<RowMatrix> cached_masks(std::vector<RowMatrix>& cache, bool& cached, Index batch, bool training,
                                      float rate, int count, Index cols, const char* what);
  void record_activity(const LayerCall& args, const RowMatrix* final_states);
  // losses(), or with values = false only their names (the values left 0).
  std::vector<Loss> collect_losses(bool values) const;
  int mask_count() const;
  // The parts of a sequence run every call shares: layout, direction, masking, outputs.
  SequenceJob sequence_job(Index batch, Index timesteps, const std::uint8_t* mask, float* output) const;
  // The input as the backend sees it (Keras 2 CuDNN time_major + go_backwards reverses the batch).
  const float* cudnn_reversal(const float* input, Index batch, Index timesteps, std::vector<float>& storage) const;

  LayerConfig config_;
  Placement placement_;
  std::shared_ptr<gpu::GpuLayer> gpu_;  // set when placed on a GPU
  std::vector<WeightSpec> specs_;
  std::vector<Tensor> weights_;
  Cell cell_;
  int num_threads_ = 1;
  std::vector<bool> given_;  // weights set since creation, while not initialised
  mutable std::atomic<bool> initialized_{false};
  mutable std::mutex init_mutex_;
  // Why the initializers failed: raised again by every later use instead of running them again
  // (an Orthogonal kernel before a bias initializer that fails would redo its QR on every call).
  mutable std::optional<Error> init_error_;

  mutable std::mutex mutex_;  // guards everything below
  Rng rng_;
  std::optional<State> stored_;  // stateful layers
  std::vector<Loss> activity_losses_;
  std::vector<RowMatrix> dropout_cache_, recurrent_dropout_cache_;
  bool dropout_cached_ = false, recurrent_dropout_cached_ = false;
};

}  // namespace recur
