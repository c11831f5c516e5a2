// Conv2d for training on cuDNN's legacy API, NCHW or NHWC tensors:
// cudnnConvolutionForward, cudnnConvolutionBackwardData and
// cudnnConvolutionBackwardFilter (accumulating gradients through their beta
// = 1 blend); the bias is added, and its gradient summed, by
// cuda/binary_train.cu.
//   x [N, C, H, W], w [M, C/G, KH, KW] (cuDNN's NCHW filter, groups on the
//   convolution descriptor), b [M], y / dy [N, M, OH, OW].
// One plan per shape and parameters keeps the descriptors; each direction's
// algorithm is chosen at its first call under the policy and with the cache
// inference's convolutions use (cuda/cudnn_conv.h), timed on the call's own
// tensors (the output only when it is overwritten anyway, else a scratch
// copy).
// Autocast (ops::Conv2dParams::compute f16 or bf16, as torch.autocast on CUDA):
// cuDNN multiplies in the compute dtype on tensor cores and accumulates in
// f32. Activations (x, y, dy, dx) may be stored in f32 or in the compute
// dtype itself (keeps_16bit_activations: no copies): an operand of another
// dtype is rounded into a scratch copy, a result of another dtype is widened
// from a 16-bit scratch (added, for an accumulated gradient). w, the bias and
// their gradients stay f32: w is rounded per call, dw widened.
// Channels last (x in layout nhwc): x, y, dy and dx nhwc, and cuDNN's
// filter in KRSC order, w converted into it per call and dw out of it; the
// tensor cores' native arrangement, with no transposes inside cuDNN.
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "cuda/cudnn_conv.h"
#include "cuda/float_types.h"
#include "cuda/convert.h"
#include "cuda/train_context.h"

namespace tandem::cuda::train {

namespace {

struct ConvPlan {
  ConvPlan(const ops::Conv2dParams& p, DType dtype, Layout layout, const Shape& x, const Shape& w, const Shape& y,
           const ErrorContext& where)
      : where(where), t(dtype, layout, x.data(), w.data(), y.data(), where), fwd_cd(where), data_cd(where),
        filter_cd(where) {
    for (const ConvolutionDescriptor* cd : {&fwd_cd, &data_cd, &filter_cd})
      set_conv(*cd, t, p.padding, p.stride, p.dilation, p.groups, where);
  }

