// Depthwise convolution (see depthwise_conv.h), NHWC, f32/f16/bf16 with f32
// accumulation, FusedConv's bias + residual + activation in the same pass.
// Why not cuDNN: its grouped convolution runs group == C at ~1/50 of memory
// bandwidth (3x3 on f16[64,128,128,128] NHWC: 7.36 ms on an H200 for ~0.54
// GB moved, ~0.13 ms at 4 TB/s). A depthwise conv does only R*S
// multiply-adds per input element and shares nothing across channels, so it
// is memory-bound and wants a direct kernel that reads X about once and
// writes Y once, not tensor cores.
// NHWC puts a pixel's channels side by side: a thread takes V neighbouring
// channels (16 bytes: 8 f16/bf16 or 4 f32), so a warp's loads are whole
// runs of channels, coalesced without shared memory; threads are numbered
// channels fastest, then output columns, rows and images, so the rows a block
// reads were mostly just read by the blocks before it (L1/L2 hits).
// The tiled kernel gives each thread kTileW neighbouring output columns of
// one row: the (kTileW-1)*stride + S input columns of a kernel row feed all of
// them and are loaded once (3x3, stride 1: 6 loads for 12 taps), and a kernel
// row's weights are loaded once for the tile. It is templated on the square
// kernel (3, 5, 7) and the column stride (1, 2), MobileNet's cases, so the
// run of inputs and the weights stay in registers. Anything else (other or
// non-square kernels, column dilation, column stride > 2, C not a multiple
// of the 16-byte vector, unaligned tensors) takes the direct kernel: one
// output pixel of 16 bytes, 2 or 1 channels per thread, runtime loops.
// The epilogue rounds once, from the f32 sum (cuDNN's path rounds the conv
// to T before its epilogue pass). Weights are converted at prepare to
// [R*S][C] in X's dtype (exact), read with the same vectors as X.
// Thread indices are 32-bit (64-bit division costs several times 32-bit);
// element offsets are 64-bit.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/depthwise_conv.h"
#include "cuda/device_buffer.h"
#include "cuda/float_convert.cuh"
#include "cuda/fused_activation.cuh"
#include "cuda/registry.h"
#include "cuda/launch.h"
#include "ops/conv.h"

