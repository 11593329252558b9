// The Eigen CPU backend: one GEMM for the input projection of every timestep (or of chunks of
// timesteps, for long sequences), then the recurrent loop with Keras's generic masking semantics.
#include <algorithm>
#include <cstring>

#include "recur/backend.hpp"

namespace recur {
namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  void run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const override;
};

void CpuBackend::run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const {
  const Index B = job.batch, T = job.timesteps, u = cell.units(), W = cell.width();
  const int ns = cell.num_states();
  const Index F = cell.input_size();
  const Index chunk = std::max<Index>(1, std::min<Index>(T, ws.projection_budget / std::max<Index>(1, B * W)));
  auto row_index = [&](Index b, Index t) { return job.time_major ? t * B + b : b * T + t; };
  if (chunk >= T) cell.project(job.inputs, job.num_inputs, B * T, ws.projected);
  ws.gathered.resize(static_cast<std::size_t>(job.num_inputs));
  std::vector<const float*> gathered_ptrs(static_cast<std::size_t>(job.num_inputs));

  ws.next.resize(static_cast<std::size_t>(ns));
  for (auto& m : ws.next) m.resize(B, u);
  RowMatrix* cur = job.states;
  RowMatrix* next = ws.next.data();
  // The "previous output" of a masked step starts at zeros (not h0) unless a stream carries one.
  if (job.carried_output && job.carried_output->rows() == B && job.carried_output->cols() == u)
    ws.out_t = *job.carried_output;
  else
    ws.out_t.setZero(B, u);

  for (Index k = 0; k < T; ++k) {
    const Index t = job.go_backwards ? T - 1 - k : k;
    const float* xp;
    Index xp_stride;
    if (chunk >= T) {
      xp = ws.projected.data() + row_index(0, t) * W;
      xp_stride = (job.time_major ? 1 : T) * W;
    } else {
      const Index j = k % chunk;
      if (j == 0) {
        // Gather the next chunk's inputs in processing order, time-major, then project them.
        const Index n = std::min(chunk, T - k);
        for (int g = 0; g < job.num_inputs; ++g) {
          auto& buf = ws.gathered[static_cast<std::size_t>(g)];
          buf.resize(static_cast<std::size_t>(n * B * F));
          for (Index jj = 0; jj < n; ++jj) {
            const Index tt = job.go_backwards ? T - 1 - (k + jj) : k + jj;
            for (Index b = 0; b < B; ++b)
              std::memcpy(buf.data() + (jj * B + b) * F, job.inputs[g] + row_index(b, tt) * F,
                          static_cast<std::size_t>(F) * sizeof(float));
          }
          gathered_ptrs[static_cast<std::size_t>(g)] = buf.data();
        }
        cell.project(gathered_ptrs.data(), job.num_inputs, n * B, ws.projected);
      }
      xp = ws.projected.data() + j * B * W;
      xp_stride = W;
    }
    cell.step(xp, xp_stride, B, cur, next, job.recurrent_masks, ws.step);
    if (!job.mask) {
      for (int s = 0; s < ns; ++s) cur[s].swap(next[s]);
      ws.out_t = cur[0];
    } else {
      const bool zero_masked = job.zero_output_for_mask && !job.unrolled_mask_quirk;
      for (Index b = 0; b < B; ++b) {
        if (job.mask[row_index(b, t)]) {
          for (int s = 0; s < ns; ++s) cur[s].row(b) = next[s].row(b);
          ws.out_t.row(b) = cur[0].row(b);
        } else if (zero_masked) {
          ws.out_t.row(b).setZero();
        }  // else: state and previous output carry over unchanged
      }
    }
    if (job.sequence_output) {
      for (Index b = 0; b < B; ++b) {
        float* dst = job.sequence_output + row_index(b, k) * u;
        std::memcpy(dst, ws.out_t.data() + b * u, static_cast<std::size_t>(u) * sizeof(float));
      }
    }
  }

  if (job.mask && job.unrolled_mask_quirk && job.zero_output_for_mask) {
    // Keras (unroll=True) zeroes the stacked outputs with the mask in input order, although the
    // outputs are in processing order; the last output uses the right (last processed) step.
    if (job.sequence_output)
      for (Index b = 0; b < B; ++b)
        for (Index k = 0; k < T; ++k)
          if (!job.mask[row_index(b, k)])
            std::fill_n(job.sequence_output + row_index(b, k) * u, u, 0.0f);
    const Index t_last = job.go_backwards ? 0 : T - 1;
    for (Index b = 0; b < B; ++b)
      if (T > 0 && !job.mask[row_index(b, t_last)]) ws.out_t.row(b).setZero();
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
