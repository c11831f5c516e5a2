#include "train/optim/optimizer.h"

#include "train/device_tensor.h"
#include "train/named_tensors.h"
#include "train/optim/device_math.h"

namespace tandem::train {

void check_parameter(const Parameter& p) {
  // Per parameter per step: the message is only made for a bad parameter.
  auto fail = [&p](const std::string& why) {
    throw Error("parameter '" + p.name + "': " + why,
                {{}, {}, {}, p.value.defined() ? p.value.desc().str() : ""});
  };
  if (!p.value.defined() || !p.grad.defined()) fail("no value or no gradient tensor");
  if (p.value.dtype() != DType::f32 || p.grad.dtype() != DType::f32)
    fail("value and gradient must be f32");
  if (p.value.shape() != p.grad.shape())
    fail("gradient shape " + shape_str(p.grad.shape()) + " differs");
  if (p.value.layout() != Layout::plain || p.grad.layout() != Layout::plain)
    fail("must be in plain layout");
  if (p.value.device() != p.grad.device())
    fail("value on " + p.value.device().str() + ", gradient on " + p.grad.device().str());
}

Optimizer::Optimizer(ParameterList params, double lr, std::vector<std::string> slot_names)
    : params_(std::move(params)), lr_(lr), slot_names_(std::move(slot_names)) {
  check(lr >= 0, "learning rate must be >= 0, got " + std::to_string(lr));
  for (const Parameter* p : params_) {
    check(p != nullptr, "optimizer given a null parameter");
    check_parameter(*p);
    std::vector<Tensor> s;
    for (size_t k = 0; k < slot_names_.size(); ++k)
      s.push_back(zeros_on(p->value.device(), DType::f32, p->value.shape()));
    slots_.push_back(std::move(s));
  }
}

void Optimizer::step() {
  for (size_t i = 0; i < params_.size(); ++i) update(i, *params_[i]);
  finish_step();
  ++steps_;
}

void Optimizer::zero_grad() {
  for (Parameter* p : params_)
    if (p->grad.device().is_cpu()) zero_tensor(p->grad);
  // A GPU's gradients in a few launches: one memset each was a GPU-idle
  // stretch of every step (ResNet-18: 62 of them).
  for (const std::vector<Tensor>& grads : gpu_gradients(params_)) zero_on_device(grads);
}

OptimizerState Optimizer::state() const {
  OptimizerState s{kind(), steps_, {}};
  for (size_t i = 0; i < params_.size(); ++i)
    for (size_t k = 0; k < slot_names_.size(); ++k)
      s.slots.emplace_back(params_[i]->name + "." + slot_names_[k], slots_[i][k]);
  return s;
}

void Optimizer::check_state(const OptimizerState& state, const ErrorContext& ctx) const {
  check(state.kind == kind(), "optimizer state is for '" + state.kind + "', this optimizer is '" + kind() + "'", ctx);
  check(state.steps >= 0, "optimizer state has a negative step count", ctx);
  check_same_tensors(this->state().slots, state.slots, "optimizer state tensors", ctx);
}

void Optimizer::load_state(const OptimizerState& state, const ErrorContext& ctx) {
  check_state(state, ctx);
  copy_by_name(this->state().slots, state.slots, "optimizer state tensors", ctx);
  steps_ = state.steps;
}

}  // namespace tandem::train
