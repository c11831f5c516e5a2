// BatchNormalization (inference) as a per-channel affine map,
//   y = x * scale[c] + shift[c],  scale = gamma / sqrt(var + eps),
//   shift = beta - mean * scale,
// folded in double at prepare from constant statistics (a classifier's are
// always constant) and uploaded once. X [N, C, ...] plain, or 4-D nhwc
// (channels innermost); Y keeps the layout. f32, f16 and bf16.
#include <cmath>
#include <memory>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/registry.h"
#include "ops/norm.h"

namespace tandem::cuda {

namespace {

// Channel of element i: (i / inner) % channels (inner = 1 for nhwc).
template <typename T>
__global__ void affine_kernel(const T* x, T* y, const float* scale, const float* shift, int64_t n, int64_t inner,
                              int64_t channels) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = (i / inner) % channels;
    store(y, i, fmaf(load(x, i), scale[c], shift[c]));
  }
}

template <typename T>
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(Context& c, int64_t n, int64_t inner, int64_t channels, DeviceBuffer scale, DeviceBuffer shift,
                  ErrorContext where)
      : c_(c), n_(n), inner_(inner), channels_(channels), scale_(std::move(scale)), shift_(std::move(shift)),
        where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    affine_kernel<T><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(
        static_cast<const T*>(in[0]), static_cast<T*>(out[0]), static_cast<const float*>(scale_.get()),
        static_cast<const float*>(shift_.get()), n_, inner_, channels_);
    check_launch("batchnorm affine_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_, inner_, channels_;
  DeviceBuffer scale_, shift_;
  ErrorContext where_;
};

KernelPlan make_batchnorm(const OpDesc& op, Context& c) {
  const TensorDesc& x = op.inputs[0];
  ops::BatchNormParams p = ops::batchnorm_params(op.attributes(), x.shape);
  for (size_t i = 1; i <= 4; ++i)
    check_supported(op.constants.size() > i && op.constants[i] && op.constants[i]->numel() == p.channels,
                    "CUDA BatchNormalization needs constant [C] scale, B, mean and var", op.context());
  const Tensor &gamma = *op.constants[1], &beta = *op.constants[2], &mean = *op.constants[3], &var = *op.constants[4];
  std::vector<float> scale(size_t(p.channels)), shift(size_t(p.channels));
  for (int64_t k = 0; k < p.channels; ++k) {
    const ops::BatchNormAffine a =
        ops::batch_norm_affine(gamma.scalar_at(k), beta.scalar_at(k), mean.scalar_at(k), var.scalar_at(k), p.epsilon);
    scale[size_t(k)] = a.scale;
    shift[size_t(k)] = a.shift;
  }
  bool nhwc = x.layout == Layout::nhwc && x.shape.size() == 4;
  int64_t inner = nhwc ? 1 : shape_numel(Shape(x.shape.begin() + 2, x.shape.end()));
  ErrorContext w = op.context();
  DeviceBuffer sc = upload_floats(c, scale, DType::f32, w), sh = upload_floats(c, shift, DType::f32, w);
  KernelPlan plan;
  int64_t n = x.numel();
  plan.kernel = with_float_type(x.dtype, "CUDA BatchNormalization", w, [&](auto t) {
    return std::unique_ptr<Kernel>(
        std::make_unique<BatchNormKernel<decltype(t)>>(c, n, inner, p.channels, std::move(sc), std::move(sh), w));
  });
  Layout l = nhwc ? Layout::nhwc : Layout::plain;
  plan.input_layouts = {l, Layout::plain, Layout::plain, Layout::plain, Layout::plain};
  plan.output_layouts = {l};
  plan.keeps_constant = {false, true, true, true, true};  // folded into scale and shift above
  return plan;
}

}  // namespace

void register_batchnorm_kernels() { register_kernel("BatchNormalization", make_batchnorm); }

}  // namespace tandem::cuda
