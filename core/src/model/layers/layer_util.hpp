// SPDX-License-Identifier: Apache-2.0
// What the layer families (layers/*.cpp) share: reading a layer's config, allocating tensors under
// the limits, loading and checking weights, axes and joins. Internal to the model runner.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/hdf5_file.hpp"
#include "model/graph.hpp"
#include "recur/activations.hpp"
#include "recur/error.hpp"

namespace recur::graph {

using Code = Error::Code;
using Mask = std::shared_ptr<const std::vector<std::uint8_t>>;

// build() runs again whenever shapes are inferred (output_dims, stream lengths), on any thread,
// while other threads run the same ops: after the first build, it must only write what changes.
template <typename T>
void set_once(T& field, const T& value) {
  if (field != value) field = value;
}

// A config value, or `fallback` when absent or null; Error(invalid_argument) naming the key when
// it has another type (integers are range-checked before they narrow).
int int_of(const json& cfg, const char* key, int fallback);
std::string str_of(const json& cfg, const char* key, const std::string& fallback);
bool bool_of(const json& cfg, const char* key, bool fallback);
double num_of(const json& cfg, const char* key, double fallback);
ActivationFn activation_of(const json& cfg, const DialectInfo& d);
// "data_format": true for 'channels_first', false for 'channels_last' or none; anything else is
// Error(invalid_argument).
bool channels_first_of(const json& cfg);

// The product of dims [from, to).
Index product(const std::vector<Index>& d, std::size_t from = 0, std::size_t to = std::size_t(-1));
// `shape`, checked against the tensor limit before anything is allocated.
std::vector<Index> alloc_shape(std::vector<Index> shape, const char* what);
Value make_value(std::vector<Index> shape, const char* what);

// Stored weights: where one is (for messages), its shape check, taking them in Keras's order.
std::string weight_location(const std::string& where, const std::string& path);
void expect_shape(const StoredWeight& sw, const std::vector<std::int64_t>& want, const std::string& where);
std::vector<float> take_weight(std::vector<StoredWeight>& w, const std::vector<std::int64_t>& shape,
                               const std::string& where);
// A .keras layer's variables (`object`/vars/0, 1, ...), reading at most `budget` floats.
std::vector<StoredWeight> read_vars(const io::H5File& h5, const std::string& object, const std::string& file,
                                    std::uint64_t budget);
void check_count(const std::vector<StoredWeight>& w, std::size_t want, const std::string& where, const std::string& layer);

// `count` inputs of rank >= min_rank, else Error naming `what`.
void check_rank(const std::vector<Spec>& in, std::size_t count, std::size_t min_rank, const char* what);
// The input's last axis, which must be known.
Index known_last(const Spec& s, const char* what);

// The shape of `parts` joined along `axis`, and the copy (the Concatenate layer, keras.ops).
std::vector<Index> joined_shape(const std::vector<const std::vector<Index>*>& parts, std::size_t axis, const std::string& who);
void join_values(const std::vector<const Value*>& parts, std::size_t axis, Value& y);

// "axis": an integer or a list of them; normalized against a rank (no repeats, none past it).
std::vector<int> axes_of(const json& cfg, int fallback);
std::vector<int> normalized_axes(const std::vector<int>& given, std::size_t rank, const std::string& who, const json& shown);

}  // namespace recur::graph