namespace tandem::cuda {

namespace {

constexpr int kTileW = 4;  // output columns per thread of the tiled kernel

// One depthwise conv; every extent fits in 32 bits (is_depthwise_conv).
struct DwShape {
  int n = 0, h = 0, w = 0, c = 0;  // X [n, h, w, c]
  int p = 0, q = 0;                // Y [n, p, q, c]
  int r = 0, s = 0;                // kernel rows, columns
  int stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int pad_top = 0, pad_left = 0;  // the end pads only size Y
};

// bias and residual may be null; w is [r*s][c].
template <typename T>
struct DwTensors {
  const T* x;
  const T* w;
  const T* bias;
  const T* residual;
  T* y;
};

template <int V, typename T>
__device__ __forceinline__ void load_floats(const T* p, float (&out)[V]) {
  const Pack<V, T> pk = *reinterpret_cast<const Pack<V, T>*>(p);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_float(pk.v[i]);
}

template <int V, typename T>
__device__ __forceinline__ void store_floats(T* p, const float (&in)[V]) {
  Pack<V, T> pk;
#pragma unroll
  for (int i = 0; i < V; ++i) pk.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<Pack<V, T>*>(p) = pk;
}

// Y = act(acc + bias + residual) for the first `cols` of TW output pixels
// from element offset `off` (channel c0), pixels `c` elements apart.
template <int TW, int V, typename T>
__device__ __forceinline__ void finish(float (&acc)[TW][V], const DwTensors<T>& t, int64_t off, int c0, int cols,
                                       int c, const ops::Activation& act) {
  if (t.bias) {
    float b[V];
    load_floats(t.bias + c0, b);
#pragma unroll
    for (int k = 0; k < TW; ++k)
#pragma unroll
      for (int v = 0; v < V; ++v) acc[k][v] += b[v];
  }
#pragma unroll
  for (int k = 0; k < TW; ++k) {
    if (k >= cols) break;
    if (t.residual) {
      float r[V];
      load_floats(t.residual + off + int64_t(k) * c, r);
#pragma unroll
      for (int v = 0; v < V; ++v) acc[k][v] += r[v];
    }
    apply_activation(act, acc[k]);
    store_floats(t.y + off + int64_t(k) * c, acc[k]);
  }
}

// Thread i: channels [c0, c0 + V), output row oh of image n, columns
// [ow0, ow0 + kTileW) clipped to q; K x K kernel, column stride SW,
// column dilation 1. C is a multiple of V and every tensor 16-byte aligned.
template <typename T, int K, int SW>
__global__ void __launch_bounds__(kThreads) depthwise_tiled_kernel(DwTensors<T> t, DwShape g, uint32_t items,
                                                                   ops::Activation act) {
  constexpr int V = kPackOf<T>, kSpan = (kTileW - 1) * SW + K;
  const uint32_t vecs = uint32_t(g.c / V), tiles = uint32_t((g.q + kTileW - 1) / kTileW);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
    const int c0 = int(i % vecs) * V;
    uint32_t rest = i / vecs;
    const int ow0 = int(rest % tiles) * kTileW;
    rest /= tiles;
    const int oh = int(rest % uint32_t(g.p)), n = int(rest / uint32_t(g.p));
    const int iw0 = ow0 * SW - g.pad_left;
    float acc[kTileW][V] = {};
#pragma unroll
    for (int r = 0; r < K; ++r) {
      const int ih = oh * g.stride_h - g.pad_top + r * g.dil_h;
      if (ih < 0 || ih >= g.h) continue;
      const T* row = t.x + (int64_t(n) * g.h + ih) * g.w * g.c + c0;
      float wr[K][V];
#pragma unroll
      for (int s = 0; s < K; ++s) load_floats(t.w + (r * K + s) * g.c + c0, wr[s]);
#pragma unroll
      for (int j = 0; j < kSpan; ++j) {
        const int iw = iw0 + j;
        if (iw < 0 || iw >= g.w) continue;
        float xv[V];
        load_floats(row + int64_t(iw) * g.c, xv);
#pragma unroll
        for (int k = 0; k < kTileW; ++k) {
          const int s = j - k * SW;  // the tap input column j is for output column k
          if (s < 0 || s >= K) continue;
#pragma unroll
          for (int v = 0; v < V; ++v) acc[k][v] = fmaf(xv[v], wr[s][v], acc[k][v]);
        }
      }
    }
    finish(acc, t, ((int64_t(n) * g.p + oh) * g.q + ow0) * g.c + c0, c0, min(kTileW, g.q - ow0), g.c, act);
  }
}

// Thread i: channels [c0, c0 + V) of one output pixel; any kernel, strides,
// dilations and pads. C is a multiple of V and every tensor aligned to V
// elements.
template <typename T, int V>
__global__ void __launch_bounds__(kThreads) depthwise_direct_kernel(DwTensors<T> t, DwShape g, uint32_t items,
                                                                    ops::Activation act) {
  const uint32_t vecs = uint32_t(g.c / V);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
    const int c0 = int(i % vecs) * V;
    uint32_t rest = i / vecs;
    const int ow = int(rest % uint32_t(g.q));
    rest /= uint32_t(g.q);
    const int oh = int(rest % uint32_t(g.p)), n = int(rest / uint32_t(g.p));
    float acc[1][V] = {};
    for (int r = 0; r < g.r; ++r) {
      const int ih = oh * g.stride_h - g.pad_top + r * g.dil_h;
      if (ih < 0 || ih >= g.h) continue;
      const T* row = t.x + (int64_t(n) * g.h + ih) * g.w * g.c + c0;
      for (int s = 0; s < g.s; ++s) {
        const int iw = ow * g.stride_w - g.pad_left + s * g.dil_w;
        if (iw < 0 || iw >= g.w) continue;
        float xv[V], wv[V];
        load_floats(row + int64_t(iw) * g.c, xv);
        load_floats(t.w + (r * g.s + s) * g.c + c0, wv);
#pragma unroll
        for (int v = 0; v < V; ++v) acc[0][v] = fmaf(xv[v], wv[v], acc[0][v]);
      }
    }
    finish(acc, t, ((int64_t(n) * g.p + oh) * g.q + ow) * g.c + c0, c0, 1, g.c, act);
  }
}

