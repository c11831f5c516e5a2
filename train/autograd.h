#pragma once
// Tape autograd. A Var is a shared handle on a node: its value, its gradient
// and the GradFn that computed it (none for leaves). Each differentiable op
// (train/functional.h) runs its forward kernel and, when grad mode is on and
// an input requires a gradient, records a GradFn holding its inputs and what
// its backward needs (the forward's `saved` state, input values).
// backward(root) visits the nodes reachable from root in reverse topological
// order, so a node's gradient is complete (every consumer added its share:
// a Var used twice, as a residual, gets the sum) before its GradFn runs.
// Leaves keep their gradients (a Parameter's accumulates into
// Parameter::grad); intermediate gradients and the tape are freed as
// backward goes, so a graph is differentiated once.
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "ops/train_backend.h"
#include "profile/thread_buffer.h"
#include "train/parameter.h"

namespace tandem::train {

class GradFn;
struct Node;

class Var {
 public:
  Var() = default;
  // A leaf; with requires_grad, backward() fills grad().
  explicit Var(Tensor value, bool requires_grad = false);
  // A leaf on a Parameter: its value, and backward accumulates into its grad
  // (which must be allocated, same shape).
  static Var of(Parameter& p);
  // The result of an op: requires a gradient exactly when `fn` is set.
  static Var result(Tensor value, std::shared_ptr<GradFn> fn);

  bool defined() const { return node_ != nullptr; }
  const Tensor& value() const;
  // Undefined until a backward reaches this Var (and freed afterwards for
  // intermediate Vars).
  const Tensor& grad() const;
  bool requires_grad() const;
  const Shape& shape() const { return value().shape(); }
  Device device() const { return value().device(); }
  // Same node: the identity the tape works with.
  bool same(const Var& o) const { return node_ == o.node_; }

 private:
  friend struct VarAccess;  // the tape (autograd.cpp) walks nodes
  std::shared_ptr<Node> node_;
};

// The backward of one recorded op. inputs[i] is the op's i-th Var input.
class GradFn {
 public:
  virtual ~GradFn() = default;
  virtual const char* name() const = 0;
  // dy: the gradient of the op's output. dinputs[i]: where input i's
  // gradient goes (undefined when it needs none), overwritten or added to.
  virtual void backward(const Tensor& dy, std::span<const GradOut> dinputs) = 0;

  std::vector<Var> inputs;
  const TrainBackend* backend = nullptr;
  // The profiler zone of the layer whose forward recorded this op
  // (LayerZoneScope), so that `--profile` shows the backward per layer.
  const profile::SourceLocation* zone = nullptr;
};

// While one lives on this thread, the ops recorded carry `backward_zone`
// (the innermost scope wins; a Module's operator() opens one per layer).
class LayerZoneScope {
 public:
  explicit LayerZoneScope(const profile::SourceLocation* backward_zone);
  ~LayerZoneScope();
  LayerZoneScope(const LayerZoneScope&) = delete;
  LayerZoneScope& operator=(const LayerZoneScope&) = delete;

 private:
  const profile::SourceLocation* previous_;
};
const profile::SourceLocation* current_layer_zone();

// Called during a backward with a leaf's gradient (a Parameter's grad) as
// soon as it is complete: every op that read the leaf has added its share.
// Data-parallel training starts summing gradients across ranks there,
// while the backward of earlier layers still runs.
using LeafGradientReady = std::function<void(const Tensor& grad)>;

// Runs root's backward. `seed` is dL/droot; omitted, root must hold one value
// (a loss) and the seed is 1.
void backward(const Var& root, const Tensor& seed = Tensor(), const LeafGradientReady& ready = {});

// Whether ops record the tape on this thread (on by default).
bool grad_enabled();

// Turns recording off for its lifetime (evaluation, optimizer steps).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// The result of an op with backward Fn: records Fn{args...} with `inputs`
// when grad mode is on and one of them requires a gradient, else a plain
// value. Undefined inputs (an absent bias) are kept as placeholders.
template <typename Fn, typename... Args>
Var record(Tensor value, const TrainBackend& backend, std::vector<Var> inputs, Args&&... args) {
  bool needed = false;
  for (const Var& v : inputs) needed |= v.defined() && v.requires_grad();
  if (!needed || !grad_enabled()) return Var(std::move(value));
  auto fn = std::make_shared<Fn>(std::forward<Args>(args)...);
  fn->inputs = std::move(inputs);
  fn->backend = &backend;
  fn->zone = current_layer_zone();
  return Var::result(std::move(value), std::move(fn));
}

}  // namespace tandem::train
