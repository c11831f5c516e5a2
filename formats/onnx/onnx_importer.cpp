#include "formats/onnx/onnx_importer.h"

#include <onnx/onnx_pb.h>

#include <climits>
#include <filesystem>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "core/mapped_file.h"
#include "formats/onnx/attributes.h"
#include "formats/onnx/shape_inference.h"
#include "formats/onnx/tensor_proto.h"
#include "formats/onnx/value_types.h"

namespace tandem {

namespace {

// protobuf cannot parse a message of 2 GiB or more; bigger models keep their
// weights in external data files.
constexpr uint64_t kMaxModelBytes = INT_MAX;

onnx::ModelProto read_model(const std::string& path) {
  const MappedFile file(path, kMaxModelBytes);
  const std::span<const uint8_t> bytes = file.bytes();
  check(!bytes.empty(), "empty file, not an ONNX model");
  onnx::ModelProto model;
  check(model.ParseFromArray(bytes.data(), int(bytes.size())),
        "not an ONNX model (protobuf parse failed: truncated or another format)");
  check(model.has_graph(), "ONNX model has no graph");
  return model;
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Version of the default ONNX domain. A model whose nodes all live in other
// domains (e.g. ai.onnx.preview.training) may leave it out; then `fallback`.
int default_opset(const onnx::ModelProto& model, int fallback) {
  for (const auto& o : model.opset_import())
    if (is_default_domain(o.domain())) {
      check(o.version() > 0 && o.version() < INT_MAX,
            "invalid opset version " + std::to_string(o.version()));
      return int(o.version());
    }
  for (const auto& n : model.graph().node())
    check(!is_default_domain(n.domain()),
          "model imports no opset for the default ONNX domain, which its nodes use");
  return fallback;
}

// The tensor a Constant node's value / value_float(s) / value_int(s) means:
// scalars for the singular forms, 1-D for the lists.
Tensor constant_value(const AttrValue& a) {
  if (auto* t = std::get_if<Tensor>(&a)) return *t;
  if (auto* f = std::get_if<float>(&a)) return Tensor::from_vector<float>({*f}, {});
  if (auto* i = std::get_if<int64_t>(&a)) return Tensor::from_vector<int64_t>({*i}, {});
  if (auto* fs = std::get_if<std::vector<float>>(&a))
    return Tensor::from_vector(*fs, {int64_t(fs->size())});
  if (auto* is = std::get_if<std::vector<int64_t>>(&a))
    return Tensor::from_vector(*is, {int64_t(is->size())});
  throw Error("Constant value attribute has the wrong type");
}

// Turns one GraphProto into a Graph. Values are defined before any node input
// is resolved, so files whose nodes are not in topological order still load.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  Graph build(const onnx::GraphProto& gp) {
    if (gp.sparse_initializer_size() != 0) throw Error::unsupported("sparse initializers are not supported");
    for (const auto& init : gp.initializer()) {
      define(init.name(), tensor_from_proto(init, base_dir_), {});
      initializers_.insert(init.name());
    }
    for (const auto& in : gp.input()) add_input(in);
    std::vector<int> kept;
    for (int i = 0; i < gp.node_size(); ++i)
      if (!fold_constant(gp.node(i), i)) kept.push_back(i);
    for (int i : kept) resolve_node(gp.node(i), i);
    for (const auto& out : gp.output()) add_output(out);
    return std::move(g_);
  }

 private:
  // Adds a value named `name`; every name is defined once (SSA).
  ValueId define(const std::string& name, std::optional<Tensor> constant,
                 const ErrorContext& ctx) {
    check(!name.empty(), "a value has an empty name", ctx);
    check(!by_name_.count(name), "value '" + name + "' is defined more than once", ctx);
    Value v;
    v.name = name;
    if (constant) {
      v.dtype = constant->dtype();
      v.shape = constant->shape();
      v.constant = std::move(constant);
    }
    ValueId id = g_.add_value(std::move(v));
    by_name_.emplace(name, id);
    return id;
  }

