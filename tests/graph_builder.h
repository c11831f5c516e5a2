#pragma once
// Builds small graphs by hand for executor tests.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tandem::testing {

class GraphBuilder {
 public:
  ValueId input(const std::string& name, Shape shape, DType t = DType::f32) {
    Value v;
    v.name = name;
    v.dtype = t;
    v.shape = std::move(shape);
    ValueId id = g.add_value(v);
    g.inputs.push_back(id);
    return id;
  }
  ValueId constant(const std::string& name, Tensor t) { return g.add_constant(name, std::move(t)); }
  ValueId node(const std::string& op, std::vector<ValueId> in, Attributes a = {}, int outputs = 1) {
    Node n;
    n.op_type = op;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.inputs = std::move(in);
    n.attrs = std::move(a);
    ValueId first = kNoValue;
    for (int i = 0; i < outputs; ++i) {
      Value v;
      v.name = n.name + ":" + std::to_string(i);
      ValueId id = g.add_value(v);
      n.outputs.push_back(id);
      if (i == 0) first = id;
    }
    g.add_node(std::move(n));
    return first;
  }
  void output(ValueId v) { g.outputs.push_back(v); }
  Graph g;
};

}  // namespace tandem::testing
