// Softmax and LogSoftmax on oneDNN's softmax_v2_forward (softmax_accurate /
// softmax_log); training's cross-entropy (below) takes its log-probabilities
// from the same primitive. X is viewed as [outer, len, inner] (ops/softmax.h) in plain
// layout and normalized over len; Y is plain. Exception: a 4-D X normalized
// over channels alone (opset >= 13, axis 1) runs in nChw16c or nhwc, where
// oneDNN has a JIT kernel (plain has only a scalar reference one): the
// layout X arrives in if it is one of those, else nhwc; Y has that layout.
#include "ops/softmax.h"

#include <cmath>

#include "cpu/cpu_backend.h"
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"
#include "cpu/train_common.h"

namespace tandem::cpu {

namespace {

KernelPlan make_softmax(const OpDesc& op) {
  const TensorDesc& x = op.inputs[0];
  check_supported(x.dtype == DType::f32 || x.dtype == DType::bf16, "CPU softmax supports f32 and bf16, got " + x.str());
  // Where oneDNN has no bf16, its softmax still builds one, and writes inf.
  check_supported(x.dtype != DType::bf16 || has_bf16(),
                  "bf16 softmax: oneDNN has no bf16 kernels on this CPU");
  ops::SoftmaxSplit s = ops::softmax_split(op.attributes(), op.opset, x.shape);
  bool channels = x.shape.size() == 4 && s.len == x.shape[1] && s.outer == x.shape[0] && s.inner > 1;
  Layout l = Layout::plain;
  if (channels) l = (x.layout == Layout::blocked16 || x.layout == Layout::nhwc) ? x.layout : Layout::nhwc;
  // A trailing axis is the 2-D case oneDNN's vectorized kernels handle best.
  Shape view = s.inner == 1 ? Shape{s.outer, s.len} : Shape{s.outer, s.len, s.inner};
  if (channels) view = x.shape;
  dnnl::memory::desc m = md(x.dtype, view, l);
  auto alg = op.op_type == "LogSoftmax" ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, m, m, 1);
  dnnl::softmax_v2_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
  return single_primitive_plan(dnnl::softmax_v2_forward(pd), pd.scratchpad_desc(), m, l, m, l);
}

}  // namespace

void register_softmax_kernels() {
  register_kernel("Softmax", make_softmax);
  register_kernel("LogSoftmax", make_softmax);
}

}  // namespace tandem::cpu

// Softmax cross-entropy with label smoothing: the log-probabilities come from
// oneDNN's softmax_v2 (softmax_log); the loss and its gradient are loops here.
//   logits [N, K], labels i64 [N], loss [] (or [1]), saved: log p [N, K].
//   target_k = (1 - s) [k == label] + s / K
//   loss = mean_n -sum_k target_k log p_nk
//   dlogits_nk = dloss * (p_nk - target_k) / N
namespace tandem::cpu::train {

namespace {

const dnnl::softmax_v2_forward& log_softmax(Context& c, const Tensor& logits) {
  return c.cache.get<dnnl::softmax_v2_forward>(cache_key("log_softmax", logits), [&] {
    dnnl::memory::desc m = plain_md(logits);
    dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::softmax_log, m, m, 1);
    return dnnl::softmax_v2_forward(
        dnnl::softmax_v2_forward::primitive_desc(d, user_scratchpad_attr(), engine()));
  });
}

void check_inputs(const char* op, const ops::CrossEntropyParams& p, const Tensor& logits, const Tensor& labels) {
  require_f32(op, {&logits});
  check(logits.rank() == 2 && logits.dim(0) > 0, "cross entropy wants logits [N, K], N > 0", op_context(op, logits));
  check(labels.dtype() == DType::i64 && labels.shape() == Shape{logits.dim(0)},
        "labels must be i64 [" + std::to_string(logits.dim(0)) + "], got " + labels.desc().str(),
        op_context(op, logits));
  check(p.label_smoothing >= 0 && p.label_smoothing <= 1,
        "label smoothing must be in [0, 1], got " + std::to_string(p.label_smoothing), op_context(op, logits));
  const int64_t* y = labels.data<int64_t>();
  for (int64_t n = 0; n < labels.numel(); ++n)
    check(y[n] >= 0 && y[n] < logits.dim(1),
          "label " + std::to_string(y[n]) + " of sample " + std::to_string(n) + " is outside [0, " +
              std::to_string(logits.dim(1)) + ")",
          op_context(op, logits));
}

void check_scalar(const char* op, const Tensor& t, const char* what) {
  require_f32(op, {&t});
  check(t.numel() == 1, std::string(what) + " must hold one value", op_context(op, t));
}

}  // namespace

void cross_entropy_forward(void* ctx, const ops::CrossEntropyParams& p, const Tensor& logits, const Tensor& labels,
                           const Tensor& loss, Tensor* saved) {
  const char* op = "cross_entropy_forward";
  check_inputs(op, p, logits, labels);
  check_scalar(op, loss, "the loss");
  *saved = Tensor::empty(DType::f32, logits.shape());
  guarded(op, logits, [&] {
    run_primitive(log_softmax(context(ctx), logits),
                  {{DNNL_ARG_SRC, plain_memory(logits)}, {DNNL_ARG_DST, plain_memory(*saved)}});
    stream().wait();
  });
  int64_t n = logits.dim(0), k = logits.dim(1);
  const float* logp = saved->data<float>();
  const int64_t* y = labels.data<int64_t>();
  double s = p.label_smoothing, total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double row = 0;
    for (int64_t j = 0; j < k; ++j) row += logp[i * k + j];
    total -= (1 - s) * logp[i * k + y[i]] + s / double(k) * row;
  }
  *loss.data<float>() = float(total / double(n));
}

void cross_entropy_backward(void*, const ops::CrossEntropyParams& p, const Tensor& saved, const Tensor& labels,
                            const Tensor& dloss, const GradOut& dlogits) {
  const char* op = "cross_entropy_backward";
  check_inputs(op, p, saved, labels);
  check_scalar(op, dloss, "dloss");
  if (!dlogits.wanted()) return;
  GradTarget t(dlogits, saved.shape(), op);
  int64_t n = saved.dim(0), k = saved.dim(1);
  float off = p.label_smoothing / float(k), on = 1.f - p.label_smoothing + off;
  float scale = *dloss.data<float>() / float(n);
  const float* logp = saved.data<float>();
  const int64_t* y = labels.data<int64_t>();
  float* g = t.tensor().data<float>();
#pragma omp parallel for schedule(static) if (n * k > (1 << 16))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      g[i * k + j] = scale * (std::exp(logp[i * k + j]) - (j == y[i] ? on : off));
  t.commit();
}

}  // namespace tandem::cpu::train
