// SPDX-License-Identifier: Apache-2.0
#include "recur/cell.hpp"

#include "recur/activations.hpp"
#include "recur/error.hpp"

namespace recur {

Cell::Cell(const LayerConfig& c)
    : gru_(c.is_gru()),
      lstm_(c.is_lstm()),
      reset_after_(c.is_gru() && c.reset_after),
      use_bias_(c.use_bias),
      // Keras: GRU and SimpleRNN add the input bias to x@K; LSTM implementation 1 too.
      bias_in_projection_(c.use_bias && (!c.is_lstm() || c.effective_implementation() == 1) &&
                          c.kind != LayerKind::cudnn_lstm),
      units_(c.units),
      input_size_(c.input_size),
      gates_(c.gates()),
      activation_(act_spec(c.activation)),
      recurrent_activation_(act_spec(c.recurrent_activation)),
      kernels_(&cpu::cpu_kernels()),
      panels_per_gate_(kernels_->panels(c.units)) {}

namespace {

// Packs the gate blocks of a (k, G*u) matrix one after the other, each padded to whole panels, into
// `out` (in place when it has the size already, so a weight update needs no second copy).
void pack_gates(const cpu::KernelSet& k, const float* m, Index rows, int gates, Index u, Index ppg,
                std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(gates * ppg * rows * k.nr));
  for (int g = 0; g < gates; ++g) k.pack(m + g * u, gates * u, rows, u, out.data() + g * ppg * rows * k.nr);
}

std::vector<float> pad_gates(const float* bias, int gates, Index u, Index up) {
  if (!bias) return {};
  std::vector<float> out(static_cast<std::size_t>(gates * up), 0.0f);
  for (int g = 0; g < gates; ++g) std::copy(bias + g * u, bias + (g + 1) * u, out.begin() + g * up);
  return out;
}

// The inverse of pack_gates.
void unpack_gates(const std::vector<float>& packed, Index rows, int gates, Index u, Index ppg, Index nr, float* m) {
  for (int g = 0; g < gates; ++g)
    for (Index p = 0; p < ppg; ++p)
      for (Index kk = 0; kk < rows; ++kk) {
        const float* src = packed.data() + ((g * ppg + p) * rows + kk) * nr;
        for (Index j = 0; j < nr && p * nr + j < u; ++j) m[kk * gates * u + g * u + p * nr + j] = src[j];
      }
}

}  // namespace

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::bf16: return "bf16";
    case Precision::int8: return "int8";
    default: return "float32";
  }
}

Precision parse_precision(const std::string& name, const char* what) {
  if (name == "float32") return Precision::float32;
  if (name == "bf16") return Precision::bf16;
  if (name == "int8") return Precision::int8;
  fail(Error::Code::invalid_argument, what, ": unknown precision \"", name,
       "\"; expected \"float32\" (the default, Keras's numbers), \"bf16\" or \"int8\"");
}

void Cell::pack_matrix(const float* m, Index rows, Packed& out) const {
  pack_gates(*kernels_, m, rows, gates_, units_, panels_per_gate_, out.f32);
  pack_reduced(rows, out);
}

// The reduced copy, from the packed float32 weights (unpacked gate by gate).
void Cell::pack_reduced(Index rows, Packed& out) const {
  out.bf16 = {};
  out.i8 = {};
  out.scales = {};
  out.colsums = {};
  if (precision_ == Precision::float32 || out.f32.empty()) return;
  const cpu::KernelSet& k = *kernels_;
  const Index nr = k.nr, width = gates_ * units_;
  std::vector<float> m(static_cast<std::size_t>(rows * width));
  unpack_gates(out.f32, rows, gates_, units_, panels_per_gate_, nr, m.data());
  if (precision_ == Precision::bf16) {
    const Index panel = k.bf16_panel(rows);
    out.bf16.resize(static_cast<std::size_t>(gates_ * panels_per_gate_ * panel));
    for (int g = 0; g < gates_; ++g)
      k.pack_bf16(m.data() + g * units_, width, rows, units_, out.bf16.data() + g * panels_per_gate_ * panel);
    return;
  }
  const Index panel_bytes = k.i8_panel_bytes(rows), cols = gates_ * panels_per_gate_ * nr;
  out.i8.resize(static_cast<std::size_t>(gates_ * panels_per_gate_ * panel_bytes));
  out.scales.resize(static_cast<std::size_t>(cols));
  out.colsums.resize(static_cast<std::size_t>(cols));
  for (int g = 0; g < gates_; ++g)
    k.pack_i8(m.data() + g * units_, width, rows, units_, out.i8.data() + g * panels_per_gate_ * panel_bytes,
              out.scales.data() + g * panels_per_gate_ * nr, out.colsums.data() + g * panels_per_gate_ * nr);
}

