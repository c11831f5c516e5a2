// Add with same-rank broadcasting, and its backward (dy summed over the
// broadcast axes); the same two kernels add conv's and linear's bias and sum
// their bias gradients. Each side may have its own float dtype (an f32 bias
// on a 16-bit activation); sums run in f32.
//   add_forward: y = a + b; the input with y's shape is `full`, the other
//   broadcasts along its extents of 1.
//   sum_to: src [d0, d1, ...] -> dst [e0, e1, ...], each e_i = d_i or 1.
// Shapes are first collapsed: extents of 1 dropped and neighbouring axes of
// the same kind (broadcast or not; reduced or kept) merged, so a channel
// bias over [N, C, H, W] is walked as [N, C, H*W].
#include <type_traits>
#include <vector>

#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/memory_dims.h"
#include "cuda/convert.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

constexpr int kMaxDims = 8;

// Row-major walk of `rank` extents, each with its stride in some tensor.
struct Walk {
  int rank = 0;
  int64_t extent[kMaxDims] = {};
  int64_t stride[kMaxDims] = {};
};

// The offset, in the walked tensor, of flat position i of the walk.
__device__ __forceinline__ int64_t offset_of(const Walk& w, int64_t i) {
  int64_t off = 0;
  for (int d = w.rank - 1; d >= 0; --d) {
    int64_t e = w.extent[d];
    off += (i % e) * w.stride[d];
    i /= e;
  }
  return off;
}

// One collapsed axis: its extent and whether it is of the "other" kind
// (broadcast in add; reduced in sum_to).
struct Axis {
  int64_t extent;
  bool other;
};

// Axes of extent > 1 in order, neighbours of the same kind merged.
std::vector<Axis> collapse(const Shape& full, const Shape& part) {
  std::vector<Axis> axes;
  for (size_t i = 0; i < full.size(); ++i) {
    if (full[i] == 1) continue;
    bool other = part[i] == 1;
    if (!axes.empty() && axes.back().other == other) axes.back().extent *= full[i];
    else axes.push_back({full[i], other});
  }
  return axes;
}

void push(Walk& w, int64_t extent, int64_t stride, const ErrorContext& where) {
  TANDEM_CHECK_SUPPORTED(w.rank < kMaxDims,
                         "more than " + std::to_string(kMaxDims) + " alternating broadcast axes",
                         where);
  w.extent[w.rank] = extent;
  w.stride[w.rank] = stride;
  ++w.rank;
}

// Strides of the row-major tensor whose axes are `axes` (all of them).
std::vector<int64_t> row_major_strides(const std::vector<Axis>& axes) {
  std::vector<int64_t> s(axes.size());
  int64_t stride = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    s[i] = stride;
    stride *= axes[i].extent;
  }
  return s;
}

// Same shape and layout on both sides: no broadcast walk, V elements per
// thread (one 16-byte access where the sizes allow).
template <int V, typename T, typename O>
__global__ void add_same_kernel(const T* a, const O* b, T* y, int64_t packs) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Pack<V, T> pa = reinterpret_cast<const Pack<V, T>*>(a)[i];
    const Pack<V, O> pb = reinterpret_cast<const Pack<V, O>*>(b)[i];
    Pack<V, T> out;
    for (int k = 0; k < V; ++k) out.v[k] = from_float<T>(to_float(pa.v[k]) + to_float(pb.v[k]));
    reinterpret_cast<Pack<V, T>*>(y)[i] = out;
  }
}

template <typename T, typename O>
__global__ void add_kernel(const T* full, const O* other, T* y, Walk other_walk, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store(y, i, load(full, i) + load(other, offset_of(other_walk, i)));
}

// One thread per output: few values summed into each.
template <typename S, typename D>
__global__ void sum_rows_kernel(const S* src, D* dst, Walk kept, Walk reduced, int64_t outputs,
                                int64_t count, bool accumulate) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = offset_of(kept, o);
    float s = 0.f;
    for (int64_t r = 0; r < count; ++r) s += load(src, base + offset_of(reduced, r));
    store(dst, o, accumulate ? load(dst, o) + s : s);
  }
}

