#include "ops/attention.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

namespace {

std::array<int64_t, 3> three(const Attributes& a, const std::string& name) {
  std::vector<int64_t> v = a.get_ints(name, {});
  check(v.size() == 3, name + " must hold 3 strides, has " + std::to_string(v.size()));
  return {v[0], v[1], v[2]};
}

AttentionView view_attr(const Attributes& a, const std::string& name) {
  AttentionView v;
  v.offset = a.get_int(name + "_offset", 0);
  v.strides = three(a, name + "_strides");
  return v;
}

// The view [extents] reaches no element twice when, axes sorted by stride,
// each stride exceeds the farthest offset the smaller axes reach.
bool one_to_one(const std::array<int64_t, 3>& extents, const std::array<int64_t, 3>& strides) {
  std::vector<std::pair<int64_t, int64_t>> axes;  // stride, extent
  for (size_t i = 0; i < 3; ++i)
    if (extents[i] > 1) axes.push_back({strides[i], extents[i]});
  std::sort(axes.begin(), axes.end());
  int64_t reach = 0;
  for (auto [stride, extent] : axes) {
    if (stride <= reach) return false;
    reach += stride * (extent - 1);
  }
  return true;
}

// Throws unless every element of the view lies in [0, numel).
void check_inside(const char* name, const AttentionView& v, const std::array<int64_t, 3>& extents,
                  int64_t numel) {
  int64_t last = v.offset;
  for (size_t i = 0; i < 3; ++i) {
    check(extents[i] >= 1 && v.strides[i] >= 0,
          std::string("attention view ") + name + " has a negative stride or an empty axis");
    last += v.strides[i] * (extents[i] - 1);
  }
  check(v.offset >= 0 && last < numel, std::string("attention view ") + name +
                                           " reaches past its tensor (" + std::to_string(numel) +
                                           " elements)");
}

std::vector<TensorDesc> infer_attention(const InferContext& c) {
  DType t = c.inputs[0].dtype;
  check(is_floating(t), "attention needs floating-point operands, got " + c.inputs[0].str());
  for (size_t i = 1; i < 3; ++i) check(c.inputs[i].dtype == t, "attention operand dtypes differ");
  std::vector<int64_t> numel;
  for (size_t i = 0; i < c.inputs.size(); ++i) numel.push_back(shape_numel(c.shape(i)));
  if (c.inputs.size() > 3)
    check(c.inputs[3].dtype == t, "attention bias dtype differs from the operands'");
  AttentionParams p = attention_params(c.attributes(), numel);
  return {TensorDesc{t, p.output_shape}};
}

}  // namespace

AttentionParams attention_params(const Attributes& a, const std::vector<int64_t>& numel) {
  check(numel.size() == 3 || numel.size() == 4, "attention takes q, k, v and an optional bias");
  AttentionParams p;
  p.batch = a.get_int("batch", 1);
  p.m = a.get_int("m", 0);
  p.n = a.get_int("n", 0);
  p.d = a.get_int("d", 0);
  p.dv = a.get_int("dv", 0);
  p.scale = a.get_float("scale", 1.f);
  p.q = view_attr(a, "q");
  p.k = view_attr(a, "k");
  p.v = view_attr(a, "v");
  p.y = view_attr(a, "y");
  p.output_shape = a.get_ints("output_shape", {});
  check(p.batch >= 1 && p.m >= 1 && p.n >= 1 && p.d >= 1 && p.dv >= 1,
        "attention extents must be positive");
  check_inside("q", p.q, {p.batch, p.m, p.d}, numel[0]);
  check_inside("k", p.k, {p.batch, p.n, p.d}, numel[1]);
  check_inside("v", p.v, {p.batch, p.n, p.dv}, numel[2]);
  const int64_t y_numel = shape_numel(p.output_shape);
  check(y_numel == p.batch * p.m * p.dv, "attention output_shape " + shape_str(p.output_shape) +
                                             " does not hold " + std::to_string(p.batch) + " x " +
                                             std::to_string(p.m) + " x " + std::to_string(p.dv) +
                                             " results");
  check_inside("y", p.y, {p.batch, p.m, p.dv}, y_numel);
  if (numel.size() == 4) {
    check(numel[3] > 0 && numel[3] % (p.m * p.n) == 0,
          "attention bias of " + std::to_string(numel[3]) + " elements is no [P, m, n] for m = " +
              std::to_string(p.m) + ", n = " + std::to_string(p.n));
    p.bias_period = numel[3] / (p.m * p.n);
  }
  check(p.y.offset == 0 && one_to_one({p.batch, p.m, p.dv}, p.y.strides),
        "attention output view overlaps itself");
  return p;
}

void set_attention_attributes(Attributes& a, const AttentionParams& p) {
  a.set("batch", p.batch);
  a.set("m", p.m);
  a.set("n", p.n);
  a.set("d", p.d);
  a.set("dv", p.dv);
  a.set("scale", p.scale);
  for (auto [name, v] : {std::pair<const char*, const AttentionView*>{"q", &p.q},
                         {"k", &p.k},
                         {"v", &p.v},
                         {"y", &p.y}}) {
    a.set(std::string(name) + "_offset", v->offset);
    a.set(std::string(name) + "_strides",
          std::vector<int64_t>(v->strides.begin(), v->strides.end()));
  }
  a.set("output_shape", std::vector<int64_t>(p.output_shape));
}

std::optional<StridedMatrix> strided_matrix(int64_t rows, int64_t cols, int64_t row_stride,
                                            int64_t col_stride) {
  if (cols == 1 || col_stride == 1) {
    int64_t ld = rows == 1 ? cols : row_stride;
    if (ld >= cols) return StridedMatrix{false, ld};
  }
  if (rows == 1 || row_stride == 1) {
    int64_t ld = cols == 1 ? rows : col_stride;
    if (ld >= rows) return StridedMatrix{true, ld};
  }
  return std::nullopt;
}

bool attention_fits_blas(const AttentionParams& p) {
  for (const AttentionView* v : {&p.q, &p.k, &p.v})
    if (v->offset % 8 != 0) return false;
  const std::optional<StridedMatrix> y = strided_matrix(p.m, p.dv, p.y.strides[1], p.y.strides[2]);
  return strided_matrix(p.m, p.d, p.q.strides[1], p.q.strides[2]) &&
         strided_matrix(p.n, p.d, p.k.strides[1], p.k.strides[2]) &&
         strided_matrix(p.n, p.dv, p.v.strides[1], p.v.strides[2]) && y && !y->transposed;
}

void register_attention_schemas() { register_schema({kAttentionOp, 3, 4, infer_attention}); }

}  // namespace tandem::ops
