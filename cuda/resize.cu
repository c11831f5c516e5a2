// Resize and Upsample from the per-axis taps of ops/resize_taps.h (the op's
// one definition of which input elements an output reads, with what
// weights), built once at prepare and uploaded. One pass: each output
// element is its taps' input elements, copied bit for bit (nearest, any
// dtype) or blended in f32 (linear and cubic on f32, f16 and bf16).
//   A 4-D nhwc input keeps nhwc when N and C are not resized, the layout
//   CUDA convolutions produce, so an upsampling layer needs no reorders;
//   any other input is plain.
//   Resized memory dims that are one dim or two neighbours (H and W) take
//   the 2-D kernel over [outer, A, B, inner]: a thread per V neighbouring
//   inner elements (channels, in nhwc), 16 bytes at a time where inner
//   allows, so a warp reads whole rows of channels.
//   Anything else (three or more resized dims, or two apart) takes the N-D
//   kernel, which sums over every combination of its dims' taps.
// Summing in one pass rounds differently from the CPU's one pass per axis,
// by f32 rounding. Resizing nothing makes the output a view of the input.
#include <cstring>
#include <memory>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/element_bits.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/memory_dims.h"
#include "cuda/registry.h"
#include "ops/resize_taps.h"
#include "ops/shape_ops.h"

namespace tandem::cuda {

namespace {

constexpr int kMaxRank = 8;

// One memory dim's taps on the device. index == nullptr: the dim is not
// resized (output index j reads input index j).
struct DeviceAxis {
  int64_t in_len = 1, out_len = 1, in_stride = 1;
  int taps = 1;
  const int32_t* index = nullptr;    // out_len * taps, in [0, in_len)
  const float* weight = nullptr;     // out_len * taps
  const uint8_t* outside = nullptr;  // out_len: takes the extrapolation value
};

// --- the 2-D kernel: [outer, A, B, inner] -> [outer, A', B', inner] ----------

// Where output vector i of the 2-D kernel reads: its plane's first element
// (with the inner offset) and its A and B output indices.
struct At2 {
  int64_t plane;
  int64_t ja, jb;
};

// Index arithmetic in I: 64-bit division costs several times 32-bit
// division, and it is most of this kernel's work.
template <typename I>
__device__ __forceinline__ At2 locate_in(I i, I inner_v, int V, const DeviceAxis& a,
                                         const DeviceAxis& b) {
  I k = i % inner_v, r = i / inner_v;
  I jb = r % I(b.out_len);
  r /= I(b.out_len);
  I ja = r % I(a.out_len), o = r / I(a.out_len);
  return {int64_t(o) * a.in_len * b.in_len * int64_t(inner_v) * V + int64_t(k) * V, int64_t(ja),
          int64_t(jb)};
}

// `narrow`: every index fits in 32 bits (the same for every thread).
__device__ __forceinline__ At2 locate_2d(int64_t i, int64_t inner_v, int V, const DeviceAxis& a,
                                         const DeviceAxis& b, bool narrow) {
  if (narrow) return locate_in<uint32_t>(uint32_t(i), uint32_t(inner_v), V, a, b);
  return locate_in<uint64_t>(uint64_t(i), uint64_t(inner_v), V, a, b);
}

// Linear (T = 2) and cubic (T = 4) on A and B (TB = 1 when B is not
// resized). Each thread blends V neighbouring inner elements: one row of B
// taps per A tap, then the rows by A's weights, like one pass per axis.
template <typename T, int TA, int TB, int V>
__global__ void blend_2d(const T* x, T* y, int64_t n_vec, int64_t inner_v, DeviceAxis a,
                         DeviceAxis b, float fill, bool narrow) {
  const int64_t inner = inner_v * V;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vec;
       i += int64_t(gridDim.x) * blockDim.x) {
    At2 at = locate_2d(i, inner_v, V, a, b, narrow);
    Pack<V, T> out;
    if (a.outside[at.ja] | b.outside[at.jb]) {
#pragma unroll
      for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(fill);
    } else {
      float acc[V] = {};
#pragma unroll
      for (int s = 0; s < TA; ++s) {
        const T* row = x + at.plane + int64_t(a.index[at.ja * TA + s]) * b.in_len * inner;
        float part[V] = {};
#pragma unroll
        for (int t = 0; t < TB; ++t) {
          const float w = TB == 1 ? 1.f : b.weight[at.jb * TB + t];
          const Pack<V, T> p =
              *reinterpret_cast<const Pack<V, T>*>(row + int64_t(b.index[at.jb * TB + t]) * inner);
#pragma unroll
          for (int e = 0; e < V; ++e) part[e] += w * to_float(p.v[e]);
        }
        const float w = TA == 1 ? 1.f : a.weight[at.ja * TA + s];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] += w * part[e];
      }
#pragma unroll
      for (int e = 0; e < V; ++e) out.v[e] = from_float<T>(acc[e]);
    }
    reinterpret_cast<Pack<V, T>*>(y)[i] = out;
  }
}

