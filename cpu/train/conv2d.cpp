// Conv2d for training on oneDNN: convolution_forward (forward_training),
// convolution_backward_data and convolution_backward_weights (which also
// gives the bias gradient). The primitives choose their layouts
// (format_tag::any; blocked on AVX-512); tensors stay plain, reordered in and
// out where the layouts differ, as oneDNN's training examples do.
//   x [N, C, H, W], w [M, C/G, KH, KW] (seen by oneDNN as [G, M/G, C/G, KH, KW]
//   when G > 1), b [M], y / dy [N, M, OH, OW].
#include "cpu/train/common.h"

namespace tandem::cpu::train {

namespace {

using dnnl::memory;

struct ConvDescs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad;
};

memory::dims weight_dims(const Shape& w, int64_t groups) {
  if (groups == 1) return memory::dims(w.begin(), w.end());
  return {groups, w[0] / groups, w[1], w[2], w[3]};
}

// The forward writes y in f32 whatever it computes in; the backward reads dy
// in the compute precision (oneDNN's bf16 backward takes bf16 diff_dst).
ConvDescs describe(const ops::Conv2dParams& p, const Tensor& x, const Shape& w, const Shape& y, bool bias,
                   bool backward) {
  auto any = [&](const memory::dims& d, DType t) { return memory::desc(d, to_dnnl(t), memory::format_tag::any); };
  ConvDescs d;
  d.src = any(to_dims(x.shape()), p.compute);
  d.weights = any(weight_dims(w, p.groups), p.compute);
  if (bias) d.bias = any({w[0]}, DType::f32);
  d.dst = any(to_dims(y), backward ? p.compute : DType::f32);
  d.strides = {p.stride[0], p.stride[1]};
  d.dilates = {p.dilation[0] - 1, p.dilation[1] - 1};  // oneDNN counts the skipped elements
  d.pad = {p.padding[0], p.padding[1]};
  return d;
}

struct ForwardEntry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

struct BackwardEntry {
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_backward_weights weights;
};

const ForwardEntry& forward_entry(Context& c, const ops::Conv2dParams& p, const Tensor& x, const Shape& w,
                                  bool bias) {
  Shape y = ops::conv2d_output_shape(p, x.shape(), w);
  std::string key = cache_key("conv2d_fwd", x, w, bias, p.groups, p.stride[0], p.stride[1],
                              p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], int(p.compute));
  return c.cache.get<ForwardEntry>(key, [&] {
    ConvDescs d = describe(p, x, w, y, bias, false);
    auto alg = dnnl::algorithm::convolution_direct;
    auto prop = dnnl::prop_kind::forward_training;
    auto desc = bias ? dnnl::convolution_forward::desc(prop, alg, d.src, d.weights, d.bias, d.dst,
                                                       d.strides, d.dilates, d.pad, d.pad)
                     : dnnl::convolution_forward::desc(prop, alg, d.src, d.weights, d.dst, d.strides,
                                                       d.dilates, d.pad, d.pad);
    dnnl::convolution_forward::primitive_desc pd(desc, engine());
    return ForwardEntry{pd, dnnl::convolution_forward(pd)};
  });
}

const BackwardEntry& backward_entry(Context& c, const ops::Conv2dParams& p, const Tensor& x, const Shape& w,
                                    bool bias) {
  const ForwardEntry& f = forward_entry(c, p, x, w, bias);
  std::string key = cache_key("conv2d_bwd", x, w, bias, p.groups, p.stride[0], p.stride[1],
                              p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], int(p.compute));
  return c.cache.get<BackwardEntry>(key, [&] {
    ConvDescs d = describe(p, x, w, ops::conv2d_output_shape(p, x.shape(), w), bias, true);
    auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_backward_data::desc dd(alg, d.src, d.weights, d.dst, d.strides, d.dilates, d.pad, d.pad);
    dnnl::convolution_backward_data::primitive_desc data_pd(dd, engine(), f.pd);
    auto wd = bias ? dnnl::convolution_backward_weights::desc(alg, d.src, d.weights, d.bias, d.dst,
                                                              d.strides, d.dilates, d.pad, d.pad)
                   : dnnl::convolution_backward_weights::desc(alg, d.src, d.weights, d.dst, d.strides,
                                                              d.dilates, d.pad, d.pad);
    dnnl::convolution_backward_weights::primitive_desc weights_pd(wd, engine(), f.pd);
    return BackwardEntry{data_pd, dnnl::convolution_backward_data(data_pd), weights_pd,
                         dnnl::convolution_backward_weights(weights_pd)};
  });
}

