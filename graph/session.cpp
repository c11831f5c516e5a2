#include "graph/session.h"

#include "cpu/cpu_backend.h"
#include "graph/passes.h"

namespace tandem {

namespace {
Backend& backend_for(const Device& d) {
  if (d.is_cpu()) return cpu::cpu_backend();
  throw Error("device " + d.str() + " is not available in this build");
}

int live_nodes(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.dead ? 0 : 1;
  return n;
}
}  // namespace

Session::Session(Graph graph, SessionOptions options)
    : graph_(std::move(graph)), options_(options), backend_(&backend_for(options.device)) {
  cpu::set_num_threads(options_.threads);
}

Session::~Session() = default;

std::vector<std::string> Session::input_names() const {
  std::vector<std::string> r;
  for (ValueId v : graph_.inputs) r.push_back(graph_.value(v).name);
  return r;
}

std::vector<std::string> Session::output_names() const {
  std::vector<std::string> r;
  for (ValueId v : graph_.outputs) r.push_back(graph_.value(v).name);
  return r;
}

std::vector<TensorDesc> Session::input_descs() const {
  std::vector<TensorDesc> r;
  for (ValueId v : graph_.inputs) r.push_back({graph_.value(v).dtype, graph_.value(v).shape});
  return r;
}

ExecutionPlan& Session::plan_locked(const std::vector<Shape>& shapes) {
  if (auto it = plans_.find(shapes); it != plans_.end()) return *it->second;
  check(shapes.size() == graph_.inputs.size(),
        "model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " + std::to_string(shapes.size()),
        {graph_.source, "", "", ""});
  Graph g = graph_;
  std::map<std::string, Shape> named;
  for (size_t i = 0; i < shapes.size(); ++i) named[g.value(g.inputs[i]).name] = shapes[i];
  CompileReport rep;
  rep.nodes_before = live_nodes(g);
  bind_input_shapes(g, named);
  infer_and_fold(g, cpu::cpu_backend());
  g.compact();
  if (options_.optimize) {
    rep.batchnorms_folded = fold_batchnorm(g);
    rep.epilogues_fused = fuse_conv_epilogues(g);
    infer_and_fold(g, cpu::cpu_backend());
    g.compact();
  }
  rep.nodes_after = live_nodes(g);
  auto plan = std::make_unique<ExecutionPlan>(g, *backend_);
  rep.plan = plan->stats();
  report_ = rep;
  return *(plans_[shapes] = std::move(plan));
}

const ExecutionPlan& Session::plan_for(const std::vector<Shape>& input_shapes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_locked(input_shapes);
}

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.defined() ? t.shape() : Shape{});
  std::lock_guard<std::mutex> lock(mutex_);
  return plan_locked(shapes).run(inputs);
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> ordered;
  for (ValueId v : graph_.inputs) {
    auto it = inputs.find(graph_.value(v).name);
    check(it != inputs.end(), "missing input '" + graph_.value(v).name + "'", {graph_.source, "", "", ""});
    ordered.push_back(it->second);
  }
  check(inputs.size() == ordered.size(), "unknown input name given", {graph_.source, "", "", ""});
  return run(ordered);
}

}  // namespace tandem
