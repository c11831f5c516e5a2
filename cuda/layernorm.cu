// LayerNormalization (ops/norm.h) on X viewed as [rows, cols], plain layout;
// f32, f16 and bf16 storage, statistics and arithmetic in f32. One block per
// row: the mean, then the variance as the mean of (x - mean)^2 (two passes,
// not E[x^2] - mean^2, which cancels badly when |mean| >> std), each a block
// reduction; rows of up to 1024 values stay in registers between passes,
// longer ones are read again (from cache). Scale and B are f32 rows on the
// device: constants spread over the row once at prepare, or computed f32
// inputs of one value per normalized element. Mean and InvStdDev, when they
// are outputs, are f32 [rows].
#include <cmath>
#include <memory>
#include <vector>

#include "cuda/block_reduce.cuh"
#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/float_convert.cuh"
#include "cuda/registry.h"
#include "ops/norm.h"

namespace tandem::cuda {

namespace {

// Values of one row each thread keeps in registers (the cached variant).
constexpr int kCached = 4;
constexpr int kMaxThreads = 256;

struct RowArgs {
  const float* scale;
  const float* bias;  // null: no B
  float* mean;        // null: not an output
  float* inv_std;     // null: not an output
  int64_t cols;
  float epsilon;
};

// Sum over the row of f(x_j); C > 0 reads the registers `v`, C == 0 the row.
template <int C, typename T, typename F>
__device__ __forceinline__ float row_sum(const T* xr, const float (&v)[C > 0 ? C : 1], int64_t cols, F f) {
  float s = 0.f;
  if constexpr (C > 0) {
#pragma unroll
    for (int k = 0; k < C; ++k)
      if (threadIdx.x + int64_t(k) * blockDim.x < cols) s += f(v[k]);
  } else {
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += f(load(xr, j));
  }
  return block_reduce(s, SumOp{}, 0.f);
}

template <int C, typename T>
__global__ void layernorm_kernel(const T* x, T* y, RowArgs a) {
  const int64_t row = blockIdx.x;
  const T* xr = x + row * a.cols;
  T* yr = y + row * a.cols;
  float v[C > 0 ? C : 1] = {};
  if constexpr (C > 0) {
#pragma unroll
    for (int k = 0; k < C; ++k) {
      int64_t j = threadIdx.x + int64_t(k) * blockDim.x;
      if (j < a.cols) v[k] = load(xr, j);
    }
  }
  const float n = float(a.cols);
  const float mean = row_sum<C>(xr, v, a.cols, [](float t) { return t; }) / n;
  const float var = row_sum<C>(xr, v, a.cols, [mean](float t) { return (t - mean) * (t - mean); }) / n;
  const float inv = 1.f / sqrtf(var + a.epsilon);
  auto out = [&](int64_t j, float t) {
    float r = (t - mean) * inv * a.scale[j];
    store(yr, j, a.bias ? r + a.bias[j] : r);
  };
  if constexpr (C > 0) {
#pragma unroll
    for (int k = 0; k < C; ++k) {
      int64_t j = threadIdx.x + int64_t(k) * blockDim.x;
      if (j < a.cols) out(j, v[k]);
    }
  } else {
    for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) out(j, load(xr, j));
  }
  if (threadIdx.x == 0) {
    if (a.mean) a.mean[row] = mean;
    if (a.inv_std) a.inv_std[row] = inv;
  }
}

// Scale (input 1) or B (input 2): a constant uploaded here, or a computed
// f32 row read at run time (`from_input` set, nothing uploaded).
struct Row {
  DeviceBuffer constant;
  bool from_input = false;
};

template <typename T>
class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(Context& c, ops::LayerNormParams p, Row scale, Row bias, bool has_bias, size_t outputs,
                  ErrorContext where)
      : c_(c), p_(p), scale_(std::move(scale)), bias_(std::move(bias)), has_bias_(has_bias), outputs_(outputs),
        where_(std::move(where)) {
    threads_ = int(std::min<int64_t>(kMaxThreads, std::max<int64_t>(32, (p.cols + 31) / 32 * 32)));
  }
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (p_.rows == 0 || p_.cols == 0) return;
    RowArgs a{row_ptr(scale_, in[1]), has_bias_ ? row_ptr(bias_, in[2]) : nullptr,
              outputs_ > 1 ? static_cast<float*>(out[1]) : nullptr,
              outputs_ > 2 ? static_cast<float*>(out[2]) : nullptr, p_.cols, p_.epsilon};
    const T* x = static_cast<const T*>(in[0]);
    T* y = static_cast<T*>(out[0]);
    if (p_.cols <= int64_t(threads_) * kCached)
      layernorm_kernel<kCached, T><<<unsigned(p_.rows), threads_, 0, c_.stream>>>(x, y, a);
    else
      layernorm_kernel<0, T><<<unsigned(p_.rows), threads_, 0, c_.stream>>>(x, y, a);
    check_launch("layernorm_kernel", where_);
  }

 private:
  static const float* row_ptr(const Row& r, const void* input) {
    return static_cast<const float*>(r.from_input ? input : r.constant.get());
  }

  Context& c_;
  ops::LayerNormParams p_;
  Row scale_, bias_;
  bool has_bias_;
  size_t outputs_;
  int threads_ = kMaxThreads;
  ErrorContext where_;
};

Row prepare_row(const OpDesc& op, Context& c, size_t i, const ops::LayerNormParams& p) {
  Row r;
  if (const Tensor* t = op.constants[i]) {
    r.constant = upload_floats(c, ops::layernorm_row_values(*t, op.inputs[0].shape, p), DType::f32, op.context());
    return r;
  }
  check_supported(op.inputs[i].dtype == DType::f32 && op.inputs[i].numel() == p.cols,
                  "CUDA LayerNormalization needs a constant " + std::string(i == 1 ? "Scale" : "B") +
                      ", or a computed f32 one of one value per normalized element; got " + op.inputs[i].str(),
                  op.context());
  r.from_input = true;
  return r;
}

KernelPlan make_layernorm(const OpDesc& op, Context& c) {
  const TensorDesc& x = op.inputs[0];
  ops::LayerNormParams p = ops::layernorm_params(op.attributes(), x.shape);
  check_supported(p.rows <= INT32_MAX, "CUDA LayerNormalization over more than 2^31 rows", op.context());
  const bool has_bias = op.has_input(2);
  Row scale = prepare_row(op, c, 1, p), bias = has_bias ? prepare_row(op, c, 2, p) : Row{};
  KernelPlan plan;
  plan.kernel = with_float_type(x.dtype, "CUDA LayerNormalization", op.context(), [&](auto t) {
    return std::unique_ptr<Kernel>(std::make_unique<LayerNormKernel<decltype(t)>>(
        c, p, std::move(scale), std::move(bias), has_bias, op.outputs.size(), op.context()));
  });
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts.assign(op.outputs.size(), Layout::plain);
  plan.keeps_constant.assign(op.inputs.size(), false);
  for (size_t i = 1; i < op.inputs.size(); ++i) plan.keeps_constant[i] = op.constants[i] != nullptr;
  return plan;
}

}  // namespace

void register_layernorm_kernels() { register_kernel("LayerNormalization", make_layernorm); }

}  // namespace tandem::cuda
