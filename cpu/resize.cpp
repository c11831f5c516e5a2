// Resize and Upsample as one separable pass per resized axis, from per-axis
// taps built once at prepare time (ops/resize_taps.h). A pass views the
// tensor as [outer, length, inner]: output row j along the axis is its taps'
// input rows, copied bit for bit (nearest, any dtype) or blended (linear and
// cubic; f32, f16 and bf16, summed in float). Shrinking axes go first so
// intermediates stay small.
// A 4-D input keeps its layout (nhwc, nChw8c, nChw16c) when N and C are not
// resized: the passes then run over the layout's memory dims, so no reorder
// is needed around an upsampling layer of a CNN. tf_crop_and_resize stays
// plain (its extrapolation value must not reach a blocked layout's padding).
// Resizing nothing makes the output a view of the input.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "cpu/registry.h"
#include "cpu/typed.h"
#include "ops/resize_taps.h"
#include "ops/shape_ops.h"

namespace tandem::cpu {

namespace {

using ops::AxisTaps;

constexpr int64_t kParallelElems = int64_t(1) << 15;
constexpr size_t kScratchAlign = 64;

// The memory dims of a tensor in `layout`, outermost first, and the memory
// dim holding each logical dim (-1 for C of a blocked layout, which is split
// into blocks and lanes).
struct MemoryView {
  Shape dims;
  std::vector<int> of_logical;
};

MemoryView memory_view(const Shape& s, Layout l) {
  if (l == Layout::nhwc) return {{s[0], s[2], s[3], s[1]}, {0, 3, 1, 2}};
  if (l == Layout::blocked8 || l == Layout::blocked16) {
    int64_t b = layout_block(l);
    return {{s[0], (s[1] + b - 1) / b, s[2], s[3], b}, {0, -1, 2, 3}};
  }
  std::vector<int> id(s.size());
  std::iota(id.begin(), id.end(), 0);
  return {s, id};
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// One pass: [outer, in_len, inner] -> [outer, out_len, inner].
struct Pass {
  int64_t outer = 1, in_len = 1, out_len = 1, inner = 1;
  AxisTaps taps;

  int64_t out_elems() const { return outer * out_len * inner; }
};

// Nearest, elements of E (an unsigned integer of the element's size).
template <class E>
void pick(const Pass& p, const void* src_v, void* dst_v, E fill) {
  const E* src = static_cast<const E*>(src_v);
  E* dst = static_cast<E*>(dst_v);
  const int64_t* idx = p.taps.index.data();
  const uint8_t* outside = p.taps.outside.data();
  const int64_t inner = p.inner;
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (p.out_elems() >= kParallelElems)
    for (int64_t o = 0; o < p.outer; ++o) {
      const E* s = src + o * p.in_len;
      E* d = dst + o * p.out_len;
      for (int64_t j = 0; j < p.out_len; ++j) d[j] = outside[j] ? fill : s[idx[j]];
    }
    return;
  }
#pragma omp parallel for collapse(2) schedule(static) if (p.out_elems() >= kParallelElems)
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t j = 0; j < p.out_len; ++j) {
      E* d = dst + (o * p.out_len + j) * inner;
      if (outside[j]) std::fill(d, d + inner, fill);
      else std::memcpy(d, src + (o * p.in_len + idx[j]) * inner, size_t(inner) * sizeof(E));
    }
}

// Linear (T = 2) and cubic (T = 4), inner rows of several elements: each
// output row is a weighted sum of whole input rows. S is the element type;
// the sum is taken in float and rounded once, when stored.
template <int T, class S>
void blend_rows(const Pass& p, const S* src, S* dst, S fill) {
  const int64_t inner = p.inner;
#pragma omp parallel for collapse(2) schedule(static) if (p.out_elems() >= kParallelElems)
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t j = 0; j < p.out_len; ++j) {
      S* __restrict d = dst + (o * p.out_len + j) * inner;
      if (p.taps.outside[size_t(j)]) {
        std::fill(d, d + inner, fill);
        continue;
      }
      const S* base = src + o * p.in_len * inner;
      const int64_t* idx = &p.taps.index[size_t(j * T)];
      const float* w = &p.taps.weight[size_t(j * T)];
      const S* __restrict r0 = base + idx[0] * inner;
      const S* __restrict r1 = base + idx[1] * inner;
      if constexpr (T == 2) {
        for (int64_t k = 0; k < inner; ++k) d[k] = Num<S>::store(w[0] * Num<S>::load(r0[k]) + w[1] * Num<S>::load(r1[k]));
      } else {
        const S* __restrict r2 = base + idx[2] * inner;
        const S* __restrict r3 = base + idx[3] * inner;
        for (int64_t k = 0; k < inner; ++k)
          d[k] = Num<S>::store(w[0] * Num<S>::load(r0[k]) + w[1] * Num<S>::load(r1[k]) +
                               w[2] * Num<S>::load(r2[k]) + w[3] * Num<S>::load(r3[k]));
      }
    }
  }
}

