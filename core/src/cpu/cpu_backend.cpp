// SPDX-License-Identifier: Apache-2.0
// The CPU backend: one GEMM for the input projection of every timestep (or of chunks of timesteps,
// for long sequences), then the recurrent loop with Keras's generic masking semantics. Several
// threads split a run one of two ways:
// - by units: each owns the same slice of units (whole kernel panels) of every gate for the whole
//   sequence: its slice of the projection, of the recurrent GEMM, of the gate updates and of the
//   outputs, so threads meet once per step (twice for GRU reset_after=False) and each streams only
//   its share of the weights (wide layers);
// - by batch rows: each runs its rows through the whole sequence alone, with no meeting at all
//   (small steps, where a barrier per step would cost more than the step's work shared).
// Results do not depend on the thread count or the split: every output sums its products in the
// same order (the GEMM's row blocking does not change it, and a part keeps >= 3 rows, so it never
// takes the GEMM's one- or two-row path), and the gate updates are per element.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "cpu/thread_pool.hpp"
#include "recur/backend.hpp"
#include "recur/cancel.hpp"

namespace recur {
namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  void run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const override;
};

// Runs a job on `nt` threads split by units (1: on the calling thread); false when cancelled.
// `descending`: the direction of the first step over the weights (Cell::begin_descending).
bool run_units(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws, int nt, bool descending);
bool run_rows(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws, int nt, bool descending);

enum class Split { units, rows };

// The fewest rows a thread takes in a split by rows: whole tiles of the GEMM, and never the one- or
// two-row GEMM path, whose sums round differently.
constexpr Index kMinRowsPerThread = 8;

// RECUR_CPU_SPLIT=units|rows forces one way (for measuring them against each other); anything else
// lets the run choose.
const char* forced_split() {
  static const char* forced = [] {
    const char* v = std::getenv("RECUR_CPU_SPLIT");
    return v && (std::strcmp(v, "units") == 0 || std::strcmp(v, "rows") == 0) ? v : "";
  }();
  return forced;
}

struct Plan {
  int threads = 1;
  Split split = Split::units;
};

// Threads worth using and how to split the run between them: waking a thread costs microseconds,
// so small steps stay on the caller.
Plan plan_for(const Cell& cell, const SequenceJob& job) {
  int n = job.threads;
  if (n == 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n <= 1 || !cell.splittable() || job.recurrent_masks) return {};
  const double step_macs = static_cast<double>(job.batch) * cell.width() * (cell.units() + cell.input_size());
  // A part's rows are contiguous only in batch-major tensors: time-major runs split by units.
  const Index by_rows = job.time_major ? 1 : std::min<Index>(n, job.batch / kMinRowsPerThread);
  // Rows need no barrier per step, so they pay at any size; units share a wide layer's weights.
  // Each thread streams every recurrent weight when split by rows: worth it while they stay in its
  // cache (about 1 MiB), or when units would leave threads idle.
  const double weight_bytes = 4.0 * cell.width() * cell.units();
  const Index by_units = step_macs < 1e5 ? 1 : std::min<Index>(n, cell.panels_per_gate());
  Split split = by_rows > 1 && (weight_bytes <= (1 << 20) || by_units < by_rows) ? Split::rows : Split::units;
  if (by_rows > 1 && std::strcmp(forced_split(), "rows") == 0) split = Split::rows;
  if (by_units > 1 && std::strcmp(forced_split(), "units") == 0) split = Split::units;
  const Index threads = split == Split::rows ? by_rows : by_units;
  return {static_cast<int>(threads), split};
}

Index row_index_of(const SequenceJob& job, Index B, Index T, Index b, Index t) {
  return job.time_major ? t * B + b : b * T + t;
}

struct Run {
  const Cell& cell;
  const SequenceJob& job;
  SequenceWorkspace& ws;
  Index B, T, u, F, PW, chunk;
  int ns;
  bool first_descending;  // the first step's direction over the weights (Cell::begin_descending)
  float* buf[2][2];  // ping-pong states: [parity][h or c]
  // Cancellation: thread 0 reads the flag before a step's closing barrier and every thread reads
  // its verdict after it. Two slots by step parity: a slot is rewritten two barriers later, after
  // every thread has read it.
  bool stop[2] = {false, false};
  bool stopped = false;

  Index row_index(Index b, Index t) const { return row_index_of(job, B, T, b, t); }

