#include "graph/graph.h"

#include <unordered_map>

namespace tandem {

ValueId Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return ValueId(values.size() - 1);
}

ValueId Graph::add_constant(const std::string& name, Tensor t) {
  Value v;
  v.name = name;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.constant = std::move(t);
  return add_value(std::move(v));
}

NodeId Graph::add_node(Node n) {
  NodeId id = NodeId(nodes.size());
  for (ValueId o : n.outputs)
    if (o != kNoValue) value(o).producer = id;
  nodes.push_back(std::move(n));
  return id;
}

ValueId Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return ValueId(i);
  return kNoValue;
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> c(values.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].dead) continue;
    for (ValueId v : nodes[n].inputs)
      if (v != kNoValue) c[size_t(v)].push_back(NodeId(n));
  }
  return c;
}

void Graph::replace_uses(ValueId from, ValueId to) {
  for (Node& n : nodes)
    for (ValueId& v : n.inputs)
      if (v == from) v = to;
  for (ValueId& v : outputs)
    if (v == from) v = to;
}

int Graph::remove_unused_nodes() {
  std::vector<char> needed(values.size(), 0);
  for (ValueId v : outputs) needed[size_t(v)] = 1;
  int removed = 0;
  // Nodes are in topological order, so one backward sweep sees every
  // consumer before its producers.
  for (size_t i = nodes.size(); i-- > 0;) {
    Node& n = nodes[i];
    if (n.dead) continue;
    bool used = false;
    for (ValueId v : n.outputs) used |= v != kNoValue && needed[size_t(v)];
    if (!used) {
      n.dead = true;
      ++removed;
      continue;
    }
    for (ValueId v : n.inputs)
      if (v != kNoValue) needed[size_t(v)] = 1;
  }
  compact();
  return removed;
}

void Graph::compact() {
  std::vector<Node> live;
  for (Node& n : nodes)
    if (!n.dead) live.push_back(std::move(n));
  nodes = std::move(live);
  // Renumber values still referenced, keeping graph inputs even if unused.
  std::vector<char> used(values.size(), 0);
  for (ValueId v : inputs) used[size_t(v)] = 1;
  for (ValueId v : outputs) used[size_t(v)] = 1;
  for (const Node& n : nodes) {
    for (ValueId v : n.inputs)
      if (v != kNoValue) used[size_t(v)] = 1;
    for (ValueId v : n.outputs)
      if (v != kNoValue) used[size_t(v)] = 1;
  }
  std::vector<ValueId> remap(values.size(), kNoValue);
  std::vector<Value> kept;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = ValueId(kept.size());
    kept.push_back(std::move(values[i]));
  }
  values = std::move(kept);
  auto fix = [&](ValueId& v) { if (v != kNoValue) v = remap[size_t(v)]; };
  for (ValueId& v : inputs) fix(v);
  for (ValueId& v : outputs) fix(v);
  for (Value& v : values) v.producer = -1;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId& v : nodes[n].inputs) fix(v);
    for (ValueId& v : nodes[n].outputs) {
      fix(v);
      if (v != kNoValue) values[size_t(v)].producer = NodeId(n);
    }
  }
}

void Graph::topo_sort() {
  // Kahn's algorithm over value readiness; stable in the original order.
  std::vector<char> ready(values.size(), 0);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].producer < 0) ready[i] = 1;
  std::vector<Node> sorted;
  std::vector<char> placed(nodes.size(), 0);
  size_t remaining = nodes.size();
  while (remaining) {
    bool progress = false;
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (placed[n]) continue;
      bool ok = true;
      for (ValueId v : nodes[n].inputs)
        if (v != kNoValue && !ready[size_t(v)]) { ok = false; break; }
      if (!ok) continue;
      for (ValueId v : nodes[n].outputs)
        if (v != kNoValue) ready[size_t(v)] = 1;
      placed[n] = 1;
      sorted.push_back(nodes[n]);
      --remaining;
      progress = true;
    }
    if (!progress) {
      for (size_t n = 0; n < nodes.size(); ++n)
        if (!placed[n]) throw Error("graph has a cycle or reads a value nobody produces", context(NodeId(n)));
    }
  }
  nodes = std::move(sorted);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (ValueId v : nodes[n].outputs)
      if (v != kNoValue) values[size_t(v)].producer = NodeId(n);
}

ErrorContext Graph::context(NodeId n) const {
  ErrorContext c;
  c.file = source;
  if (n >= 0 && size_t(n) < nodes.size()) {
    c.node = nodes[size_t(n)].name;
    c.op = nodes[size_t(n)].op_type;
  }
  return c;
}

}  // namespace tandem
