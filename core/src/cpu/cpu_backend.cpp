// SPDX-License-Identifier: Apache-2.0
// The CPU backend: one GEMM for the input projection of every timestep (or of chunks of timesteps,
// for long sequences), then the recurrent loop with Keras's generic masking semantics. With
// several threads, each owns the same slice of units (whole kernel panels) of every gate for the
// whole sequence: its slice of the projection, of the recurrent GEMM, of the gate updates and of
// the outputs, so threads meet only once per step (twice for GRU reset_after=False) and results
// do not depend on the thread count.
#include <algorithm>
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

// Threads worth using: waking a thread costs microseconds, so small steps stay on the caller.
int threads_for(const Cell& cell, const SequenceJob& job) {
  int n = job.threads;
  if (n == 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n <= 1 || !cell.splittable() || job.recurrent_masks) return 1;
  const double macs = static_cast<double>(job.batch) * cell.width() * (cell.units() + cell.input_size());
  if (macs < 1e5) return 1;
  return static_cast<int>(std::min<Index>(n, cell.panels_per_gate()));
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
  float* buf[2][2];  // ping-pong states: [parity][h or c]
  // Cancellation: thread 0 reads the flag before a step's closing barrier and every thread reads
  // its verdict after it. Two slots by step parity: a slot is rewritten two barriers later, after
  // every thread has read it.
  bool stop[2] = {false, false};
  bool stopped = false;

  Index row_index(Index b, Index t) const { return row_index_of(job, B, T, b, t); }

  // Gathers the inputs of timesteps [k, k + n) in processing order, time-major (one thread).
  void gather(Index k, Index n) {
    for (int g = 0; g < job.num_inputs; ++g) {
      auto& dst = ws.gathered[static_cast<std::size_t>(g)];
      for (Index j = 0; j < n; ++j) {
        const Index t = job.go_backwards ? T - 1 - (k + j) : k + j;
        for (Index b = 0; b < B; ++b)
          std::memcpy(dst.data() + (j * B + b) * F, job.inputs[g] + row_index(b, t) * F,
                      static_cast<std::size_t>(F) * sizeof(float));
      }
      ws.gathered_ptrs[static_cast<std::size_t>(g)] = dst.data();
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
    if (whole) {
      cell.project(job.inputs, job.num_inputs, B * T, ws.projected.data(), PW, q0, q1);
      if (sync) sync(pool);
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
          if (tid == 0) gather(k, n);
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
      cell.step_range(xp, xp_stride, B, in, out, job.recurrent_masks, ws.step, q0, q1, sync, pool);
      for (Index b = 0; b < B; ++b) {
        const Index off = b * u + j0;
        const std::size_t bytes = static_cast<std::size_t>(nj) * sizeof(float);
        if (!job.mask || job.mask[row_index(b, t)]) {
          std::memcpy(out_t + off, out[0] + off, bytes);
        } else {
          // A masked step keeps the states, and the output repeats the previous one (or is 0).
          for (int s = 0; s < ns; ++s) std::memcpy(out[s] + off, in[s] + off, bytes);
          if (zero_masked) std::fill_n(out_t + off, nj, 0.0f);
        }
        if (job.sequence_output) std::memcpy(job.sequence_output + row_index(b, k) * u + j0, out_t + off, bytes);
      }
      if (tid == 0 && (job.cancel || job.deadline_ns)) stop[k & 1] = cancelled(job.cancel) || past_deadline(job.deadline_ns);
      if (sync) sync(pool);
      if (stop[k & 1]) {
        if (tid == 0) stopped = true;
        break;
      }
    }
  }
};

void CpuBackend::run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const {
  const Index B = job.batch, T = job.timesteps, u = cell.units(), PW = cell.padded_width();
  const Index F = cell.input_size();
  const int ns = cell.num_states();
  const Index chunk = std::max<Index>(1, std::min<Index>(T, ws.projection_budget / std::max<Index>(1, B * PW)));
  Run run{cell, job, ws, B, T, u, F, PW, chunk, ns, {}};

  // Everything threads share is sized here, before they start.
  ws.projected.resize(chunk >= T ? B * T : chunk * B, PW);
  if (chunk < T) {
    ws.gathered.resize(static_cast<std::size_t>(job.num_inputs));
    for (auto& g : ws.gathered) g.resize(static_cast<std::size_t>(chunk * B * F));
  }
  ws.gathered_ptrs.resize(static_cast<std::size_t>(job.num_inputs));
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
    ws.out_t = *job.carried_output;
  else
    ws.out_t.setZero(B, u);

  const int nt = threads_for(cell, job);
  auto task = [](void* r, int t, int n) { static_cast<Run*>(r)->body(t, n); };
  if (nt <= 1 || !cpu::ThreadPool::instance().run(nt, task, &run)) run.body(0, 1);
  if (run.stopped) return;  // cancelled: the caller throws, and restores what the run touched
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
  if (job.carried_output) *job.carried_output = ws.out_t;
}

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace recur
