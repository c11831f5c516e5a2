#include "train/autograd.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "profile/zone.h"
#include "train/backend.h"

namespace tandem::train {

struct Node {
  Tensor value;
  Tensor grad;
  bool requires_grad = false;
  bool leaf = true;
  std::shared_ptr<GradFn> fn;  // null for leaves, and once backward has run it
};

using NodePtr = std::shared_ptr<Node>;

struct VarAccess {
  static const NodePtr& node(const Var& v) { return v.node_; }
};

namespace {

thread_local bool t_grad_enabled = true;

const Node& checked(const NodePtr& n) {
  TANDEM_CHECK(n != nullptr, "use of an undefined Var");
  return *n;
}

// The Var inputs of n's op that need a gradient.
std::vector<NodePtr> differentiable_inputs(const Node& n) {
  std::vector<NodePtr> r;
  if (!n.fn) return r;
  for (const Var& v : n.fn->inputs)
    if (v.defined() && v.requires_grad()) r.push_back(VarAccess::node(v));
  return r;
}

// Nodes reachable from root through inputs that need gradients, each listed
// after every node it reads (depth-first post-order, without recursion: a
// deep network must not exhaust the stack).
std::vector<NodePtr> topological_order(const NodePtr& root) {
  std::vector<NodePtr> order;
  std::unordered_set<const Node*> seen{root.get()};
  std::vector<std::pair<std::vector<NodePtr>, NodePtr>> stack;
  stack.emplace_back(differentiable_inputs(*root), root);
  while (!stack.empty()) {
    auto& [pending, node] = stack.back();
    if (pending.empty()) {
      order.push_back(node);
      stack.pop_back();
      continue;
    }
    NodePtr child = std::move(pending.back());
    pending.pop_back();
    if (seen.insert(child.get()).second) stack.emplace_back(differentiable_inputs(*child), child);
  }
  return order;
}

// Where input v's gradient goes: its gradient tensor when it has one (added
// to), else a new one (overwritten) on v's device (an op split between
// devices has inputs on two), in v's dtype (a 16-bit activation's gradient
// is 16-bit, as PyTorch's autocast).
GradOut destination(const Var& v) {
  if (!v.defined() || !v.requires_grad()) return {};
  Node& n = *VarAccess::node(v);
  if (n.grad.defined()) return {n.grad, GradMode::accumulate};
  const TrainBackend& be = train_backend(n.value.device());
  n.grad = empty_like(be, n.value, n.value.shape());
  return {n.grad, GradMode::overwrite};
}

// Runs n's GradFn on its complete gradient, then frees both: intermediate
// gradients and the tape's saved tensors are not needed again.
void run_node(Node& n) {
  TANDEM_CHECK(n.leaf || n.fn,
               "backward through a graph already differentiated (its tape is freed)");
  if (!n.fn || !n.grad.defined()) return;
  GradFn& fn = *n.fn;
  std::vector<GradOut> outs;
  // In input order, so an input used twice by one op is overwritten, then added to.
  for (const Var& v : fn.inputs) outs.push_back(destination(v));
  if (fn.zone) {
    TANDEM_ZONE_AT(fn.zone);
    fn.backward(n.grad, outs);
  } else {
    fn.backward(n.grad, outs);
  }
  n.grad = Tensor();
  n.fn.reset();
}

// The innermost LayerZoneScope's zone on this thread.
thread_local const profile::SourceLocation* t_layer_zone = nullptr;

}  // namespace

LayerZoneScope::LayerZoneScope(const profile::SourceLocation* backward_zone) : previous_(t_layer_zone) {
  t_layer_zone = backward_zone;
}

LayerZoneScope::~LayerZoneScope() { t_layer_zone = previous_; }

const profile::SourceLocation* current_layer_zone() { return t_layer_zone; }

Var::Var(Tensor value, bool requires_grad) : node_(std::make_shared<Node>()) {
  TANDEM_CHECK(value.defined(), "a Var needs a value");
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
}

Var Var::of(Parameter& p) {
  TANDEM_CHECK(p.value.defined() && p.grad.defined() && p.grad.shape() == p.value.shape() &&
                   p.grad.device() == p.value.device(),
               "parameter '" + p.name + "' needs a gradient tensor like its value",
               {"", "", "", p.value.defined() ? shape_str(p.value.shape()) : ""});
  Var v(p.value, true);
  v.node_->grad = p.grad;
  return v;
}

Var Var::result(Tensor value, std::shared_ptr<GradFn> fn) {
  Var v(std::move(value), fn != nullptr);
  v.node_->leaf = fn == nullptr;
  v.node_->fn = std::move(fn);
  return v;
}

const Tensor& Var::value() const { return checked(node_).value; }
const Tensor& Var::grad() const { return checked(node_).grad; }
bool Var::requires_grad() const { return checked(node_).requires_grad; }

namespace {

// For each leaf needing a gradient, the position (in backward's order) of
// the last node that reads it: after that node ran, its gradient is complete.
std::unordered_map<const Node*, size_t> last_readers(const std::vector<NodePtr>& backward_order) {
  std::unordered_map<const Node*, size_t> last;
  for (size_t i = 0; i < backward_order.size(); ++i)
    for (const NodePtr& in : differentiable_inputs(*backward_order[i]))
      if (in->leaf) last[in.get()] = i;
  return last;
}

}  // namespace

void backward(const Var& root, const Tensor& seed, const LeafGradientReady& ready) {
  const NodePtr& r = VarAccess::node(root);
  TANDEM_CHECK(r && r->requires_grad, "backward of a value that does not require a gradient");
  const TrainBackend& be = train_backend(root.device());
  Tensor s = seed;
  if (!s.defined()) {
    TANDEM_CHECK(
        root.value().numel() == 1,
        "backward without a seed needs a one-value root (a loss), got " + shape_str(root.shape()));
    s = be.empty(be.ctx, root.value().dtype(), root.shape());
    be.fill(be.ctx, s, 1.f);
  }
  TANDEM_CHECK(
      s.shape() == root.shape(),
      "the seed " + shape_str(s.shape()) + " does not match the root " + shape_str(root.shape()));
  be.sum_to(be.ctx, s, destination(root));
  std::vector<NodePtr> order = topological_order(r);
  std::reverse(order.begin(), order.end());
  if (!ready) {
    for (const NodePtr& n : order) run_node(*n);
    return;
  }
  // Leaves complete after their last reader: grouped by that reader.
  std::unordered_map<const Node*, size_t> last = last_readers(order);
  std::vector<std::vector<const Node*>> completes(order.size());
  for (const auto& [leaf, i] : last) completes[i].push_back(leaf);
  for (size_t i = 0; i < order.size(); ++i) {
    run_node(*order[i]);
    for (const Node* leaf : completes[i]) ready(leaf->grad);
  }
}

bool grad_enabled() { return t_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

}  // namespace tandem::train
