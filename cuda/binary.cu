// Add, Sub, Mul, Div, Min, Max, Pow, Mod and Equal, Greater, Less,
// GreaterOrEqual, LessOrEqual (bool output) with ONNX multidirectional
// broadcasting; f32, f16, bf16, i32, i64.
//   Same shape and layout: elementwise over the buffers, any layout (the
//   output takes it; blocked layouts' zero padding is computed like data).
//   One side a single element, the other of Y's shape: same, in the full
//   side's layout.
//   One side 4-D of Y's shape, the other [C,1,1] or [1,C,1,1] (squeeze-excite
//   scales, folded constants): per-channel, plain or nhwc. One side of Y's
//   shape, the other's extents one run of its axes (a bias along the last
//   axis): the same walk, plain.
//   Anything else: plain, Y's index decomposed against precomputed strides
//   (rank <= 6, stride 0 along broadcast dims).
// Pow with an exponent of another dtype takes it only as a constant,
// converted once at prepare. Mod with fmod = 1 is C's fmod / truncated %
// (the dividend's sign), with fmod = 0 floor modulo (the divisor's sign, as
// Python's %), for floats too, like the CPU. Integer division or modulo by
// zero gives 0: a device kernel cannot stop the run to report it.
#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/registry.h"

namespace tandem::cuda {

namespace {

enum class Bop { add, sub, mul, div, min, max, pow, mod, fmod, eq, gt, lt, ge, le };

template <Bop K>
inline constexpr bool kCompares =
    K == Bop::eq || K == Bop::gt || K == Bop::lt || K == Bop::ge || K == Bop::le;

constexpr int kMaxRank = 6;

template <typename O, typename V>
__device__ __forceinline__ O to_out(V v) {
  if constexpr (kIs16BitFloat<O>) return from_float<O>(v);
  else return O(v);
}

// a % b rounded toward zero (fmod for floats); b == -1 gives 0 without the
// INT_MIN % -1 overflow.
template <typename V>
__device__ __forceinline__ V truncated_mod(V a, V b) {
  if constexpr (std::is_floating_point_v<V>)
    return fmod(a, b);
  else if constexpr (std::is_signed_v<V>)
    return b == 0 || b == V(-1) ? V(0) : V(a % b);
  else
    return b == 0 ? V(0) : V(a % b);
}

// The remainder with the divisor's sign; a zero one takes the divisor's
// sign too for floats (Python's -0.0 % 2.0 is 0.0, 0.0 % -2.0 is -0.0).
template <typename V>
__device__ __forceinline__ V floor_mod(V a, V b) {
  V r = truncated_mod(a, b);
  if constexpr (std::is_floating_point_v<V>)
    if (r == 0) return copysign(V(0), b);
  if constexpr (std::is_signed_v<V>)
    if (r != 0 && ((r < 0) != (b < 0))) r = V(r + b);
  return r;
}

template <Bop K, typename V>
__device__ __forceinline__ auto apply(V a, V b) {
  if constexpr (K == Bop::add) return V(a + b);
  if constexpr (K == Bop::sub) return V(a - b);
  if constexpr (K == Bop::mul) return V(a * b);
  if constexpr (K == Bop::div) {
    if constexpr (std::is_integral_v<V>) return V(b == 0 ? 0 : a / b);
    else return V(a / b);
  }
  // fmin/fmax would drop a NaN; numpy (and the CPU backend) propagate it.
  if constexpr (K == Bop::min) {
    if constexpr (std::is_floating_point_v<V>) return V(a != a || a < b ? a : b);
    else return V(a < b ? a : b);
  }
  if constexpr (K == Bop::max) {
    if constexpr (std::is_floating_point_v<V>) return V(a != a || a > b ? a : b);
    else return V(a > b ? a : b);
  }
  // The CPU computes Pow in double; so does this, for the same rounding.
  if constexpr (K == Bop::pow) return V(pow(double(a), double(b)));
  if constexpr (K == Bop::mod) return floor_mod(a, b);
  if constexpr (K == Bop::fmod) return truncated_mod(a, b);
  if constexpr (K == Bop::eq) return uint8_t(a == b);
  if constexpr (K == Bop::gt) return uint8_t(a > b);
  if constexpr (K == Bop::lt) return uint8_t(a < b);
  if constexpr (K == Bop::ge) return uint8_t(a >= b);
  if constexpr (K == Bop::le) return uint8_t(a <= b);
}

// Element offsets of A and B for output element i.
struct SameIndex {
  __device__ void operator()(int64_t i, int64_t& ia, int64_t& ib) const { ia = ib = i; }
};
// The small side reads element (i / inner) % channels: a scalar has
// channels 1, a per-channel vector on plain NCHW inner = H*W, on nhwc 1, a
// bias along the last axes inner 1. `narrow`: the index fits 32 bits, whose
// division is several times cheaper than 64-bit on the GPU.
struct ChannelIndex {
  int64_t inner, channels;
  bool a_small;
  bool narrow;
  __device__ void operator()(int64_t i, int64_t& ia, int64_t& ib) const {
    int64_t c = narrow ? int64_t((uint32_t(i) / uint32_t(inner)) % uint32_t(channels)) : (i / inner) % channels;
    ia = a_small ? c : i;
    ib = a_small ? i : c;
  }
};
struct StridedIndex {
  int rank;
  int64_t dims[kMaxRank], sa[kMaxRank], sb[kMaxRank];
  __device__ void operator()(int64_t i, int64_t& ia, int64_t& ib) const {
    ia = ib = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t q = i / dims[d], r = i - q * dims[d];
      ia += r * sa[d];
      ib += r * sb[d];
      i = q;
    }
  }
};

template <Bop K, typename T, typename O, typename Index>
__global__ void binary_kernel(const T* a, const T* b, O* y, int64_t n, Index index) {
  using V = Compute<T>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ia, ib;
    index(i, ia, ib);
    y[i] = to_out<O>(apply<K, V>(V(widen(a[ia])), V(widen(b[ib]))));
  }
}

