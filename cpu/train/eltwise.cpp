// Activations for training on oneDNN's eltwise_forward (forward_training) and
// eltwise_backward (from the source values), over the tensor as one vector,
// with the algorithm inference uses for the kind (cpu/post_ops.h).
#include "cpu/post_ops.h"
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;

// The kind's one oneDNN step (the one inference runs): a kind that needs
// two, or an output scale, has no eltwise backward of its own.
EltwiseStep step(const ops::Activation& p, const Tensor& x) {
  std::vector<EltwiseStep> steps = eltwise_steps(p);
  check_supported(steps.size() == 1 && steps[0].scale == 1.f,
                  std::string("CPU training has no ") + ops::activation_op_type(p.kind) + " activation",
                  op_context("eltwise", x));
  return steps[0];
}

struct Entry {
  dnnl::eltwise_forward fwd;
  dnnl::eltwise_backward bwd;
};

const Entry& entry(Context& c, const ops::Activation& p, const Tensor& x) {
  const EltwiseStep s = step(p, x);
  return c.cache.get<Entry>(cache_key("eltwise", x.dtype(), x.numel(), int(s.algorithm), s.alpha, s.beta), [&] {
    memory::desc m = plain_md(x.dtype(), {x.numel()});
    dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, s.algorithm, m, s.alpha, s.beta);
    dnnl::eltwise_forward::primitive_desc fpd(fd, engine());
    dnnl::eltwise_backward::desc bd(s.algorithm, m, m, s.alpha, s.beta);
    dnnl::eltwise_backward::primitive_desc bpd(bd, engine(), fpd);
    return Entry{dnnl::eltwise_forward(fpd), dnnl::eltwise_backward(bpd)};
  });
}

memory flat(const Tensor& t) { return plain_memory(t, {t.numel()}); }

}  // namespace

void eltwise_forward(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& y) {
  const char* op = "eltwise_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, x.shape(), "y");
  if (x.numel() == 0) return;
  guarded(op, x, [&] {
    entry(context(ctx), p, x).fwd.execute(stream(), {{DNNL_ARG_SRC, flat(x)}, {DNNL_ARG_DST, flat(y)}});
    stream().wait();
  });
}

void eltwise_backward(void* ctx, const ops::Activation& p, const Tensor& x, const Tensor& dy, const GradOut& dx) {
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