// The innermost memory dim (inner == 1): a weighted gather along each line.
template <int T, class S>
void blend_elements(const Pass& p, const S* src, S* dst, S fill) {
  const int64_t* idx = p.taps.index.data();
  const float* w = p.taps.weight.data();
  const uint8_t* outside = p.taps.outside.data();
#pragma omp parallel for schedule(static) if (p.out_elems() >= kParallelElems)
  for (int64_t o = 0; o < p.outer; ++o) {
    const S* s = src + o * p.in_len;
    S* d = dst + o * p.out_len;
    for (int64_t j = 0; j < p.out_len; ++j) {
      float acc = 0.f;
      for (int t = 0; t < T; ++t) acc += w[j * T + t] * Num<S>::load(s[idx[j * T + t]]);
      d[j] = outside[j] ? fill : Num<S>::store(acc);
    }
  }
}

template <int T, class S>
void blend_typed(const Pass& p, const void* src, void* dst, float fill) {
  const S* s = static_cast<const S*>(src);
  S* d = static_cast<S*>(dst);
  if (p.inner == 1) blend_elements<T>(p, s, d, Num<S>::store(fill));
  else blend_rows<T>(p, s, d, Num<S>::store(fill));
}

// The blending dtypes: f32, and f16/bf16 for the reduced-precision plans.
template <int T>
void blend(const Pass& p, DType t, const void* src, void* dst, float fill) {
  switch (t) {
    case DType::f16: return blend_typed<T, F16>(p, src, dst, fill);
    case DType::bf16: return blend_typed<T, BF16>(p, src, dst, fill);
    default: return blend_typed<T, float>(p, src, dst, fill);
  }
}

// The fill element's bits, as an unsigned integer of its size.
template <class E>
E fill_bits(DType t, double value) {
  uint8_t bytes[sizeof(uint64_t)] = {};
  visit_dtype(t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    store<S>(bytes, 0, convert_num<num_t<S>>(value));
  });
  E e;
  std::memcpy(&e, bytes, sizeof(E));
  return e;
}

// The passes, in order, through two scratch buffers.
class ResizeKernel : public Kernel {
 public:
  ResizeKernel(std::vector<Pass> passes, DType t, ops::ResizeMode mode, double fill)
      : passes_(std::move(passes)), type_(t), elem_(dtype_size(t)), mode_(mode), fill_(fill) {
    for (size_t i = 0; i + 1 < passes_.size(); ++i)
      buffer_bytes_ = std::max(buffer_bytes_, aligned(size_t(passes_[i].out_elems()) * elem_));
  }

  size_t scratch_bytes() const override { return passes_.size() > 2 ? 2 * buffer_bytes_ : buffer_bytes_; }

  void run(const void* const* in, void* const* out, const RunContext& ctx) override {
    char* scratch = static_cast<char*>(ctx.scratch);
    const void* src = in[0];
    for (size_t i = 0; i < passes_.size(); ++i) {
      void* dst = i + 1 == passes_.size() ? out[0] : scratch + (i % 2) * buffer_bytes_;
      run_pass(passes_[i], src, dst);
      src = dst;
    }
  }

 private:
  static size_t aligned(size_t n) { return (n + kScratchAlign - 1) / kScratchAlign * kScratchAlign; }

