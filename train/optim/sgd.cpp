#include "train/optim/sgd.h"

#include <vector>

#include "train/optim/device_math.h"

namespace tandem::train {

namespace {

const SgdOptions& checked(const SgdOptions& o) {
  check(o.momentum >= 0 && o.dampening >= 0 && o.weight_decay >= 0,
        "SGD momentum, dampening and weight decay must be >= 0");
  check(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "Nesterov momentum requires a momentum and zero dampening");
  return o;
}

std::vector<std::string> sgd_slots(const SgdOptions& o) {
  return o.momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
}

}  // namespace

Sgd::Sgd(ParameterList params, const SgdOptions& options)
    : Optimizer(std::move(params), options.lr, sgd_slots(checked(options))), options_(options) {}

ops::SgdScalars Sgd::scalars(bool decay) const {
  return ops::SgdScalars{float(-lr()),
                    float(options_.momentum),
                    float(1 - options_.dampening),
                    decay ? float(options_.weight_decay) : 0.0f,
                    options_.nesterov,
                    steps() == 0};
}

void Sgd::update(size_t i, Parameter& p) {
  Tensor buf = options_.momentum != 0 ? slots(i)[0] : Tensor();
  if (!p.value.device().is_cpu()) return on_gpu_.add(p, buf);
  sgd_update_array(p.value.data<float>(), p.grad.data<float>(),
                   buf.defined() ? buf.data<float>() : nullptr, p.value.numel(), scalars(p.decay));
}

void Sgd::finish_step() {
  for (const auto& [key, group] : on_gpu_.groups()) sgd_steps_on_device(group, scalars(key.second));
  on_gpu_.clear();
}

void sgd_update_array(float* param, const float* grad, float* buf, int64_t n, const ops::SgdScalars& s) {
  float unused = 0;
  for (int64_t k = 0; k < n; ++k) ops::sgd_update(param[k], grad[k], buf ? buf[k] : unused, s);
}

}  // namespace tandem::train
