// Ops that make tensors from attributes or constant scalars: Constant,
// ConstantOfShape, Range. Their outputs are constants whenever their inputs
// are, so the graph's folding pass evaluates them once.
#include <cmath>

#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

Tensor constant_attr_value(const Attributes& a) {
  int given = 0;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints",
                           "value_string", "value_strings", "sparse_value"})
    given += a.has(name) ? 1 : 0;
  check(given == 1, "Constant needs exactly one value attribute, got " + std::to_string(given));
  if (a.has("value")) {
    const Tensor& t = a.get_tensor("value");
    check(t.layout() == Layout::plain && t.device().is_cpu(), "Constant value must be a plain host tensor");
    return t;
  }
  if (a.has("value_float")) return Tensor::from_vector<float>({a.get_float("value_float", 0.f)}, {});
  if (a.has("value_int")) return Tensor::from_vector<int64_t>({a.get_int("value_int")}, {});
  if (a.has("value_floats")) {
    std::vector<float> v = a.get_floats("value_floats");
    return Tensor::from_vector<float>(v, {int64_t(v.size())});
  }
  if (a.has("value_ints")) {
    std::vector<int64_t> v = a.get_ints("value_ints");
    return Tensor::from_vector<int64_t>(v, {int64_t(v.size())});
  }
  throw Error::unsupported("Constant with string or sparse values is not supported");
}

Tensor constant_of_shape_value(const Attributes& a) {
  if (!a.has("value")) return Tensor::from_vector<float>({0.f}, {1});
  const Tensor& t = a.get_tensor("value");
  check(t.numel() == 1, "ConstantOfShape value must hold one element, got " + t.desc().str());
  check(t.device().is_cpu() && t.layout() == Layout::plain, "ConstantOfShape value must be a host tensor");
  return t;
}

int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  for (const Tensor* t : {&start, &limit, &delta}) {
    check(t->numel() == 1, "Range inputs must be scalars, got " + t->desc().str());
    check(t->dtype() == start.dtype(), "Range inputs must share a dtype");
  }
  DType dt = start.dtype();
  check(dt == DType::f32 || dt == DType::f64 || dt == DType::i32 || dt == DType::i64,
        "Range supports f32, f64, i32, i64; got " + start.desc().str());
  if (dt == DType::i32 || dt == DType::i64) {
    // Exact integer ceil((limit - start) / delta) without int64 overflow.
    __int128 d = delta.int_at(0), span = __int128(limit.int_at(0)) - start.int_at(0);
    check(d != 0, "Range delta is 0");
    __int128 n = span / d + ((span % d != 0 && (span < 0) == (d < 0)) ? 1 : 0);
    check(n < (__int128(1) << 40), "Range has too many elements");
    return n > 0 ? int64_t(n) : 0;
  }
  double d = delta.scalar_at(0), span = limit.scalar_at(0) - start.scalar_at(0);
  check(d != 0 && std::isfinite(d) && std::isfinite(span), "Range needs finite bounds and a non-zero delta");
  double n = std::ceil(span / d);
  check(n < std::ldexp(1.0, 40), "Range has too many elements");
  return n > 0 ? int64_t(n) : 0;
}

namespace {

std::vector<TensorDesc> infer_constant(const InferContext& c) {
  TensorDesc d = constant_attr_value(c.attributes()).desc();
  d.layout = Layout::plain;
  return {d};
}

std::vector<TensorDesc> infer_constant_of_shape(const InferContext& c) {
  const Tensor& shape = c.constant(0);
  check(shape.dtype() == DType::i64 && shape.rank() == 1, "shape input must be int64 1-D, got " + shape.desc().str());
  Shape out = shape.to_int_vector();
  for (int64_t d : out) check(d >= 0, "negative extent in shape " + shape_str(out));
  TensorDesc desc{constant_of_shape_value(c.attributes()).dtype(), out};
  check_size(desc);
  return {desc};
}

std::vector<TensorDesc> infer_range(const InferContext& c) {
  int64_t n = range_count(c.constant(0), c.constant(1), c.constant(2));
  return {TensorDesc{c.inputs[0].dtype, Shape{n}}};
}

}  // namespace

void register_constant_schemas() {
  register_schema({"Constant", 0, 0, infer_constant});
  register_schema({"ConstantOfShape", 1, 1, infer_constant_of_shape});
  register_schema({"Range", 3, 3, infer_range});
}

}  // namespace tandem::ops
