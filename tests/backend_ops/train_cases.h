#pragma once
// The training cases: each drives one or more TrainBackend entries
// (ops/train_backend.h) through a forward and, where the entry has one, a
// backward. The forward is compared with the CPU table's f32 result on the
// same (rounded) inputs, the backward with central finite differences of
// that f32 forward, taken in float64 on the loss sum(y * r) for a fixed
// random r (the dy the backward gets). A table other than the CPU's also
// has its gradients compared with the CPU table's, at the forward's
// tolerance.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ops/train_backend.h"

namespace tandem::backend_ops {

// One call's tensors on the table's device, in the variant's dtype and
// layout (activations) or f32 plain (parameters, statistics, labels).
struct TrainCall {
  const TrainBackend& t;
  std::vector<Tensor> in;
  Tensor saved;
  std::vector<Tensor> out;  // the forward's outputs; out[0] is y
  // Optional entries (batch_norm_relu_*) return false for a call they do
  // not take: the forward sets this instead of writing out.
  bool declined = false;
};

struct TrainInput {
  Tensor value;         // host, f32 (labels i64); undefined: an absent optional input
  bool activation;      // takes the variant's dtype and layout
  bool differentiable;  // its gradient is checked
};

struct TrainCase {
  std::string name;
  std::vector<std::string> entries;  // the TrainBackend entries it calls
  std::vector<TrainInput> inputs;
  float h = 1e-2f;  // finite-difference step
  // False for shapes too large to difference element by element (a real
  // network's): the gradients are then checked against the CPU table's
  // backward only.
  bool finite_differences = true;
  // The outputs must equal the CPU table's exactly (fill, copies).
  bool exact = false;
  // The result depends on the memory order (dropout's mask is drawn per
  // element in it, as PyTorch's is): no plain reference for channels-last.
  bool plain_only = false;
  // Scales the dtype's tolerances against the CPU table (not against finite
  // differences): convolutions sum up to C*KH*KW (dx) or N*OH*OW (dw)
  // products, which cuDNN and oneDNN order differently (100: a relative
  // 1e-4 in f32).
  double cross_device_scale = 1;
  // Writes call.out (allocated with call.t.empty on the table's device).
  std::function<void(TrainCall&)> forward;
  // Null for forward-only entries. dy is like out[0]; grads[k] is input k's
  // gradient (like it), not wanted (undefined) where the input is not
  // differentiable.
  std::function<void(TrainCall&, const Tensor& dy, std::span<const GradOut> grads)> backward;
  // Where finite differences do not apply (a straight-through estimator):
  // the exact gradients from the host inputs and r, one per input
  // (undefined where not differentiable).
  std::function<std::vector<Tensor>(const std::vector<Tensor>& in, const Tensor& r)> exact_gradient;
};

std::vector<TrainCase> all_train_cases();

// An uninitialized tensor on the call's device like input `i` (its dtype,
// and its layout when 4-D) of shape `shape`.
Tensor like_input(const TrainCall& c, size_t i, const Shape& shape);

}  // namespace tandem::backend_ops
