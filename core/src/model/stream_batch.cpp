// SPDX-License-Identifier: Apache-2.0
#include "stream_batch.hpp"

#include <algorithm>
#include <string>

#include "gpu/gpu_layer.hpp"
#include "gpu/runtime.hpp"
#include "recur/state.hpp"

namespace recur::graph {

void BlockCopies::add(const float* src, float* dst, std::int64_t count) {
  if (count <= 0) return;
  src_.push_back(src);
  dst_.push_back(dst);
  counts_.push_back(count);
}

void BlockCopies::run(int ordinal, const char* what) {
  if (counts_.empty()) return;
  const recur_gpu_plugin& t = gpu::require_device(ordinal);
  char err[512] = {0};
  const int rc = t.copy_blocks(ordinal, src_.data(), dst_.data(), counts_.data(), static_cast<std::int64_t>(counts_.size()),
                               err, sizeof err);
  src_.clear();
  dst_.clear();
  counts_.clear();
  if (rc != RECUR_GPU_OK) gpu::raise(rc, err, what);
}

bool same_layout(const StreamStates& a, const StreamStates& b) {
  if (a.states.size() != b.states.size() || a.history.size() != b.history.size()) return false;
  for (auto ia = a.states.begin(), ib = b.states.begin(); ia != a.states.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.size() != ib->second.size()) return false;
    for (std::size_t j = 0; j < ia->second.size(); ++j)
      if (ia->second[j].num_states() != ib->second[j].num_states() || ia->second[j].units() != ib->second[j].units())
        return false;
  }
  for (auto ia = a.history.begin(), ib = b.history.begin(); ia != a.history.end(); ++ia, ++ib) {
    const Value &x = ia->second, &y = ib->second;
    if (ia->first != ib->first || x.shape.size() != y.shape.size() || x.shape.empty() || x.ids || y.ids || x.strings ||
        y.strings)
      return false;
    if (!std::equal(x.shape.begin() + 1, x.shape.end(), y.shape.begin() + 1)) return false;
  }
  return true;
}

namespace {

// The elements of `ranges` of rows of `per` elements each, one range after another.
template <class T>
std::vector<T> take(const std::vector<T>& all, std::size_t per, const RowRanges& ranges) {
  std::vector<T> out;
  for (const auto& [r, b] : ranges)
    out.insert(out.end(), all.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(r)),
               all.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(r + b)));
  return out;
}

}  // namespace

Value rows_of(const Value& v, const RowRanges& ranges, Index total) {
  Value out;
  out.shape = v.shape;
  out.shape[0] = 0;
  for (const auto& range : ranges) out.shape[0] += range.second;
  const auto per = [&](std::size_t n) { return total > 0 ? n / static_cast<std::size_t>(total) : 0; };
  out.data = take(v.data, per(v.data.size()), ranges);
  if (v.mask) out.mask = std::make_shared<const std::vector<std::uint8_t>>(take(*v.mask, per(v.mask->size()), ranges));
  if (v.ids) {
    auto ids = std::make_shared<graph::Ids>();
    ids->input = v.ids->input;
    ids->values = take(v.ids->values, per(v.ids->values.size()), ranges);
    out.ids = std::move(ids);
  }
  if (v.strings)
    out.strings = std::make_shared<const std::vector<std::string>>(take(*v.strings, per(v.strings->size()), ranges));
  return out;
}

namespace {

// A device state's floats are its state tensors and its carried output, each (batch, units), one
// after another: tensor t of a state of `b` rows starts at t * b * units.
constexpr int kCarried = 1;

// Copies of each tensor's rows between a stream's device state (b rows) and rows [r, r + b) of the
// batch's (`total` rows).
void add_rows(BlockCopies& copies, const State& st, float* stream, float* batch, Index r, Index total, bool to_batch) {
  const Index u = st.units(), b = st.batch();
  for (int t = 0; t < st.num_states() + kCarried; ++t) {
    float* const in_stream = stream + t * b * u;
    float* const in_batch = batch + (t * total + r) * u;
    if (to_batch) copies.add(in_stream, in_batch, b * u);
    else copies.add(in_batch, in_stream, b * u);
  }
}

}  // namespace

