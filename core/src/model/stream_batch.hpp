// SPDX-License-Identifier: Apache-2.0
// Many streams of one model stepped as one batch (ModelStream::step_named_many): their states put
// side by side in a batch's StreamStates, and each stream's rows handed back after the step. On a
// GPU, the states that live there move on the device, all of a call's in one copy each way; the
// host never sees them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graph.hpp"

namespace recur::graph {

// Device copies collected over a call's batches, made in one plugin call.
class BlockCopies {
 public:
  void add(const float* src, float* dst, std::int64_t count);
  bool empty() const { return counts_.empty(); }
  // Makes them on GPU `ordinal` (queued with the model ops) and forgets them. Throws Error when the
  // device fails.
  void run(int ordinal, const char* what);

 private:
  std::vector<const float*> src_;
  std::vector<float*> dst_;
  std::vector<std::int64_t> counts_;
};

// Whether two streams' states can ride in one batch: the same call sites with states of the same
// sizes, and causal histories of the same length (all axes but the batch).
bool same_layout(const StreamStates& a, const StreamStates& b);

// Ranges of a batch's rows: (first row, rows) each.
using RowRanges = std::vector<std::pair<Index, Index>>;

// The rows of `ranges`, one range after another, of a batch-first value of `total` rows.
Value rows_of(const Value& v, const RowRanges& ranges, Index total);

// Puts the states of `group` (streams of one layout) side by side in `into`, whose States are
// reused when they already have this layout and batch. `device` is the model's GPU (-1: none): a
// state that lives there in any stream of the group is gathered there, through `copies`.
void gather_states(const std::vector<StreamStates*>& group, Index total, StreamStates& into, int device,
                   BlockCopies& copies);

// After a successful step, the first half of handing each stream of `group` its rows: the states
// the batch holds on a GPU, whose copies go into `copies` (a stream's state made resident there
// without an upload is listed in `fresh`: drop_device() it if the copies fail).
void scatter_device_states(StreamStates& from, const std::vector<StreamStates*>& group, BlockCopies& copies,
                           std::vector<State*>& fresh);

// The second half, once the copies are made: the states on the host, the causal histories and the
// call-site bases.
void scatter_states(StreamStates& from, const std::vector<StreamStates*>& group);

}  // namespace recur::graph