// Nearest: V words of any element type copied as they are.
template <typename W, int V>
__global__ void pick_2d(const W* x, W* y, int64_t n_vec, int64_t inner_v, DeviceAxis a,
                        DeviceAxis b, W fill, bool narrow) {
  const int64_t inner = inner_v * V;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vec;
       i += int64_t(gridDim.x) * blockDim.x) {
    At2 at = locate_2d(i, inner_v, V, a, b, narrow);
    Pack<V, W> out;
    if (a.outside[at.ja] | b.outside[at.jb]) {
#pragma unroll
      for (int e = 0; e < V; ++e) out.v[e] = fill;
    } else {
      int64_t src = at.plane + (int64_t(a.index[at.ja]) * b.in_len + b.index[at.jb]) * inner;
      out = *reinterpret_cast<const Pack<V, W>*>(x + src);
    }
    reinterpret_cast<Pack<V, W>*>(y)[i] = out;
  }
}

// --- the N-D kernel ----------------------------------------------------------

struct GeometryN {
  int rank = 0;
  DeviceAxis dim[kMaxRank];  // memory dims, outermost first
  int64_t inner = 1;         // elements of the untouched innermost run
  int64_t combos = 1;        // product of the resized dims' tap counts
};

// Output element i: its input offset outside the resized dims, each dim's
// output index, and whether any resized dim is outside.
__device__ __forceinline__ int64_t locate_n(int64_t i, const GeometryN& g, int64_t (&j)[kMaxRank],
                                            bool& outside) {
  int64_t base = i % g.inner, r = i / g.inner;
  outside = false;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= g.rank) continue;
    const DeviceAxis& a = g.dim[d];
    j[d] = r % a.out_len;
    r /= a.out_len;
    if (a.index)
      outside |= a.outside[j[d]] != 0;
    else
      base += j[d] * a.in_stride;
  }
  return base;
}

// The input offset and weight of tap combination c (a mixed-radix number
// over the resized dims' taps).
__device__ __forceinline__ int64_t combo_offset(const GeometryN& g, const int64_t (&j)[kMaxRank],
                                                int64_t c, float& weight) {
  int64_t off = 0;
  weight = 1.f;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d >= g.rank || !g.dim[d].index) continue;
    const DeviceAxis& a = g.dim[d];
    int64_t t = c % a.taps, k = j[d] * a.taps + t;
    c /= a.taps;
    off += int64_t(a.index[k]) * a.in_stride;
    weight *= a.weight[k];
  }
  return off;
}

template <typename T>
__global__ void blend_n(const T* x, T* y, int64_t n, GeometryN g, float fill) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j[kMaxRank] = {};
    bool outside;
    int64_t base = locate_n(i, g, j, outside);
    float acc = 0.f;
    for (int64_t c = 0; c < g.combos && !outside; ++c) {
      float w;
      int64_t off = combo_offset(g, j, c, w);
      acc += w * to_float(x[base + off]);
    }
    y[i] = from_float<T>(outside ? fill : acc);
  }
}

