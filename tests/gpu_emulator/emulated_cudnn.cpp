// SPDX-License-Identifier: Apache-2.0
// The CPU-only emulator's cuDNN route: a host model of cudnnRNNForward (cuDNN's weight layout,
// equations, zero padding and final states), followed by the same checks, planning and
// post-processing as the real route (cudnn_post.hpp). "Device" pointers are host pointers here.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda/cudnn_post.hpp"
#include "cuda/cudnn_route.hpp"

namespace recur::cuda {
namespace {

namespace post = cudnn_post;

// The weight space as cuDNN 9 lays out one unidirectional layer with DOUBLE_BIAS (cudnn_rnn.md
// §1.4; the real route checks the core's regions against cudnnGetRNNWeightParams instead): every
// matrix in linLayerID order, row-major (hidden x input or hidden x hidden), then every bias.
class WeightLayout {
 public:
  explicit WeightLayout(const recur_gpu_layer_desc& d)
      : gates_(d.cell == RECUR_GPU_CELL_GRU ? 3 : 4), units_(d.units), input_(d.input_size) {}

  int64_t cols(int id) const { return id < gates_ ? input_ : units_; }
  int64_t matrices() const { return int64_t(gates_) * units_ * (input_ + units_); }
  int64_t size() const { return matrices() + int64_t(2) * gates_ * units_; }

  post::ParamPlace matrix(int id) const {
    post::ParamPlace p;
    p.offset = id < gates_ ? int64_t(id) * units_ * input_
                           : int64_t(gates_) * units_ * input_ + int64_t(id - gates_) * units_ * units_;
    p.rows = units_;
    p.cols = cols(id);
    return p;
  }
  post::ParamPlace bias(int id) const {
    post::ParamPlace p;
    p.offset = matrices() + int64_t(id) * units_;
    p.rows = units_;
    p.cols = 1;
    return p;
  }

 private:
  int gates_;
  int64_t units_;
  int64_t input_;
};

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

class EmulatedCudnnRoute final : public CudnnRoute {
 public:
  explicit EmulatedCudnnRoute(const recur_gpu_layer_desc& desc) : desc_(desc), layout_(desc) {}

  int set_weights(const recur_gpu_weights& w, std::string& err) override {
    ready_ = false;
    if (!w.cudnn_params || w.cudnn_params_len <= 0) {
      err = "the cuDNN route needs the packed cuDNN weight space (cudnn_params)";
      return RECUR_GPU_ERR_INVALID;
    }
    const int64_t size = layout_.size();
    if (w.cudnn_params_len != size) {
      err = "cuDNN's weight space for this layer is " + std::to_string(size * 4) + " bytes (" + std::to_string(size) +
            " floats), recur packed " + std::to_string(w.cudnn_params_len) + " floats (" +
            std::to_string(w.cudnn_params_len * 4) + " bytes)";
      return RECUR_GPU_ERR_INVALID;
    }
    auto query = [this](int id, post::ParamPlace& matrix, post::ParamPlace& bias, std::string&) {
      matrix = layout_.matrix(id);
      bias = layout_.bias(id);
      return RECUR_GPU_OK;
    };
    if (int rc = post::check_regions(desc_, w, query, err)) return rc;
    params_.assign(w.cudnn_params, w.cudnn_params + size);
    // Read through the core's regions (checked equal to the layout above), as cuDNN reads its own.
    const int n = post::lin_layer_count(desc_);
    matrix_at_.assign(static_cast<size_t>(n), 0);
    bias_at_.assign(static_cast<size_t>(n), 0);
    for (int32_t k = 0; k < w.num_regions; ++k) {
      const recur_gpu_cudnn_region& g = w.regions[k];
      (g.is_bias ? bias_at_ : matrix_at_)[static_cast<size_t>(g.lin_layer_id)] = g.offset;
    }
    ready_ = true;
    return RECUR_GPU_OK;
  }

  int run(const recur_gpu_run& r, void*, std::string& err) override {
    if (!ready_) {
      err = "the cuDNN route ran before its weights were set";
      return RECUR_GPU_ERR_INVALID;
    }
    post::RunPlan p;
    if (int rc = post::plan_run(r, p, err)) return rc;
    if (r.batch == 0) return RECUR_GPU_OK;
    const int64_t B = r.batch, T = r.timesteps, u = desc_.units, F = desc_.input_size;
    const int ns = desc_.cell == RECUR_GPU_CELL_GRU ? 1 : 2;
    const int64_t rows = B * T;
    std::vector<float> x_rev, y_tmp, hy(static_cast<size_t>(ns * B * u));

    post::PostArgs a = post::post_args(r, desc_, p.lengths.data(), hy.data());
    if (T > 0) {
      const float* x = r.inputs[0];
      if (r.go_backwards) {
        x_rev.resize(static_cast<size_t>(rows * F));
        a.x = x;
        a.x_rev = x_rev.data();
        for (int64_t i = 0; i < rows * F; ++i) post::reverse_input_element(a, i);
        x = x_rev.data();
      }
      float* y = r.sequence_output;
      if (!p.direct) {
        y_tmp.resize(static_cast<size_t>(rows * u));
        y = y_tmp.data();
      }
      forward(B, T, r.time_major != 0, x, p.lengths.data() + B, r.states, y, hy.data());
      a.y = y;
      a.out = r.sequence_output;
      if (p.fill_padded || p.scatter)
        for (int64_t i = 0; i < rows * u; ++i) post::output_element(a, i, p.fill_padded);
    }
    for (int64_t i = 0; i < B * u; ++i) post::finish_element(a, i);
    return RECUR_GPU_OK;
  }