// One thread per item, blocks in item order (no grid-stride cap): blocks
// start roughly in order, which keeps neighbouring rows' reads close in time.
unsigned grid_for(uint32_t items) { return unsigned((uint64_t(items) + kThreads - 1) / kThreads); }

template <typename T, int K>
void launch_tiled(const DwTensors<T>& t, const DwShape& g, const ops::Activation& act, cudaStream_t stream) {
  const uint32_t items = uint32_t(int64_t(g.n) * g.p * ((g.q + kTileW - 1) / kTileW) * (g.c / kPackOf<T>));
  if (g.stride_w == 1)
    depthwise_tiled_kernel<T, K, 1><<<grid_for(items), kThreads, 0, stream>>>(t, g, items, act);
  else
    depthwise_tiled_kernel<T, K, 2><<<grid_for(items), kThreads, 0, stream>>>(t, g, items, act);
}

template <typename T, int V>
void launch_direct(const DwTensors<T>& t, const DwShape& g, const ops::Activation& act, cudaStream_t stream) {
  const uint32_t items = uint32_t(int64_t(g.n) * g.p * g.q * (g.c / V));
  depthwise_direct_kernel<T, V><<<grid_for(items), kThreads, 0, stream>>>(t, g, items, act);
}

template <typename T>
bool aligned_to(const DwTensors<T>& t, size_t bytes) {
  for (const void* p : {static_cast<const void*>(t.x), static_cast<const void*>(t.w),
                        static_cast<const void*>(t.bias), static_cast<const void*>(t.residual),
                        static_cast<const void*>(t.y)})
    if (reinterpret_cast<uintptr_t>(p) % bytes != 0) return false;
  return true;
}

// The widest vector C and the tensors' alignment allow; the tiled kernel
// where its templates cover the window.
template <typename T>
void launch_depthwise(const DwTensors<T>& t, const DwShape& g, const ops::Activation& act,
                      cudaStream_t stream) {
  constexpr int V = kPackOf<T>;
  const bool full = g.c % V == 0 && aligned_to(t, V * sizeof(T));
  if (full && g.r == g.s && g.dil_w == 1 && (g.stride_w == 1 || g.stride_w == 2)) {
    if (g.r == 3) return launch_tiled<T, 3>(t, g, act, stream);
    if (g.r == 5) return launch_tiled<T, 5>(t, g, act, stream);
    if (g.r == 7) return launch_tiled<T, 7>(t, g, act, stream);
  }
  if (full) return launch_direct<T, V>(t, g, act, stream);
  if (g.c % 2 == 0 && aligned_to(t, 2 * sizeof(T))) return launch_direct<T, 2>(t, g, act, stream);
  launch_direct<T, 1>(t, g, act, stream);
}

DwShape describe(const OpDesc& op) {
  const Shape& x = op.inputs[0].shape;
  const Shape& y = op.outputs[0].shape;
  const ops::Window& win = ops::conv_geometry(op.attributes(), x, op.inputs[1].shape).window;
  DwShape g;
  g.n = int(x[0]), g.c = int(x[1]), g.h = int(x[2]), g.w = int(x[3]);
  g.p = int(y[2]), g.q = int(y[3]);
  g.r = int(win.kernel[0]), g.s = int(win.kernel[1]);
  g.stride_h = int(win.strides[0]), g.stride_w = int(win.strides[1]);
  g.dil_h = int(win.dilations[0]), g.dil_w = int(win.dilations[1]);
  g.pad_top = int(win.pads_begin[0]), g.pad_left = int(win.pads_begin[1]);
  return g;
}

