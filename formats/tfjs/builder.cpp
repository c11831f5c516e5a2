#include "formats/tfjs/builder.h"

#include <charconv>

#include "ops/shape_ops.h"

namespace tandem::tfjs {

void Builder::define(const std::string& name, std::vector<TfValue> outputs) {
  check(!defined_.count(name), "node '" + name + "' is defined more than once");
  defined_.emplace(name, std::move(outputs));
}

TfValue Builder::resolve(const std::string& ref, const ErrorContext& ctx) const {
  std::string node = ref;
  size_t index = 0;
  if (size_t colon = ref.rfind(':'); colon != std::string::npos) {
    const char* b = ref.data() + colon + 1;
    const char* e = ref.data() + ref.size();
    auto [end, ec] = std::from_chars(b, e, index);
    if (ec == std::errc() && end == e && b != e) node = ref.substr(0, colon);
    else index = 0;
  }
  auto it = defined_.find(node);
  check(it != defined_.end(), "input '" + ref + "' is not produced by any node", ctx);
  check(index < it->second.size(), "input '" + ref + "': node '" + node + "' has only " +
                                       std::to_string(it->second.size()) + " outputs", ctx);
  return it->second[index];
}

TfValue Builder::input(const TfNode& n, size_t i) const {
  check(i < n.inputs.size(), "needs at least " + std::to_string(i + 1) + " inputs, has " +
                                 std::to_string(n.inputs.size()), n.context());
  return resolve(n.inputs[i], n.context());
}

const Tensor* Builder::constant(const TfValue& v) const {
  const Value& val = g_.value(v.id);
  return val.constant ? &*val.constant : nullptr;
}

const Tensor& Builder::constant_input(const TfNode& n, size_t i, const std::string& what) const {
  TfValue v = input(n, i);
  const Tensor* t = constant(v);
  check_supported(t != nullptr && !v.nchw, what + " must be a constant", n.context());
  return *t;
}

std::vector<int64_t> Builder::constant_ints(const TfNode& n, size_t i, const std::string& what) const {
  const Tensor& t = constant_input(n, i, what);
  check(t.dtype() == DType::i32 || t.dtype() == DType::i64, what + " must be int32 or int64", n.context());
  return t.to_int_vector();
}

std::string Builder::unique_name(const std::string& base) {
  int& uses = name_uses_[base];
  std::string name = uses == 0 ? base : base + "/tandem_" + std::to_string(uses);
  ++uses;
  return name;
}

std::vector<ValueId> Builder::emit(const TfNode& n, const std::string& op_type,
                                   std::vector<ValueId> inputs, Attributes attrs, int num_outputs) {
  Node node;
  node.op_type = op_type;
  node.name = unique_name(n.name);
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  for (int k = 0; k < num_outputs; ++k) {
    Value v;
    v.name = k == 0 ? node.name : node.name + ":" + std::to_string(k);
    node.outputs.push_back(g_.add_value(std::move(v)));
  }
  std::vector<ValueId> outs = node.outputs;
  g_.add_node(std::move(node));
  return outs;
}

ValueId Builder::cast(const TfNode& n, ValueId x, DType to) {
  Attributes a;
  a.set("to", ops::onnx_code_of(to));
  return emit1(n, "Cast", {x}, a);
}

ValueId Builder::add_constant(const std::string& name, Tensor t) {
  return g_.add_constant(unique_name(name), std::move(t));
}

ValueId Builder::int64_constant(const std::string& name, const std::vector<int64_t>& v) {
  return add_constant(name, Tensor::from_vector(v, {int64_t(v.size())}));
}

ValueId Builder::float_scalar(const std::string& name, float v) {
  return add_constant(name, Tensor::from_vector(std::vector<float>{v}, {}));
}

// Transposes `from` with `perm` once; both directions are cached so a value
// converted back and forth never gets a second transpose.
ValueId Builder::transposed(ValueId from, const char* suffix, std::vector<int64_t> perm,
                            std::unordered_map<ValueId, ValueId>& forward,
                            std::unordered_map<ValueId, ValueId>& backward) {
  if (auto it = forward.find(from); it != forward.end()) return it->second;
  Node node;
  node.op_type = "Transpose";
  node.name = unique_name(g_.value(from).name + suffix);
  node.inputs = {from};
  node.attrs.set("perm", std::move(perm));
  Value out;
  out.name = node.name;
  node.outputs = {g_.add_value(std::move(out))};
  ValueId id = node.outputs[0];
  g_.add_node(std::move(node));
  forward[from] = id;
  backward[id] = from;
  return id;
}

ValueId Builder::nchw(const TfValue& v) {
  return v.nchw ? v.id : transposed(v.id, "/to_nchw", {0, 3, 1, 2}, nchw_of_, native_of_);
}

ValueId Builder::native(const TfValue& v) {
  return v.nchw ? transposed(v.id, "/to_nhwc", {0, 2, 3, 1}, native_of_, nchw_of_) : v.id;
}

ValueId Builder::constant_as_nchw(const TfValue& v) {
  const Tensor* t = constant(v);
  check(t && t->rank() <= 4, "internal: constant_as_nchw on a non-constant or rank > 4 value");
  if (t->rank() == 0) return v.id;  // a scalar broadcasts either way
  Shape s4(size_t(4 - t->rank()), 1);
  s4.insert(s4.end(), t->shape().begin(), t->shape().end());
  TfValue padded{add_constant(g_.value(v.id).name + "/rank4", t->clone().reshaped(s4)), 4, false};
  return nchw(padded);  // folded at compile time
}

int64_t normalize_tf_axis(int64_t axis, int rank, const TfNode& n) {
  check_supported(rank >= 0, "axis on a value of unknown rank", n.context());
  check(axis >= -rank && axis < std::max(rank, 1), "axis " + std::to_string(axis) +
                                                        " out of range for rank " + std::to_string(rank),
        n.context());
  return axis < 0 ? axis + rank : axis;
}

}  // namespace tandem::tfjs
