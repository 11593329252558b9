// SPDX-License-Identifier: Apache-2.0
// The dense float32 types the core computes with.
#pragma once

#include <Eigen/Core>
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

}  // namespace recur
