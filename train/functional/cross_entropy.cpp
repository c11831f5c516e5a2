// Softmax cross-entropy with label smoothing, and its backward.
#include "train/backend.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

struct CrossEntropyFn : GradFn {
  CrossEntropyFn(const ops::CrossEntropyParams& p, Tensor l, Tensor s)
      : params(p), labels(std::move(l)), log_probs(std::move(s)) {}
  const char* name() const override { return "cross_entropy"; }
  void backward(const Tensor& dy, std::span<const GradOut> d) override {
    backend->cross_entropy_backward(backend->ctx, params, log_probs, labels, dy, d[0]);
  }
  ops::CrossEntropyParams params;
  Tensor labels, log_probs;
};

}  // namespace

Var cross_entropy(const Var& logits_in, const Tensor& labels, float label_smoothing,
                  bool labels_checked) {
  const TrainBackend& be = train_backend("cross_entropy", {&logits_in});
  // In f32, as autocast's fp32 list has it: 16-bit logits are widened.
  const Var logits = to_f32(logits_in);
  ops::CrossEntropyParams p{label_smoothing, labels_checked};
  Tensor loss = empty_f32(be, {}), saved;
  be.cross_entropy_forward(be.ctx, p, logits.value(), labels, loss, &saved);
  return record<CrossEntropyFn>(std::move(loss), be, {logits}, p, labels, std::move(saved));
}

void check_labels(const Tensor& labels, int64_t classes) {
  TANDEM_CHECK(labels.device().is_cpu() && labels.dtype() == DType::i64,
               "labels to check must be i64 on the host");
  const int64_t* y = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.numel(); ++i)
    TANDEM_CHECK(y[i] >= 0 && y[i] < classes, "label " + std::to_string(y[i]) + " of sample " +
                                                  std::to_string(i) + " is outside [0, " +
                                                  std::to_string(classes) + ")");
}

}  // namespace tandem::train
