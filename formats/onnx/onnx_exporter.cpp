#include "formats/onnx/onnx_exporter.h"

#include <map>
#include <set>

#include "formats/file_bytes.h"
#include "formats/onnx/tensor_proto.h"

namespace tandem {

namespace {

// The oldest IR version that carries `opset` (onnx/docs/Versioning.md), so
// older readers still accept the file.
int64_t ir_version_for(int opset) {
  if (opset >= 15) return 8;
  if (opset >= 12) return 7;
  if (opset == 11) return 6;
  if (opset == 10) return 5;
  if (opset == 9) return 4;
  return 3;
}

template <typename T, typename Field>
void append_all(const std::vector<T>& values, Field* field) {
  for (const T& v : values) field->Add(v);
}

onnx::AttributeProto attribute_to_proto(const std::string& name, const AttrValue& value) {
  using A = onnx::AttributeProto;
  A a;
  a.set_name(name);
  if (auto* i = std::get_if<int64_t>(&value)) a.set_type(A::INT), a.set_i(*i);
  else if (auto* f = std::get_if<float>(&value)) a.set_type(A::FLOAT), a.set_f(*f);
  else if (auto* s = std::get_if<std::string>(&value)) a.set_type(A::STRING), a.set_s(*s);
  else if (auto* is = std::get_if<std::vector<int64_t>>(&value))
    a.set_type(A::INTS), append_all(*is, a.mutable_ints());
  else if (auto* fs = std::get_if<std::vector<float>>(&value))
    a.set_type(A::FLOATS), append_all(*fs, a.mutable_floats());
  else if (auto* ss = std::get_if<std::vector<std::string>>(&value)) {
    a.set_type(A::STRINGS);
    for (const std::string& s : *ss) a.add_strings(s);
  } else {
    a.set_type(A::TENSOR);
    *a.mutable_t() = tensor_to_proto(std::get<Tensor>(value), name);
  }
  return a;
}

onnx::ValueInfoProto value_info(const Value& v) {
  onnx::ValueInfoProto info;
  info.set_name(v.name);
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(dtype_to_onnx(v.dtype));
  auto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    auto* dim = shape->add_dim();
    if (v.shape[i] >= 0) dim->set_dim_value(v.shape[i]);
    else if (i < v.dim_names.size() && !v.dim_names[i].empty()) dim->set_dim_param(v.dim_names[i]);
  }
  return info;
}

// Fails unless every value the file names has a name of its own.
void check_names(const Graph& g, const std::set<ValueId>& used) {
  std::map<std::string, ValueId> seen;
  for (ValueId id : used) {
    const Value& v = g.value(id);
    check(!v.name.empty(), "value " + std::to_string(id) + " has no name; ONNX names every value");
    auto [it, fresh] = seen.emplace(v.name, id);
    check(fresh, "two values are named '" + v.name + "'; ONNX names must be unique");
  }
}

class ModelWriter {
 public:
  ModelWriter(const Graph& g, onnx::GraphProto& out) : g_(g), out_(out) {}

  void write() {
    for (ValueId id : g_.inputs) {
      check(!g_.value(id).is_constant(), "graph input '" + g_.value(id).name + "' is a constant");
      used_.insert(id);
      *out_.add_input() = value_info(g_.value(id));
    }
    for (NodeId n = 0; n < NodeId(g_.nodes.size()); ++n)
      if (!g_.nodes[size_t(n)].dead) write_node(n);
    for (ValueId id : g_.outputs) {
      use(id);
      *out_.add_output() = value_info(g_.value(id));
    }
    check_names(g_, used_);
  }

  const std::set<std::string>& domains() const { return domains_; }

 private:
  void use(ValueId id) {
    if (!used_.insert(id).second || !g_.value(id).is_constant()) return;
    *out_.add_initializer() = tensor_to_proto(*g_.value(id).constant, g_.value(id).name);
  }

  void write_node(NodeId id) {
    const Node& n = g_.nodes[size_t(id)];
    ErrorContext ctx = g_.context(id);
    check_supported(n.op_type.rfind("tandem.", 0) != 0 && n.domain.rfind("tandem", 0) != 0,
                    "op " + n.op_type + " is internal to tandem (made by a compile pass) and has no ONNX form", ctx);
    onnx::NodeProto* p = out_.add_node();
    p->set_op_type(n.op_type);
    p->set_name(n.name);
    p->set_domain(n.domain);
    if (!n.domain.empty() && n.domain != "ai.onnx") domains_.insert(n.domain);
    for (ValueId v : n.inputs) {
      if (v != kNoValue) use(v);
      p->add_input(v == kNoValue ? "" : g_.value(v).name);
    }
    for (ValueId v : n.outputs) {
      if (v != kNoValue) used_.insert(v);
      p->add_output(v == kNoValue ? "" : g_.value(v).name);
    }
    try {
      for (const auto& [name, value] : n.attrs.all()) *p->add_attribute() = attribute_to_proto(name, value);
    } catch (const Error& e) {
      throw e.with_context(ctx);
    }
  }

  const Graph& g_;
  onnx::GraphProto& out_;
  std::set<ValueId> used_;
  std::set<std::string> domains_;
};

}  // namespace

onnx::ModelProto to_onnx_model(const Graph& g, const OnnxExportOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(ir_version_for(g.opset));
  model.set_producer_name(options.producer_name);
  if (!options.doc_string.empty()) model.set_doc_string(options.doc_string);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(options.graph_name);
  ModelWriter writer(g, *graph);
  writer.write();
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(g.opset);
  for (const std::string& d : writer.domains()) {
    auto* other = model.add_opset_import();
    other->set_domain(d);
    other->set_version(1);
  }
  return model;
}

void save_onnx(const Graph& g, const std::string& path, const OnnxExportOptions& options) {
  try {
    std::string bytes;
    check(to_onnx_model(g, options).SerializeToString(&bytes),
          "protobuf serialization failed (a model of 2 GiB or more needs external data)");
    write_file_atomically(path, bytes);
  } catch (const Error& e) {
    throw e.with_context({path, "", "", ""});
  }
}

}  // namespace tandem
