#include "ops/norm.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

BatchNormParams batchnorm_params(const Attributes& a, const Shape& x) {
  check(x.size() >= 2, "BatchNormalization input must have rank >= 2, got " + shape_str(x));
  check_supported(a.get_int("training_mode", 0) == 0, "BatchNormalization training_mode=1 is not supported");
  BatchNormParams p;
  p.epsilon = a.get_float("epsilon", 1e-5f);
  check(p.epsilon >= 0.f, "BatchNormalization epsilon is negative");
  p.channels = x[1];
  return p;
}

LayerNormParams layernorm_params(const Attributes& a, const Shape& x) {
  const int64_t rank = int64_t(x.size());
  check(rank >= 1, "LayerNormalization input must have rank >= 1, got " + shape_str(x));
  check_supported(a.get_int("stash_type", 1) == 1,
                  "LayerNormalization stash_type " + std::to_string(a.get_int("stash_type", 1)) +
                      " is not supported (only 1, float32)");
  LayerNormParams p;
  p.axis = normalize_axis(a.get_int("axis", -1), rank);
  p.epsilon = a.get_float("epsilon", 1e-5f);
  check(p.epsilon >= 0.f, "LayerNormalization epsilon is negative");
  p.rows = shape_numel(Shape(x.begin(), x.begin() + p.axis));
  p.cols = shape_numel(Shape(x.begin() + p.axis, x.end()));
  return p;
}

LayerNormParams layernorm_params(const Shape& x, int64_t axis, int64_t end, float epsilon) {
  const int64_t rank = int64_t(x.size());
  check(0 <= axis && axis < end && end <= rank,
        "layer norm over axes [" + std::to_string(axis) + ", " + std::to_string(end) + ") of " + shape_str(x));
  check(epsilon >= 0.f, "layer norm epsilon is negative");
  LayerNormParams p;
  p.axis = axis;
  p.epsilon = epsilon;
  p.rows = shape_numel(Shape(x.begin(), x.begin() + axis));
  p.cols = shape_numel(Shape(x.begin() + axis, x.begin() + end));
  p.inner = shape_numel(Shape(x.begin() + end, x.end()));
  return p;
}

std::vector<float> layernorm_row_values(const Tensor& t, const Shape& x, const LayerNormParams& p) {
  const Shape row(x.begin() + p.axis, x.end());
  const Shape& ts = t.shape();
  const size_t lead = row.size() - ts.size();  // t is right-aligned on the row (checked at inference)
  std::vector<int64_t> tstride = contiguous_strides(ts);
  std::vector<float> out(size_t(p.cols));
  for (int64_t i = 0; i < p.cols; ++i) {
    int64_t rest = i, at = 0;
    for (size_t d = row.size(); d-- > lead;) {
      const int64_t idx = rest % row[d];
      rest /= row[d];
      if (ts[d - lead] != 1) at += idx * tstride[d - lead];
    }
    out[size_t(i)] = float(t.scalar_at(at));
  }
  return out;
}

namespace {

std::vector<TensorDesc> infer_batchnorm(const InferContext& c) {
  check_supported(c.num_outputs == 1, "BatchNormalization running-statistics outputs (training) are not supported");
  BatchNormParams p = batchnorm_params(c.attributes(), c.shape(0));
  for (size_t i = 1; i < 5; ++i) {
    const Shape& s = c.shape(i);
    check(s.size() == 1 && (s[0] == p.channels || s[0] < 0 || p.channels < 0),
          "BatchNormalization input " + std::to_string(i) + " is " + shape_str(s) + ", expected [" +
              std::to_string(p.channels) + "]");
  }
  return {TensorDesc{c.inputs[0].dtype, c.shape(0)}};
}

// Scale and B broadcast to the normalized extents X.shape[axis:] only, as
// every exporter writes them (a Scale spanning the leading extents would
// make LayerNormalization an elementwise product of a different shape).
void check_row_operand(const InferContext& c, size_t i, const Shape& row) {
  const Shape& s = c.shape(i);
  bool ok = s.size() <= row.size() && is_floating(c.inputs[i].dtype);
  for (size_t d = 0; ok && d < s.size(); ++d) {
    const int64_t want = row[row.size() - s.size() + d];
    ok = s[d] == 1 || s[d] == want || s[d] < 0 || want < 0;
  }
  check(ok, std::string(i == 1 ? "Scale" : "B") + " " + c.inputs[i].str() +
                " does not broadcast to the normalized extents " + shape_str(row));
}

std::vector<TensorDesc> infer_layernorm(const InferContext& c) {
  const TensorDesc& x = c.inputs[0];
  check(is_floating(x.dtype), "LayerNormalization takes a float X, got " + x.str());
  LayerNormParams p = layernorm_params(c.attributes(), x.shape);
  const Shape row(x.shape.begin() + p.axis, x.shape.end());
  check_row_operand(c, 1, row);
  if (c.has_input(2)) check_row_operand(c, 2, row);
  check(c.num_outputs <= 3, "LayerNormalization has at most 3 outputs (Y, Mean, InvStdDev)");
  std::vector<TensorDesc> out{TensorDesc{x.dtype, x.shape}};
  Shape stat = x.shape;
  for (size_t d = size_t(p.axis); d < stat.size(); ++d) stat[d] = 1;
  for (int k = 1; k < c.num_outputs; ++k) out.push_back(TensorDesc{DType::f32, stat});
  return out;
}

}  // namespace

void register_norm_schemas() {
  register_schema({"BatchNormalization", 5, 5, infer_batchnorm});
  register_schema({"LayerNormalization", 2, 3, infer_layernorm});
}

}  // namespace tandem::ops