void gather_states(const std::vector<StreamStates*>& group, Index total, StreamStates& into, int device,
                   BlockCopies& copies) {
  const StreamStates& first = *group[0];
  bool reuse = into.batch == total && into.states.size() == first.states.size();
  for (auto a = into.states.cbegin(), b = first.states.begin(); reuse && a != into.states.cend(); ++a, ++b) {
    reuse = a->first == b->first && a->second.size() == b->second.size();
    for (std::size_t j = 0; reuse && j < a->second.size(); ++j)
      reuse = a->second[j].batch() == total && a->second[j].num_states() == b->second[j].num_states() &&
              a->second[j].units() == b->second[j].units();
  }
  if (!reuse) {
    into.states.clear();
    for (const auto& [key, list] : first.states) {
      std::vector<State> v;
      for (const State& st : list) v.emplace_back(st.num_states(), total, st.units());
      into.states.emplace(key, std::move(v));
    }
  }
  into.batch = total;
  into.copy_scopes(first);
  into.history.clear();
  // The group's streams and `into` hold the same keys (same_layout): walked side by side.
  std::vector<decltype(first.states)::iterator> at;
  for (StreamStates* s : group) at.push_back(s->states.begin());
  for (auto& [key, list] : into.states) {
    for (std::size_t j = 0; j < list.size(); ++j) {
      State& dst = list[j];
      // A state that lives on the model's GPU in any stream is gathered there; the others come up
      // once, and stay there after the step.
      bool on_device = false;
      for (std::size_t m = 0; m < group.size() && !on_device; ++m) on_device = at[m]->second[j].lives_on(device);
      if (on_device) {
        float* const batch = dst.resident_on(device, false)->states();  // every float is written below
        Index r = 0;
        for (std::size_t m = 0; m < group.size(); ++m) {
          State& from = at[m]->second[j];
          add_rows(copies, from, from.resident_on(device)->states(), batch, r, total, true);
          r += from.batch();
        }
        continue;
      }
      dst.drop_device();  // the host copy is written whole below
      RowMatrix& c = dst.carried_output();
      if (c.rows() != total || c.cols() != dst.units()) c.resize(total, dst.units());
      Index r = 0;
      for (std::size_t m = 0; m < group.size(); ++m) {
        State& from = at[m]->second[j];
        const Index b = from.batch();
        from.sync_to_host();
        for (int i = 0; i < from.num_states(); ++i) put_rows(dst.tensor(i), r, from.tensor(i));
        const RowMatrix& fc = from.carried_output();
        if (fc.rows() == b && fc.cols() == c.cols())
          put_rows(c, r, fc);
        else
          c.middleRows(r, b).setZero();
        r += b;
      }
    }
    for (auto& it : at) ++it;
  }
  // (One stream's past is taken whole, wherever it is; a batch's is joined on the host.)
  if (group.size() > 1)
    for (StreamStates* s : group) s->history_to_host();
  for (const auto& [key, h0] : first.history) {
    if (group.size() == 1) {
      into.history.emplace(key, h0);
      continue;
    }
    Value v;
    v.shape = h0.shape;
    v.shape[0] = total;
    bool masked = false;
    for (StreamStates* s : group) {
      const Value& h = s->history.at(key);
      v.data.insert(v.data.end(), h.data.begin(), h.data.end());
      masked = masked || h.mask;
    }
    if (masked && v.shape.size() >= 2) {
      auto m = std::make_shared<std::vector<std::uint8_t>>();
      for (StreamStates* s : group) {
        const Value& h = s->history.at(key);
        const std::size_t n = static_cast<std::size_t>(h.shape[0] * h.shape[1]);
        if (h.mask) m->insert(m->end(), h.mask->begin(), h.mask->end());
        else m->insert(m->end(), n, std::uint8_t{1});
      }
      v.mask = std::move(m);
    }
    into.history.emplace(key, std::move(v));
  }
}

namespace {

// The stream's list of states for the batch's key `key`, made at its first step (the keys it
// lacked), with a state of `b` rows for each of the batch's.
std::vector<State>& states_for(StreamStates& s, const std::pair<const Op*, int>& key, const std::vector<State>& batch) {
  std::vector<State>& mine = s.states[key];
  if (mine.empty())
    for (const State& st : batch) mine.emplace_back(st.num_states(), s.batch, st.units());
  return mine;
}

}  // namespace

void scatter_device_states(StreamStates& from, const std::vector<StreamStates*>& group, BlockCopies& copies,
                           std::vector<State*>& fresh) {
  const Index total = from.batch;
  for (auto& [key, list] : from.states) {
    if (std::none_of(list.begin(), list.end(), [](State& st) { return st.device_state() != nullptr; })) continue;
    Index r = 0;
    for (StreamStates* s : group) {
      std::vector<State>& mine = states_for(*s, key, list);
      for (std::size_t j = 0; j < list.size() && j < mine.size(); ++j) {
        gpu::DeviceState* d = list[j].device_state();
        if (!d) continue;
        State& to = mine[j];
        const bool was = to.lives_on(d->ordinal());
        float* const stream = to.resident_on(d->ordinal(), false)->states();  // written whole by the copies
        if (!was) fresh.push_back(&to);
        add_rows(copies, to, stream, d->states(), r, total, false);
      }
      r += s->batch;
    }
  }
}

void scatter_states(StreamStates& from, const std::vector<StreamStates*>& group) {
  const Index total = from.batch;
  if (group.size() > 1) from.history_to_host();
  Index r = 0;
  for (StreamStates* s : group) {
    const Index b = s->batch;
    // A stream's first step adds the keys it lacked; after that its keys are the batch's, in the
    // same order, and are walked side by side.
    const bool same_keys = s->states.size() == from.states.size();
    auto mine_it = s->states.begin();
    for (auto& [key, list] : from.states) {
      std::vector<State>& mine = same_keys ? (mine_it++)->second : states_for(*s, key, list);
      for (std::size_t j = 0; j < list.size() && j < mine.size(); ++j) {
        State& st = list[j];
        if (st.device_state()) continue;  // moved on the device by scatter_device_states
        State& to = mine[j];
        to.detach_device();  // the host copy becomes current; the next step uploads it again
        for (int i = 0; i < st.num_states(); ++i) take_rows(to.tensor(i), st.tensor(i), r, b);
        const RowMatrix& c = st.carried_output();
        if (c.rows() == total) take_rows(to.carried_output(), c, r, b);
        else to.carried_output().setZero(b, to.units());
      }
    }
    for (auto& [key, h] : from.history) {
      if (group.size() == 1) {
        s->history[key] = std::move(h);
        continue;
      }
      s->history[key] = rows_of(h, {{r, b}}, total);
    }
    s->copy_scopes(from);
    r += b;
  }
}

}  // namespace recur::graph