void Cell::set_precision(Precision p) {
  if (p == Precision::int8 && (input_size_ > cpu::kMaxInt8Depth || units_ > cpu::kMaxInt8Depth))
    fail(Error::Code::unsupported, "precision \"int8\": the input size (", input_size_, ") and units (", units_,
         ") must be at most ", cpu::kMaxInt8Depth, " (int8 dot products sum in int32); use \"bf16\" or \"float32\"");
  precision_ = p;
  pack_reduced(input_size_, kernel_);
  pack_reduced(units_, recurrent_);
}

void Cell::pack_kernel(const float* kernel) { pack_matrix(kernel, input_size_, kernel_); }

void Cell::pack_recurrent(const float* recurrent) { pack_matrix(recurrent, units_, recurrent_); }

void Cell::set_biases(const float* input_bias, const float* recurrent_bias) {
  const Index up = padded_units();
  input_bias_ = pad_gates(use_bias_ ? input_bias : nullptr, gates_, units_, up);
  recurrent_bias_ = pad_gates(reset_after_ && use_bias_ ? recurrent_bias : nullptr, gates_, units_, up);
}

void Cell::unpack_kernel(float* kernel) const {
  unpack_gates(kernel_.f32, input_size_, gates_, units_, panels_per_gate_, kernels_->nr, kernel);
}

void Cell::unpack_recurrent(float* recurrent) const {
  unpack_gates(recurrent_.f32, units_, gates_, units_, panels_per_gate_, kernels_->nr, recurrent);
}

void Cell::set_weights(const float* kernel, const float* recurrent, const float* input_bias,
                       const float* recurrent_bias) {
  pack_kernel(kernel);
  pack_recurrent(recurrent);
  set_biases(input_bias, recurrent_bias);
}

void Cell::set_params(const CellParams& p) {
  set_weights(p.kernel.data(), p.recurrent.data(), p.input_bias.size() ? p.input_bias.data() : nullptr,
              p.recurrent_bias.size() ? p.recurrent_bias.data() : nullptr);
}

const Cell::QuantizedRows* Cell::quantize(const float* a, Index lda, Index rows, Index k) const {
  // Per thread: threads sharing a step each quantize the whole rows (the same numbers) for their
  // own panels.
  thread_local QuantizedRows buf;
  if (precision_ == Precision::bf16 && kernels_->gemm_bf16r) {
    buf.ldq = (k + 1) / 2 * 2;
    if (buf.bf16.size() < static_cast<std::size_t>(rows * buf.ldq))
      buf.bf16.resize(static_cast<std::size_t>(rows * buf.ldq));
    kernels_->round_rows_bf16(rows, k, a, lda, buf.bf16.data(), buf.ldq);
    return &buf;
  }
  if (precision_ != Precision::int8) return nullptr;
  buf.ldq = (k + 3) / 4 * 4;
  if (buf.q.size() < static_cast<std::size_t>(rows * buf.ldq)) buf.q.resize(static_cast<std::size_t>(rows * buf.ldq));
  if (buf.scale.size() < static_cast<std::size_t>(rows)) {
    buf.scale.resize(static_cast<std::size_t>(rows));
    buf.zero.resize(static_cast<std::size_t>(rows));
  }
  kernels_->quantize_rows(rows, k, a, lda, buf.q.data(), buf.ldq, buf.scale.data(), buf.zero.data());
  return &buf;
}

