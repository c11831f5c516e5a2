#include "ops/concat.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

int64_t concat_axis(const Attributes& a, int64_t rank) {
  check(rank >= 1, "Concat of scalars");
  return normalize_axis(a.get_int("axis"), rank);
}

namespace {

std::vector<TensorDesc> infer_concat(const InferContext& c) {
  const TensorDesc& first = c.inputs[0];
  int64_t axis = concat_axis(c.attributes(), int64_t(first.shape.size()));
  Shape y = first.shape;
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const TensorDesc& t = c.inputs[i];
    check(t.dtype == first.dtype && t.shape.size() == y.size(),
          "Concat input " + std::to_string(i) + " " + t.str() + " does not match " + first.str());
    for (size_t d = 0; d < y.size(); ++d) {
      int64_t e = t.shape[d];
      if (int64_t(d) == axis) {
        y[d] = (y[d] < 0 || e < 0) ? -1 : y[d] + e;
      } else {
        check(e == y[d] || e < 0 || y[d] < 0,
              "Concat input " + std::to_string(i) + " " + t.str() + " differs off the axis from " + first.str());
        if (y[d] < 0) y[d] = e;
      }
    }
  }
  return {TensorDesc{first.dtype, y}};
}

}  // namespace

void register_concat_schemas() { register_schema({"Concat", 1, 1 << 16, infer_concat}); }

Shape concat_output_shape(std::span<const Tensor> xs, int64_t axis) {
  TANDEM_CHECK(!xs.empty(), "concat of no tensors", shape_context("concat", {}));
  Shape y = xs[0].shape();
  size_t a = size_t(normalize_axis(axis, int64_t(y.size())));
  y[a] = 0;
  for (const Tensor& x : xs) {
    Shape s = x.shape();
    TANDEM_CHECK(s.size() == y.size(), "concat of tensors of different ranks",
                 shape_context("concat", s));
    for (size_t i = 0; i < s.size(); ++i)
      TANDEM_CHECK(i == a || s[i] == y[i],
                   "concat: extents differ off axis " + std::to_string(a) + " from " +
                       shape_str(xs[0].shape()),
                   shape_context("concat", s));
    y[a] += s[a];
  }
  return y;
}

ConcatBlocks concat_blocks(const Shape& y, int64_t axis) {
  ConcatBlocks b;
  for (int64_t i = 0; i < axis; ++i) b.outer *= y[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < y.size(); ++i) b.inner *= y[i];
  b.row = y[size_t(axis)] * b.inner;
  return b;
}

}  // namespace tandem::ops
