#pragma once
// The graph IR every importer produces and every pass and executor consumes.
// Values are SSA: one producer (a node, a graph input, or a constant).
#include <optional>
#include <string>
#include <vector>

#include "core/attributes.h"
#include "core/tensor.h"

namespace tandem {

using ValueId = int32_t;
using NodeId = int32_t;
constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;                        // -1 for extents unknown until run time
  std::vector<std::string> dim_names; // symbolic names of -1 extents ("batch"), may be empty
  std::optional<Tensor> constant;     // set for initializers and folded values
  NodeId producer = -1;               // -1 for graph inputs and constants
  bool is_constant() const { return constant.has_value(); }
};

struct Node {
  std::string op_type;
  std::string name;
  std::string domain;          // "" for the ONNX default domain
  std::vector<ValueId> inputs; // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;
  Attributes attrs;
  bool dead = false;           // removed by a pass; compacted by Graph::compact()
};

class Graph {
 public:
  std::string source;  // file the graph came from, for error messages
  int opset = 17;
  bool allow_tf32 = false;     // passed to every kernel (OpDesc::allow_tf32)
  std::vector<Value> values;
  std::vector<Node> nodes;     // topologically sorted once imported
  std::vector<ValueId> inputs; // runtime inputs (initializers excluded)
  std::vector<ValueId> outputs;

  ValueId add_value(Value v);
  ValueId add_constant(const std::string& name, Tensor t);
  NodeId add_node(Node n);  // sets producer of outputs
  Value& value(ValueId id) { return values.at(size_t(id)); }
  const Value& value(ValueId id) const { return values.at(size_t(id)); }
  // ValueId by name or kNoValue.
  ValueId find_value(const std::string& name) const;
  // For each value, the nodes that read it (recomputed on demand).
  std::vector<std::vector<NodeId>> consumers() const;
  // Replaces every use of `from` (node inputs and graph outputs) by `to`.
  void replace_uses(ValueId from, ValueId to);
  // Drops dead nodes and values no live node or output refers to.
  void compact();
  // Marks dead every node no graph output depends on, then compacts.
  // Returns the count removed.
  int remove_unused_nodes();
  // Sorts nodes topologically; throws Error on a cycle or a use before any producer.
  void topo_sort();
  ErrorContext context(NodeId n) const;
};

}  // namespace tandem