  // Gathers rows [b0, b1) of the inputs of timesteps [k, k + n) in processing order, time-major
  // (each thread its share of the rows, so that none waits at the next barrier while one copies).
  void gather(Index k, Index n, Index b0, Index b1) {
    for (int g = 0; g < job.num_inputs; ++g) {
      auto& dst = ws.gathered[static_cast<std::size_t>(g)];
      for (Index j = 0; j < n; ++j) {
        const Index t = job.go_backwards ? T - 1 - (k + j) : k + j;
        for (Index b = b0; b < b1; ++b)
          std::memcpy(dst.data() + (j * B + b) * F, job.inputs[g] + row_index(b, t) * F,
                      static_cast<std::size_t>(F) * sizeof(float));
      }
    }
  }

  void body(int tid, int nt) {
    const Index ppg = cell.panels_per_gate();
    const Index q0 = ppg * tid / nt, q1 = ppg * (tid + 1) / nt;
    const Index nr = cell.kernels().nr;
    const Index j0 = std::min(q0 * nr, u), j1 = std::min(q1 * nr, u), nj = j1 - j0;
    const StepSync sync = nt > 1 ? cpu::ThreadPool::barrier_of : nullptr;
    void* pool = &cpu::ThreadPool::instance();
    const bool whole = chunk >= T;
    // Steps read the weights in alternate directions (serpentine order): when they overflow the
    // cache, the panels read last are still there for the next step, which reads them first.
    // Every output sums its products in the same order either way.
    auto descending = [&](Index k) { return ((k & 1) != 0) != first_descending; };
    bool products_ready = false;
    if (whole) {
      // One step reads every weight once: backwards, the recurrent ones first, as they were last.
      const bool backwards = T == 1 && descending(0);
      if (backwards) {
        cell.recurrent_products(buf[0][0], B, job.recurrent_masks, ws.step, q0, q1, true);
        products_ready = true;
      }
      // No meeting here: a thread's steps read only its own units' projections, and the first step's
      // h is the initial state, which nobody writes.
      cell.project(job.inputs, job.num_inputs, B * T, ws.projected.data(), PW, q0, q1, backwards);
    }
    const bool zero_masked = job.zero_output_for_mask && !job.unrolled_mask_quirk;
    float* out_t = ws.out_t.data();
    for (Index k = 0; k < T; ++k) {
      const Index t = job.go_backwards ? T - 1 - k : k;
      const float* xp;
      Index xp_stride;
      if (whole) {
        xp = ws.projected.data() + row_index(0, t) * PW;
        xp_stride = (job.time_major ? 1 : T) * PW;
      } else {
        const Index j = k % chunk;
        if (j == 0) {
          const Index n = std::min(chunk, T - k);
          gather(k, n, B * tid / nt, B * (tid + 1) / nt);
          if (sync) sync(pool);
          cell.project(ws.gathered_ptrs.data(), job.num_inputs, n * B, ws.projected.data(), PW, q0, q1);
          if (sync) sync(pool);
        }
        xp = ws.projected.data() + j * B * PW;
        xp_stride = PW;
      }
      const int p = static_cast<int>(k & 1);
      const float* in[2] = {buf[p][0], buf[p][1]};
      float* out[2] = {buf[p ^ 1][0], buf[p ^ 1][1]};
      cell.step_range(xp, xp_stride, B, in, out, job.recurrent_masks, ws.step, q0, q1, sync, pool,
                      {descending(k), k == 0 && products_ready});
      const std::size_t bytes = static_cast<std::size_t>(nj) * sizeof(float);
      if (!job.mask && nj == u && (job.time_major || T == 1)) {
        // Every step is valid and the step's rows are consecutive in the output (one-step calls,
        // time-major runs): the output is h itself, copied at once, and the last one kept too.
        const std::size_t all = static_cast<std::size_t>(B) * bytes;
        if (job.sequence_output) std::memcpy(job.sequence_output + row_index(0, k) * u, out[0], all);
        if (k == T - 1) std::memcpy(out_t, out[0], all);
      } else if (!job.mask) {
        // Every step is valid: the output is h itself, and the last one is kept once, at the end.
        for (Index b = 0; b < B; ++b) {
          const Index off = b * u + j0;
          if (job.sequence_output) std::memcpy(job.sequence_output + row_index(b, k) * u + j0, out[0] + off, bytes);
          if (k == T - 1) std::memcpy(out_t + off, out[0] + off, bytes);
        }
      } else {
        for (Index b = 0; b < B; ++b) {
          const Index off = b * u + j0;
          if (job.mask[row_index(b, t)]) {
            std::memcpy(out_t + off, out[0] + off, bytes);
          } else {
            // A masked step keeps the states, and the output repeats the previous one (or is 0).
            for (int s = 0; s < ns; ++s) std::memcpy(out[s] + off, in[s] + off, bytes);
            if (zero_masked) std::fill_n(out_t + off, nj, 0.0f);
          }
          if (job.sequence_output) std::memcpy(job.sequence_output + row_index(b, k) * u + j0, out_t + off, bytes);
        }
      }
      if (tid == 0 && (job.cancel || job.deadline_ns)) stop[k & 1] = cancelled(job.cancel) || past_deadline(job.deadline_ns);
      if (k + 1 == T) {
        // After the last step the pool's join is the only meeting needed (a stream step's only one).
        if (tid == 0 && stop[k & 1]) stopped = true;
        break;
      }
      if (sync) sync(pool);
      if (stop[k & 1]) {
        if (tid == 0) stopped = true;
        break;
      }
    }
  }
};

