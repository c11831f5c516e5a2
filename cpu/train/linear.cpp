// Linear (y = x·wᵀ + b) for training on oneDNN's inner product: forward
// (forward_training), backward_data, backward_weights (with the bias
// gradient), all on plain tensors.
//   x [N, K], w [M, K], b [M], y / dy [N, M].
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;

struct Entry {
  dnnl::inner_product_forward::primitive_desc fwd_pd;
  dnnl::inner_product_forward fwd;
  dnnl::inner_product_backward_data data;
  dnnl::inner_product_backward_weights weights;
};

// One entry holds the three primitives: their builds share the forward hint.
const Entry& entry(Context& c, const Tensor& x, const Tensor& w, bool bias) {
  return c.cache.get<Entry>(cache_key("linear", x, w, bias), [&] {
    Shape ys = ops::linear_output_shape(x.shape(), w.shape());
    memory::desc src = plain_md(x), wei = plain_md(w), dst = plain_md(x.dtype(), to_dims(ys));
    memory::desc b = plain_md(x.dtype(), {w.dim(0)});
    auto prop = dnnl::prop_kind::forward_training;
    auto fd = bias ? dnnl::inner_product_forward::desc(prop, src, wei, b, dst)
                   : dnnl::inner_product_forward::desc(prop, src, wei, dst);
    dnnl::inner_product_forward::primitive_desc fpd(fd, engine());
    dnnl::inner_product_backward_data::desc dd(src, wei, dst);
    dnnl::inner_product_backward_data::primitive_desc dpd(dd, engine(), fpd);
    auto wd = bias ? dnnl::inner_product_backward_weights::desc(src, wei, b, dst)
                   : dnnl::inner_product_backward_weights::desc(src, wei, dst);
    dnnl::inner_product_backward_weights::primitive_desc wpd(wd, engine(), fpd);
    return Entry{fpd, dnnl::inner_product_forward(fpd), dnnl::inner_product_backward_data(dpd),
                 dnnl::inner_product_backward_weights(wpd)};
  });
}

void check_inputs(const char* op, const Tensor& x, const Tensor& w, const Tensor& b) {
  require_f32(op, {&x, &w, &b});
  ops::linear_output_shape(x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

}  // namespace

void linear_forward(void* ctx, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  const char* op = "linear_forward";
  check_inputs(op, x, w, b);
  require_f32(op, {&y});
  require_shape(op, y, ops::linear_output_shape(x.shape(), w.shape()), "y");
  guarded(op, x, [&] {
    const Entry& e = entry(context(ctx), x, w, b.defined());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, plain_memory(x)}, {DNNL_ARG_WEIGHTS, plain_memory(w)}, {DNNL_ARG_DST, plain_memory(y)}};
    if (b.defined()) args[DNNL_ARG_BIAS] = plain_memory(b);
    e.fwd.execute(stream(), args);
    stream().wait();
  });
}

void linear_backward(void* ctx, const Tensor& x, const Tensor& w, const Tensor& dy, const GradOut& dx,
                     const GradOut& dw, const GradOut& db) {
  const char* op = "linear_backward";
  check_inputs(op, x, w, Tensor());
  require_f32(op, {&dy});
  require_shape(op, dy, ops::linear_output_shape(x.shape(), w.shape()), "dy");
  guarded(op, x, [&] {
    bool bias = db.wanted();
    const Entry& e = entry(context(ctx), x, w, bias);
    if (dx.wanted()) {
      GradTarget t(dx, x.shape(), op);
      e.data.execute(stream(), {{DNNL_ARG_DIFF_DST, plain_memory(dy)}, {DNNL_ARG_WEIGHTS, plain_memory(w)},
                                {DNNL_ARG_DIFF_SRC, plain_memory(t.tensor())}});
      stream().wait();
      t.commit();
    }
    if (dw.wanted() || bias) {
      GradTarget tw(dw, w.shape(), op), tb(db, {w.dim(0)}, op);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, plain_memory(x)}, {DNNL_ARG_DIFF_DST, plain_memory(dy)},
                                           {DNNL_ARG_DIFF_WEIGHTS, plain_memory(tw.tensor())}};
      if (bias) args[DNNL_ARG_DIFF_BIAS] = plain_memory(tb.tensor());
      e.weights.execute(stream(), args);
      stream().wait();
      tw.commit();
      tb.commit();
    }
  });
}

}  // namespace tandem::cpu::train