template <typename W>
__global__ void pick_n(const W* x, W* y, int64_t n, GeometryN g, W fill) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j[kMaxRank] = {};
    bool outside;
    int64_t base = locate_n(i, g, j, outside);
    float w;
    y[i] = outside ? fill : x[base + combo_offset(g, j, 0, w)];
  }
}

// --- planning ----------------------------------------------------------------

// Every resized memory dim's tables in one device buffer: indices, then
// weights, then outside flags.
struct TapTables {
  DeviceBuffer buffer;
  std::vector<DeviceAxis> axes;  // per memory dim
};

TapTables upload_taps(Context& c, const Shape& in, const Shape& out,
                      const std::vector<size_t>& order, const std::vector<ops::AxisTaps>& taps,
                      const ErrorContext& w) {
  TapTables t;
  std::vector<int32_t> index;
  std::vector<float> weight;
  std::vector<uint8_t> outside;
  std::vector<size_t> first_tap, first_out;
  std::vector<bool> resized;
  std::vector<int64_t> strides = contiguous_strides([&] {
    Shape m;
    for (size_t d : order) m.push_back(in[d]);
    return m;
  }());
  for (size_t m = 0; m < order.size(); ++m) {
    size_t d = order[m];
    DeviceAxis a;
    a.in_len = in[d], a.out_len = out[d], a.in_stride = strides[m];
    first_tap.push_back(index.size());
    first_out.push_back(outside.size());
    resized.push_back(!taps[d].identity(in[d]));
    if (resized.back()) {
      check_supported(in[d] < (int64_t(1) << 31), "CUDA Resize of an axis of 2^31 or more elements",
                      w);
      a.taps = taps[d].taps;
      for (int64_t v : taps[d].index) index.push_back(int32_t(v));
      weight.insert(weight.end(), taps[d].weight.begin(), taps[d].weight.end());
      outside.insert(outside.end(), taps[d].outside.begin(), taps[d].outside.end());
    }
    t.axes.push_back(a);
  }
  auto aligned = [](size_t b) { return (b + 15) / 16 * 16; };
  size_t wo = aligned(index.size() * 4), oo = wo + aligned(weight.size() * 4);
  std::vector<uint8_t> host(oo + outside.size() + 1);
  std::memcpy(host.data(), index.data(), index.size() * 4);
  std::memcpy(host.data() + wo, weight.data(), weight.size() * 4);
  std::memcpy(host.data() + oo, outside.data(), outside.size());
  t.buffer = DeviceBuffer::upload(c, host.data(), host.size(), w);
  auto* base = static_cast<uint8_t*>(t.buffer.get());
  for (size_t m = 0; m < order.size(); ++m) {
    if (!resized[m]) continue;
    t.axes[m].index = reinterpret_cast<const int32_t*>(base) + first_tap[m];
    t.axes[m].weight = reinterpret_cast<const float*>(base + wo) + first_tap[m];
    t.axes[m].outside = base + oo + first_out[m];
  }
  return t;
}

// A resized-nothing axis of the 2-D kernel (one tap, index j, weight 1):
// tables shared by every output index j < len.
struct IdentityAxis {
  DeviceBuffer buffer;
  DeviceAxis axis;
};

IdentityAxis identity_axis(Context& c, int64_t len, const ErrorContext& w) {
  std::vector<int32_t> index(static_cast<size_t>(len));
  for (int64_t j = 0; j < len; ++j) index[size_t(j)] = int32_t(j);
  size_t oo = size_t(len) * 4;
  std::vector<uint8_t> host(oo + size_t(len), 0);
  std::memcpy(host.data(), index.data(), oo);
  IdentityAxis id;
  id.buffer = DeviceBuffer::upload(c, host.data(), host.size(), w);
  id.axis.in_len = id.axis.out_len = len;
  id.axis.index = static_cast<const int32_t*>(id.buffer.get());
  id.axis.outside = static_cast<const uint8_t*>(id.buffer.get()) + oo;
  return id;
}