namespace recur::graph {

// ---- tensor ops (Keras 2 TFOpLambda, Keras 3 keras.ops nodes) --------------------------------

// Right-aligned numpy broadcasting of two shapes (a scalar is the shape {}).
std::vector<Index> broadcast_shape(const std::vector<Index>& a, const std::vector<Index>& b, const std::string& who);
using BinaryFn = float (*)(float, float);
// add, subtract, multiply, divide, maximum, minimum (nullptr for another name).
BinaryFn arithmetic_fn(const std::string& name);
// y = f(a, b) elementwise with broadcasting; y is shaped broadcast_shape(a, b).
void broadcast_binary(const Value& a, const Value& b, Value& y, BinaryFn f);

enum class Reduction { sum, mean, max, min, any, all };
std::vector<Index> reduced_shape(const std::vector<Index>& x, const std::vector<int>& axes, bool keepdims);
// y is shaped reduced_shape(x, axes, ...).
void reduce_values(const Value& x, const std::vector<int>& axes, Reduction how, Value& y);

// expand_dims / squeeze (the values stay as they are).
std::vector<Index> expanded_shape(const std::vector<Index>& x, int axis, const std::string& who);
// `axes` empty: every axis of size 1.
std::vector<Index> squeezed_shape(const std::vector<Index>& x, const std::vector<int>& axes, const std::string& who);

// stack: `axis` of the output (rank + 1), normalized by stack_axis.
int stack_axis(int given, std::size_t rank, const std::string& who);
std::vector<Index> stacked_shape(const std::vector<const std::vector<Index>*>& parts, int axis, const std::string& who);
void stack_values(const std::vector<const Value*>& parts, int axis, Value& y);

// transpose: `perm` a permutation of the axes (checked by permutation_of).
std::vector<int> permutation_of(const json& perm, std::size_t rank, const std::string& who);
std::vector<Index> transposed_shape(const std::vector<Index>& x, const std::vector<int>& perm);
void transpose_values(const Value& x, const std::vector<int>& perm, Value& y);
// A transpose or a slice as a strided read: output element k (row-major over `dims`) is input
// element base + sum of k's index along each axis times `strides` (DeviceRun::gather).
struct StridedRead {
  std::vector<Index> dims, strides;
  Index base = 0;
};
StridedRead transpose_read(const std::vector<Index>& x, const std::vector<int>& perm);

// x[key]: per axis an index (the axis goes) or a slice with optional start, stop, step (Python's
// rules); an ellipsis stands for the axes the other items leave, a new axis (None) inserts one of
// size 1; axes past the key are taken whole.
struct SliceItem {
  bool index = false, ellipsis = false, newaxis = false;
  bool has_start = false, has_stop = false, has_step = false;
  Index start = 0, stop = 0, step = 1;
  bool whole() const { return !index && !ellipsis && !newaxis && !has_start && !has_stop && (!has_step || step == 1); }
};
// One item from JSON: an integer, or a {start, stop, step} object (each an integer or null).
SliceItem slice_item(const json& start, const json& stop, const json& step, const std::string& who);
// The key with its ellipsis expanded and whole slices after it, one item per axis of a rank-`rank`
// tensor (new axes besides).
std::vector<SliceItem> full_key(const std::vector<SliceItem>& key, std::size_t rank, const std::string& who);
// Whether x[key] keeps the batch and time axes (axes 0 and 1) whole and in place.
bool key_keeps_time(const std::vector<SliceItem>& key, std::size_t rank, const std::string& who);
std::vector<Index> sliced_shape(const std::vector<Index>& x, const std::vector<SliceItem>& key, const std::string& who);
void slice_values(const Value& x, const std::vector<SliceItem>& key, Value& y, const std::string& who);
// out = {x read as `r` into a device Value of `shape`} on the run's GPU; false (declined, with the
// reason) when it has more axes than the GPU's strided read takes.
bool gather_on_device(RunContext& ctx, const Value& x, const StridedRead& r, std::vector<Index> shape,
                      const std::string& what, std::vector<Value>& out);
// One operand of an elementwise op on the device: a device Value, device floats of `shape` (an op's
// weights), or else a constant; with the mask of Keras 3's masked merges, or none.
struct FoldArg {
  const Value* v = nullptr;
  float constant = 0.0f;
  const std::vector<std::uint8_t>* mask = nullptr;
  const float* weights = nullptr;
  std::vector<Index> shape;  // of `weights`
};
// out = {op (RECUR_GPU_OP_*) folded over args broadcast to `shape` (numpy's rules, aligned at the
// last axis)} on the run's GPU; false (declined, with the reason) for more axes or operands than
// the GPU op takes.
bool elementwise_on_device(DeviceRun& dev, int op, const std::vector<FoldArg>& args, std::vector<Index> shape,
                           const std::string& what, std::vector<Value>& out);
// out = {x reduced over `axes` into a device Value of `shape`}, as reduce_values; false (declined)
// for more axes than the GPU's reduction takes.
bool reduce_on_device(DeviceRun& dev, const Value& x, const std::vector<int>& axes, Reduction how,
                      std::vector<Index> shape, const std::string& what, std::vector<Value>& out);
// out = {the device Values `parts` side by side along `axis` of `shape`} (a concatenation, or a
// stack when `shape` has the parts' count at `axis`).
bool join_on_device(DeviceRun& dev, const std::vector<const Value*>& parts, std::size_t axis, std::vector<Index> shape,
                    const std::string& what, std::vector<Value>& out);
// Empty dims when the result is empty.
StridedRead slice_read(const std::vector<Index>& x, const std::vector<SliceItem>& key, const std::string& who);

// Keras 2's inbound node of a call: the entries of its first argument ([name, node, tensor(,
// kwargs)] or ["_CONSTANT_VALUE", -1, value(, kwargs)]), flattened in order. A layer that keeps its
// argument's structure (TFOpLambda) saves a lone tensor as the node itself.
std::vector<const json*> keras2_node_entries(const json& node, const std::string& where);
// [name, node index, tensor index]
bool is_keras2_ref(const json& v);
// The tensor references inside a call's kwargs, in key order.
void keras2_kwarg_refs(const json& kwargs, std::vector<const json*>& out, const std::string& where, int depth = 0);

}  // namespace recur::graph
