// Ops that only change the shape, never the bytes: Reshape, Flatten, Squeeze,
// Unsqueeze (views of their input on a plain layout), plus Shape and Size,
// whose outputs depend on the input's shape alone.
#include <algorithm>

#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {

// Product of s[begin, end), or -1 when any of those extents is unknown.
int64_t extent_product(const Shape& s, size_t begin, size_t end) {
  Shape part(s.begin() + std::ptrdiff_t(begin), s.begin() + std::ptrdiff_t(end));
  return shape_is_static(part) ? shape_numel(part) : -1;
}

// ONNX Reshape: 0 copies the input extent (unless allowzero), one -1 is inferred.
std::vector<TensorDesc> infer_reshape(const InferContext& c) {
  const Shape& in = c.shape(0);
  std::vector<int64_t> spec = c.constant(1).to_int_vector();
  check(c.constant(1).rank() == 1, "shape input must be 1-D");
  bool allowzero = c.opset >= 14 && c.attributes().get_int("allowzero", 0) != 0;
  Shape out(spec.size());
  int inferred = -1;
  bool has_zero = false;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    check(v >= -1, "shape value " + std::to_string(v) + " is invalid");
    if (v == 0 && !allowzero) {
      check(i < in.size(), "shape value 0 at position " + std::to_string(i) +
                               " has no input extent to copy (input " + shape_str(in) + ")");
      out[i] = in[i];
    } else if (v == -1) {
      check(inferred < 0, "shape has more than one -1");
      inferred = int(i);
    } else {
      has_zero |= v == 0;
      out[i] = v;
    }
  }
  check(!(allowzero && has_zero && inferred >= 0), "allowzero shape with both 0 and -1");
  if (inferred >= 0) out[size_t(inferred)] = 1;
  if (!shape_is_static(in) || !shape_is_static(out)) {
    if (inferred >= 0) out[size_t(inferred)] = -1;
    return {TensorDesc{c.inputs[0].dtype, out}};
  }
  int64_t total = shape_numel(in), known = shape_numel(out);
  if (inferred >= 0) {
    check(known != 0 && total % known == 0,
          "cannot infer -1 reshaping " + shape_str(in) + " to " + shape_str(spec));
    out[size_t(inferred)] = total / known;
  } else {
    check(known == total, "cannot reshape " + shape_str(in) + " to " + shape_str(out));
  }
  return {TensorDesc{c.inputs[0].dtype, out}};
}

// [d0..dn) -> [d0*..*d(axis-1), d(axis)*..*d(n-1)]; axis in [-rank, rank].
std::vector<TensorDesc> infer_flatten(const InferContext& c) {
  const Shape& in = c.shape(0);
  int64_t r = int64_t(in.size());
  int64_t axis = c.attributes().get_int("axis", 1);
  check(axis >= -r && axis <= r, "axis " + std::to_string(axis) + " out of range for rank " +
                                     std::to_string(r));
  if (axis < 0) axis += r;
  Shape out{extent_product(in, 0, size_t(axis)), extent_product(in, size_t(axis), in.size())};
  return {TensorDesc{c.inputs[0].dtype, out}};
}

std::vector<TensorDesc> infer_squeeze(const InferContext& c) {
  const Shape& in = c.shape(0);
  std::vector<bool> drop(in.size(), false);
  // An empty axes list squeezes every extent-1 dim, as no axes does (onnxruntime agrees).
  if (auto axes = list_arg(c, "axes", 1, 13); axes && !axes->empty()) {
    for (int64_t a : normalize_axes(*axes, int64_t(in.size()))) {
      check(in[size_t(a)] == 1 || in[size_t(a)] < 0,
            "cannot squeeze axis " + std::to_string(a) + " of " + shape_str(in));
      drop[size_t(a)] = true;
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return {TensorDesc{c.inputs[0].dtype, out}};
}

// Axes refer to the output, whose rank is input rank + number of axes.
std::vector<TensorDesc> infer_unsqueeze(const InferContext& c) {
  const Shape& in = c.shape(0);
  auto axes = list_arg(c, "axes", 1, 13);
  check(axes.has_value(), "Unsqueeze needs axes");
  int64_t rank = int64_t(in.size() + axes->size());
  std::vector<bool> inserted(size_t(rank), false);
  for (int64_t a : normalize_axes(*axes, rank)) inserted[size_t(a)] = true;
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[size_t(i)] ? 1 : in[next++]);
  return {TensorDesc{c.inputs[0].dtype, out}};
}

// Shape-15 start/end, clamped to [0, rank] like Python slicing.
std::vector<TensorDesc> infer_shape(const InferContext& c) {
  int64_t r = int64_t(c.shape(0).size());
  auto clamp = [r](int64_t v) { return std::clamp(v < 0 ? v + r : v, int64_t(0), r); };
  int64_t start = c.opset >= 15 ? clamp(c.attributes().get_int("start", 0)) : 0;
  int64_t end = c.opset >= 15 ? clamp(c.attributes().get_int("end", r)) : r;
  return {TensorDesc{DType::i64, Shape{std::max<int64_t>(end - start, 0)}}};
}

std::vector<TensorDesc> infer_size(const InferContext&) { return {TensorDesc{DType::i64, Shape{}}}; }

}  // namespace

void register_reshape_schemas() {
  register_schema({"Reshape", 2, 2, infer_reshape});
  register_schema({"Flatten", 1, 1, infer_flatten});
  register_schema({"Squeeze", 1, 2, infer_squeeze});
  register_schema({"Unsqueeze", 1, 2, infer_unsqueeze});
  register_schema({"Shape", 1, 1, infer_shape});
  register_schema({"Size", 1, 1, infer_size});
}

}  // namespace tandem::ops
