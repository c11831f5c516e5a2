// Slice and Split: sub-ranges of the input along some axes.
#include <algorithm>
#include <cstdint>

#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

namespace {

// Slice-10+ takes starts/ends/axes/steps as (constant) inputs 1-4; Slice-1
// took starts/ends/axes as attributes.
std::vector<int64_t> slice_list(const InferContext& c, const char* name, size_t index) {
  if (c.opset >= 10) {
    if (!c.has_input(index)) return {};
    const Tensor& t = c.constant(index);
    check(t.dtype() == DType::i64 || t.dtype() == DType::i32,
          std::string(name) + " must be int32 or int64, got " + t.desc().str());
    check(t.rank() == 1, std::string(name) + " must be 1-D, got " + t.desc().str());
    return t.to_int_vector();
  }
  return c.attributes().get_ints(name);
}

// Clamps one axis like the ONNX spec (and Python slicing) and returns the
// output extent; start is updated to the first index read.
int64_t clamp_slice(int64_t dim, int64_t* start, int64_t end, int64_t step) {
  int64_t s = *start < 0 ? *start + dim : *start;
  int64_t e = end < 0 ? end + dim : end;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    *start = s;
    return e > s ? (e - s - 1) / step + 1 : 0;
  }
  s = std::clamp<int64_t>(s, 0, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  *start = s;
  return s > e ? (s - e - 1) / -step + 1 : 0;
}

}  // namespace

SliceSpec slice_spec(const InferContext& c) {
  const Shape& in = c.shape(0);
  int64_t rank = int64_t(in.size());
  check(c.opset < 10 || (c.has_input(1) && c.has_input(2)), "Slice needs starts and ends inputs");
  std::vector<int64_t> starts = slice_list(c, "starts", 1), ends = slice_list(c, "ends", 2);
  std::vector<int64_t> axes = slice_list(c, "axes", 3), steps;
  if (c.opset >= 10) steps = slice_list(c, "steps", 4);
  check(starts.size() == ends.size(), "starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  check(axes.size() == starts.size() && steps.size() == starts.size(),
        "starts, ends, axes and steps must have the same length");
  axes = normalize_axes(axes, rank);
  SliceSpec s{in, std::vector<int64_t>(size_t(rank), 0), std::vector<int64_t>(size_t(rank), 1)};
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = size_t(axes[i]);
    check(steps[i] != 0 && steps[i] != INT64_MIN, "slice step " + std::to_string(steps[i]) + " is invalid");
    s.step[a] = steps[i];
    s.start[a] = starts[i];
    if (in[a] >= 0) s.out[a] = clamp_slice(in[a], &s.start[a], ends[i], steps[i]);
  }
  return s;
}

SplitSpec split_spec(const InferContext& c) {
  const Shape& in = c.shape(0);
  SplitSpec s;
  s.axis = normalize_axis(c.attributes().get_int("axis", 0), int64_t(in.size()));
  int64_t dim = in[size_t(s.axis)];
  int64_t n = c.num_outputs;
  check(n >= 1, "Split needs at least one output");
  if (auto sizes = list_arg(c, "split", 1, 13)) {
    check(int64_t(sizes->size()) == n, "split has " + std::to_string(sizes->size()) +
                                           " sizes for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t v : *sizes) {
      check(v >= 0 && v <= (int64_t(1) << 62), "split size " + std::to_string(v) + " is invalid");
      sum += v;
    }
    check(dim < 0 || sum == dim, "split sizes sum to " + std::to_string(sum) + ", axis extent is " +
                                     std::to_string(dim));
    s.sizes = *sizes;
    return s;
  }
  if (c.opset >= 18 && c.attributes().has("num_outputs"))
    check(c.attributes().get_int("num_outputs") == n, "num_outputs does not match the node's outputs");
  if (dim < 0) {
    s.sizes.assign(size_t(n), -1);
    return s;
  }
  // Split-18 lets the last chunk be smaller; earlier opsets need equal parts.
  int64_t chunk = dim / n + (dim % n != 0);  // ceil(dim / n), with no dim + n to overflow
  check(c.opset >= 18 || dim % n == 0,
        "axis extent " + std::to_string(dim) + " does not split into " + std::to_string(n) + " equal parts");
  for (int64_t i = 0; i < n; ++i) s.sizes.push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
  return s;
}

namespace {

std::vector<TensorDesc> infer_slice(const InferContext& c) {
  return {TensorDesc{c.inputs[0].dtype, slice_spec(c).out}};
}

std::vector<TensorDesc> infer_split(const InferContext& c) {
  SplitSpec s = split_spec(c);
  std::vector<TensorDesc> out;
  for (int64_t size : s.sizes) {
    TensorDesc d{c.inputs[0].dtype, c.shape(0)};
    d.shape[size_t(s.axis)] = size;
    out.push_back(d);
  }
  return out;
}

}  // namespace

void register_slice_schemas() {
  register_schema({"Slice", 1, 5, infer_slice});
  register_schema({"Split", 1, 2, infer_split});
}

}  // namespace tandem::ops
