// QuantizeLinear / DequantizeLinear on the GPU (ops/quantize.h): f32, f16
// or bf16 reals, u8 or i8 integers. The scale and zero point are read on the
// device at run time, as the graph feeds them (constants or not), so one
// kernel serves every model. A per-tensor scale is layout-agnostic: the
// output keeps the input's layout, and a quantized activation stays in the
// channels-last order the integer convolutions read. A per-axis scale
// indexes channels of the plain layout.
// Quantizing rounds half to even (rintf) and saturates, as ONNX specifies,
// and as the CPU kernel does: a NaN becomes the zero point.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/float_types.h"
#include "cuda/launch.h"
#include "cuda/registry.h"
#include "ops/quantize.h"

namespace tandem::cuda {

namespace {

// Elements [i] of x viewed as [outer, channels, inner].
__device__ __forceinline__ int64_t channel_of(int64_t i, int64_t channels, int64_t inner) {
  return channels == 1 ? 0 : (i / inner) % channels;
}

template <typename R, typename Q>
__global__ void quantize_kernel(const R* x, const float* scale, const Q* zp, Q* y, int64_t n,
                                int64_t channels, int64_t inner, float lo, float hi) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = channel_of(i, channels, inner);
    const float z = zp ? float(zp[c]) : 0.f;
    const float r = rintf(to_float(x[i]) / scale[c]);
    // Clamped as a float first: NaN and huge values never reach the cast.
    const float v = isnan(r) ? 0.f : fminf(fmaxf(r, lo - z), hi - z);
    y[i] = Q(int(v + z));
  }
}

template <typename Q, typename R>
__global__ void dequantize_kernel(const Q* x, const float* scale, const Q* zp, R* y, int64_t n,
                                  int64_t channels, int64_t inner) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = channel_of(i, channels, inner);
    const int z = zp ? int(zp[c]) : 0;
    y[i] = from_float<R>(float(int(x[i]) - z) * scale[c]);
  }
}

template <typename F>
auto with_int8_type(DType t, const ErrorContext& where, F&& f) {
  if (t == DType::u8) return f(uint8_t{});
  if (t == DType::i8) return f(int8_t{});
  throw Error::unsupported(
      "CUDA quantization to or from " + std::string(dtype_name(t)) + " (u8 or i8 only)", where);
}

// R: the real type, Q: the integer type.
template <typename R, typename Q>
class QuantizeKernel final : public Kernel {
 public:
  QuantizeKernel(Context& c, ops::QuantAxis q, bool quantize, bool zero_point, ErrorContext where)
      : c_(c), q_(q), quantize_(quantize), zero_point_(zero_point), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const int64_t n = q_.outer * q_.channels * q_.inner;
    if (n == 0) return;
    const float* scale = static_cast<const float*>(in[1]);
    const Q* zp = zero_point_ ? static_cast<const Q*>(in[2]) : nullptr;
    const unsigned blocks = blocks_for(n, c_.props);
    if (quantize_) {
      quantize_kernel<R, Q><<<blocks, kThreads, 0, c_.stream>>>(
          static_cast<const R*>(in[0]), scale, zp, static_cast<Q*>(out[0]), n, q_.channels,
          q_.inner, float(std::numeric_limits<Q>::min()), float(std::numeric_limits<Q>::max()));
      check_launch("quantize_kernel", where_);
    } else {
      dequantize_kernel<Q, R>
          <<<blocks, kThreads, 0, c_.stream>>>(static_cast<const Q*>(in[0]), scale, zp,
                                               static_cast<R*>(out[0]), n, q_.channels, q_.inner);
      check_launch("dequantize_kernel", where_);
    }
  }

 private:
  Context& c_;
  ops::QuantAxis q_;
  bool quantize_, zero_point_;
  ErrorContext where_;
};

KernelPlan make(const OpDesc& op, Context& c, bool quantize) {
  const TensorDesc& x = op.inputs[0];
  const ops::QuantAxis q = ops::quant_axis(op.attributes(), x.shape, op.inputs[1].shape,
                                           op.has_input(2) ? &op.inputs[2].shape : nullptr);
  check_supported(
      op.inputs[1].dtype == DType::f32,
      "CUDA " + op.op_type + " with a " + std::string(dtype_name(op.inputs[1].dtype)) + " scale",
      op.context());
  const DType real = quantize ? x.dtype : op.outputs[0].dtype,
              integer = quantize ? op.outputs[0].dtype : x.dtype;
  check_supported(!op.has_input(2) || op.inputs[2].dtype == integer,
                  "CUDA " + op.op_type + ": the zero point's type differs from the integers'",
                  op.context());
  KernelPlan plan;
  plan.kernel = with_float_type(real, "CUDA " + op.op_type, op.context(), [&](auto r) {
    return with_int8_type(integer, op.context(), [&](auto i) {
      return std::unique_ptr<Kernel>(std::make_unique<QuantizeKernel<decltype(r), decltype(i)>>(
          c, q, quantize, op.has_input(2), op.context()));
    });
  });
  // One scale: any layout, kept. Per axis: the channels of the plain layout.
  const Layout l = q.channels == 1 ? x.layout : Layout::plain;
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = l;
  plan.output_layouts = {l};
  return plan;
}

KernelPlan make_quantize(const OpDesc& op, Context& c) { return make(op, c, true); }
KernelPlan make_dequantize(const OpDesc& op, Context& c) { return make(op, c, false); }

}  // namespace

void register_quantize_kernels() {
  register_kernel("QuantizeLinear", make_quantize);
  register_kernel("DequantizeLinear", make_dequantize);
}

}  // namespace tandem::cuda
