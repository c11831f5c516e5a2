#pragma once
// How the GPU and training tests compare tensors: the relative error, or
// bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

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

// Exact agreement of two host tensors of any dtype (bool masks, integer
// casts, data movement, a training forward against inference's).
inline void expect_identical(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.bytes()), 0) << what;
}

}  // namespace tandem::testing