// Many values summed into each output: block (p, o) sums chunk p of output
// o's values into partial[o * parts + p] (one part: straight into dst); with
// several parts finish_parts_kernel adds each output's chunks in order, so
// a handful of outputs (a conv bias's channels) still fill the GPU.
template <typename S, typename D>
__global__ void sum_blocks_kernel(const S* src, D* dst, float* partial, Walk kept, Walk reduced,
                                  int64_t count, int parts, bool accumulate) {
  const int64_t o = blockIdx.y, base = offset_of(kept, o);
  const int64_t b = count * blockIdx.x / parts, e = count * (blockIdx.x + 1) / parts;
  float s = 0.f;
  for (int64_t r = b + threadIdx.x; r < e; r += blockDim.x)
    s += load(src, base + offset_of(reduced, r));
  s = block_reduce(s, SumOp{}, 0.f);
  if (threadIdx.x != 0) return;
  if (parts > 1)
    partial[o * parts + blockIdx.x] = s;
  else
    store(dst, o, accumulate ? load(dst, o) + s : s);
}

template <typename T>
__global__ void finish_parts_kernel(const float* partial, T* dst, int64_t outputs, int parts,
                                    bool accumulate) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    double s = 0;
    for (int p = 0; p < parts; ++p) s += partial[o * parts + p];
    store(dst, o, accumulate ? load(dst, o) + float(s) : float(s));
  }
}

// Chunks per output: four blocks per SM over all outputs, none under 4096 values.
int parts_for(int64_t outputs, int64_t count, const cudaDeviceProp& props) {
  const int64_t want = (4 * int64_t(props.multiProcessorCount) + outputs - 1) / outputs;
  return int(std::clamp<int64_t>(std::min(want, count / 4096), 1, 64));
}

constexpr int64_t kBlockPerOutputFrom = 64;  // summed values per output

}  // namespace

namespace {

void launch_add_same(TrainContext& c, const Tensor& a, const Tensor& b, const Tensor& y,
                     const ErrorContext& where) {
  const int64_t n = a.numel();
  with_float_type(a.dtype(), "add", where, [&](auto t) {
    with_float_type(b.dtype(), "add", where, [&](auto o) {
      using T = decltype(t);
      using O = decltype(o);
      auto run = [&](auto v) {
        constexpr int V = decltype(v)::value;
        add_same_kernel<V, T, O><<<blocks_for(n / V, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
            static_cast<const T*>(a.raw()), static_cast<const O*>(b.raw()),
            static_cast<T*>(y.raw()), n / V);
      };
      with_pack<T>(std::is_same_v<T, O> && n % kPackOf<T> == 0, run);
    });
  });
  check_launch("add_same_kernel", where);
}

}  // namespace

void launch_add(TrainContext& c, const Tensor& full, const Tensor& other, const Tensor& y, const ErrorContext& where) {
  int64_t n = full.numel();
  if (n == 0) return;
  // Walked in full's byte order: other must share full's layout or read the
  // same in both (a channel bias [1, C, 1, 1]).
  TANDEM_CHECK(
      y.layout() == full.layout() && (other.layout() == full.layout() || layout_free(other)),
      "add of " + other.desc().str() + " to " + full.desc().str(), where);
  TANDEM_CHECK(full.dtype() == y.dtype(), "add: " + full.desc().str() + " into " + y.desc().str(),
               where);
  if (other.shape() == full.shape()) return launch_add_same(c, full, other, y, where);
  std::vector<Axis> axes = collapse(memory_shape(full.shape(), full.layout()),
                                    memory_shape(other.shape(), full.layout()));
  // other's strides: row-major over its own (non-broadcast) axes, 0 along the broadcast ones.
  Walk w;
  int64_t stride = 1;
  std::vector<int64_t> strides(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    strides[i] = axes[i].other ? 0 : stride;
    if (!axes[i].other) stride *= axes[i].extent;
  }
  for (size_t i = 0; i < axes.size(); ++i) push(w, axes[i].extent, strides[i], where);
  with_float_type(full.dtype(), "add", where, [&](auto t) {
    with_float_type(other.dtype(), "add", where, [&](auto o) {
      using T = decltype(t);
      using O = decltype(o);
      add_kernel<T, O><<<blocks_for(n, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
          static_cast<const T*>(full.raw()), static_cast<const O*>(other.raw()),
          static_cast<T*>(y.raw()), w, n);
    });
  });
  check_launch("add_kernel", where);
}