void CpuBackend::run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const {
  const Plan plan = plan_for(cell, job);
  const bool descending = cell.begin_descending(job.timesteps);
  if (plan.threads > 1 && plan.split == Split::rows)
    run_rows(cell, job, ws, plan.threads, descending);
  else
    run_units(cell, job, ws, plan.threads, descending);
}

// Timesteps whose inputs are projected at once. The steps of a chunk read its projection back
// while they read the recurrent weights every step: a chunk much bigger than L2 evicts the
// weights each time it is made. So a chunk holds about half of a 1 MB L2 (2^17 floats), or 256
// rows where that is more (a GEMM needs rows to run at speed, and weights that overflow L2 are
// streamed anyway), and never more than the memory budget. Measured on Zen 4 (1 MB L2), batch
// (32, 100, 64, 256): GRU and LSTM 2-7% faster than chunks of the whole 4 MB budget; large
// (64, 50, 512, 1024) the same (4 steps either way).
Index projection_chunk(Index B, Index T, Index PW, Index budget) {
  constexpr Index kL2Floats = Index(1) << 17, kMinRows = 256;
  const Index per_step = std::max<Index>(1, B * PW);
  const Index fit = std::max(kL2Floats / per_step, (kMinRows + B - 1) / std::max<Index>(1, B));
  return std::max<Index>(1, std::min({T, fit, budget / per_step}));
}

bool run_units(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws, int nt, bool descending) {
  const Index B = job.batch, T = job.timesteps, u = cell.units(), PW = cell.padded_width();
  const Index F = cell.input_size();
  const int ns = cell.num_states();
  const Index chunk = projection_chunk(B, T, PW, ws.projection_budget);
  Run run{cell, job, ws, B, T, u, F, PW, chunk, ns, descending, {}};

  // Everything threads share is sized here, before they start.
  ws.projected.resize(chunk >= T ? B * T : chunk * B, PW);
  if (chunk < T) {
    ws.gathered.resize(static_cast<std::size_t>(job.num_inputs));
    for (auto& g : ws.gathered) g.resize(static_cast<std::size_t>(chunk * B * F));
  }
  ws.gathered_ptrs.resize(static_cast<std::size_t>(job.num_inputs));
  if (chunk < T)
    for (std::size_t g = 0; g < ws.gathered.size(); ++g) ws.gathered_ptrs[g] = ws.gathered[g].data();
  cell.prepare(ws.step, B);
  ws.next.resize(static_cast<std::size_t>(ns));
  for (int s = 0; s < ns; ++s) {
    ws.next[static_cast<std::size_t>(s)].resize(B, u);
    run.buf[0][s] = job.states[s].data();
    run.buf[1][s] = ws.next[static_cast<std::size_t>(s)].data();
  }
  // The "previous output" of a masked step starts at zeros (not h0) unless a stream carries one.
  if (job.output_starts_at_state)
    ws.out_t = job.states[0];  // JAX carries h itself, which a masked step leaves unchanged
  else if (job.carried_output && job.carried_output->rows() == B && job.carried_output->cols() == u)
    take_rows(ws.out_t, *job.carried_output, 0, B);
  else
    ws.out_t.setZero(B, u);

  auto task = [](void* r, int t, int n) { static_cast<Run*>(r)->body(t, n); };
  if (nt <= 1 || !cpu::ThreadPool::instance().run(nt, task, &run)) run.body(0, 1);
  if (run.stopped) return false;  // cancelled: the caller throws, and restores what the run touched
  // The final states are in the buffer the last step wrote.
  if (T & 1)
    for (int s = 0; s < ns; ++s) job.states[s].swap(ws.next[static_cast<std::size_t>(s)]);

  if (job.mask && job.unrolled_mask_quirk && job.zero_output_for_mask) {
    // Keras (unroll=True) zeroes the stacked outputs with the mask in input order, although the
    // outputs are in processing order; the last output uses the right (last processed) step.
    if (job.sequence_output)
      for (Index b = 0; b < B; ++b)
        for (Index k = 0; k < T; ++k)
          if (!job.mask[row_index_of(job, B, T, b, k)])
            std::fill_n(job.sequence_output + row_index_of(job, B, T, b, k) * u, u, 0.0f);
    const Index t_last = job.go_backwards ? 0 : T - 1;
    for (Index b = 0; b < B; ++b)
      if (T > 0 && !job.mask[row_index_of(job, B, T, b, t_last)]) ws.out_t.row(b).setZero();
  }
  if (job.last_output) std::memcpy(job.last_output, ws.out_t.data(), static_cast<std::size_t>(B * u) * sizeof(float));
  // The run is over: its last output becomes the carried one (ws.out_t is rebuilt by every run).
  if (job.carried_output) job.carried_output->swap(ws.out_t);
  return true;
}