// What a kernel runs: 2-D (a, b and the inner run after them) or N-D.
struct Plan {
  bool two_d = false;
  DeviceAxis a, b;
  int64_t inner = 1;
  GeometryN n;
  int64_t out_elems = 0;
};

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// T is the element (blend) or word (pick) type.
template <typename T, bool kPick>
class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(Context& c, TapTables taps, IdentityAxis id, Plan p, float fill, T fill_bits,
               ErrorContext where)
      : c_(c),
        taps_(std::move(taps)),
        id_(std::move(id)),
        p_(p),
        fill_(fill),
        fill_bits_(fill_bits),
        where_(std::move(where)) {}

  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (p_.out_elems == 0) return;
    const T* x = static_cast<const T*>(in[0]);
    T* y = static_cast<T*>(out[0]);
    if (!p_.two_d) return run_n(x, y);
    constexpr int kV = kPackOf<T>;
    if (p_.inner % kV == 0 && aligned16(x) && aligned16(y))
      run_2d<kV>(x, y);
    else
      run_2d<1>(x, y);
  }

 private:
  template <int V>
  void run_2d(const T* x, T* y) {
    int64_t inner_v = p_.inner / V, n = p_.out_elems / V;
    unsigned blocks = blocks_for(n, c_.props);
    // Grid-stride indices stay below n + the grid's size.
    bool narrow = n + int64_t(blocks) * kThreads < (int64_t(1) << 32);
    if constexpr (kPick) {
      pick_2d<T, V>
          <<<blocks, kThreads, 0, c_.stream>>>(x, y, n, inner_v, p_.a, p_.b, fill_bits_, narrow);
    } else {
      auto launch = [&](auto ta, auto tb) {
        blend_2d<T, decltype(ta)::value, decltype(tb)::value, V>
            <<<blocks, kThreads, 0, c_.stream>>>(x, y, n, inner_v, p_.a, p_.b, fill_, narrow);
      };
      using I1 = std::integral_constant<int, 1>;
      using I2 = std::integral_constant<int, 2>;
      using I4 = std::integral_constant<int, 4>;
      bool b1 = p_.b.taps == 1;
      if (p_.a.taps == 2)
        b1 ? launch(I2{}, I1{}) : launch(I2{}, I2{});
      else
        b1 ? launch(I4{}, I1{}) : launch(I4{}, I4{});
    }
    check_launch(kPick ? "pick_2d" : "blend_2d", where_);
  }

  void run_n(const T* x, T* y) {
    unsigned blocks = blocks_for(p_.out_elems, c_.props);
    if constexpr (kPick)
      pick_n<T><<<blocks, kThreads, 0, c_.stream>>>(x, y, p_.out_elems, p_.n, fill_bits_);
    else
      blend_n<T><<<blocks, kThreads, 0, c_.stream>>>(x, y, p_.out_elems, p_.n, fill_);
    check_launch(kPick ? "pick_n" : "blend_n", where_);
  }

  Context& c_;
  TapTables taps_;
  IdentityAxis id_;
  Plan p_;
  float fill_;
  T fill_bits_;
  ErrorContext where_;
};

