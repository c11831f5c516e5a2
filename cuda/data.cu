// Data movement: Reshape/Flatten/Squeeze/Unsqueeze (views), Concat,
// Transpose, Cast, Gather. Any element type moves as raw 1/2/4/8-byte words.
//   Concat: plain, any axis; 4-D inputs arriving in nhwc concatenate along
//   channels in nhwc (channels are innermost there: rows of C_i).
//   Transpose: up to 6-D, plain; (0,2,3,1) of an nhwc tensor is its buffer
//   as it is (a view).
//   Cast: f32, f16, bf16, i32, i64, bool in any pairing, plain or nhwc (it is
//   elementwise). Float -> int saturates and maps NaN to 0, like the CPU.
//   Gather: any axis, int32/int64 indices, negative ones counted from the
//   end. A device kernel cannot stop the run on a bad index: constant
//   indices are checked at prepare, a computed out-of-range one yields zeros.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/float_convert.cuh"
#include "cuda/launch.h"
#include "cuda/memory_dims.h"
#include "cuda/registry.h"
#include "ops/concat.h"
#include "ops/shape_ops.h"

namespace tandem::cuda {

namespace {

constexpr int kMaxRank = 6;

KernelPlan plan_of(std::unique_ptr<Kernel> k, std::vector<Layout> in, Layout out) {
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts = std::move(in);
  plan.output_layouts = {out};
  return plan;
}

// Calls f(Word{}) with an unsigned type of `bytes` bytes.
template <typename F>
auto with_word(size_t bytes, const ErrorContext& w, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
  }
  throw Error::unsupported("CUDA data movement of " + std::to_string(bytes) + "-byte elements", w);
}

// --- views -------------------------------------------------------------------

KernelPlan make_view(const OpDesc& op, Context&) {
  check(op.outputs.at(0).dtype == op.inputs.at(0).dtype, "view changes dtype", op.context());
  KernelPlan plan;
  plan.alias_input = 0;
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain};
  return plan;
}

// --- Concat ------------------------------------------------------------------

// Y viewed as [outer, row]; input i fills columns [offset, offset + cols).
template <typename W>
__global__ void concat_piece(const W* x, W* y, int64_t outer, int64_t cols, int64_t row, int64_t offset) {
  int64_t n = outer * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = i / cols, k = i - o * cols;
    y[o * row + offset + k] = x[i];
  }
}

template <typename W>
class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(Context& c, int64_t outer, std::vector<int64_t> cols, ErrorContext where)
      : c_(c), outer_(outer), cols_(std::move(cols)), where_(std::move(where)) {
    for (int64_t k : cols_) row_ += k;
  }
  void run(const void* const* in, void* const* out, const RunContext&) override {
    int64_t offset = 0;
    for (size_t i = 0; i < cols_.size(); ++i) {
      int64_t n = outer_ * cols_[i];
      if (n > 0) {
        concat_piece<W><<<blocks_for(n, c_.props), kThreads, 0, c_.stream>>>(
            static_cast<const W*>(in[i]), static_cast<W*>(out[0]), outer_, cols_[i], row_, offset);
        check_launch("concat_piece", where_);
      }
      offset += cols_[i];
    }
  }

 private:
  Context& c_;
  int64_t outer_, row_ = 0;
  std::vector<int64_t> cols_;
  ErrorContext where_;
};

KernelPlan make_concat(const OpDesc& op, Context& c) {
  const Shape& y = op.outputs[0].shape;
  int64_t axis = ops::concat_axis(op.attributes(), int64_t(y.size()));
  bool any_nhwc = false, all_4d = true;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    check_supported(op.has_input(i), "CUDA Concat with an omitted input", op.context());
    any_nhwc = any_nhwc || op.inputs[i].layout == Layout::nhwc;
    all_4d = all_4d && op.inputs[i].shape.size() == 4;
  }
  const Layout l = any_nhwc && all_4d && axis == 1 ? Layout::nhwc : Layout::plain;
  // Blocks in memory order (nhwc: the channel axis innermost), as training's concat.
  const ops::ConcatBlocks b = ops::concat_blocks(memory_shape(y, l), memory_axis(axis, y.size(), l));
  std::vector<int64_t> cols;
  for (const TensorDesc& t : op.inputs) cols.push_back(t.shape[size_t(axis)] * b.inner);
  auto k = with_word(dtype_size(op.outputs[0].dtype), op.context(), [&](auto w) {
    return std::unique_ptr<Kernel>(std::make_unique<ConcatKernel<decltype(w)>>(c, b.outer, cols, op.context()));
  });
  return plan_of(std::move(k), std::vector<Layout>(op.inputs.size(), l), l);
}

// --- Transpose ---------------------------------------------------------------

// The permutation reduced to what moves: extent-1 axes dropped, input axes
// that stay neighbours in the output merged, and, when the innermost axis
// stays innermost, its bytes moved as the widest word (up to 16 bytes) that
// divides them. The head transposes of attention keep a 64-element innermost
// axis: one index computation then moves 16 bytes instead of 2.
struct TransposeShape {
  std::vector<int64_t> dims;  // input extents, in words
  std::vector<int64_t> perm;
  size_t word = 1;            // bytes
};

