// Concatenation along one axis and its backward, as strided block copies:
// with outer = the product of the extents before the axis and inner = after
// it, input i is `outer` rows of C_i * inner contiguous values, placed at an
// offset in each row of y. Copies are cudaMemcpy2DAsync on the stream; an
// accumulating backward adds its rows with a kernel.
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/memory_dims.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

// `outer` rows of `width` elements: dense in `dense`, at `offset` in rows of
// `row` elements in `strided`; to_strided picks the direction.
void copy_rows(Context& c, const ops::ConcatBlocks& b, int64_t offset, int64_t width, size_t elem, void* dense,
               void* strided, bool to_strided, const ErrorContext& where) {
  if (b.outer == 0 || width == 0) return;
  char* s = static_cast<char*>(strided) + size_t(offset) * elem;
  size_t w = size_t(width) * elem, pitch = size_t(b.row) * elem;
  cudaError_t e;
  if (b.outer == 1)
    e = to_strided ? cudaMemcpyAsync(s, dense, w, cudaMemcpyDeviceToDevice, c.stream)
                   : cudaMemcpyAsync(dense, s, w, cudaMemcpyDeviceToDevice, c.stream);
  else
    e = to_strided ? cudaMemcpy2DAsync(s, pitch, dense, w, w, size_t(b.outer), cudaMemcpyDeviceToDevice, c.stream)
                   : cudaMemcpy2DAsync(dense, w, s, pitch, w, size_t(b.outer), cudaMemcpyDeviceToDevice, c.stream);
  check_cuda(e, "cudaMemcpy2DAsync(concat)", where);
}

// dense[o, j] += strided[o, offset + j] for `outer` rows of `width`.
template <typename T>
__global__ void add_rows_kernel(T* dense, const T* strided, int64_t outer, int64_t width, int64_t row,
                                int64_t offset) {
  int64_t n = outer * width;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / width, j = i - o * width;
    store(dense, i, load(dense, i) + load(strided, o * row + offset + j));
  }
}

}  // namespace

void concat_forward(void* ctx, int64_t axis, std::span<const Tensor> xs, const Tensor& y) {
  const char* op = "concat_forward";
  TrainContext& c = enter(ctx);
  Shape ys = ops::concat_output_shape(xs, axis);
  axis = normalize_axis(axis, int64_t(ys.size()));
  const ActivationDesc d = require_activations(c, op, {&y});
  require_shape(op, y, ys, "y");
  // Blocks in the bytes' order (channels last: the channel axis innermost).
  ops::ConcatBlocks b = ops::concat_blocks(memory_shape(ys, d.layout), memory_axis(axis, ys.size(), d.layout));
  size_t elem = dtype_size(y.dtype());
  int64_t offset = 0;
  for (const Tensor& x : xs) {
    require_on_gpu(c, op, {&x}, y.dtype(), y.layout());
    int64_t width = x.dim(axis) * b.inner;
    copy_rows(c.gpu, b, offset, width, elem, x.raw(), y.raw(), true, op_context(op, x));
    offset += width;
  }
}

void concat_backward(void* ctx, int64_t axis, const Tensor& dy, std::span<const int64_t> extents,
                     std::span<const GradOut> dxs) {
  const char* op = "concat_backward";
  TrainContext& c = enter(ctx);
  const ActivationDesc d = require_activations(c, op, {&dy});
  axis = normalize_axis(axis, dy.rank());
  int64_t total = 0;
  for (int64_t e : extents) total += e;
  ErrorContext where = op_context(op, dy);
  TANDEM_CHECK(extents.size() == dxs.size() && total == dy.dim(axis),
               "the parts' extents do not add up to dy's along axis " + std::to_string(axis),
               where);
  ops::ConcatBlocks b =
      ops::concat_blocks(memory_shape(dy.shape(), d.layout), memory_axis(axis, dy.shape().size(), d.layout));
  size_t elem = dtype_size(dy.dtype());
  int64_t offset = 0;
  for (size_t i = 0; i < dxs.size(); ++i) {
    int64_t width = extents[i] * b.inner;
    Shape want = dy.shape();
    want[size_t(axis)] = extents[i];
    if (GradPtr g = grad_ptr(c, op, dxs[i], want, dy.dtype(), dy.layout())) {
      if (!g.accumulate) {
        copy_rows(c.gpu, b, offset, width, elem, g.p, dy.raw(), false, where);
      } else if (int64_t n = b.outer * width) {
        with_float_type(dy.dtype(), op, where, [&](auto zero) {
          using T = decltype(zero);
          add_rows_kernel<T><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
              static_cast<T*>(g.p), static_cast<const T*>(dy.raw()), b.outer, width, b.row, offset);
        });
        check_launch("add_rows_kernel", where);
      }
    }
    offset += width;
  }
}

}  // namespace tandem::cuda::train
