// SPDX-License-Identifier: Apache-2.0
// The dense float32 types the core computes with.
#pragma once

#include <Eigen/Core>
#include <cstring>
#include <string>
#include <vector>

namespace recur {

using Index = Eigen::Index;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;

// A weight as Keras shapes it: rank 1 or 2, stored row-major (rank 1 as a single row).
struct Tensor {
  std::vector<Index> shape;
  RowMatrix value;

  Tensor() = default;
  explicit Tensor(std::vector<Index> s) : shape(std::move(s)) {
    value = RowMatrix::Zero(shape.size() == 2 ? shape[0] : 1, shape.size() == 2 ? shape[1] : shape[0]);
  }
  Index size() const { return value.size(); }
  float* data() { return value.data(); }
  const float* data() const { return value.data(); }
};

std::string shape_string(const std::vector<Index>& shape);  // "(2, 96)" / "(96,)"

// Rows [r, r + src.rows()) of dst = src, and dst = rows [r, r + b) of src (resized to them):
// row-major matrices of one width, so each is one block copy (Eigen's assignment in the baseline
// build is an SSE2 loop).
inline void put_rows(RowMatrix& dst, Index r, const RowMatrix& src) {
  if (src.size() > 0)
    std::memcpy(dst.data() + r * dst.cols(), src.data(), static_cast<std::size_t>(src.size()) * sizeof(float));
}
inline void take_rows(RowMatrix& dst, const RowMatrix& src, Index r, Index b) {
  if (dst.rows() != b || dst.cols() != src.cols()) dst.resize(b, src.cols());
  if (dst.size() > 0)
    std::memcpy(dst.data(), src.data() + r * src.cols(), static_cast<std::size_t>(dst.size()) * sizeof(float));
}

}  // namespace recur
