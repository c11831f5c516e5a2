// ReduceMean / ReduceSum / ReduceMax / ReduceMin over any set of axes, and
// ArgMax / ArgMin along one axis, on plain layouts; a 4-D reduction over H
// and W also in the blocked and channels-last layouts. Float dtypes accumulate
// in double, integer dtypes in int64 (wrapping on overflow).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include "cpu/index_copy.h"
#include "cpu/reduce_block.h"
#include "cpu/registry.h"
#include "cpu/typed.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

// In BlockReduction's order.
enum class Red { sum, mean, max, min };

template <class V>
using acc_t = std::conditional_t<std::is_floating_point_v<V>, double, int64_t>;

template <class A>
A reduce_init(Red r) {
  constexpr bool fp = std::is_floating_point_v<A>;
  if (r == Red::max) return fp ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  if (r == Red::min) return fp ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  return A(0);
}

// Max/min propagate NaN like numpy.
template <class A>
void accumulate(Red r, A& acc, A v) {
  if constexpr (std::is_floating_point_v<A>) {
    if (r == Red::sum || r == Red::mean) acc += v;
    else if (std::isnan(v) || (r == Red::max ? v > acc : v < acc)) acc = v;
  } else {
    if (r == Red::sum || r == Red::mean) acc = int64_t(uint64_t(acc) + uint64_t(v));
    else if (r == Red::max ? v > acc : v < acc) acc = v;
  }
}

// Input rows (last dim) are added into an accumulator per output element; the
// output index of an input element is sum(index[d] * out_stride[d]), with
// out_stride 0 along reduced dims.
class ReduceKernel : public Kernel {
 public:
  ReduceKernel(Red r, DType t, Shape in, const std::vector<bool>& reduced)
      : red_(r), type_(t), in_(std::move(in)), block_(block_shape(in_, reduced)) {
    out_numel_ = 1;
    out_stride_.assign(in_.size(), 0);
    for (size_t d = in_.size(); d-- > 0;) {
      if (reduced[d]) {
        count_ *= in_[d];
      } else {
        out_stride_[d] = out_numel_;
        out_numel_ *= in_[d];
      }
    }
  }
  // One 8-byte accumulator per output element, plus slack to align them.
  size_t scratch_bytes() const override { return size_t(out_numel_) * 8 + 8; }

  void run(const void* const* in, void* const* out, const RunContext& ctx) override {
    if (block_ && reduce_block_supports(type_)) {
      reduce_block(BlockReduction(int(red_)), *block_, type_, in[0], out[0]);
      return;
    }
    check(ctx.scratch_bytes >= scratch_bytes(), "reduce: scratch too small");
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, Bool8>) reduce<T>(in[0], out[0], ctx.scratch);
    });
  }

 private:
  template <class T>
  void reduce(const void* src, void* dst, void* scratch) const {
    using A = acc_t<num_t<T>>;
    auto base_addr = reinterpret_cast<uintptr_t>(scratch);
    A* acc = reinterpret_cast<A*>((base_addr + 7) / 8 * 8);
    for (int64_t i = 0; i < out_numel_; ++i) acc[i] = reduce_init<A>(red_);
    int64_t n = in_.empty() ? 1 : in_.back(), total = shape_numel(in_);
    int64_t rows = n == 0 ? 0 : total / n, last = in_.empty() ? 0 : out_stride_.back();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t base = 0, rem = r;
      for (size_t d = in_.empty() ? 0 : in_.size() - 1; d-- > 0;) {
        base += (rem % in_[d]) * out_stride_[d];
        rem /= in_[d];
      }
      for (int64_t o = 0; o < n; ++o) accumulate<A>(red_, acc[base + o * last], A(load<T>(src, r * n + o)));
    }
    for (int64_t i = 0; i < out_numel_; ++i) {
      A v = acc[i];
      if (red_ == Red::mean) {
        if constexpr (std::is_floating_point_v<A>) v = v / A(count_);
        else v = count_ ? v / count_ : 0;
      }
      store<T>(dst, i, num_t<T>(v));
    }
  }

  Red red_;
  DType type_;
  Shape in_;
  std::optional<BlockShape> block_;  // the fast path's view, when it applies
  std::vector<int64_t> out_stride_;
  int64_t out_numel_ = 1, count_ = 1;
};