// One thread's rows [b0, b1) of a job split by rows, as a job of its own over copies of its rows'
// states (row-major (B, u) matrices: a part's rows are contiguous in them and in every
// batch-major tensor).
struct RowPart {
  SequenceJob job;
  std::vector<const float*> inputs;
  std::vector<RowMatrix> states;
  RowMatrix carried;
  SequenceWorkspace* ws = nullptr;
  Index b0 = 0, b1 = 0;
  bool done = false;
};

struct RowRun {
  const Cell& cell;
  std::vector<RowPart>& parts;
  bool descending;
  static void task(void* r, int t, int) {
    auto& run = *static_cast<RowRun*>(r);
    RowPart& p = run.parts[static_cast<std::size_t>(t)];
    p.done = run_units(run.cell, p.job, *p.ws, 1, run.descending);
  }
};

bool run_rows(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws, int nt, bool descending) {
  const Index B = job.batch, T = job.timesteps, u = cell.units(), F = cell.input_size();
  const int ns = cell.num_states();
  if (ws.parts.size() < static_cast<std::size_t>(nt)) ws.parts.resize(static_cast<std::size_t>(nt));
  // Kept from call to call (per calling thread), so steady-state runs do not allocate.
  thread_local std::vector<RowPart> parts;
  if (parts.size() < static_cast<std::size_t>(nt)) parts.resize(static_cast<std::size_t>(nt));
  const bool carried_in = job.carried_output && job.carried_output->rows() == B && job.carried_output->cols() == u;
  for (int t = 0; t < nt; ++t) {
    RowPart& p = parts[static_cast<std::size_t>(t)];
    p.b0 = B * t / nt;
    p.b1 = B * (t + 1) / nt;
    const Index nb = p.b1 - p.b0;
    p.ws = &ws.parts[static_cast<std::size_t>(t)];
    p.ws->projection_budget = std::max<Index>(1, ws.projection_budget / nt);
    p.job = job;
    p.job.batch = nb;
    p.job.threads = 1;
    p.inputs.resize(static_cast<std::size_t>(job.num_inputs));
    for (int g = 0; g < job.num_inputs; ++g) p.inputs[static_cast<std::size_t>(g)] = job.inputs[g] + p.b0 * T * F;
    p.job.inputs = p.inputs.data();
    if (job.mask) p.job.mask = job.mask + p.b0 * T;
    if (job.sequence_output) p.job.sequence_output = job.sequence_output + p.b0 * T * u;
    if (job.last_output) p.job.last_output = job.last_output + p.b0 * u;
    p.states.resize(static_cast<std::size_t>(ns));
    for (int s = 0; s < ns; ++s) p.states[static_cast<std::size_t>(s)] = job.states[s].middleRows(p.b0, nb);
    p.job.states = p.states.data();
    if (job.carried_output) {
      if (carried_in)
        p.carried = job.carried_output->middleRows(p.b0, nb);
      else
        p.carried.resize(0, 0);
      p.job.carried_output = &p.carried;
    }
  }
  RowRun run{cell, parts, descending};
  if (!cpu::ThreadPool::instance().run(nt, RowRun::task, &run))
    for (int t = 0; t < nt; ++t) RowRun::task(&run, t, nt);
  for (int t = 0; t < nt; ++t)
    if (!parts[static_cast<std::size_t>(t)].done) return false;  // cancelled: the caller throws and restores
  for (int t = 0; t < nt; ++t) {
    const RowPart& p = parts[static_cast<std::size_t>(t)];
    for (int s = 0; s < ns; ++s) job.states[s].middleRows(p.b0, p.b1 - p.b0) = p.states[static_cast<std::size_t>(s)];
  }
  if (job.carried_output) {
    job.carried_output->resize(B, u);
    for (int t = 0; t < nt; ++t) {
      const RowPart& p = parts[static_cast<std::size_t>(t)];
      job.carried_output->middleRows(p.b0, p.b1 - p.b0) = p.carried;
    }
  }
  return true;
}

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace recur
