#pragma once
// The relative error the GPU and training tests compare tensors by.
#include <gtest/gtest.h>

#include <cmath>

#include "core/tensor.h"

namespace tandem::testing {

// ||a - b|| / ||b|| over all elements of two f32 host tensors, in double
// (||a - b|| when b is all zero).
inline double relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    double d = double(a.data<float>()[i]) - double(b.data<float>()[i]);
    num += d * d;
    den += double(b.data<float>()[i]) * double(b.data<float>()[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace tandem::testing
