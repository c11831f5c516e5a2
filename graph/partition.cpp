#include "graph/partition.h"

#include <algorithm>
#include <map>
#include <set>

namespace tandem {

OpDesc placement_desc(const Graph& g, const Node& node) {
  OpDesc d;
  d.op_type = node.op_type;
  d.node = node.name;
  d.attrs = &node.attrs;
  d.opset = g.opset;
  return d;
}

std::vector<bool> place_on_fallback(const Graph& g, const Backend& primary, const std::vector<std::string>& refused) {
  std::vector<bool> fallback(g.nodes.size(), false);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (node.dead) continue;
    fallback[n] = !primary.supports(placement_desc(g, node)) ||
                  std::find(refused.begin(), refused.end(), node.name) != refused.end();
  }
  return fallback;
}

namespace {

// Live nodes in an order that respects dependencies and changes device as
// rarely as it can: among the ready nodes, the first (in graph order) on the
// current device goes next; only when none is ready does the device change.
std::vector<NodeId> grouped_order(const Graph& g, const std::vector<bool>& fallback) {
  std::vector<int> waiting(g.nodes.size(), 0);
  std::vector<std::vector<NodeId>> readers(g.nodes.size());
  std::set<NodeId> ready;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].dead) continue;
    std::set<NodeId> producers;
    for (ValueId v : g.nodes[n].inputs) {
      if (v == kNoValue) continue;
      NodeId p = g.value(v).producer;
      if (p >= 0 && !g.nodes[size_t(p)].dead) producers.insert(p);
    }
    for (NodeId p : producers) readers[size_t(p)].push_back(NodeId(n));
    waiting[n] = int(producers.size());
    if (producers.empty()) ready.insert(NodeId(n));
  }
  std::vector<NodeId> order;
  bool current = ready.empty() ? false : fallback[size_t(*ready.begin())];
  while (!ready.empty()) {
    auto it = std::find_if(ready.begin(), ready.end(), [&](NodeId n) { return fallback[size_t(n)] == current; });
    if (it == ready.end()) {
      it = ready.begin();
      current = fallback[size_t(*it)];
    }
    NodeId n = *it;
    ready.erase(it);
    order.push_back(n);
    for (NodeId r : readers[size_t(n)])
      if (--waiting[size_t(r)] == 0) ready.insert(r);
  }
  return order;
}

// Builds one segment's standalone graph from the nodes `members` of `g`.
class SegmentBuilder {
 public:
  SegmentBuilder(const Graph& g, Segment& s) : g_(g), s_(s) {
    s_.graph.source = g.source;
    s_.graph.opset = g.opset;
    s_.graph.allow_tf32 = g.allow_tf32;
  }

  void add_node(const Node& n) {
    Node copy = n;
    for (ValueId& v : copy.inputs)
      if (v != kNoValue) v = local(v);
    for (ValueId& v : copy.outputs) {
      if (v == kNoValue) continue;
      Value val = g_.value(v);
      val.producer = -1;
      ValueId id = s_.graph.add_value(std::move(val));
      local_[v] = id;
      v = id;
    }
    s_.graph.add_node(std::move(copy));
  }

  void add_output(ValueId whole) {
    s_.graph.outputs.push_back(local_.at(whole));
    s_.outputs.push_back(whole);
  }

 private:
  const Graph& g_;
  Segment& s_;
  std::map<ValueId, ValueId> local_;  // whole graph's value -> the segment's

  ValueId local(ValueId whole) {
    if (auto it = local_.find(whole); it != local_.end()) return it->second;
    const Value& v = g_.value(whole);
    ValueId id;
    if (v.constant) {
      id = s_.graph.add_constant(v.name, *v.constant);
    } else {
      Value in = v;
      in.producer = -1;
      id = s_.graph.add_value(std::move(in));
      s_.graph.inputs.push_back(id);
      s_.inputs.push_back(whole);
    }
    local_[whole] = id;
    return id;
  }
};

}  // namespace

std::vector<Segment> split_segments(const Graph& g, const std::vector<bool>& fallback) {
  std::vector<NodeId> order = grouped_order(g, fallback);
  std::vector<int> segment_of(g.nodes.size(), -1);
  std::vector<std::vector<NodeId>> members;
  for (size_t i = 0; i < order.size(); ++i) {
    NodeId n = order[i];
    if (i == 0 || fallback[size_t(n)] != fallback[size_t(order[i - 1])]) members.emplace_back();
    members.back().push_back(n);
    segment_of[size_t(n)] = int(members.size() - 1);
  }
  // Per value: read by a node of another segment, or by the caller.
  std::vector<bool> crosses(g.values.size(), false);
  for (ValueId v : g.outputs) crosses[size_t(v)] = true;
  for (NodeId n : order)
    for (ValueId v : g.nodes[size_t(n)].inputs) {
      if (v == kNoValue) continue;
      NodeId p = g.value(v).producer;
      if (p >= 0 && segment_of[size_t(p)] >= 0 && segment_of[size_t(p)] != segment_of[size_t(n)])
        crosses[size_t(v)] = true;
    }
  std::vector<Segment> segments(members.size());
  for (size_t s = 0; s < members.size(); ++s) {
    segments[s].on_fallback = fallback[size_t(members[s].front())];
    SegmentBuilder b(g, segments[s]);
    for (NodeId n : members[s]) b.add_node(g.nodes[size_t(n)]);
    std::set<ValueId> added;
    for (NodeId n : members[s])
      for (ValueId v : g.nodes[size_t(n)].outputs)
        if (v != kNoValue && crosses[size_t(v)] && added.insert(v).second) b.add_output(v);
  }
  return segments;
}

std::string fallback_summary(const Graph& g, const std::vector<bool>& fallback) {
  std::vector<std::pair<std::string, int>> counts;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (g.nodes[n].dead || !fallback[n]) continue;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == g.nodes[n].op_type; });
    if (it == counts.end()) counts.emplace_back(g.nodes[n].op_type, 1);
    else ++it->second;
  }
  std::string s;
  for (const auto& [op, count] : counts)
    s += (s.empty() ? "" : ", ") + op + (count > 1 ? " \u00d7" + std::to_string(count) : "");
  return s;
}

}  // namespace tandem
