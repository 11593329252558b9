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
