// QuantizeLinear / DequantizeLinear on plain layouts (ops/quantize.h), the
// scale and zero point read at run time. Quantizing divides by the scale and
// rounds half to even (nearbyint), as ONNX specifies.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "cpu/index_copy.h"
#include "cpu/registry.h"
#include "cpu/typed.h"
#include "ops/quantize.h"

namespace tandem::cpu {

namespace {

template <class T>
int64_t zero_point_at(const void* zp, int64_t c) {
  return zp ? int64_t(static_cast<const T*>(zp)[c]) : 0;
}

template <class T>
void quantize(const ops::QuantAxis& q, const float* x, const float* scale, const void* zp, T* y) {
  const int64_t lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
#pragma omp parallel for collapse(2) schedule(static) if (q.outer * q.channels * q.inner > (1 << 16))
  for (int64_t o = 0; o < q.outer; ++o)
    for (int64_t c = 0; c < q.channels; ++c) {
      const float s = scale[c];
      const int64_t z = zero_point_at<T>(zp, c);
      const int64_t base = (o * q.channels + c) * q.inner;
      for (int64_t i = base; i < base + q.inner; ++i) {
        const float r = std::nearbyint(x[i] / s);
        // Clamped as a float first: NaN and huge values never reach the cast.
        const float v = std::isnan(r) ? 0.f : std::clamp(r, float(lo - z), float(hi - z));
        y[i] = T(int64_t(v) + z);
      }
    }
}

class QuantizeKernel : public Kernel {
 public:
  QuantizeKernel(ops::QuantAxis q, DType to) : q_(q), to_(to) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    const float* x = static_cast<const float*>(in[0]);
    const float* scale = static_cast<const float*>(in[1]);
    if (to_ == DType::i8)
      quantize(q_, x, scale, in[2], static_cast<int8_t*>(out[0]));
    else
      quantize(q_, x, scale, in[2], static_cast<uint8_t*>(out[0]));
  }

 private:
  ops::QuantAxis q_;
  DType to_;
};

class DequantizeKernel : public Kernel {
 public:
  DequantizeKernel(ops::QuantAxis q, DType from) : q_(q), from_(from) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    visit_dtype(from_, [&](auto t) {
      using T = typename decltype(t)::type;
      if constexpr (std::is_integral_v<T>) {
        const T* x = static_cast<const T*>(in[0]);
        const float* scale = static_cast<const float*>(in[1]);
        float* y = static_cast<float*>(out[0]);
#pragma omp parallel for collapse(2) schedule(static) if (q_.outer * q_.channels * q_.inner > (1 << 16))
        for (int64_t o = 0; o < q_.outer; ++o)
          for (int64_t c = 0; c < q_.channels; ++c) {
            const float s = scale[c];
            const int64_t z = zero_point_at<T>(in[2], c);
            const int64_t base = (o * q_.channels + c) * q_.inner;
            for (int64_t i = base; i < base + q_.inner; ++i) y[i] = float(int64_t(x[i]) - z) * s;
          }
      }
    });
  }

 private:
  ops::QuantAxis q_;
  DType from_;
};

ops::QuantAxis axis_of(const OpDesc& op) {
  return ops::quant_axis(op.attributes(), op.inputs[0].shape, op.inputs[1].shape,
                         op.has_input(2) ? &op.inputs[2].shape : nullptr);
}

KernelPlan make_quantize(const OpDesc& op) {
  return plain_plan(op, std::make_unique<QuantizeKernel>(axis_of(op), op.outputs[0].dtype));
}

KernelPlan make_dequantize(const OpDesc& op) {
  return plain_plan(op, std::make_unique<DequantizeKernel>(axis_of(op), op.inputs[0].dtype));
}

}  // namespace

void register_quantize_kernels() {
  register_kernel("QuantizeLinear", make_quantize);
  register_kernel("DequantizeLinear", make_dequantize);
}

}  // namespace tandem::cpu
