// Add with broadcasting, and its backward (sum over the broadcast axes), on
// oneDNN's binary_add and reduction_sum, plain tensors of one rank.
//   add_forward: y = a + b; the input with y's shape is oneDNN's src0 (only
//   src1 may broadcast there).
//   sum_to: src [d0, d1, ...] -> dst [e0, e1, ...], each e_i = d_i or 1.
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;

const dnnl::binary& add_primitive(Context& c, const Tensor& full, const Tensor& other) {
  return c.cache.get<dnnl::binary>(cache_key("add", full, other), [&] {
    dnnl::binary::desc d(dnnl::algorithm::binary_add, plain_md(full), plain_md(other), plain_md(full));
    return dnnl::binary(dnnl::binary::primitive_desc(d, engine()));
  });
}

const dnnl::reduction& sum_primitive(Context& c, const Tensor& src, const Shape& dst) {
  return c.cache.get<dnnl::reduction>(cache_key("sum_to", src, dst), [&] {
    dnnl::reduction::desc d(dnnl::algorithm::reduction_sum, plain_md(src), plain_md(src.dtype(), to_dims(dst)),
                            0.f, 0.f);
    return dnnl::reduction(dnnl::reduction::primitive_desc(d, engine()));
  });
}

}  // namespace

void add_forward(void* ctx, const Tensor& a, const Tensor& b, const Tensor& y) {
  const char* op = "add_forward";
  require_f32(op, {&a, &b, &y});
  require_shape(op, y, ops::add_output_shape(a.shape(), b.shape()), "y");
  if (y.numel() == 0) return;
  bool a_full = a.shape() == y.shape();
  const Tensor& full = a_full ? a : b;
  const Tensor& other = a_full ? b : a;
  guarded(op, y, [&] {
    add_primitive(context(ctx), full, other)
        .execute(stream(), {{DNNL_ARG_SRC_0, plain_memory(full)}, {DNNL_ARG_SRC_1, plain_memory(other)},
                            {DNNL_ARG_DST, plain_memory(y)}});
    stream().wait();
  });
}

void sum_to(void* ctx, const Tensor& src, const GradOut& dst) {
  const char* op = "sum_to";
  require_f32(op, {&src});
  if (!dst.wanted()) return;
  require_f32(op, {&dst.t});
  check(ops::sums_to(src.shape(), dst.t.shape()),
        "cannot sum " + shape_str(src.shape()) + " to " + shape_str(dst.t.shape()), op_context(op, src));
  if (src.shape() == dst.t.shape()) {
    if (dst.mode == GradMode::accumulate) add_into(dst.t.data<float>(), src.data<float>(), src.numel());
    else if (src.numel()) std::memcpy(dst.t.raw(), src.raw(), src.bytes());
    return;
  }
  GradTarget t(dst, dst.t.shape(), op);
  guarded(op, src, [&] {
    sum_primitive(context(ctx), src, dst.t.shape())
        .execute(stream(), {{DNNL_ARG_SRC, plain_memory(src)}, {DNNL_ARG_DST, plain_memory(t.tensor())}});
    stream().wait();
  });
  t.commit();
}

}  // namespace tandem::cpu::train
