#include "graph/partitioned_plan.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "graph/partition.h"
#include "profile/dynamic_location.h"
#include "profile/zone.h"

namespace tandem {

namespace {

// The live node called `name`, or -1.
NodeId find_node(const Graph& g, const std::string& name) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (!g.nodes[n].dead && g.nodes[n].name == name) return NodeId(n);
  return -1;
}

}  // namespace

PartitionedPlan::PartitionedPlan(const Graph& g, Backend& primary, Backend& fallback, const PartitionOptions& o)
    : primary_(primary), graph_inputs_(g.inputs), graph_outputs_(g.outputs) {
  build(g, fallback, o);
  for (ValueId v : graph_outputs_) {
    bool computed = std::any_of(parts_.begin(), parts_.end(), [&](const Part& p) {
      return std::find(p.outputs.begin(), p.outputs.end(), v) != p.outputs.end();
    });
    output_constants_.push_back(!computed && g.value(v).constant ? *g.value(v).constant : Tensor());
  }
  allocate_crossings(g);
}

PartitionedPlan::~PartitionedPlan() {
  parts_.clear();  // plans may still read crossing memory in flight
  crossing_.clear();
}

// Places the nodes, then compiles each segment. A kernel the primary refuses
// at prepare (a dtype or attribute it does not take) sends that node to the
// fallback too, and the segments are compiled again.
void PartitionedPlan::build(const Graph& g, Backend& fallback, const PartitionOptions& o) {
  const bool one_device = primary_.device() == fallback.device();
  std::vector<std::string> refused;
  for (;;) {
    std::vector<bool> fb = one_device ? std::vector<bool>(g.nodes.size(), false) : place_on_fallback(g, primary_, refused);
    auto first = std::find(fb.begin(), fb.end(), true);
    if (first != fb.end() && o.strict)
      throw Error::unsupported("no kernel for this op on " + primary_.name() + " (strict device placement)",
                               g.context(NodeId(first - fb.begin())));
    parts_.clear();
    try {
      if (first == fb.end()) {
        Part p;
        p.plan = std::make_unique<ExecutionPlan>(g, primary_);
        p.inputs = g.inputs, p.outputs = g.outputs;
        parts_.push_back(std::move(p));
      } else {
        for (Segment& s : split_segments(g, fb)) {
          Part p;
          p.on_fallback = s.on_fallback;
          p.plan = std::make_unique<ExecutionPlan>(s.graph, s.on_fallback ? fallback : primary_);
          p.inputs = std::move(s.inputs), p.outputs = std::move(s.outputs);
          if (p.on_fallback)
            p.zone = profile::dynamic_location("fallback to " + fallback.name() + ": " + fallback_summary(s.graph, std::vector<bool>(s.graph.nodes.size(), true)), "graph");
          parts_.push_back(std::move(p));
        }
      }
      fallback_.nodes = int(std::count(fb.begin(), fb.end(), true));
      fallback_.ops = fallback_summary(g, fb);
      fallback_.first_node = first == fb.end() ? "" : g.nodes[size_t(first - fb.begin())].name;
      return;
    } catch (const Error& e) {
      if (one_device || o.strict || e.kind() != ErrorKind::unsupported) throw;
      NodeId n = find_node(g, e.context().node);
      if (n < 0 || fb[size_t(n)]) throw;  // not a node of the graph, or the fallback cannot run it either
      refused.push_back(g.nodes[size_t(n)].name);
    }
  }
}

// A value one part makes and a part on the other device reads goes through
// page-locked memory, unless the caller receives it too (then it must not be
// overwritten by the next run).
void PartitionedPlan::allocate_crossings(const Graph& g) {
  if (parts_.size() < 2) return;
  std::unordered_map<ValueId, bool> made_on_fallback;
  for (const Part& p : parts_)
    for (ValueId v : p.outputs) made_on_fallback[v] = p.on_fallback;
  for (const Part& p : parts_)
    for (ValueId v : p.inputs) {
      auto it = made_on_fallback.find(v);
      if (it == made_on_fallback.end() || it->second == p.on_fallback) continue;
      ++fallback_.crossings;
      const Value& val = g.value(v);
      TensorDesc d{val.dtype, val.shape};
      fallback_.crossing_bytes += d.bytes();
      bool returned = std::find(graph_outputs_.begin(), graph_outputs_.end(), v) != graph_outputs_.end();
      if (returned || primary_.device().is_cpu() || crossing_tensor(v).defined()) continue;
      crossing_memory_.emplace_back(primary_, std::max<size_t>(d.bytes(), 64));
      crossing_.emplace_back(v, Tensor::wrap(d, crossing_memory_.back().get()));
    }
}

Tensor PartitionedPlan::crossing_tensor(ValueId v) const {
  for (const auto& [value, t] : crossing_)
    if (value == v) return t;
  return Tensor();
}

std::vector<Tensor> PartitionedPlan::run(const std::vector<Tensor>& inputs) {
  if (parts_.size() == 1) return parts_[0].plan->run(inputs);  // the whole graph, as compiled
  check(inputs.size() == graph_inputs_.size(),
        "model takes " + std::to_string(graph_inputs_.size()) + " inputs, got " + std::to_string(inputs.size()));
  std::unordered_map<ValueId, Tensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[graph_inputs_[i]] = inputs[i];
  for (Part& p : parts_) {
    std::vector<Tensor> in, into;
    for (ValueId v : p.inputs) in.push_back(env.at(v));
    for (ValueId v : p.outputs) into.push_back(crossing_tensor(v));
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> out;
    if (p.zone) {
      TANDEM_ZONE_AT(p.zone);
      out = p.plan->run(in, into);
    } else {
      out = p.plan->run(in, into);
    }
    if (p.on_fallback)
      fallback_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (size_t k = 0; k < p.outputs.size(); ++k) env[p.outputs[k]] = std::move(out[k]);
  }
  std::vector<Tensor> results;
  for (size_t i = 0; i < graph_outputs_.size(); ++i) {
    auto it = env.find(graph_outputs_[i]);
    results.push_back(it != env.end() ? it->second : output_constants_[i]);
  }
  return results;
}

std::vector<std::vector<double>> PartitionedPlan::time_steps(const std::vector<Tensor>& inputs) {
  std::unordered_map<ValueId, Tensor> env;
  for (size_t i = 0; i < inputs.size() && i < graph_inputs_.size(); ++i) env[graph_inputs_[i]] = inputs[i];
  std::vector<std::vector<double>> ms;
  for (Part& p : parts_) {
    std::vector<Tensor> in;
    for (ValueId v : p.inputs) in.push_back(env.at(v));
    ms.push_back(p.plan->time_steps(in));
    if (parts_.size() > 1) {  // later parts need this one's outputs
      std::vector<Tensor> out = p.plan->run(in);
      for (size_t k = 0; k < p.outputs.size(); ++k) env[p.outputs[k]] = std::move(out[k]);
    }
  }
  return ms;
}

PlanStats PartitionedPlan::stats() const {
  PlanStats s;
  for (const Part& p : parts_) {
    const PlanStats& q = p.plan->stats();
    s.arena_bytes += q.arena_bytes;
    s.unplanned_bytes += q.unplanned_bytes;
    s.scratch_bytes = std::max(s.scratch_bytes, q.scratch_bytes);
    s.reorders += q.reorders;
    s.steps += q.steps;
  }
  return s;
}

}  // namespace tandem
