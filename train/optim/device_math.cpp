#include "train/optim/device_math.h"

#include <map>

#ifdef TANDEM_HAVE_CUDA
#include "cuda/optimizer.h"
#endif

namespace tandem::train {

void DeviceStep::add(const Parameter& p, const Tensor& a, const Tensor& b) {
  DeviceParams& g = groups_[{p.value.device().index, p.decay}];
  g.param.push_back(p.value);
  g.grad.push_back(p.grad);
  g.a.push_back(a);
  g.b.push_back(b);
}

std::vector<std::vector<Tensor>> gpu_gradients(const ParameterList& params) {
  std::map<int, std::vector<Tensor>> by_gpu;
  for (const Parameter* p : params)
    if (!p->grad.device().is_cpu()) by_gpu[p->grad.device().index].push_back(p->grad);
  std::vector<std::vector<Tensor>> r;
  for (auto& [gpu, grads] : by_gpu) r.push_back(std::move(grads));
  return r;
}

#ifdef TANDEM_HAVE_CUDA

namespace {

cuda::ParamGroup group_of(const DeviceParams& g) { return {g.param, g.grad, g.a, g.b}; }

}  // namespace

void sgd_steps_on_device(const DeviceParams& g, const ops::SgdScalars& s) {
  cuda::sgd_steps(group_of(g), s);
}

void adamw_steps_on_device(const DeviceParams& g, const ops::AdamWScalars& s) {
  cuda::adamw_steps(group_of(g), s);
}

bool unscale_on_device(std::span<const Tensor> grads, float inv_scale) {
  return cuda::unscale_gradients(grads, inv_scale);
}

double sum_of_squares_on_device(std::span<const Tensor> tensors) { return cuda::sum_of_squares(tensors); }

void scale_on_device(std::span<const Tensor> tensors, float factor) { cuda::scale_tensors(tensors, factor); }
void zero_on_device(std::span<const Tensor> tensors) { cuda::zero_tensors(tensors); }

#else

namespace {

[[noreturn]] void no_gpu() { throw Error::unsupported("parameters on a GPU need a build with CUDA"); }

}  // namespace

void sgd_steps_on_device(const DeviceParams&, const ops::SgdScalars&) { no_gpu(); }
void adamw_steps_on_device(const DeviceParams&, const ops::AdamWScalars&) { no_gpu(); }
bool unscale_on_device(std::span<const Tensor>, float) { no_gpu(); }
double sum_of_squares_on_device(std::span<const Tensor>) { no_gpu(); }
void scale_on_device(std::span<const Tensor>, float) { no_gpu(); }
void zero_on_device(std::span<const Tensor>) { no_gpu(); }

#endif

}  // namespace tandem::train
