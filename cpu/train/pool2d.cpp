// Max and average pooling for training on oneDNN's pooling_v2_forward
// (forward_training; max keeps its argmax in a workspace) and
// pooling_v2_backward, on plain tensors.
//   x / dx [N, C, H, W], y / dy [N, C, OH, OW];
//   saved: the max-pool workspace as bytes (u8 [size]); none for average.
// Average pooling divides by the full window with count_include_pad (PyTorch's
// default; floor mode, so no window hangs past the padding), else by the taps
// inside the input.
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;

dnnl::algorithm algorithm(const ops::Pool2dParams& p) {
  if (p.kind == ops::PoolKind::max) return dnnl::algorithm::pooling_max;
  return p.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding;
}

struct Entry {
  dnnl::pooling_v2_forward::primitive_desc fwd_pd;
  dnnl::pooling_v2_forward fwd;
  dnnl::pooling_v2_backward bwd;
};

const Entry& entry(Context& c, const ops::Pool2dParams& p, DType dtype, const Shape& x) {
  std::string key = cache_key("pool2d", dtype, x, int(p.kind), p.count_include_pad, p.kernel[0], p.kernel[1],
                              p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.dilation[0], p.dilation[1]);
  return c.cache.get<Entry>(key, [&] {
    memory::desc src = plain_md(dtype, to_dims(x)), dst = plain_md(dtype, to_dims(ops::pool2d_output_shape(p, x)));
    memory::dims k{p.kernel[0], p.kernel[1]}, s{p.stride[0], p.stride[1]}, pad{p.padding[0], p.padding[1]};
    memory::dims d{p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN counts the skipped elements
    dnnl::pooling_v2_forward::desc fd(dnnl::prop_kind::forward_training, algorithm(p), src, dst, s, k, d, pad, pad);
    dnnl::pooling_v2_forward::primitive_desc fpd(fd, engine());
    dnnl::pooling_v2_backward::desc bd(algorithm(p), src, dst, s, k, d, pad, pad);
    dnnl::pooling_v2_backward::primitive_desc bpd(bd, engine(), fpd);
    return Entry{fpd, dnnl::pooling_v2_forward(fpd), dnnl::pooling_v2_backward(bpd)};
  });
}

memory workspace_memory(const Entry& e, const Tensor& saved) {
  return memory(e.fwd_pd.workspace_desc(), engine(), saved.raw());
}

}  // namespace

void pool2d_forward(void* ctx, const ops::Pool2dParams& p, const Tensor& x, const Tensor& y, Tensor* saved) {
  const char* op = p.kind == ops::PoolKind::max ? "max_pool2d_forward" : "avg_pool2d_forward";
  require_f32(op, {&x, &y});
  require_shape(op, y, ops::pool2d_output_shape(p, x.shape()), "y");
  guarded(op, x, [&] {
    const Entry& e = entry(context(ctx), p, x.dtype(), x.shape());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, plain_memory(x)}, {DNNL_ARG_DST, plain_memory(y)}};
    *saved = Tensor();
    if (p.kind == ops::PoolKind::max) {
      *saved = Tensor::empty(DType::u8, {int64_t(e.fwd_pd.workspace_desc().get_size())});
      args[DNNL_ARG_WORKSPACE] = workspace_memory(e, *saved);
    }
    e.fwd.execute(stream(), args);
    stream().wait();
  });
}

void pool2d_backward(void* ctx, const ops::Pool2dParams& p, const Tensor& saved, const Tensor& dy, const GradOut& dx) {
  const char* op = p.kind == ops::PoolKind::max ? "max_pool2d_backward" : "avg_pool2d_backward";
  require_f32(op, {&dy});
  if (!dx.wanted()) return;
  require_f32(op, {&dx.t});
  require_shape(op, dy, ops::pool2d_output_shape(p, dx.t.shape()), "dy");
  guarded(op, dy, [&] {
    const Entry& e = entry(context(ctx), p, dy.dtype(), dx.t.shape());
    GradTarget t(dx, dx.t.shape(), op);
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, plain_memory(dy)},
                                         {DNNL_ARG_DIFF_SRC, plain_memory(t.tensor())}};
    if (p.kind == ops::PoolKind::max) {
      check(saved.defined() && saved.bytes() == e.fwd_pd.workspace_desc().get_size(),
            "max pooling's backward needs its forward's workspace", op_context(op, dy));
      args[DNNL_ARG_WORKSPACE] = workspace_memory(e, saved);
    }
    e.bwd.execute(stream(), args);
    stream().wait();
    t.commit();
  });
}

}  // namespace tandem::cpu::train