  ErrorContext where;
  ConvTensors t;
  // One per direction: each keeps the math type of its chosen algorithm.
  ConvolutionDescriptor fwd_cd, data_cd, filter_cd;
  std::mutex mu;  // guards the choices
  // Each direction's algorithm, chosen at its first call.
  std::optional<ConvAlgo> fwd, data, filter;
};

// Chooses a direction's algorithm (cuda/cudnn_conv.h) into `choice`.
template <typename Perf>
void choose(std::optional<ConvAlgo>& choice, Context& gpu, const ConvPlan& plan, const ConvolutionDescriptor& cd,
            const ConvSearch<Perf>& search, const char* direction) {
  const ConvProblem problem = conv_problem(plan.t, cd, direction, plan.where);
  const ConvAlgo a = choose_conv_algo(gpu, problem, plan.t.dtype, cd, search, plan.where);
  remember_conv_algo(gpu, problem, cd, a, false, plan.where);
  choice = a;
}

// `out` itself when the call overwrites it, else a scratch tensor of its
// size: a search writes its output.
struct SearchOutput {
  SearchOutput(Context& c, const Tensor& out, bool overwritten)
      : scratch(c, overwritten ? 0 : out.bytes()), p(overwritten ? out.raw() : scratch.get()) {}
  Scratch scratch;
  void* p;
};

void choose_forward(TrainContext& c, ConvPlan& pl, const Tensor& x, const Tensor& w, const Tensor& y) {
  const ConvOperands o{x.raw(), w.raw(), y.raw()};
  choose(pl.fwd, c.gpu, pl, pl.fwd_cd, forward_search(c.gpu.cudnn, pl.t, pl.fwd_cd, [o] { return o; }), "forward");
}

void choose_data(TrainContext& c, ConvPlan& pl, const Tensor& w, const Tensor& dy, const GradOut& dx) {
  SearchOutput out(c.gpu, dx.t, dx.mode == GradMode::overwrite);
  const ConvOperands o{w.raw(), dy.raw(), out.p};
  choose(pl.data, c.gpu, pl, pl.data_cd, backward_data_search(c.gpu.cudnn, pl.t, pl.data_cd, [o] { return o; }),
         "backward-data");
}

void choose_filter(TrainContext& c, ConvPlan& pl, const Tensor& x, const Tensor& dy, const GradOut& dw) {
  SearchOutput out(c.gpu, dw.t, dw.mode == GradMode::overwrite);
  const ConvOperands o{x.raw(), dy.raw(), out.p};
  choose(pl.filter, c.gpu, pl, pl.filter_cd,
         backward_filter_search(c.gpu.cudnn, pl.t, pl.filter_cd, [o] { return o; }), "backward-filter");
}

// Input channels as cuDNN sees them (tensor_core_channels, cuda/cudnn_conv.h):
// channels last only, the padded channels' gradients dropped.
int64_t conv_channels(const ops::Conv2dParams& p, const Tensor& x) {
  if (x.layout() != Layout::nhwc) return x.dim(1);
  return tensor_core_channels(p.compute, p.groups, x.dim(1));
}

Shape with_dim1(Shape s, int64_t v) {
  s[1] = v;
  return s;
}

// The plan of x's shape (its channels `channels`) and w's in the compute precision.
ConvPlan& plan_for(TrainContext& c, const char* op, const ops::Conv2dParams& p, const Tensor& x,
                   const Shape& w_in, int64_t channels) {
  const bool padded = channels != x.dim(1);  // groups == 1 then: w's C is x's
  const Shape xs = with_dim1(x.shape(), channels), w = padded ? with_dim1(w_in, channels) : w_in;
  Shape y = ops::conv2d_output_shape(p, xs, w);
  std::string key =
      cache_key("conv2d", xs, p.compute, int(x.layout()), w, p.groups, p.stride[0], p.stride[1],
                p.padding[0], p.padding[1], p.dilation[0], p.dilation[1]);
  return c.plans.get<ConvPlan>(key, [&] {
    return std::make_unique<ConvPlan>(p, p.compute, x.layout(), xs, w, y, op_context(op, x));
  });
}

// An operand in the compute precision and the plan's layout (for w, nhwc is
// cuDNN's KRSC filter order): t itself when it has both, else a converted copy.
// With `channels` along axis 1 (conv_channels: x's and, groups 1, w's C
// padded; -1 for none): zero channels appended.
Tensor operand(TrainContext& c, const Tensor& t, DType compute, Layout layout,
               const ErrorContext& where, int64_t channels = -1) {
  Tensor r = t.dtype() == compute && t.layout() == layout
                 ? t
                 : converted_copy(c, t, compute, layout, where);
  return channels < 0 || channels == t.dim(1) ? r : with_channels(c, r, channels, where);
}

// Where cuDNN writes a result of `out`'s shape: `out` itself when it has the
// compute dtype and the plan's layout, else a scratch tensor widen() then
// converts into `out`.
// With `channels` along axis 1, the padded ones are dropped by widen().
struct Result {
  Result(TrainContext& c, const Tensor& out, bool accumulate, DType compute, Layout layout,
         int64_t channels = -1)
      : out(out),
        accumulate(accumulate),
        t(out.dtype() == compute && out.layout() == layout &&
                  (channels < 0 || channels == out.dim(1))
              ? out
              : device_empty(c.gpu, compute,
                             channels < 0 ? out.shape() : with_dim1(out.shape(), channels))
                    .with_layout(layout)) {}
  bool direct() const { return t.raw() == out.raw(); }
  // cuDNN's blend: only a direct result accumulates in place.
  float beta() const { return direct() && accumulate ? 1.f : 0.f; }
  GradOut as_grad() const { return {t, direct() && accumulate ? GradMode::accumulate : GradMode::overwrite}; }
  void widen(TrainContext& c, const ErrorContext& where) const {
    if (direct()) return;
    convert_into(c, t.dim(1) == out.dim(1) ? t : with_channels(c, t, out.dim(1), where), out,
                 accumulate, where);
  }
  Tensor out;
  bool accumulate;
  Tensor t;
};

void check_inputs(const TrainContext& c, const char* op, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w,
                  const Tensor& b) {
  require_activations(c, op, {&x});
  TANDEM_CHECK(x.rank() == 4, "conv2d wants x [N, C, H, W]", op_context(op, x));
  require_f32(c, op, {&w, &b});
  TANDEM_CHECK_SUPPORTED(
      p.compute == DType::f32 || p.compute == DType::f16 || p.compute == DType::bf16,
      "conv2d on cuda computes in f32, f16 or bf16, not " + std::string(dtype_name(p.compute)),
      op_context(op, x));
  ops::conv2d_output_shape(p, x.shape(), w.shape());
  if (b.defined()) require_shape(op, b, {w.dim(0)}, "the bias");
}

}  // namespace

void conv2d_forward(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& b,
                    const Tensor& y) {
  const char* op = "conv2d_forward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, p, x, w, b);
  require_activations(c, op, {&y});
  require_on_gpu(c, op, {&y}, y.dtype(), x.layout());
  require_shape(op, y, ops::conv2d_output_shape(p, x.shape(), w.shape()), "y");
  if (y.numel() == 0) return;
  ErrorContext where = op_context(op, x);
  const Layout l = x.layout();
  const int64_t ch = conv_channels(p, x), pad = ch != x.dim(1) ? ch : -1;
  Tensor xc = operand(c, x, p.compute, l, where, pad), wc = operand(c, w, p.compute, l, where, pad);
  Result yc(c, y, false, p.compute, l);
  ConvPlan& plan = plan_for(c, op, p, x, w.shape(), ch);
  std::lock_guard<std::mutex> lock(plan.mu);
  if (!plan.fwd) choose_forward(c, plan, xc, wc, yc.t);
  Scratch ws(c.gpu, plan.fwd->workspace);
  const float one = 1.f, zero = 0.f;
  check_cudnn(cudnnConvolutionForward(c.gpu.cudnn, &one, plan.t.x.get(), xc.raw(), plan.t.w.get(), wc.raw(),
                                      plan.fwd_cd.get(), cudnnConvolutionFwdAlgo_t(plan.fwd->algo), ws.get(),
                                      ws.bytes(), &zero, plan.t.y.get(), yc.t.raw()),
              "cudnnConvolutionForward", where);
  yc.widen(c, where);
  if (b.defined()) launch_add(c, y, b.reshaped({1, w.dim(0), 1, 1}), y, where);
}

void conv2d_backward(void* ctx, const ops::Conv2dParams& p, const Tensor& x, const Tensor& w, const Tensor& dy,
                     const GradOut& dx, const GradOut& dw, const GradOut& db) {
  const char* op = "conv2d_backward";
  TrainContext& c = enter(ctx);
  check_inputs(c, op, p, x, w, Tensor());
  require_activations(c, op, {&dy});
  require_on_gpu(c, op, {&dy}, dy.dtype(), x.layout());
  require_shape(op, dy, ops::conv2d_output_shape(p, x.shape(), w.shape()), "dy");
  GradPtr gx = grad_ptr(c, op, dx, x.shape(), x.dtype(), x.layout()),
          gw = grad_ptr(c, op, dw, w.shape()), gb = grad_ptr(c, op, db, {w.dim(0)});
  ErrorContext where = op_context(op, x);
  if (gb) launch_sum_to(c, dy, gb.p, DType::f32, {1, w.dim(0), 1, 1}, gb.accumulate, where);
  if ((!gx && !gw) || dy.numel() == 0) return;
  const int64_t ch = conv_channels(p, x), pad = ch != x.dim(1) ? ch : -1;
  ConvPlan& plan = plan_for(c, op, p, x, w.shape(), ch);
  std::lock_guard<std::mutex> lock(plan.mu);
  const float one = 1.f;
  const Layout l = x.layout();
  Tensor dyc = operand(c, dy, p.compute, l, where);
  if (gx) {
    Tensor wc = operand(c, w, p.compute, l, where, pad);
    Result r(c, dx.t, gx.accumulate, p.compute, l, pad);
    if (!plan.data) choose_data(c, plan, wc, dyc, r.as_grad());
    Scratch ws(c.gpu, plan.data->workspace);
    float beta = r.beta();
    check_cudnn(cudnnConvolutionBackwardData(c.gpu.cudnn, &one, plan.t.w.get(), wc.raw(), plan.t.y.get(), dyc.raw(),
                                             plan.data_cd.get(), cudnnConvolutionBwdDataAlgo_t(plan.data->algo),
                                             ws.get(), ws.bytes(), &beta, plan.t.x.get(), r.t.raw()),
                "cudnnConvolutionBackwardData", where);
    r.widen(c, where);
  }
  if (gw) {
    Tensor xc = operand(c, x, p.compute, l, where, pad);
    Result r(c, dw.t, gw.accumulate, p.compute, l, pad);
    if (!plan.filter) choose_filter(c, plan, xc, dyc, r.as_grad());
    Scratch ws(c.gpu, plan.filter->workspace);
    float beta = r.beta();
    check_cudnn(cudnnConvolutionBackwardFilter(c.gpu.cudnn, &one, plan.t.x.get(), xc.raw(), plan.t.y.get(), dyc.raw(),
                                               plan.filter_cd.get(), cudnnConvolutionBwdFilterAlgo_t(plan.filter->algo),
                                               ws.get(), ws.bytes(), &beta, plan.t.w.get(), r.t.raw()),
                "cudnnConvolutionBackwardFilter", where);
    r.widen(c, where);
  }
}

}  // namespace tandem::cuda::train