// [C, 1, R, S] -> [R*S, C], element by element of any size.
std::vector<char> to_rs_c(const Tensor& w) {
  const Shape& s = w.shape();
  const int64_t c = s[0], taps = s[2] * s[3];
  const size_t es = dtype_size(w.dtype());
  const char* src = static_cast<const char*>(w.raw());
  std::vector<char> out(size_t(c * taps) * es);
  for (int64_t k = 0; k < c; ++k)
    for (int64_t t = 0; t < taps; ++t)
      std::memcpy(&out[size_t(t * c + k) * es], &src[size_t(k * taps + t) * es], es);
  return out;
}

class DepthwiseConvKernel final : public Kernel {
 public:
  DepthwiseConvKernel(const OpDesc& op, Context& c)
      : c_(c), where_(op.context()), dtype_(op.inputs[0].dtype), g_(describe(op)), has_bias_(op.has_input(2)) {
    if (op.op_type == ops::kFusedConvOp) {
      ops::FusedConvExtras e = ops::fused_conv_extras(op.attributes());
      act_ = e.activation;
      has_residual_ = e.has_residual;
    }
    std::vector<char> w = to_rs_c(*op.constants[1]);
    weights_ = DeviceBuffer::upload(c, w.data(), w.size(), where_);
  }

  void run(const void* const* in, void* const* out, const RunContext&) override {
    with_float_type(dtype_, "CUDA depthwise Conv", where_, [&](auto tag) {
      using T = decltype(tag);
      DwTensors<T> t{static_cast<const T*>(in[0]), static_cast<const T*>(weights_.get()),
                     has_bias_ ? static_cast<const T*>(in[2]) : nullptr,
                     has_residual_ ? static_cast<const T*>(in[3]) : nullptr, static_cast<T*>(out[0])};
      launch_depthwise(t, g_, act_, c_.stream);
    });
    check_launch("depthwise conv kernel", where_);
  }

 private:
  Context& c_;
  ErrorContext where_;
  DType dtype_;
  DwShape g_;
  bool has_bias_ = false, has_residual_ = false;
  ops::Activation act_;
  DeviceBuffer weights_;  // [R*S][C] of dtype_
};

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

}  // namespace

bool is_depthwise_conv(const OpDesc& op) {
  if (op.inputs.size() < 2 || op.outputs.empty() || op.constants.size() < 2 || !op.constants[1]) return false;
  const TensorDesc& x = op.inputs[0];
  const Tensor& w = *op.constants[1];
  if (x.shape.size() != 4 || w.shape().size() != 4 || !is_float(x.dtype)) return false;
  if (w.dtype() != x.dtype || w.layout() != Layout::plain) return false;
  const int64_t c = x.shape[1], group = op.attributes().get_int("group", 1);
  if (group != c || w.shape()[0] != c || w.shape()[1] != 1) return false;
  constexpr int64_t kMaxElements = (int64_t(1) << 31) - 1;
  const int64_t xn = x.numel(), yn = op.outputs[0].numel();
  return xn > 0 && yn > 0 && xn <= kMaxElements && yn <= kMaxElements;
}

KernelPlan make_depthwise_conv(const OpDesc& op, Context& c) {
  check_supported(is_depthwise_conv(op),
                  "CUDA depthwise Conv takes 4-D f32/f16/bf16 with group == C == M, constant weights of the "
                  "same dtype and under 2^31 elements, got " + op.inputs[0].str(),
                  op.context());
  // The weights, converted to [R*S][C] at prepare.
  return channels_last_conv_plan(op, std::make_unique<DepthwiseConvKernel>(op, c), {false, true});
}

}  // namespace tandem::cuda