 private:
  // cudnnRNNForward (INFERENCE, padded I/O, paddingFill 0): row b runs its first lens[b] steps
  // from hx/cx = states; y is 0 after them; hy/cy hold the state after the last one.
  void forward(int64_t B, int64_t T, bool time_major, const float* x, const int32_t* lens, const float* states,
               float* y, float* hy) const {
    const int64_t u = desc_.units, F = desc_.input_size, plane = B * u;
    const int G = desc_.cell == RECUR_GPU_CELL_GRU ? 3 : 4;
    std::vector<float> h(static_cast<size_t>(u)), c(static_cast<size_t>(u)), gx(static_cast<size_t>(G * u)),
        gh(static_cast<size_t>(G * u));
    for (int64_t b = 0; b < B; ++b) {
      std::memcpy(h.data(), states + b * u, static_cast<size_t>(u) * sizeof(float));
      if (desc_.cell == RECUR_GPU_CELL_LSTM) std::memcpy(c.data(), states + plane + b * u, static_cast<size_t>(u) * sizeof(float));
      for (int64_t t = 0; t < T; ++t) {
        const int64_t row = time_major ? t * B + b : b * T + t;
        float* yr = y + row * u;
        if (t >= lens[b]) {
          std::fill_n(yr, u, 0.0f);
          continue;
        }
        // The two GEMMs cuDNN runs: W_g x + bW_g over the input, R_g h + bR_g over the state.
        for (int g = 0; g < G; ++g) {
          affine(g, x + row * F, F, gx.data() + g * u);
          affine(G + g, h.data(), u, gh.data() + g * u);
        }
        for (int64_t j = 0; j < u; ++j) {
          if (desc_.cell == RECUR_GPU_CELL_GRU) {  // 0 = r, 1 = z, 2 = h'
            const float rg = sigmoid(gx[j] + gh[j]);
            const float zg = sigmoid(gx[u + j] + gh[u + j]);
            const float hh = std::tanh(gx[2 * u + j] + rg * gh[2 * u + j]);
            h[j] = (1.0f - zg) * hh + zg * h[j];
          } else {  // 0 = i, 1 = f, 2 = c', 3 = o
            const float ig = sigmoid(gx[j] + gh[j]);
            const float fg = sigmoid(gx[u + j] + gh[u + j]);
            const float cc = std::tanh(gx[2 * u + j] + gh[2 * u + j]);
            const float og = sigmoid(gx[3 * u + j] + gh[3 * u + j]);
            c[j] = fg * c[j] + ig * cc;
            h[j] = og * std::tanh(c[j]);
          }
        }
        std::memcpy(yr, h.data(), static_cast<size_t>(u) * sizeof(float));
      }
      std::memcpy(hy + b * u, h.data(), static_cast<size_t>(u) * sizeof(float));
      if (desc_.cell == RECUR_GPU_CELL_LSTM) std::memcpy(hy + plane + b * u, c.data(), static_cast<size_t>(u) * sizeof(float));
    }
  }

  // out (u) = M_id v + b_id, with M_id (u x cols) row-major.
  void affine(int id, const float* v, int64_t cols, float* out) const {
    const float* m = params_.data() + matrix_at_[static_cast<size_t>(id)];
    const float* bias = params_.data() + bias_at_[static_cast<size_t>(id)];
    for (int64_t j = 0; j < desc_.units; ++j) {
      float acc = 0.0f;
      for (int64_t i = 0; i < cols; ++i) acc += m[j * cols + i] * v[i];
      out[j] = acc + bias[j];
    }
  }

  recur_gpu_layer_desc desc_;
  WeightLayout layout_;
  std::vector<float> params_;
  std::vector<int64_t> matrix_at_, bias_at_;
  bool ready_ = false;
};

}  // namespace

std::unique_ptr<CudnnRoute> make_cudnn_route(const recur_gpu_layer_desc& desc, std::string& err) {
  if (!post::route_supports(desc, err)) return nullptr;
  return std::make_unique<EmulatedCudnnRoute>(desc);
}

}  // namespace recur::cuda
