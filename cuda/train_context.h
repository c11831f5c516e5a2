#pragma once
// What the CUDA training kernels share: the table's context (the GPU's
// stream and library handles, plans cached per shape), input checks, device
// scratch, the element-wise helpers several entries reuse (broadcast add,
// sum over axes), and where a kernel writes a gradient.
// Host code only (no kernel syntax): the .cpp entries include it too.
#include <initializer_list>
#include <type_traits>

#include "core/keyed_cache.h"
#include "ops/train_backend.h"
#include "cuda/check.h"
#include "cuda/context.h"

namespace tandem::cuda::train {

// The CUDA table's `ctx`, one per GPU: its stream and handles, and the cuDNN
// plans and cuBLASLt matmuls built once per shape (keys from cache_key,
// core/keyed_cache.h).
struct TrainContext {
  explicit TrainContext(Context& g) : gpu(g) {}
  Context& gpu;
  KeyedCache plans;
};

// The context behind a table's `ctx`, with its GPU made current on this
// thread (kernels launch on the current device's view of the stream).
TrainContext& enter(void* ctx);

// Each defined tensor must live on this table's GPU, of dtype `want`, in
// layout `layout`. (op_context and require_shape: ops/train_backend.h.)
void require_on_gpu(const TrainContext& c, const char* op,
                    std::initializer_list<const Tensor*> tensors, DType want,
                    Layout layout = Layout::plain);
// Parameters, statistics and losses: f32.
inline void require_f32(const TrainContext& c, const char* op, std::initializer_list<const Tensor*> tensors) {
  require_on_gpu(c, op, tensors, DType::f32);
}
// Activations and their gradients (keeps_16bit_activations,
// takes_nhwc_activations): f32, f16 or bf16, all of one dtype and one layout,
// plain or (4-D only) nhwc, which are returned (f32 plain when none is
// defined).
struct ActivationDesc {
  DType dtype = DType::f32;
  Layout layout = Layout::plain;
};
ActivationDesc require_activations(const TrainContext& c, const char* op,
                                   std::initializer_list<const Tensor*> tensors);
// ops::layout_free of t's shape.
inline bool layout_free(const Tensor& t) { return ops::layout_free(t.shape()); }
// Where a kernel writes one wanted gradient of `shape`: its pointer and
// whether it adds to what is there. p is null when the gradient is not wanted.
struct GradPtr {
  void* p = nullptr;
  bool accumulate = false;
  explicit operator bool() const { return p != nullptr; }
};
// The gradient must have dtype `dtype` (an activation's gradient has the
// activation's dtype; a parameter's is f32).
GradPtr grad_ptr(const TrainContext& c, const char* op, const GradOut& g, const Shape& shape,
                 DType dtype = DType::f32, Layout layout = Layout::plain);

// An uninitialized tensor on the context's GPU (stream-ordered pool memory,
// returned to the pool in stream order when the last reference goes).
Tensor device_empty(Context& c, DType dtype, const Shape& shape);

// Waits for the stream, then copies `bytes` from the device (for a value the
// host must decide on: a label check's result).
void read_back(Context& c, void* host, const void* device, size_t bytes, const ErrorContext& where);

// Helpers on device float tensors, enqueued on the stream.
// y = full + other, `other` broadcast along its extents of 1 (same rank as
// full; y may be full itself). full and y share a dtype and layout; other may
// have another dtype (an f32 bias on a 16-bit y) and must have full's layout
// or read the same in both (ops::layout_free).
void launch_add(TrainContext& c, const Tensor& full, const Tensor& other, const Tensor& y, const ErrorContext& where);
// dst (or dst +=, accumulating) = src summed over the axes where dst's shape
// has extent 1 and src's does not, in f32. dst_shape has src's rank; dst is
// of dtype dst_dtype (a 16-bit dy summed into an f32 bias gradient), in
// src's layout or layout-free.
void launch_sum_to(TrainContext& c, const Tensor& src, void* dst, DType dst_dtype,
                   const Shape& dst_shape, bool accumulate, const ErrorContext& where);

// Kernel entries of the CUDA table, each in its op's file under cuda/, each
// declared with its table slot's own function type (a signature change in
// ops/train_backend.h fails to compile here, not at the table).
template <typename Slot>
using Entry = std::remove_pointer_t<Slot>;
Entry<decltype(TrainBackend::fill)> fill;
Entry<decltype(TrainBackend::cast)> cast;
Entry<decltype(TrainBackend::conv2d_forward)> conv2d_forward;
Entry<decltype(TrainBackend::conv2d_backward)> conv2d_backward;
Entry<decltype(TrainBackend::linear_forward)> linear_forward;
Entry<decltype(TrainBackend::linear_backward)> linear_backward;
Entry<decltype(TrainBackend::batch_norm_forward)> batch_norm_forward;
Entry<decltype(TrainBackend::batch_norm_backward)> batch_norm_backward;
Entry<decltype(TrainBackend::batch_norm_relu_forward)> batch_norm_relu_forward;
Entry<decltype(TrainBackend::batch_norm_relu_backward)> batch_norm_relu_backward;
Entry<decltype(TrainBackend::layer_norm_forward)> layer_norm_forward;
Entry<decltype(TrainBackend::layer_norm_backward)> layer_norm_backward;
Entry<decltype(TrainBackend::eltwise_forward)> eltwise_forward;
Entry<decltype(TrainBackend::eltwise_backward)> eltwise_backward;
Entry<decltype(TrainBackend::pool2d_forward)> pool2d_forward;
Entry<decltype(TrainBackend::pool2d_backward)> pool2d_backward;
Entry<decltype(TrainBackend::add_forward)> add_forward;
Entry<decltype(TrainBackend::sum_to)> sum_to;
Entry<decltype(TrainBackend::concat_forward)> concat_forward;
Entry<decltype(TrainBackend::concat_backward)> concat_backward;
Entry<decltype(TrainBackend::dropout_forward)> dropout_forward;
Entry<decltype(TrainBackend::dropout_backward)> dropout_backward;
Entry<decltype(TrainBackend::cross_entropy_forward)> cross_entropy_forward;
Entry<decltype(TrainBackend::cross_entropy_backward)> cross_entropy_backward;
Entry<decltype(TrainBackend::fake_quant_forward)> fake_quant_forward;
Entry<decltype(TrainBackend::fake_quant_backward)> fake_quant_backward;
Entry<decltype(TrainBackend::min_max)> min_max;

}  // namespace tandem::cuda::train