  void add_input(const onnx::ValueInfoProto& in) {
    // Inputs with an initializer are constants (older exporters list every
    // weight as an input), not runtime inputs.
    if (initializers_.count(in.name())) return;
    ValueId id = define(in.name(), std::nullopt, {});
    apply_type(in.type(), g_.value(id), /*required=*/true);
    g_.inputs.push_back(id);
  }

  std::string node_name(const onnx::NodeProto& n, int index) const {
    return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
  }

  // A default-domain Constant with a numeric value becomes a constant value
  // right away; returns false for every other node (kept for resolve_node).
  bool fold_constant(const onnx::NodeProto& n, int index) {
    ErrorContext ctx{"", node_name(n, index), n.op_type(), ""};
    if (n.op_type() != "Constant" || !is_default_domain(n.domain()) || n.output_size() != 1 ||
        n.attribute_size() != 1) {
      for (const auto& out : n.output())
        if (!out.empty()) define(out, std::nullopt, ctx);
      return false;
    }
    const std::string& which = n.attribute(0).name();
    if (which != "value" && which != "value_float" && which != "value_floats" &&
        which != "value_int" && which != "value_ints") {
      define(n.output(0), std::nullopt, ctx);
      return false;
    }
    try {
      define(n.output(0), constant_value(attribute_from_proto(n.attribute(0), base_dir_)), ctx);
    } catch (const Error& e) {
      throw e.with_context(ctx);
    }
    return true;
  }

  void resolve_node(const onnx::NodeProto& n, int index) {
    Node node;
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.name = node_name(n, index);
    ErrorContext ctx{"", node.name, node.op_type, ""};
    check(!node.op_type.empty(), "node has no op_type", ctx);
    for (const auto& a : n.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS ||
          a.has_g() || a.graphs_size())
        throw Error::unsupported("unsupported op: subgraphs (attribute '" + a.name() + "') are not supported", ctx);
    try {
      node.attrs = attributes_from_node(n, base_dir_);
    } catch (const Error& e) {
      throw e.with_context(ctx);
    }
    for (const auto& in : n.input()) {
      if (in.empty()) { node.inputs.push_back(kNoValue); continue; }
      auto it = by_name_.find(in);
      check(it != by_name_.end(),
            "input '" + in + "' is not produced by any node, graph input or initializer", ctx);
      node.inputs.push_back(it->second);
    }
    for (const auto& out : n.output())
      node.outputs.push_back(out.empty() ? kNoValue : by_name_.at(out));
    g_.add_node(std::move(node));
  }

  void add_output(const onnx::ValueInfoProto& out) {
    auto it = by_name_.find(out.name());
    check(it != by_name_.end(), "graph output '" + out.name() + "' is never produced");
    Value& v = g_.value(it->second);
    if (!v.is_constant()) apply_type(out.type(), v, /*required=*/false);
    g_.outputs.push_back(it->second);
  }

 private:
  std::string base_dir_;
  Graph g_;
  std::unordered_map<std::string, ValueId> by_name_;
  std::unordered_set<std::string> initializers_;
};

}  // namespace

Graph load_onnx(const std::string& path, const OnnxImportOptions& options) {
  const ErrorContext file_ctx{path, "", "", ""};
  try {
    onnx::ModelProto model = read_model(path);
    std::string base_dir = std::filesystem::path(path).parent_path().string();
    GraphBuilder builder(base_dir);
    Graph g = builder.build(model.graph());
    g.source = path;
    g.opset = default_opset(model, g.opset);
    if (options.onnx_shape_inference)
      if (auto inferred = infer_onnx_shapes_isolated(model, options.shape_inference_timeout_ms))
        apply_inferred_types(*inferred, g);
    g.topo_sort();
    return g;
  } catch (const Error& e) {
    throw e.with_context(file_ctx);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while importing", file_ctx);
  }
}

}  // namespace tandem
