#include "ops/pool.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

bool is_pool(const std::string& t) {
  return t == "MaxPool" || t == "AveragePool" || t == "GlobalMaxPool" || t == "GlobalAveragePool";
}

PoolParams pool_params(const std::string& t, const Attributes& a, const Shape& x) {
  check(x.size() >= 3, t + " input must have rank >= 3, got " + shape_str(x));
  Shape in(x.begin() + 2, x.end());
  PoolParams p;
  p.kind = (t == "MaxPool" || t == "GlobalMaxPool") ? PoolKind::max : PoolKind::average;
  p.global = t == "GlobalMaxPool" || t == "GlobalAveragePool";
  if (p.global) {
    for (int64_t d : in) check(d != 0, t + " over an empty spatial extent " + shape_str(x));
    Attributes none;
    // Unknown extents stay unknown in the kernel but give a 1 output.
    Shape kernel = in;
    for (int64_t& k : kernel) k = k < 0 ? 1 : k;
    p.window = resolve_window(none, kernel, kernel, false);
    return p;
  }
  Shape kernel = a.get_ints("kernel_shape");
  check(kernel.size() == in.size(), "kernel_shape " + shape_str(kernel) + " does not match input " +
                                        shape_str(x));
  if (t == "MaxPool") {
    int64_t order = a.get_int("storage_order", 0);
    check(order == 0 || order == 1, "storage_order must be 0 or 1");
  } else {
    p.count_include_pad = a.get_int("count_include_pad", 0) != 0;
  }
  p.window = resolve_window(a, kernel, in, true);
  return p;
}

namespace {

std::vector<TensorDesc> infer_pool(const InferContext& c) {
  PoolParams p = pool_params(c.op_type, c.attributes(), c.shape(0));
  Shape y{c.shape(0)[0], c.shape(0)[1]};
  y.insert(y.end(), p.window.out.begin(), p.window.out.end());
  std::vector<TensorDesc> out{TensorDesc{c.inputs[0].dtype, y}};
  if (c.op_type == "MaxPool" && c.num_outputs > 1) out.push_back(TensorDesc{DType::i64, y});
  return out;
}

}  // namespace

void register_pool_schemas() {
  for (const char* t : {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"})
    register_schema({t, 1, 1, infer_pool});
}

Shape pool2d_output_shape(const Pool2dParams& p, const Shape& x) {
  const char* op = p.kind == PoolKind::max ? "max_pool2d" : "avg_pool2d";
  TANDEM_CHECK(x.size() == 4, "pooling wants x [N,C,H,W]", shape_context(op, x));
  TANDEM_CHECK(p.kind == PoolKind::max || (p.dilation[0] == 1 && p.dilation[1] == 1),
               "average pooling has no dilation", shape_context(op, x));
  for (int i = 0; i < 2; ++i)
    TANDEM_CHECK(2 * p.padding[i] <= p.kernel[i], "padding must be at most half the kernel",
                 shape_context(op, x));
  return {x[0], x[1], window_extent_2d(op, x, 0, p.kernel, p.stride, p.padding, p.dilation),
          window_extent_2d(op, x, 1, p.kernel, p.stride, p.padding, p.dilation)};
}

}  // namespace tandem::ops
