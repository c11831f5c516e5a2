// Means and sums over a contiguous run of axes: GlobalAveragePool (N-D,
// plain or 4-D nhwc), ReduceMean / ReduceSum (plain; 4-D nhwc over {2,3}).
// X is viewed as [outer, len, inner] and Y as [outer, inner]:
//   inner == 1 (plain pooling: rows of H*W): one block per row, a block
//   reduction;
//   inner > 1 (nhwc pooling: [N, H*W, C]): a thread per output, reading
//   stride `inner`, so neighbouring threads read neighbouring channels.
// f32, f16 and bf16, accumulated in float.
#include <memory>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/registry.h"
#include "ops/shape_ops.h"

namespace tandem::cuda {

namespace {

template <typename T>
__global__ void row_reduce(const T* x, T* y, int64_t len, float scale) {
  const int64_t base = int64_t(blockIdx.x) * len;
  float s = 0.f;
  for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += load(x, base + j);
  s = block_reduce(s, SumOp{}, 0.f);
  if (threadIdx.x == 0) store(y, blockIdx.x, s * scale);
}

template <typename T>
__global__ void column_reduce(const T* x, T* y, int64_t outer, int64_t len, int64_t inner, float scale) {
  int64_t n = outer * inner;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / inner, c = i - o * inner;
    const int64_t base = o * len * inner + c;
    float s = 0.f;
    for (int64_t j = 0; j < len; ++j) s += load(x, base + j * inner);
    store(y, i, s * scale);
  }
}

template <typename T>
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(Context& c, int64_t outer, int64_t len, int64_t inner, bool mean, ErrorContext where)
      : c_(c), outer_(outer), len_(len), inner_(inner), where_(std::move(where)) {
    scale_ = mean ? (len > 0 ? 1.f / float(len) : NAN) : 1.f;
  }
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (outer_ * inner_ == 0) return;
    const T* x = static_cast<const T*>(in[0]);
    T* y = static_cast<T*>(out[0]);
    if (inner_ == 1) {
      int threads = len_ >= 256 ? 256 : len_ >= 64 ? 64 : 32;
      row_reduce<T><<<unsigned(outer_), threads, 0, c_.stream>>>(x, y, len_, scale_);
    } else {
      column_reduce<T><<<blocks_for(outer_ * inner_, c_.props), kThreads, 0, c_.stream>>>(x, y, outer_, len_, inner_,
                                                                                          scale_);
    }
    check_launch("reduce kernel", where_);
  }

 private:
  Context& c_;
  int64_t outer_, len_, inner_;
  float scale_ = 1.f;
  ErrorContext where_;
};

KernelPlan reduce_plan(const OpDesc& op, Context& c, int64_t outer, int64_t len, int64_t inner, bool mean,
                       Layout in_layout) {
  const TensorDesc& x = op.inputs[0];
  check_supported(inner != 1 || outer <= INT32_MAX, "CUDA reduction over more than 2^31 rows", op.context());
  KernelPlan plan;
  plan.kernel = with_float_type(x.dtype, "CUDA " + op.op_type, op.context(), [&](auto t) {
    return std::unique_ptr<Kernel>(
        std::make_unique<ReduceKernel<decltype(t)>>(c, outer, len, inner, mean, op.context()));
  });
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = in_layout;
  plan.output_layouts = {Layout::plain};
  return plan;
}

KernelPlan make_global_average_pool(const OpDesc& op, Context& c) {
  const Shape& s = op.inputs[0].shape;
  check(s.size() >= 2, "GlobalAveragePool needs [N, C, ...], got " + op.inputs[0].str(), op.context());
  int64_t spatial = shape_numel(Shape(s.begin() + 2, s.end()));
  if (op.inputs[0].layout == Layout::nhwc && s.size() == 4) return reduce_plan(op, c, s[0], spatial, s[1], true, Layout::nhwc);
  return reduce_plan(op, c, s[0] * s[1], spatial, 1, true, Layout::plain);
}

KernelPlan make_reduce(const OpDesc& op, Context& c) {
  const TensorDesc& x = op.inputs[0];
  bool mean = op.op_type == "ReduceMean";
  ops::ReduceSpec r = ops::reduce_spec(ops::infer_context_of(op));
  const std::vector<bool>& red = r.reduced;
  if (x.layout == Layout::nhwc && x.shape.size() == 4 && red == std::vector<bool>{false, false, true, true})
    return reduce_plan(op, c, x.shape[0], x.shape[2] * x.shape[3], x.shape[1], mean, Layout::nhwc);
  // Reduced axes must be one contiguous run [first, last].
  int first = -1, last = -1;
  for (size_t d = 0; d < red.size(); ++d)
    if (red[d]) {
      if (first < 0) first = int(d);
      check_supported(last < 0 || last == int(d) - 1, "CUDA " + op.op_type + " over non-adjacent axes",
                      op.context());
      last = int(d);
    }
  const Shape& s = x.shape;
  if (first < 0) return reduce_plan(op, c, shape_numel(s), 1, 1, mean, Layout::plain);  // nothing reduced
  int64_t outer = shape_numel(Shape(s.begin(), s.begin() + first));
  int64_t len = shape_numel(Shape(s.begin() + first, s.begin() + last + 1));
  int64_t inner = shape_numel(Shape(s.begin() + last + 1, s.end()));
  return reduce_plan(op, c, outer, len, inner, mean, Layout::plain);
}

}  // namespace

void register_reduce_kernels() {
  register_kernel("GlobalAveragePool", make_global_average_pool);
  register_kernel("ReduceMean", make_reduce);
  register_kernel("ReduceSum", make_reduce);
}

}  // namespace tandem::cuda
