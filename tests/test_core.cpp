// Core types against hand-checkable facts and IEEE 754 references.
#include <gtest/gtest.h>

#include <cmath>

#include "core/device.h"
#include "core/half.h"
#include "core/tensor.h"

using namespace tandem;

TEST(Shape, BroadcastFollowsNumpy) {
  EXPECT_EQ(broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}), (Shape{8, 7, 6, 5}));
  EXPECT_THROW(broadcast_shapes({3}, {4}), Error);
}

TEST(Shape, NumelRejectsOverflowAndNegative) {
  EXPECT_THROW(shape_numel({int64_t(1) << 40, int64_t(1) << 40}), Error);
  EXPECT_THROW(shape_numel({-1, 3}), Error);
  EXPECT_EQ(shape_numel({}), 1);
}

TEST(Half, RoundTripsEveryFinitePattern) {
  // Every finite fp16 value converts to float and back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    ASSERT_EQ(float_to_f16(f16_to_float(uint16_t(h))), h) << h;
  }
  EXPECT_EQ(float_to_f16(65520.f), 0x7c00);  // rounds to inf
  EXPECT_EQ(float_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie to even
  EXPECT_FLOAT_EQ(bf16_to_float(float_to_bf16(3.140625f)), 3.140625f);
}

TEST(TensorDesc, BlockedLayoutPadsChannels) {
  TensorDesc d{DType::f32, {2, 3, 4, 5}, Layout::blocked16};
  EXPECT_EQ(d.bytes(), size_t(2 * 16 * 4 * 5 * 4));
}

TEST(Device, ParsesAndRejects) {
  EXPECT_EQ(Device::parse("cuda:1"), Device::cuda(1));
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_THROW(Device::parse("tpu"), Error);
}

// A float tensor read as integers (a Reshape's shape given in floats) holds
// values int64 may not: those are an error, not undefined behaviour.
TEST(Tensor, FloatReadAsIntegerMustFitInt64) {
  Tensor t = Tensor::from_vector<float>({3.0f, -2.0f, INFINITY, NAN, 1e30f}, {5});
  EXPECT_EQ(t.int_at(0), 3);
  EXPECT_EQ(t.int_at(1), -2);
  for (int64_t i : {2, 3, 4}) EXPECT_THROW(t.int_at(i), Error) << i;
  EXPECT_THROW(t.to_int_vector(), Error);
}
