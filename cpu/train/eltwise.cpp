// Activations for training on oneDNN's eltwise_forward (forward_training) and
// eltwise_backward (from the source values), over the tensor as one vector.
//   relu: relu (alpha 0)        leaky_relu: relu (alpha = negative slope)
//   silu: swish (alpha 1)       hardswish: x * relu6(x + 3) / 6
//   sigmoid: logistic           tanh: tanh
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;

dnnl::algorithm algorithm(EltwiseKind k) {
  switch (k) {
    case EltwiseKind::relu:
    case EltwiseKind::leaky_relu: return dnnl::algorithm::eltwise_relu;
    case EltwiseKind::silu: return dnnl::algorithm::eltwise_swish;
    case EltwiseKind::hardswish: return dnnl::algorithm::eltwise_hardswish;
    case EltwiseKind::sigmoid: return dnnl::algorithm::eltwise_logistic;
    case EltwiseKind::tanh: return dnnl::algorithm::eltwise_tanh;
  }
  throw Error("unknown activation " + std::to_string(int(k)));
}

float alpha(const EltwiseParams& p) {
  if (p.kind == EltwiseKind::leaky_relu) return p.alpha;
  return p.kind == EltwiseKind::silu ? 1.f : 0.f;
}

struct Entry {
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
};

const Entry& entry(Context& c, const EltwiseParams& p, const Tensor& x) {
  float a = alpha(p);
  return c.cache.get<Entry>(cache_key("eltwise", x.dtype(), x.numel(), int(p.kind), a), [&] {
    memory::desc m = plain_md(x.dtype(), {x.numel()});
    dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, algorithm(p.kind), m, a);
    dnnl::eltwise_forward::primitive_desc fpd(fd, engine());
    dnnl::eltwise_backward::desc bd(algorithm(p.kind), m, m, a);
    dnnl::eltwise_backward::primitive_desc bpd(bd, engine(), fpd);
    return Entry{dnnl::eltwise_forward(fpd), dnnl::eltwise_backward(bpd)};
  });
}

memory flat(const Tensor& t) { return plain_memory(t, {t.numel()}); }

}  // namespace

void eltwise_forward(void* ctx, const EltwiseParams& p, const Tensor& x, const Tensor& y) {
  const char* op = "eltwise_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  if (x.numel() == 0) return;
  guarded(op, x, [&] {
    entry(context(ctx), p, x).fwd.execute(stream(), {{DNNL_ARG_SRC, flat(x)}, {DNNL_ARG_DST, flat(y)}});
    stream().wait();
  });
}

void eltwise_backward(void* ctx, const EltwiseParams& p, const Tensor& x, const Tensor& dy, const GradOut& dx) {
  const char* op = "eltwise_backward";
  require_f32(op, {&x, &dy});
  require_shape(op, dy, x.shape(), "dy");
  if (!dx.wanted() || x.numel() == 0) return;
  guarded(op, x, [&] {
    GradTarget t(dx, x.shape(), op);
    entry(context(ctx), p, x).bwd.execute(stream(), {{DNNL_ARG_SRC, flat(x)}, {DNNL_ARG_DIFF_DST, flat(dy)},
                                                     {DNNL_ARG_DIFF_SRC, flat(t.tensor())}});
    stream().wait();
    t.commit();
  });
}

}  // namespace tandem::cpu::train