void Cell::gate_gemm(const Packed& packed, Index k, int gate, int count, const float* a, Index lda, Index rows,
                     float* c, Index ldc, const std::vector<float>& bias, Index q0, Index q1,
                     const QuantizedRows* quantized, bool descending) const {
  const Index nr = kernels_->nr, up = padded_units();
  // Every panel of consecutive gates is one run of panels (and of columns of c and the bias): one
  // product, whose last panels of a gate share registers with the next gate's first.
  const bool whole = q0 == 0 && q1 == panels_per_gate_;
  const int calls = whole ? 1 : count;
  const Index panels = whole ? count * panels_per_gate_ : q1 - q0;
  for (int i = 0; i < calls; ++i) {
    const int g = descending ? gate + calls - 1 - i : gate + i;
    const Index first = g * panels_per_gate_ + q0;
    float* out = c + g * up + q0 * nr;
    const float* b = bias.empty() ? nullptr : bias.data() + g * up + q0 * nr;
    switch (precision_) {
      case Precision::bf16:
        if (quantized)
          kernels_->gemm_bf16r(rows, k, quantized->bf16.data(), quantized->ldq,
                               packed.bf16.data() + first * kernels_->bf16_panel(k), panels, out, ldc, b);
        else
          kernels_->gemm_bf16(rows, k, a, lda, packed.bf16.data() + first * kernels_->bf16_panel(k), panels, out,
                              ldc, b);
        break;
      case Precision::int8:
        if (quantized)
          kernels_->gemm_i8q(rows, k, quantized->q.data(), quantized->ldq, quantized->scale.data(),
                             quantized->zero.data(), packed.i8.data() + first * kernels_->i8_panel_bytes(k),
                             packed.scales.data() + first * nr, packed.colsums.data() + first * nr, panels, out, ldc,
                             b);
        else
          kernels_->gemm_i8(rows, k, a, lda, packed.i8.data() + first * kernels_->i8_panel_bytes(k),
                            packed.scales.data() + first * nr, packed.colsums.data() + first * nr, panels, out, ldc,
                            b);
        break;
      default:
        (descending ? kernels_->gemm_descending : kernels_->gemm)(rows, k, a, lda, packed.f32.data() + first * k * nr,
                                                                  panels, out, ldc, b);
    }
  }
}

void Cell::project(const float* const* xs, int n_x, Index rows, float* out, Index ldo, Index q0, Index q1,
                   bool descending) const {
  static const std::vector<float> none;
  const std::vector<float>& bias = bias_in_projection_ ? input_bias_ : none;
  // One input for every gate: one product over all of them, and int8 quantizes it once (bf16 with
  // vdpbf16ps rounds it once).
  if (n_x == 1)
    return gate_gemm(kernel_, input_size_, 0, gates_, xs[0], input_size_, rows, out, ldo, bias, q0, q1,
                     quantize(xs[0], input_size_, rows, input_size_), descending);
  for (int i = 0; i < gates_; ++i) {
    const int g = descending ? gates_ - 1 - i : i;
    gate_gemm(kernel_, input_size_, g, 1, xs[g], input_size_, rows, out, ldo, bias, q0, q1, nullptr, descending);
  }
}

void Cell::project(const float* const* xs, int n_x, Index rows, RowMatrix& out) const {
  out.resize(rows, padded_width());
  project(xs, n_x, rows, out.data(), padded_width(), 0, panels_per_gate_);
}

void Cell::prepare(StepWorkspace& ws, Index batch) const {
  ws.pre.resize(batch, padded_width());
  if (gru_ && !reset_after_) ws.rh.resize(batch, units_);
}

bool Cell::begin_descending(Index steps) const {
  const bool d = next_direction_.descending.load(std::memory_order_relaxed);
  next_direction_.descending.store(d != ((steps & 1) != 0), std::memory_order_relaxed);
  return d;
}

