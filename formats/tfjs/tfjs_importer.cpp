#include "formats/tfjs/tfjs_importer.h"

#include <new>
#include <unordered_map>
#include <unordered_set>

#include "formats/tfjs/model_json.h"
#include "formats/tfjs/translators.h"

namespace tandem {

namespace {

using tfjs::Builder;
using tfjs::TfjsModel;
using tfjs::TfNode;
using tfjs::TfValue;

std::string node_of(const std::string& ref) {
  size_t colon = ref.rfind(':');
  if (colon == std::string::npos) return ref;
  std::string tail = ref.substr(colon + 1);
  bool digits = !tail.empty() && tail.find_first_not_of("0123456789") == std::string::npos;
  return digits ? ref.substr(0, colon) : ref;
}

// Nodes in an order where every input is defined first (model.json does not
// promise one); Error on a cycle or an input no node produces.
std::vector<const TfNode*> topological_order(const TfjsModel& m) {
  std::unordered_map<std::string, const TfNode*> by_name;
  for (const TfNode& n : m.nodes)
    check(by_name.emplace(n.name, &n).second, "node '" + n.name + "' is defined more than once");
  std::vector<const TfNode*> order;
  std::unordered_map<const TfNode*, int> state;  // 1: on the stack, 2: done
  for (const TfNode& root : m.nodes) {
    if (state[&root] == 2) continue;
    std::vector<std::pair<const TfNode*, size_t>> stack{{&root, 0}};
    state[&root] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->inputs.size()) {
        std::string producer = node_of(n->inputs[next++]);
        auto it = by_name.find(producer);
        check(it != by_name.end(), "input '" + producer + "' is not produced by any node", n->context());
        int& s = state[it->second];
        check(s != 1, "the graph has a cycle through node '" + producer + "'", n->context());
        if (s == 0) {
          s = 1;
          stack.push_back({it->second, 0});
        }
        continue;
      }
      state[n] = 2;
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

class Importer {
 public:
  Importer(const TfjsModel& m, const TfjsImportOptions& o) : model_(m), options_(o), b_(g_) {
    g_.source = m.path;
    g_.opset = 17;
  }

  Graph run() {
    std::vector<Tensor> weights = tfjs::load_weights(model_);
    for (size_t i = 0; i < weights.size(); ++i) weights_[model_.weights[i].name] = std::move(weights[i]);
    for (const TfNode* n : topological_order(model_)) {
      try {
        translate(*n);
      } catch (const Error& e) {
        throw e.with_context(n->context());
      }
    }
    add_outputs();
    g_.remove_unused_nodes();
    g_.topo_sort();
    return std::move(g_);
  }

 private:
  void translate(const TfNode& n) {
    if (n.op == "Const") return add_const(n);
    if (n.op == "Placeholder") return add_placeholder(n);
    if (n.op == "NoOp") return b_.define(n.name, {});
    tfjs::Translator t = tfjs::find_translator(n.op);
    if (!t) throw Error::unsupported("unsupported op: TF op '" + n.op + "' has no tandem translation");
    t(b_, n);
  }

  void add_const(const TfNode& n) {
    auto it = weights_.find(n.name);
    check(it != weights_.end(), "constant has no entry in the weights manifest", n.context());
    const Tensor& t = it->second;
    DType want = n.get_type("dtype", t.dtype());
    check(want == t.dtype(), "constant's dtype differs from its weight's", n.context());
    int rank = int(t.rank());
    b_.define(n, TfValue{g_.add_constant(n.name, t), rank, false});
  }

  void add_placeholder(const TfNode& n) {
    Value v;
    v.name = n.name;
    v.dtype = n.get_type("dtype", DType::f32);
    check_supported(n.has("shape"), "a Placeholder without a shape", n.context());
    v.shape = n.get_shape("shape");
    if (options_.dynamic_batch && !v.shape.empty()) {
      v.shape[0] = -1;
      v.dim_names.assign(v.shape.size(), "");
      v.dim_names[0] = "batch";
    }
    int rank = int(v.shape.size());
    ValueId id = g_.add_value(std::move(v));
    g_.inputs.push_back(id);
    b_.define(n, TfValue{id, rank, false});
  }

  std::vector<std::string> output_names() const {
    if (!options_.outputs.empty()) return options_.outputs;
    if (!model_.signature_outputs.empty()) return model_.signature_outputs;
    // Nodes whose outputs nothing reads, as TF.js picks them.
    std::unordered_set<std::string> read;
    for (const TfNode& n : model_.nodes)
      for (const std::string& in : n.inputs) read.insert(node_of(in));
    std::vector<std::string> names;
    for (const TfNode& n : model_.nodes)
      if (!read.count(n.name) && n.op != "Const" && n.op != "NoOp" && n.op != "Placeholder")
        names.push_back(n.name);
    check(!names.empty(), "the model has no outputs");
    return names;
  }

  // Each output is a native-form value named as the TF tensor.
  void add_outputs() {
    std::unordered_set<ValueId> taken;
    for (const std::string& name : output_names()) {
      TfValue v = b_.resolve(name, {"", name, "", ""});
      ValueId id = b_.native(v);
      Value& val = g_.value(id);
      if (val.producer < 0 || taken.count(id)) {
        TfNode out;
        out.name = name;
        id = b_.emit1(out, "Identity", {id});
      }
      g_.value(id).name = name;
      taken.insert(id);
      g_.outputs.push_back(id);
    }
  }

  const TfjsModel& model_;
  const TfjsImportOptions& options_;
  Graph g_;
  Builder b_;
  std::unordered_map<std::string, Tensor> weights_;
};

}  // namespace

bool is_tfjs_model_path(const std::string& path) {
  return path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
}

Graph load_tfjs(const std::string& model_json, const TfjsImportOptions& options) {
  const ErrorContext file_ctx{model_json, "", "", ""};
  try {
    TfjsModel m = tfjs::parse_model_json(model_json);
    return Importer(m, options).run();
  } catch (const Error& e) {
    throw e.with_context(file_ctx);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory while importing", file_ctx);
  }
}

}  // namespace tandem