// A 4-D tensor reduced over H and W to [N, C, 1, 1] in the layout it
// arrives in (a squeeze-excite block's mean): in nChw16c/nChw8c each image's
// channel blocks are [blocks, H*W, block] and the result is the same layout
// of [N, C, 1, 1]; in nhwc [N, H*W, C] gives [N, C]. Each mean of the
// detector read its input reordered to plain first (3.6 ms of its head's
// f32[4,128,128,128] at batch 4, 8 ms of the network's reorders in all).
class SpatialReduceKernel : public Kernel {
 public:
  SpatialReduceKernel(Red r, DType t, const Shape& in, Layout l) : red_(r), type_(t) {
    const int64_t n = in[0], c = in[1], hw = in[2] * in[3], b = layout_block(l);
    if (b > 1) {
      blocks_ = (c + b - 1) / b;
      shape_ = {n * blocks_, hw, b};
      pad_ = blocks_ * b - c;
      block_ = b;
    } else {
      shape_ = {n, hw, c};
    }
  }
  void run(const void* const* in, void* const* out, const RunContext&) override {
    reduce_block(BlockReduction(int(red_)), shape_, type_, in[0], out[0]);
    if (pad_ == 0) return;
    // The channels that pad the last block are zero, as oneDNN keeps them,
    // whatever the input held there.
    const size_t esize = dtype_size(type_);
    char* y = static_cast<char*>(out[0]);
    const int64_t images = shape_.outer / blocks_;
    for (int64_t i = 0; i < images; ++i)
      std::memset(y + size_t((i * blocks_ + blocks_ - 1) * block_ + (block_ - pad_)) * esize, 0,
                  size_t(pad_) * esize);
  }

 private:
  Red red_;
  DType type_;
  BlockShape shape_;
  int64_t blocks_ = 1, block_ = 1, pad_ = 0;
};

// The layout SpatialReduceKernel takes the reduction in, when it applies.
std::optional<Layout> spatial_reduce_layout(const OpDesc& op, const std::vector<bool>& reduced) {
  const TensorDesc& x = op.inputs[0];
  if (x.layout == Layout::plain || x.shape.size() != 4 || op.outputs[0].shape.size() != 4)
    return std::nullopt;
  if (!reduce_block_supports(x.dtype) || x.numel() == 0) return std::nullopt;
  if (reduced != std::vector<bool>{false, false, true, true}) return std::nullopt;
  return x.layout;
}

KernelPlan make_reduce(const OpDesc& op) {
  const std::string& t = op.op_type;
  Red r = t == "ReduceSum" ? Red::sum : t == "ReduceMean" ? Red::mean : t == "ReduceMax" ? Red::max : Red::min;
  ops::ReduceSpec s = ops::reduce_spec(ops::infer_context_of(op));
  check(op.inputs[0].dtype != DType::boolean, "reductions do not take bool");
  if (std::optional<Layout> l = spatial_reduce_layout(op, s.reduced)) {
    KernelPlan plan = plain_plan(
        op, std::make_unique<SpatialReduceKernel>(r, op.inputs[0].dtype, op.inputs[0].shape, *l));
    plan.input_layouts[0] = *l;
    plan.output_layouts[0] = *l;
    return plan;
  }
  return plain_plan(op, std::make_unique<ReduceKernel>(r, op.inputs[0].dtype, op.inputs[0].shape, s.reduced));
}

// Input viewed as [outer, extent, inner]; first (or last) index of the max/min.
class ArgKernel : public Kernel {
 public:
  ArgKernel(bool is_max, bool last, DType t, int64_t outer, int64_t extent, int64_t inner)
      : max_(is_max), last_(last), type_(t), outer_(outer), extent_(extent), inner_(inner) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    visit_dtype(type_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, Bool8>) arg<T>(in[0], static_cast<int64_t*>(out[0]));
    });
  }

 private:
  template <class T>
  void arg(const void* src, int64_t* dst) const {
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t i = 0; i < inner_; ++i) {
        int64_t best_k = 0;
        auto best = load<T>(src, o * extent_ * inner_ + i);
        for (int64_t k = 1; k < extent_; ++k) {
          auto v = load<T>(src, (o * extent_ + k) * inner_ + i);
          if (better(v, best)) best = v, best_k = k;
        }
        dst[o * inner_ + i] = best_k;
      }
  }
  // A NaN wins over numbers (numpy argmax); ties go to the first index unless
  // select_last_index.
  template <class V>
  bool better(V v, V best) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(best)) return last_ && std::isnan(v);
      if (std::isnan(v)) return true;
    }
    return max_ ? (last_ ? v >= best : v > best) : (last_ ? v <= best : v < best);
  }

  bool max_, last_;
  DType type_;
  int64_t outer_, extent_, inner_;
};

KernelPlan make_arg_reduce(const OpDesc& op) {
  const Shape& in = op.inputs[0].shape;
  size_t axis = size_t(normalize_axis(op.attributes().get_int("axis", 0), int64_t(in.size())));
  check(in[axis] > 0, op.op_type + " along an empty axis");
  bool last = op.attributes().get_int("select_last_index", 0) != 0;
  int64_t outer = shape_numel(Shape(in.begin(), in.begin() + std::ptrdiff_t(axis)));
  int64_t inner = shape_numel(Shape(in.begin() + std::ptrdiff_t(axis) + 1, in.end()));
  auto k = std::make_unique<ArgKernel>(op.op_type == "ArgMax", last, op.inputs[0].dtype, outer, in[axis], inner);
  return plain_plan(op, std::move(k));
}

}  // namespace

void register_reduce_kernels() {
  for (const char* t : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) register_kernel(t, make_reduce);
  register_kernel("ArgMax", make_arg_reduce);
  register_kernel("ArgMin", make_arg_reduce);
}

}  // namespace tandem::cpu
