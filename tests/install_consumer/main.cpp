// Links against an installed tandem and runs a one-node graph on the CPU.
#include <cstdio>

#include "graph/session.h"

int main() {
  tandem::Graph g;
  tandem::Value x;
  x.name = "x";
  x.shape = {1, 3};
  g.inputs.push_back(g.add_value(x));
  tandem::Value y;
  y.name = "y";
  tandem::ValueId yid = g.add_value(y);
  tandem::Node n;
  n.op_type = "Relu";
  n.name = "relu";
  n.inputs = {g.inputs[0]};
  n.outputs = {yid};
  g.add_node(n);
  g.outputs.push_back(yid);
  tandem::Session s(g);
  auto out = s.run({tandem::Tensor::from_vector<float>({-1.f, 0.5f, 2.f}, {1, 3})})[0];
  std::printf("%g %g %g\n", out.scalar_at(0), out.scalar_at(1), out.scalar_at(2));
  return (out.scalar_at(0) == 0 && out.scalar_at(2) == 2) ? 0 : 1;
}
