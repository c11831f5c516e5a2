// The CPU training table: its context and the entries, which live in
// their ops' files beside the inference kernels.
#include <malloc.h>

#include "cpu/train_common.h"
#include "cpu/train_table.h"

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

// A training step allocates and frees the same large tensors (activations,
// gradients, saved state) every step, and glibc gives freed blocks above its
// mmap and trim thresholds back to the kernel, so every step faulted all
// their pages in again: on the 2-core VM page faults took ~80% of the small
// CNN's step (595 img/s; 3070 img/s with freed memory kept for reuse).
// Blocks up to glibc's 32 MiB limit come from the heap and the heap is not
// trimmed below 1 GiB: the process keeps its peak, as a caching allocator would.
void keep_freed_host_memory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace

const TrainBackend& cpu_train_backend() {
  static const bool memory_kept = (keep_freed_host_memory(), true);
  (void)memory_kept;
  static train::Context context;
  static const TrainBackend table{
      .name = "cpu",
      .ctx = &context,
      // oneDNN's bf16 kernels are not wired here yet: activations stay f32
      // and autocast rounds each conv's operands (cpu/conv.cpp).
      .keeps_16bit_activations = false,
      .takes_nhwc_activations = false,
      .empty = empty,
      .fill = fill,
      .cast = train::cast,
      .conv2d_forward = train::conv2d_forward,
      .conv2d_backward = train::conv2d_backward,
      .linear_forward = train::linear_forward,
      .linear_backward = train::linear_backward,
      .batch_norm_forward = train::batch_norm_forward,
      .batch_norm_backward = train::batch_norm_backward,
      .layer_norm_forward = train::layer_norm_forward,
      .layer_norm_backward = train::layer_norm_backward,
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
      .qconv2d_forward = train::qconv2d_forward,
  };
  return table;
}

}  // namespace tandem::cpu