TransposeShape simplify_transpose(const Shape& x, const std::vector<int64_t>& perm, size_t elem_bytes) {
  std::vector<int64_t> keep(x.size(), -1);  // input axis -> index among kept axes
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < x.size(); ++d)
    if (x[d] != 1) keep[d] = int64_t(kept_dims.size()), kept_dims.push_back(x[d]);
  std::vector<int64_t> p;
  for (int64_t a : perm)
    if (keep[size_t(a)] >= 0) p.push_back(keep[size_t(a)]);
  // Runs of output axes that are consecutive input axes become one axis.
  std::vector<std::pair<int64_t, int64_t>> runs;  // [first, last] input axis, in output order
  for (int64_t a : p)
    if (!runs.empty() && runs.back().second + 1 == a) runs.back().second = a;
    else runs.push_back({a, a});
  std::vector<std::pair<int64_t, int64_t>> by_input = runs;
  std::sort(by_input.begin(), by_input.end());
  TransposeShape t;
  for (auto [first, last] : by_input) {
    int64_t e = 1;
    for (int64_t a = first; a <= last; ++a) e *= kept_dims[size_t(a)];
    t.dims.push_back(e);
  }
  for (auto r : runs)
    t.perm.push_back(std::lower_bound(by_input.begin(), by_input.end(), r) - by_input.begin());
  if (t.dims.empty()) t.dims = {1}, t.perm = {0};
  t.word = elem_bytes;
  if (t.perm.back() == int64_t(t.dims.size()) - 1) {
    int64_t inner = t.dims.back() * int64_t(elem_bytes);
    for (size_t w : {16, 8, 4, 2})
      if (w > elem_bytes && inner % int64_t(w) == 0) {
        t.word = w;
        break;
      }
    t.dims.back() = inner / int64_t(t.word);
  }
  return t;
}

struct TransposeIndex {
  int rank;
  int64_t out_dims[kMaxRank];
  int64_t in_strides[kMaxRank];  // input stride of output dim d
};

// I: 32-bit index arithmetic when the tensor allows (64-bit division is
// several times slower on the GPU).
template <typename W, typename I>
__global__ void transpose_kernel(const W* x, W* y, I n, TransposeIndex t) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(gridDim.x) * blockDim.x) {
    I rem = i, src = 0;
    for (int d = t.rank - 1; d >= 0; --d) {
      I q = rem / I(t.out_dims[d]);
      src += (rem - q * I(t.out_dims[d])) * I(t.in_strides[d]);
      rem = q;
    }
    y[i] = x[src];
  }
}

template <typename W>
class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(Context& c, int64_t n, TransposeIndex t, ErrorContext where)
      : c_(c), n_(n), t_(t), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    check((reinterpret_cast<uintptr_t>(in[0]) | reinterpret_cast<uintptr_t>(out[0])) % sizeof(W) == 0,
          "CUDA Transpose buffers not aligned to its " + std::to_string(sizeof(W)) + "-byte words", where_);
    const W* x = static_cast<const W*>(in[0]);
    W* y = static_cast<W*>(out[0]);
    if (n_ <= INT32_MAX)
      transpose_kernel<W, uint32_t><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(x, y, uint32_t(n_), t_);
    else
      transpose_kernel<W, int64_t><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(x, y, n_, t_);
    check_launch("transpose_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  TransposeIndex t_;
  ErrorContext where_;
};

KernelPlan make_transpose(const OpDesc& op, Context& c) {
  const TensorDesc& x = op.inputs[0];
  std::vector<int64_t> perm = ops::transpose_perm(ops::infer_context_of(op));
  if (x.layout == Layout::nhwc && perm == std::vector<int64_t>{0, 2, 3, 1}) {
    KernelPlan plan;  // NCHW -> NHWC of an nhwc buffer: the bytes already are
    plan.alias_input = 0;
    plan.input_layouts = {Layout::nhwc};
    plan.output_layouts = {Layout::plain};
    return plan;
  }
  const TransposeShape ts = simplify_transpose(x.shape, perm, dtype_size(x.dtype));
  check_supported(ts.dims.size() <= size_t(kMaxRank),
                  "CUDA Transpose moves up to 6 axes, got " + x.str() + " perm " + shape_str(perm),
                  op.context());
  TransposeIndex t{};
  t.rank = int(ts.dims.size());
  std::vector<int64_t> strides = contiguous_strides(ts.dims);
  for (size_t d = 0; d < ts.perm.size(); ++d) {
    t.out_dims[d] = ts.dims[size_t(ts.perm[d])];
    t.in_strides[d] = strides[size_t(ts.perm[d])];
  }
  const int64_t words = shape_numel(ts.dims);
  auto make = [&](auto w) {
    return std::unique_ptr<Kernel>(std::make_unique<TransposeKernel<decltype(w)>>(c, words, t, op.context()));
  };
  auto k = ts.word == 16 ? make(uint4{}) : with_word(ts.word, op.context(), make);
  return plan_of(std::move(k), {Layout::plain}, Layout::plain);
}