void launch_sum_to(TrainContext& c, const Tensor& src, void* dst, DType dst_dtype,
                   const Shape& dst_shape, bool accumulate, const ErrorContext& where) {
  int64_t outputs = shape_numel(dst_shape);
  if (outputs == 0) return;
  std::vector<Axis> axes =
      collapse(memory_shape(src.shape(), src.layout()), memory_shape(dst_shape, src.layout()));
  std::vector<int64_t> strides = row_major_strides(axes);
  Walk kept, reduced;
  for (size_t i = 0; i < axes.size(); ++i) push(axes[i].other ? reduced : kept, axes[i].extent, strides[i], where);
  int64_t count = src.numel() / outputs;  // values summed into each output
  with_float_type(src.dtype(), "sum_to", where, [&](auto s_zero) {
    with_float_type(dst_dtype, "sum_to", where, [&](auto d_zero) {
      using S = decltype(s_zero);
      using T = decltype(d_zero);
      const S* s = static_cast<const S*>(src.raw());
      T* d = static_cast<T*>(dst);
      if (count >= kBlockPerOutputFrom && outputs <= 65535) {
        const int parts = parts_for(outputs, count, c.gpu.props);
        Scratch partial(c.gpu, parts > 1 ? sizeof(float) * size_t(outputs * parts) : 0);
        float* ps = static_cast<float*>(partial.get());
        sum_blocks_kernel<S, T>
            <<<dim3(unsigned(parts), unsigned(outputs)), kThreads, 0, c.gpu.stream>>>(
                s, d, ps, kept, reduced, count, parts, accumulate);
        if (parts > 1) {
          check_launch("sum_blocks_kernel", where);
          finish_parts_kernel<T><<<blocks_for(outputs, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
              ps, d, outputs, parts, accumulate);
        }
      } else {
        sum_rows_kernel<S, T><<<blocks_for(outputs, c.gpu.props), kThreads, 0, c.gpu.stream>>>(
            s, d, kept, reduced, outputs, count, accumulate);
      }
    });
  });
  check_launch("sum_to kernel", where);
}

void add_forward(void* ctx, const Tensor& a, const Tensor& b, const Tensor& y) {
  const char* op = "add_forward";
  TrainContext& c = enter(ctx);
  const ActivationDesc d = require_activations(c, op, {&y});
  for (const Tensor* t : {&a, &b}) require_on_gpu(c, op, {t}, d.dtype, t->layout());
  require_shape(op, y, ops::add_output_shape(a.shape(), b.shape()), "y");
  bool a_full = a.shape() == y.shape();
  launch_add(c, a_full ? a : b, a_full ? b : a, y, op_context(op, y));
}

void sum_to(void* ctx, const Tensor& src, const GradOut& dst) {
  const char* op = "sum_to";
  TrainContext& c = enter(ctx);
  require_activations(c, op, {&src});
  if (!dst.wanted()) return;
  require_activations(c, op, {&dst.t});
  ErrorContext where = op_context(op, src);
  TANDEM_CHECK(ops::sums_to(src.shape(), dst.t.shape()),
               "cannot sum " + shape_str(src.shape()) + " to " + shape_str(dst.t.shape()), where);
  const bool accumulate = dst.mode == GradMode::accumulate;
  if (src.shape() != dst.t.shape()) {
    TANDEM_CHECK(dst.t.layout() == src.layout() || layout_free(dst.t),
                 "sum of " + src.desc().str() + " to " + dst.t.desc().str(), where);
    launch_sum_to(c, src, dst.t.raw(), dst.t.dtype(), dst.t.shape(), accumulate, where);
  } else if (!accumulate && src.desc() == dst.t.desc()) {
    if (src.bytes())
      check_cuda(cudaMemcpyAsync(dst.t.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToDevice,
                                 c.gpu.stream),
                 "cudaMemcpyAsync(D2D)", where);
  } else {
    convert_into(c, src, dst.t, accumulate, where);  // another dtype or layout, or added to
  }
}

}  // namespace tandem::cuda::train