  void run_pass(const Pass& p, const void* src, void* dst) const {
    switch (mode_) {
      case ops::ResizeMode::linear: return blend<2>(p, type_, src, dst, float(fill_));
      case ops::ResizeMode::cubic: return blend<4>(p, type_, src, dst, float(fill_));
      case ops::ResizeMode::nearest: break;
    }
    switch (elem_) {
      case 1: return pick<uint8_t>(p, src, dst, fill_bits<uint8_t>(type_, fill_));
      case 2: return pick<uint16_t>(p, src, dst, fill_bits<uint16_t>(type_, fill_));
      case 4: return pick<uint32_t>(p, src, dst, fill_bits<uint32_t>(type_, fill_));
      default: return pick<uint64_t>(p, src, dst, fill_bits<uint64_t>(type_, fill_));
    }
  }

  std::vector<Pass> passes_;
  DType type_;
  size_t elem_;
  ops::ResizeMode mode_;
  double fill_;
  size_t buffer_bytes_ = 0;
};

// The resized logical dims as passes over the layout's memory dims: the
// most shrinking first, so intermediates stay small; among equal ratios the
// innermost memory dim first, since its gather costs more per element than
// moving whole rows.
std::vector<Pass> plan_passes(const Shape& in, const Shape& out, Layout l, std::vector<AxisTaps>& taps) {
  MemoryView view = memory_view(in, l);
  std::vector<size_t> order;
  for (size_t d = 0; d < in.size(); ++d)
    if (!taps[d].identity(in[d])) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    double ra = double(out[a]) * double(in[b]), rb = double(out[b]) * double(in[a]);
    if (ra != rb) return ra < rb;
    return view.of_logical[a] > view.of_logical[b];
  });
  Shape cur = view.dims;
  std::vector<Pass> passes;
  for (size_t d : order) {
    size_t p = size_t(view.of_logical[d]);
    Pass pass;
    pass.outer = product(cur, 0, p);
    pass.in_len = cur[p];
    pass.out_len = out[d];
    pass.inner = product(cur, p + 1, cur.size());
    pass.taps = std::move(taps[d]);
    cur[p] = out[d];
    passes.push_back(std::move(pass));
  }
  return passes;
}

// The input's own layout when only H and W of a 4-D tensor change and no
// extrapolation value is written; plain otherwise.
Layout resize_layout(const TensorDesc& x, const std::vector<AxisTaps>& taps, const ops::ResizeSpec& s) {
  if (x.layout == Layout::plain || x.shape.size() != 4) return Layout::plain;
  if (s.coordinate == ops::CoordinateMode::tf_crop_and_resize) return Layout::plain;
  bool nc_kept = taps[0].identity(x.shape[0]) && taps[1].identity(x.shape[1]);
  return nc_kept ? x.layout : Layout::plain;
}

KernelPlan make_resize(const OpDesc& op) {
  ops::ResizeSpec s = ops::resize_spec(ops::infer_context_of(op));
  check_supported(s.known, "Resize needs constant scales or sizes (and roi for tf_crop_and_resize)");
  const TensorDesc& x = op.inputs[0];
  const Shape& out = op.outputs[0].shape;
  std::vector<AxisTaps> taps = ops::resize_taps(s, x.shape, out);
  KernelPlan plan;
  Layout l = resize_layout(x, taps, s);
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = l;
  plan.output_layouts = {l};
  if (ops::resizes_nothing(taps, x.shape)) {
    plan.alias_input = 0;
    return plan;
  }
  check_supported(s.mode == ops::ResizeMode::nearest || x.dtype == DType::f32 || x.dtype == DType::f16 ||
                      x.dtype == DType::bf16,
                  "Resize linear/cubic supports f32, f16 and bf16, got " + x.str());
  plan.kernel = std::make_unique<ResizeKernel>(plan_passes(x.shape, out, l, taps), x.dtype, s.mode, s.extrapolation);
  return plan;
}

}  // namespace

void register_resize_kernels() {
  register_kernel("Resize", make_resize);
  register_kernel("Upsample", make_resize);
}

}  // namespace tandem::cpu
