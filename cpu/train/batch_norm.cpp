// BatchNorm for training on oneDNN's batch_normalization_forward
// (forward_training, scale and shift) and batch_normalization_backward
// (prop backward: dx, dgamma, dbeta). Eval mode runs the same primitives
// with use_global_stats on the running statistics.
//   x / y / dy [N, C, ...], gamma / beta / running stats [C];
//   saved [2, C]: the mean and biased variance the forward normalized with.
// The running-statistics update (unbiased variance, PyTorch's momentum) is a
// loop over C here: oneDNN's primitive only reports the batch statistics.
// 4-D tensors are normalized in nChw16c, reordered in and out: oneDNN 2.6's
// only NCHW batch norm is plain C++ (ncsp_bnorm), several times slower than
// its JIT ones.
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;
using flags = dnnl::normalization_flags;

struct Entry {
  dnnl::batch_normalization_forward fwd;
  dnnl::batch_normalization_backward bwd;
};

memory::desc compute_md(const Tensor& x) {
  return x.rank() == 4 ? md(x.dtype(), x.shape(), Layout::blocked16) : plain_md(x);
}

flags entry_flags(bool training) {
  flags f = flags::use_scale | flags::use_shift;
  return training ? f : f | flags::use_global_stats;
}

const Entry& entry(Context& c, const BatchNormParams& p, const Tensor& x) {
  return c.cache.get<Entry>(cache_key("batch_norm", x, p.training, p.eps), [&] {
    memory::desc m = compute_md(x);
    flags f = entry_flags(p.training);
    dnnl::batch_normalization_forward::desc fd(dnnl::prop_kind::forward_training, m, p.eps, f);
    dnnl::batch_normalization_forward::primitive_desc fpd(fd, engine());
    dnnl::batch_normalization_backward::desc bd(dnnl::prop_kind::backward, m, m, p.eps, f);
    dnnl::batch_normalization_backward::primitive_desc bpd(bd, engine(), fpd);
    return Entry{dnnl::batch_normalization_forward(fpd), dnnl::batch_normalization_backward(bpd)};
  });
}

void check_inputs(const char* op, const Tensor& x, std::initializer_list<const Tensor*> per_channel) {
  require_f32(op, {&x});
  check(x.rank() >= 2, "batch norm wants x [N, C, ...]", op_context(op, x));
  for (const Tensor* t : per_channel) {
    require_f32(op, {t});
    require_shape(op, *t, {x.dim(1)}, "a per-channel tensor");
  }
}

// Row r of saved [2, C] as a oneDNN vector.
memory saved_row(const Tensor& saved, int64_t r) {
  int64_t c = saved.dim(1);
  return memory(plain_md(DType::f32, {c}), engine(), saved.data<float>() + r * c);
}

void update_running(const BatchNormParams& p, const Tensor& saved, int64_t count, const Tensor& mean,
                    const Tensor& var) {
  const float* m = saved.data<float>();
  const float* v = m + saved.dim(1);
  float* rm = mean.data<float>();
  float* rv = var.data<float>();
  double unbias = double(count) / double(count - 1);
  for (int64_t c = 0; c < saved.dim(1); ++c) {
    rm[c] = float((1 - p.momentum) * rm[c] + p.momentum * m[c]);
    rv[c] = float((1 - p.momentum) * rv[c] + p.momentum * v[c] * unbias);
  }
}

}  // namespace

void batch_norm_forward(void* ctx, const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                        const Tensor& beta, const Tensor& running_mean, const Tensor& running_var,
                        const Tensor& y, Tensor* saved) {
  const char* op = "batch_norm_forward";
  check_inputs(op, x, {&gamma, &beta, &running_mean, &running_var});
  require_f32(op, {&y});
  require_shape(op, y, x.shape(), "y");
  int64_t count = x.numel() / x.dim(1);
  check(!p.training || count > 1, "training batch norm needs more than one value per channel",
        op_context(op, x));
  *saved = Tensor::empty(DType::f32, {2, x.dim(1)});
  if (!p.training) {
    std::memcpy(saved->data<float>(), running_mean.raw(), running_mean.bytes());
    std::memcpy(saved->data<float>() + x.dim(1), running_var.raw(), running_var.bytes());
  }
  guarded(op, x, [&] {
    const Entry& e = entry(context(ctx), p, x);
    memory::desc m = compute_md(x);
    OutputMemory dst(plain_memory(y), m);
    e.fwd.execute(stream(), {{DNNL_ARG_SRC, in_layout(plain_memory(x), m)}, {DNNL_ARG_DST, dst.get()},
                             {DNNL_ARG_SCALE, plain_memory(gamma)}, {DNNL_ARG_SHIFT, plain_memory(beta)},
                             {DNNL_ARG_MEAN, saved_row(*saved, 0)}, {DNNL_ARG_VARIANCE, saved_row(*saved, 1)}});
    dst.finish();
    stream().wait();
  });
  if (p.training) update_running(p, *saved, count, running_mean, running_var);
}

void batch_norm_backward(void* ctx, const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                         const Tensor& saved, const Tensor& dy, const GradOut& dx, const GradOut& dgamma,
                         const GradOut& dbeta) {
  const char* op = "batch_norm_backward";
  check_inputs(op, x, {&gamma});
  require_f32(op, {&dy, &saved});
  require_shape(op, dy, x.shape(), "dy");
  require_shape(op, saved, {2, x.dim(1)}, "the saved statistics");
  guarded(op, x, [&] {
    const Entry& e = entry(context(ctx), p, x);
    GradTarget tx(dx, x.shape(), op), tg(dgamma, {x.dim(1)}, op), tb(dbeta, {x.dim(1)}, op);
    // oneDNN 2.6 refuses to run without a shift bound, though no gradient
    // depends on it: gamma stands in.
    memory::desc m = compute_md(x);
    OutputMemory diff_src(plain_memory(tx.tensor()), m);
    e.bwd.execute(stream(), {{DNNL_ARG_SRC, in_layout(plain_memory(x), m)},
                             {DNNL_ARG_DIFF_DST, in_layout(plain_memory(dy), m)},
                             {DNNL_ARG_SCALE, plain_memory(gamma)}, {DNNL_ARG_SHIFT, plain_memory(gamma)},
                             {DNNL_ARG_MEAN, saved_row(saved, 0)}, {DNNL_ARG_VARIANCE, saved_row(saved, 1)},
                             {DNNL_ARG_DIFF_SRC, diff_src.get()}, {DNNL_ARG_DIFF_SCALE, plain_memory(tg.tensor())},
                             {DNNL_ARG_DIFF_SHIFT, plain_memory(tb.tensor())}});
    diff_src.finish();
    stream().wait();
    tx.commit();
    tg.commit();
    tb.commit();
  });
}

}  // namespace tandem::cpu::train
