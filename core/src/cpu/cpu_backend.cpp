// The Eigen CPU backend: one GEMM for the input projection of every timestep, then the
// recurrent loop with Keras's generic masking semantics.
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
  cell.project(job.inputs, job.num_inputs, B * T, ws.projected);

  ws.next.resize(static_cast<std::size_t>(ns));
  for (auto& m : ws.next) m.resize(B, u);
  RowMatrix* cur = job.states;
  RowMatrix* next = ws.next.data();
  ws.out_t.setZero(B, u);  // the "previous output" of a masked step starts at zeros, not h0

  const Index xp_stride = (job.time_major ? 1 : T) * W;
  auto row_index = [&](Index b, Index t) { return job.time_major ? t * B + b : b * T + t; };

  for (Index k = 0; k < T; ++k) {
    const Index t = job.go_backwards ? T - 1 - k : k;
    const float* xp = ws.projected.data() + row_index(0, t) * W;
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
}

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace recur