void check_inputs(const char* op, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& b) {
  require_f32(op, {&x, &w, &b});
  check_supported(p.compute == DType::f32 || p.compute == DType::bf16,
                  "conv2d computes in f32 or bf16, not " + std::string(dtype_name(p.compute)), op_context(op, x));
  ops::conv2d_output_shape(p, x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

void backward_data(const BackwardEntry& e, const Tensor& w, int64_t groups, const memory& dy,
                   const GradTarget& dx) {
  memory user_dx = plain_memory(dx.tensor());
  OutputMemory diff_src(user_dx, e.data_pd.diff_src_desc());
  memory wm = in_layout(plain_memory(w, weight_dims(w.shape(), groups)), e.data_pd.weights_desc());
  memory diff_dst = in_layout(dy, e.data_pd.diff_dst_desc());
  e.data.execute(stream(), {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, wm},
                            {DNNL_ARG_DIFF_SRC, diff_src.get()}});
  diff_src.finish();
}

void backward_weights(const BackwardEntry& e, const Tensor& x, int64_t groups, const memory& dy,
                      const GradTarget& dw, const GradTarget* db) {
  memory user_dw = plain_memory(dw.tensor(), weight_dims(dw.tensor().shape(), groups));
  OutputMemory diff_w(user_dw, e.weights_pd.diff_weights_desc());
  memory src = in_layout(plain_memory(x), e.weights_pd.src_desc());
  memory diff_dst = in_layout(dy, e.weights_pd.diff_dst_desc());
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_w.get()}};
  if (db) args[DNNL_ARG_DIFF_BIAS] = plain_memory(db->tensor());
  e.weights.execute(stream(), args);
  diff_w.finish();
}

}  // namespace

void conv2d_forward(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& b,
                    const Tensor& y) {
  const char* op = "conv2d_forward";
  check_inputs(op, p, x, w, b);
  require_f32(op, {&y});
  require_shape(op, y, ops::conv2d_output_shape(p, x.shape(), w.shape()), "y");
  guarded(op, x, [&] {
    const ForwardEntry& f = forward_entry(context(ctx), p, x, w.shape(), b.defined());
    OutputMemory dst(plain_memory(y), f.pd.dst_desc());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, in_layout(plain_memory(x), f.pd.src_desc())},
        {DNNL_ARG_WEIGHTS, in_layout(plain_memory(w, weight_dims(w.shape(), p.groups)), f.pd.weights_desc())},
        {DNNL_ARG_DST, dst.get()}};
    if (b.defined()) args[DNNL_ARG_BIAS] = in_layout(plain_memory(b), f.pd.bias_desc());
    f.prim.execute(stream(), args);
    dst.finish();
    stream().wait();
  });
}

void conv2d_backward(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& dy,
                     const GradOut& dx, const GradOut& dw, const GradOut& db) {
  const char* op = "conv2d_backward";
  check_inputs(op, p, x, w, Tensor());
  require_f32(op, {&dy});
  require_shape(op, dy, ops::conv2d_output_shape(p, x.shape(), w.shape()), "dy");
  guarded(op, x, [&] {
    bool bias = db.wanted();
    const BackwardEntry& e = backward_entry(context(ctx), p, x, w.shape(), bias);
    memory dym = plain_memory(dy);
    if (dx.wanted()) {
      GradTarget t(dx, x.shape(), op);
      backward_data(e, w, p.groups, dym, t);
      stream().wait();
      t.commit();
    }
    if (dw.wanted() || bias) {
      GradTarget tw(dw, w.shape(), op), tb(db, {w.dim(0)}, op);
      backward_weights(e, x, p.groups, dym, tw, bias ? &tb : nullptr);
      stream().wait();
      tw.commit();
      tb.commit();
    }
  });
}

}  // namespace tandem::cpu::train