// The memory dims that are resized, as positions in `axes`.
std::vector<size_t> resized_dims(const std::vector<DeviceAxis>& axes) {
  std::vector<size_t> r;
  for (size_t m = 0; m < axes.size(); ++m)
    if (axes[m].index) r.push_back(m);
  return r;
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// The 2-D kernel when the resized memory dims are one dim or two
// neighbours; the N-D kernel otherwise.
Plan plan_of(Context& c, const TapTables& t, IdentityAxis& id, const Shape& out_mem,
             const ErrorContext& w) {
  Plan p;
  p.out_elems = shape_numel(out_mem);
  std::vector<size_t> r = resized_dims(t.axes);
  size_t first = r.front(), last = r.back();
  if (r.size() <= 2 && last - first <= 1) {
    p.two_d = true;
    p.a = t.axes[first];
    if (r.size() == 2) {
      p.b = t.axes[last];
    } else {
      // B: the dim after A, not resized, or a dim of one element.
      int64_t len = first + 1 < t.axes.size() ? out_mem[first + 1] : 1;
      id = identity_axis(c, len, w);
      p.b = id.axis;
      last = first + 1;
    }
    p.inner = product(out_mem, std::min(last + 1, out_mem.size()), out_mem.size());
    return p;
  }
  check_supported(t.axes.size() <= size_t(kMaxRank), "CUDA Resize up to rank 8", w);
  // Trailing dims that are not resized stay one contiguous run.
  p.n.rank = int(last + 1);
  p.n.inner = product(out_mem, last + 1, out_mem.size());
  for (size_t m = 0; m <= last; ++m) {
    p.n.dim[m] = t.axes[m];
    if (t.axes[m].index) p.n.combos *= t.axes[m].taps;
  }
  return p;
}

template <typename T, bool kPick>
std::unique_ptr<Kernel> make_kernel(Context& c, TapTables t, IdentityAxis id, const Plan& p,
                                    double fill, DType dtype, const ErrorContext& w) {
  T bits{};
  if constexpr (kPick) {
    uint64_t b = element_bits(dtype, fill);
    std::memcpy(&bits, &b, sizeof(T));  // the low bytes: little-endian
  }
  return std::make_unique<ResizeKernel<T, kPick>>(c, std::move(t), std::move(id), p, float(fill),
                                                  bits, w);
}

// Calls f(W{}) with an unsigned word of `bytes` bytes.
template <typename F>
auto with_word(size_t bytes, const ErrorContext& w, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
  }
  throw Error::unsupported("CUDA Resize of " + std::to_string(bytes) + "-byte elements", w);
}

// nhwc when only H and W of a 4-D nhwc input change; plain otherwise.
Layout resize_layout(const TensorDesc& x, const std::vector<ops::AxisTaps>& taps) {
  if (x.layout != Layout::nhwc || x.shape.size() != 4) return Layout::plain;
  return taps[0].identity(x.shape[0]) && taps[1].identity(x.shape[1]) ? Layout::nhwc
                                                                      : Layout::plain;
}

KernelPlan make_resize(const OpDesc& op, Context& c) {
  const ErrorContext w = op.context();
  ops::ResizeSpec s = ops::resize_spec(ops::infer_context_of(op));
  check_supported(s.known,
                  "CUDA Resize needs constant scales or sizes (and roi for tf_crop_and_resize)", w);
  const TensorDesc& x = op.inputs[0];
  const Shape& out = op.outputs[0].shape;
  std::vector<ops::AxisTaps> taps = ops::resize_taps(s, x.shape, out);
  KernelPlan plan;
  Layout l = resize_layout(x, taps);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = l;
  plan.output_layouts = {l};
  if (ops::resizes_nothing(taps, x.shape)) {
    plan.alias_input = 0;
    return plan;
  }
  std::vector<size_t> order = memory_dims(x.shape.size(), l);
  Shape out_mem;
  for (size_t d : order) out_mem.push_back(out[d]);
  TapTables t = upload_taps(c, x.shape, out, order, taps, w);
  IdentityAxis id;
  Plan p = plan_of(c, t, id, out_mem, w);
  if (s.mode == ops::ResizeMode::nearest) {
    plan.kernel = with_word(dtype_size(x.dtype), w, [&](auto word) {
      return make_kernel<decltype(word), true>(c, std::move(t), std::move(id), p, s.extrapolation,
                                               x.dtype, w);
    });
  } else {
    plan.kernel = with_float_type(
        x.dtype,
        "CUDA Resize " + std::string(s.mode == ops::ResizeMode::linear ? "linear" : "cubic"), w,
        [&](auto v) {
          return make_kernel<decltype(v), false>(c, std::move(t), std::move(id), p, s.extrapolation,
                                                 x.dtype, w);
        });
  }
  return plan;
}

}  // namespace

void register_resize_kernels() {
  register_kernel("Resize", make_resize);
  register_kernel("Upsample", make_resize);
}

}  // namespace tandem::cuda
