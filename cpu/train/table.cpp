// The CPU training table: its context and the entries, one file per op.
#include "cpu/train/common.h"
#include "cpu/train/cpu_train_backend.h"

namespace tandem::cpu {

namespace {

Tensor empty(void*, DType dtype, const Shape& shape) { return Tensor::empty(dtype, shape); }

void fill(void*, const Tensor& t, float value) {
  train::require_f32("fill", {&t});
  float* p = t.data<float>();
  int64_t n = t.numel();
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

}  // namespace

const TrainBackend& cpu_train_backend() {
  static train::Context context;
  static const TrainBackend table{
      .name = "cpu",
      .ctx = &context,
      .empty = empty,
      .fill = fill,
      .conv2d_forward = train::conv2d_forward,
      .conv2d_backward = train::conv2d_backward,
      .linear_forward = train::linear_forward,
      .linear_backward = train::linear_backward,
      .batch_norm_forward = train::batch_norm_forward,
      .batch_norm_backward = train::batch_norm_backward,
      .eltwise_forward = train::eltwise_forward,
      .eltwise_backward = train::eltwise_backward,
      .pool2d_forward = train::pool2d_forward,
      .pool2d_backward = train::pool2d_backward,
      .add_forward = train::add_forward,
      .sum_to = train::sum_to,
      .concat_forward = train::concat_forward,
      .concat_backward = train::concat_backward,
      .dropout_forward = train::dropout_forward,
      .dropout_backward = train::dropout_backward,
      .cross_entropy_forward = train::cross_entropy_forward,
      .cross_entropy_backward = train::cross_entropy_backward,
      .fake_quant_forward = train::fake_quant_forward,
      .fake_quant_backward = train::fake_quant_backward,
      .min_max = train::min_max,
  };
  return table;
}

}  // namespace tandem::cpu