// --- Cast --------------------------------------------------------------------

// f16 and bf16 convert through float (widen): exact on the way in, one
// rounding (to nearest even) on the way out, as on the CPU.
template <typename To, typename From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (kIs16BitFloat<To>) {
    return from_float<To>(float(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (v != v) return To(0);
    if (v <= From(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return To(v);
  } else {
    return To(v);
  }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = convert<To>(widen(x[i]));
}

template <typename From, typename To>
class CastKernel final : public Kernel {
 public:
  CastKernel(Context& c, int64_t n, ErrorContext where) : c_(c), n_(n), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    cast_kernel<From, To><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(static_cast<const From*>(in[0]),
                                                                               static_cast<To*>(out[0]), n_);
    check_launch("cast_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  ErrorContext where_;
};

// Calls f(T{}) for the CUDA type of `t`.
template <typename F>
std::unique_ptr<Kernel> with_cast_type(DType t, const ErrorContext& w, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    case DType::i32: return f(int32_t{});
    case DType::i64: return f(int64_t{});
    case DType::boolean: return f(bool{});
    default: break;
  }
  throw Error::unsupported("CUDA Cast of " + std::string(dtype_name(t)), w);
}

KernelPlan make_cast(const OpDesc& op, Context& c) {
  const TensorDesc& x = op.inputs[0];
  DType to = op.outputs[0].dtype;
  Layout l = x.layout == Layout::nhwc ? Layout::nhwc : Layout::plain;
  if (to == x.dtype) return make_view(op, c);
  ErrorContext w = op.context();
  auto k = with_cast_type(x.dtype, w, [&](auto from) {
    return with_cast_type(to, w, [&](auto too) {
      return std::unique_ptr<Kernel>(std::make_unique<CastKernel<decltype(from), decltype(too)>>(c, x.numel(), w));
    });
  });
  return plan_of(std::move(k), {l}, l);
}

// --- Gather ------------------------------------------------------------------

template <typename W, typename I>
__global__ void gather_kernel(const W* x, const I* idx, W* y, int64_t n, int64_t count, int64_t extent,
                              int64_t inner) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t e = i % inner, r = i / inner, j = r % count, o = r / count;
    int64_t k = int64_t(idx[j]);
    if (k < 0) k += extent;
    y[i] = (k >= 0 && k < extent) ? x[(o * extent + k) * inner + e] : W(0);
  }
}

template <typename W, typename I>
class GatherKernel final : public Kernel {
 public:
  GatherKernel(Context& c, int64_t n, int64_t count, int64_t extent, int64_t inner, ErrorContext where)
      : c_(c), n_(n), count_(count), extent_(extent), inner_(inner), where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    gather_kernel<W, I><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(
        static_cast<const W*>(in[0]), static_cast<const I*>(in[1]), static_cast<W*>(out[0]), n_, count_, extent_,
        inner_);
    check_launch("gather_kernel", where_);
  }

 private:
  Context& c_;
  int64_t n_, count_, extent_, inner_;
  ErrorContext where_;
};

KernelPlan make_gather(const OpDesc& op, Context& c) {
  const TensorDesc& data = op.inputs[0];
  const TensorDesc& idx = op.inputs[1];
  check_supported(idx.dtype == DType::i64 || idx.dtype == DType::i32,
                  "CUDA Gather indices must be int32 or int64, got " + idx.str(), op.context());
  const Shape& ds = data.shape;
  size_t axis = size_t(normalize_axis(op.attributes().get_int("axis", 0), int64_t(ds.size())));
  int64_t extent = ds[axis];
  if (const Tensor* t = op.constants[1])
    for (int64_t j = 0; j < t->numel(); ++j) {
      int64_t v = t->int_at(j);
      check(v >= -extent && v < extent,
            "index " + std::to_string(v) + " out of range for axis extent " + std::to_string(extent), op.context());
    }
  int64_t inner = shape_numel(Shape(ds.begin() + std::ptrdiff_t(axis) + 1, ds.end()));
  int64_t count = idx.numel(), n = op.outputs[0].numel();
  ErrorContext w = op.context();
  auto k = with_word(dtype_size(data.dtype), w, [&](auto word) {
    using W = decltype(word);
    if (idx.dtype == DType::i64)
      return std::unique_ptr<Kernel>(std::make_unique<GatherKernel<W, int64_t>>(c, n, count, extent, inner, w));
    return std::unique_ptr<Kernel>(std::make_unique<GatherKernel<W, int32_t>>(c, n, count, extent, inner, w));
  });
  return plan_of(std::move(k), {Layout::plain, Layout::plain}, Layout::plain);
}

}  // namespace

void register_data_kernels() {
  for (const char* t : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) register_kernel(t, make_view);
  register_kernel("Concat", make_concat);
  register_kernel("Transpose", make_transpose);
  register_kernel("Cast", make_cast);
  register_kernel("Gather", make_gather);
}

}  // namespace tandem::cuda
