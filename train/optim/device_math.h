#pragma once
// The optimizers' arithmetic on parameters that live on a GPU: the same
// per-element rules as the CPU loops (ops/update_rules.h), run by the CUDA
// kernels of cuda/optimizer.h. Each call takes tensors of one GPU; a
// build without CUDA refuses them with Error::unsupported.
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ops/update_rules.h"
#include "train/parameter.h"

namespace tandem::train {

// The GPU parameters of one step, grouped by GPU and by whether weight decay
// applies (the two things that split the scalars), so that each group is
// updated in a launch or two rather than one per parameter.
struct DeviceParams {
  std::vector<Tensor> param, grad, a, b;  // SGD: a the momentum buffer; AdamW: a = m, b = v
};
class DeviceStep {
 public:
  void add(const Parameter& p, const Tensor& a, const Tensor& b = Tensor());
  // key: (GPU index, decay)
  const std::map<std::pair<int, bool>, DeviceParams>& groups() const { return groups_; }
  void clear() { groups_.clear(); }

 private:
  std::map<std::pair<int, bool>, DeviceParams> groups_;
};

void sgd_steps_on_device(const DeviceParams& g, const ops::SgdScalars& s);
void adamw_steps_on_device(const DeviceParams& g, const ops::AdamWScalars& s);
// grad *= inv_scale; true if any value was inf or nan. Waits for the GPU.
bool unscale_on_device(std::span<const Tensor> grads, float inv_scale);
// Sum of squares in double. Waits for the GPU.
double sum_of_squares_on_device(std::span<const Tensor> tensors);
void scale_on_device(std::span<const Tensor> tensors, float factor);
// Every value set to 0, a few launches for the lot (zero_grad).
void zero_on_device(std::span<const Tensor> tensors);

// The gradients of the parameters that live on GPUs, one list per GPU.
std::vector<std::vector<Tensor>> gpu_gradients(const ParameterList& params);

}  // namespace tandem::train
