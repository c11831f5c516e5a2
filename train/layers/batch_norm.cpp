#include "train/layers/batch_norm.h"

#include "train/export_builder.h"
#include "train/functional.h"

namespace tandem::train {

namespace {

Tensor filled(int64_t n, float v) { return Tensor::from_vector(std::vector<float>(size_t(n), v), {n}); }

}  // namespace

BatchNorm2d::BatchNorm2d(int64_t channels, float eps, float momentum) : eps_(eps), momentum_(momentum) {
  TANDEM_CHECK(channels > 0,
               "BatchNorm2d(" + std::to_string(channels) + "): channels must be positive");
  weight_ = &add_parameter("weight", filled(channels, 1), false);
  bias_ = &add_parameter("bias", filled(channels, 0), false);
  running_mean_ = &add_buffer("running_mean", filled(channels, 0));
  running_var_ = &add_buffer("running_var", filled(channels, 1));
  batches_ = &add_buffer("num_batches_tracked", Tensor::zeros(DType::i64, {}));
}

Var BatchNorm2d::forward(const Var& x) {
  check_input(x);
  ops::BatchNormParams p{training(), momentum_, eps_};
  Var y = batch_norm(x, Var::of(*weight_), Var::of(*bias_), running_mean_->value, running_var_->value, p);
  if (training()) ++*batches_->value.data<int64_t>();
  return y;
}

Var BatchNorm2d::forward_relu(const Var& x, const Var& residual) {
  if (quantizes_output()) {  // the quantizer sits between the norm and the add
    Var y = (*this)(x);
    return relu(residual.defined() ? add(y, residual) : y);
  }
  return in_zone([&] {
    check_input(x);
    ops::BatchNormParams p{training(), momentum_, eps_};
    Var y = batch_norm_relu(x, Var::of(*weight_), Var::of(*bias_), running_mean_->value,
                            running_var_->value, p, residual);
    if (training()) ++*batches_->value.data<int64_t>();
    return y;
  });
}

void BatchNorm2d::check_input(const Var& x) const {
  TANDEM_CHECK(x.defined() && x.value().rank() == 4, "BatchNorm2d wants x [N, C, H, W]",
               {"", "", "BatchNorm2d", x.defined() ? shape_str(x.shape()) : ""});
}

ValueId BatchNorm2d::to_graph(ExportBuilder& g, ValueId x) const {
  Attributes a;
  a.set("epsilon", eps_);
  a.set("momentum", 1 - momentum_);  // ONNX weighs the running value, PyTorch the batch's
  std::vector<ValueId> in{x};
  for (const Parameter* p : {weight_, bias_}) in.push_back(g.constant(p->name, p->value));
  for (const Buffer* b : {running_mean_, running_var_}) in.push_back(g.constant(b->name, b->value));
  return g.node("BatchNormalization", std::move(in), a);
}

}  // namespace tandem::train