template <Bop K, typename T, typename Index>
class BinaryKernel final : public Kernel {
 public:
  using O = std::conditional_t<kCompares<K>, uint8_t, T>;
  BinaryKernel(Context& c, int64_t n, Index index, DeviceBuffer b_const, ErrorContext where)
      : c_(c), n_(n), index_(index), b_const_(std::move(b_const)), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    const T* b = static_cast<const T*>(b_const_ ? b_const_.get() : in[1]);
    binary_kernel<K, T, O, Index><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(
        static_cast<const T*>(in[0]), b, static_cast<O*>(out[0]), n_, index_);
    check_launch("binary_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  Index index_;
  DeviceBuffer b_const_;  // B converted to A's dtype (Pow), else empty
  ErrorContext where_;
};

Shape pad_rank(const Shape& s, size_t r) {
  Shape p(r - s.size(), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

int64_t buffer_elements(const TensorDesc& d) { return int64_t(d.bytes() / dtype_size(d.dtype)); }

// The chosen access pattern, its layouts and the element count it walks.
struct Pattern {
  enum { same, channel, strided } kind = strided;
  ChannelIndex channel_index{};
  StridedIndex strided_index{};
  Layout layout_a = Layout::plain, layout_b = Layout::plain, layout_y = Layout::plain;
  int64_t n = 0;
};

// Layouts whose buffers hold no padding: elementwise work on them computes
// no garbage (1/0 in a blocked layout's zero channels).
bool unpadded(Layout l) { return l == Layout::plain || l == Layout::nhwc; }

// [C,1,1] or [1,C,1,1] next to a 4-D [N,C,H,W]: the per-channel case.
bool per_channel(const Shape& small, const Shape& full) {
  if (full.size() != 4 || small.size() < 3 || small.size() > 4) return false;
  Shape s = pad_rank(small, 4);
  return s[0] == 1 && s[1] == full[1] && s[2] == 1 && s[3] == 1;
}

// A small side whose extents other than 1 are one run of the full side's
// axes (a bias [N] against [M, N], [1, C, 1, 1] against NCHW): its element
// for output i is (i / inner) % channels over plain buffers. False when
// the small side is laid out otherwise.
bool one_run(const Shape& small, const Shape& full, int64_t* inner, int64_t* channels) {
  if (small.size() > full.size()) return false;
  const Shape s = pad_rank(small, full.size());
  size_t lo = s.size(), hi = 0;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) lo = std::min(lo, d), hi = d + 1;
  *channels = 1, *inner = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (d >= lo && d < hi) {
      if (s[d] != full[d]) return false;
      *channels *= s[d];
    } else if (d >= hi) {
      *inner *= full[d];
    }
  }
  return true;
}

Pattern choose(const OpDesc& op) {
  const TensorDesc &a = op.inputs[0], &b = op.inputs[1];
  const Shape& y = op.outputs[0].shape;
  Pattern p;
  if (a.shape == b.shape && a.layout == b.layout && unpadded(a.layout)) {
    p.kind = Pattern::same;
    p.layout_a = p.layout_b = p.layout_y = a.layout;
    p.n = buffer_elements(a);
    return p;
  }
  bool a_full = a.shape == y, b_full = b.shape == y;
  for (bool a_small : {false, true}) {
    const TensorDesc& full = a_small ? b : a;
    const TensorDesc& small = a_small ? a : b;
    if (!(a_small ? b_full : a_full)) continue;
    bool scalar = small.numel() == 1;
    bool channel = per_channel(small.shape, full.shape);
    int64_t inner = 1, channels = 1;
    bool run = !scalar && full.layout == Layout::plain && one_run(small.shape, full.shape, &inner, &channels);
    if ((!scalar && !channel && !run) || !unpadded(full.layout)) continue;
    p.kind = Pattern::channel;
    if (scalar) {
      inner = channels = 1;
    } else if (channel) {
      channels = full.shape[1];
      inner = full.layout == Layout::nhwc ? 1 : full.shape[2] * full.shape[3];
    }
    const bool narrow = buffer_elements(full) <= INT32_MAX;
    p.channel_index = ChannelIndex{inner, channels, a_small, narrow};
    (a_small ? p.layout_b : p.layout_a) = full.layout;
    p.layout_y = full.layout;
    p.n = buffer_elements(full);
    return p;
  }
  check_supported(y.size() <= size_t(kMaxRank), "CUDA " + op.op_type + " broadcasts up to rank 6, got " +
                  op.outputs[0].str(), op.context());
  StridedIndex& s = p.strided_index;
  s.rank = int(y.size());
  Shape pa = pad_rank(a.shape, y.size()), pb = pad_rank(b.shape, y.size());
  std::vector<int64_t> sa = contiguous_strides(pa), sb = contiguous_strides(pb);
  for (size_t d = 0; d < y.size(); ++d) {
    s.dims[d] = y[d];
    s.sa[d] = pa[d] == 1 ? 0 : sa[d];
    s.sb[d] = pb[d] == 1 ? 0 : sb[d];
  }
  p.n = shape_numel(y);
  return p;
}

Bop bop_of(const OpDesc& op) {
  const std::string& t = op.op_type;
  if (t == "Add") return Bop::add;
  if (t == "Sub") return Bop::sub;
  if (t == "Mul") return Bop::mul;
  if (t == "Div") return Bop::div;
  if (t == "Min") return Bop::min;
  if (t == "Max") return Bop::max;
  if (t == "Pow") return Bop::pow;
  if (t == "Mod") return op.attributes().get_int("fmod", 0) != 0 ? Bop::fmod : Bop::mod;
  if (t == "Equal") return Bop::eq;
  if (t == "Greater") return Bop::gt;
  if (t == "GreaterOrEqual") return Bop::ge;
  if (t == "LessOrEqual") return Bop::le;
  return Bop::lt;
}

// Pow's constant exponent in the base's dtype.
DeviceBuffer converted_exponent(const OpDesc& op, Context& c) {
  const TensorDesc &a = op.inputs[0], &b = op.inputs[1];
  if (b.dtype == a.dtype) return {};
  const Tensor* e = op.constants[1];
  check_supported(e && (a.dtype == DType::f32 || is_16bit_float(a.dtype)),
                  "CUDA Pow with a " + std::string(dtype_name(b.dtype)) + " exponent takes it only as a constant, "
                  "on an f32, f16 or bf16 base", op.context());
  std::vector<float> v(size_t(e->numel()));
  for (int64_t i = 0; i < e->numel(); ++i) v[size_t(i)] = float(e->scalar_at(i));
  return upload_floats(c, v, a.dtype, op.context());
}

template <Bop K, typename T>
std::unique_ptr<Kernel> make_typed(Context& c, const Pattern& p, DeviceBuffer b_const, const ErrorContext& w) {
  switch (p.kind) {
    case Pattern::same:
      return std::make_unique<BinaryKernel<K, T, SameIndex>>(c, p.n, SameIndex{}, std::move(b_const), w);
    case Pattern::channel:
      return std::make_unique<BinaryKernel<K, T, ChannelIndex>>(c, p.n, p.channel_index, std::move(b_const), w);
    default:
      return std::make_unique<BinaryKernel<K, T, StridedIndex>>(c, p.n, p.strided_index, std::move(b_const), w);
  }
}

template <Bop K>
std::unique_ptr<Kernel> make_op(DType t, Context& c, const Pattern& p, DeviceBuffer b_const, const OpDesc& op) {
  const ErrorContext w = op.context();
  if constexpr (K != Bop::pow) {
    if (t == DType::i32) return make_typed<K, int32_t>(c, p, std::move(b_const), w);
    if (t == DType::i64) return make_typed<K, int64_t>(c, p, std::move(b_const), w);
  }
  std::string what = "CUDA " + op.op_type + (K == Bop::pow ? "" : " (besides i32 and i64)");
  return with_float_type(t, what, w, [&](auto v) { return make_typed<K, decltype(v)>(c, p, std::move(b_const), w); });
}

KernelPlan make_binary(const OpDesc& op, Context& c) {
  check_supported(op.inputs.size() == 2 && op.has_input(0) && op.has_input(1),
                  "CUDA " + op.op_type + " takes exactly two operands", op.context());
  Bop k = bop_of(op);
  DType t = op.inputs[0].dtype;
  DeviceBuffer b_const;
  if (k == Bop::pow) b_const = converted_exponent(op, c);
  else
    check_supported(op.inputs[1].dtype == t, "CUDA " + op.op_type + " on mixed dtypes " + op.inputs[0].str() +
                    ", " + op.inputs[1].str(), op.context());
  Pattern p = choose(op);
  KernelPlan plan;
  using F = std::unique_ptr<Kernel> (*)(DType, Context&, const Pattern&, DeviceBuffer, const OpDesc&);
  static const F table[] = {make_op<Bop::add>, make_op<Bop::sub>, make_op<Bop::mul>,
                            make_op<Bop::div>, make_op<Bop::min>, make_op<Bop::max>,
                            make_op<Bop::pow>, make_op<Bop::mod>, make_op<Bop::fmod>,
                            make_op<Bop::eq>,  make_op<Bop::gt>,  make_op<Bop::lt>,
                            make_op<Bop::ge>,  make_op<Bop::le>};
  plan.kernel = table[int(k)](t, c, p, std::move(b_const), op);
  plan.input_layouts = {p.layout_a, p.layout_b};
  plan.output_layouts = {p.layout_y};
  return plan;
}

}  // namespace

void register_binary_kernels() {
  for (const char* t : {"Add", "Sub", "Mul", "Div", "Min", "Max", "Pow", "Mod", "Equal", "Greater",
                        "Less", "GreaterOrEqual", "LessOrEqual"})
    register_kernel(t, make_binary);
}

}  // namespace tandem::cuda