void Cell::recurrent_products(const float* h, Index batch, const std::vector<RowMatrix>* masks, StepWorkspace& ws,
                              Index q0, Index q1, bool descending) const {
  const Index u = units_, pw = padded_width();
  float* pre = ws.pre.data();
  // Recurrent products (+ the recurrent bias of GRU reset_after) of the gates computed from h;
  // with dropout, each gate sees h ⊙ its own mask.
  const int from_h = gru_ && !reset_after_ ? 2 : gates_;
  if (!masks) {
    gate_gemm(recurrent_, u, 0, from_h, h, u, batch, pre, pw, recurrent_bias_, q0, q1, quantize(h, u, batch, u),
              descending);
  } else {
    ws.masked.resize(batch, u);
    for (int i = 0; i < from_h; ++i) {
      const int g = descending ? from_h - 1 - i : i;
      kernels_->multiply(h, (*masks)[static_cast<std::size_t>(g)].data(), ws.masked.data(), batch * u);
      gate_gemm(recurrent_, u, g, 1, ws.masked.data(), u, batch, pre, pw, recurrent_bias_, q0, q1, nullptr,
                descending);
    }
  }
}

void Cell::step_range(const float* xp, Index xp_stride, Index batch, const float* const* in, float* const* out,
                      const std::vector<RowMatrix>* masks, StepWorkspace& ws, Index q0, Index q1, StepSync sync,
                      void* sync_context, StepOrder order) const {
  const Index u = units_, pw = padded_width(), nr = kernels_->nr;
  float* pre = ws.pre.data();
  const float* h = in[0];
  if (!order.products_ready) recurrent_products(h, batch, masks, ws, q0, q1, order.descending);

  cpu::GateArgs args;
  args.batch = batch;
  args.units = u;
  args.j0 = q0 * nr;
  args.j1 = std::min<Index>(q1 * nr, u);
  args.xp = xp;
  args.xp_stride = xp_stride;
  args.pre = pre;
  args.pre_stride = pw;
  args.gate_stride = padded_units();
  args.h = h;
  args.h_out = out[0];
  args.act = activation_;
  args.ract = recurrent_activation_;
  if (!gru_ && !lstm_) {
    // SimpleRNN: h' = act((x@K + b) + h@U)
    kernels_->simple_rnn_update(args);
    return;
  }
  if (lstm_) {
    args.c = in[1];
    args.c_out = out[1];
    if (use_bias_ && !bias_in_projection_) args.bias = input_bias_.data();
    kernels_->lstm_update(args);
    return;
  }
  args.reset_after = reset_after_;
  if (!reset_after_) {
    args.rh = ws.rh.data();
    if (masks) args.hmask = (*masks)[2].data();
  }
  kernels_->gru_gates(args);
  if (!reset_after_) {
    // ĥ's GEMM reads r ⊙ h over every unit: wait for the other threads' units first. It comes last
    // in either order, so it reads ascending always (measured: 12 us against 13-15 for a stream
    // step of GRU(256), 256 inputs, on Zen 5).
    if (sync) sync(sync_context);
    gate_gemm(recurrent_, u, 2, 1, ws.rh.data(), u, batch, pre, pw, recurrent_bias_, q0, q1);
  }
  kernels_->gru_update(args);
}

void Cell::step(const float* xp, Index xp_stride, Index batch, const RowMatrix* in, RowMatrix* out,
                const std::vector<RowMatrix>* masks, StepWorkspace& ws) const {
  prepare(ws, batch);
  const float* in_ptrs[2] = {in[0].data(), lstm_ ? in[1].data() : nullptr};
  float* out_ptrs[2];
  for (int s = 0; s < num_states(); ++s) {
    out[s].resize(batch, units_);
    out_ptrs[s] = out[s].data();
  }
  step_range(xp, xp_stride, batch, in_ptrs, out_ptrs, masks, ws, 0, panels_per_gate_, nullptr, nullptr);
}

}  // namespace recur
