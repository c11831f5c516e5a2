// Elementwise math, activations, reductions, casts. Elementwise ops keep the
// form (native / nchw) of their inputs; see builder.h.
#include <algorithm>

#include "formats/tfjs/activation.h"
#include "formats/tfjs/translators.h"

namespace tandem::tfjs {

namespace {

struct Operands {
  std::vector<ValueId> ids;
  TfValue out;  // id unset; rank and form of the result
};

// Brings all operands to one form: nchw when some operand already is and
// every other is rank 4 or a constant of rank <= 4; native otherwise.
Operands align_operands(Builder& b, const TfNode& n, const std::vector<TfValue>& in) {
  bool any_nchw = false, all_fit = true;
  int rank = 0;
  for (const TfValue& v : in) {
    any_nchw |= v.nchw;
    all_fit &= v.nchw || v.rank == 4 || (b.constant(v) && v.rank >= 0 && v.rank <= 4);
    rank = (rank < 0 || v.rank < 0) ? -1 : std::max(rank, v.rank);
  }
  Operands o;
  if (any_nchw && all_fit) {
    for (const TfValue& v : in)
      o.ids.push_back(v.nchw || v.rank == 4 ? b.nchw(v) : b.constant_as_nchw(v));
    o.out = {kNoValue, 4, true};
  } else {
    for (const TfValue& v : in) o.ids.push_back(b.native(v));
    o.out = {kNoValue, rank, false};
  }
  return o;
}

TfValue with_id(TfValue v, ValueId id) {
  v.id = id;
  return v;
}

void binary(Builder& b, const TfNode& n, const std::string& op) {
  check(n.inputs.size() == 2, op + " needs 2 inputs", n.context());
  Operands o = align_operands(b, n, {b.input(n, 0), b.input(n, 1)});
  b.define(n, with_id(o.out, b.emit1(n, op, o.ids)));
}

#define TANDEM_BINARY(fn, onnx) \
  void fn(Builder& b, const TfNode& n) { binary(b, n, onnx); }
TANDEM_BINARY(add, "Add")
TANDEM_BINARY(sub, "Sub")
TANDEM_BINARY(mul, "Mul")
TANDEM_BINARY(div, "Div")
TANDEM_BINARY(maximum, "Max")
TANDEM_BINARY(minimum, "Min")
TANDEM_BINARY(pow, "Pow")
TANDEM_BINARY(equal, "Equal")
TANDEM_BINARY(greater, "Greater")
TANDEM_BINARY(greater_equal, "GreaterOrEqual")
TANDEM_BINARY(less, "Less")
TANDEM_BINARY(less_equal, "LessOrEqual")
#undef TANDEM_BINARY

void not_equal(Builder& b, const TfNode& n) {
  Operands o = align_operands(b, n, {b.input(n, 0), b.input(n, 1)});
  b.define(n, with_id(o.out, b.emit1(n, "Not", {b.emit1(n, "Equal", o.ids)})));
}

void squared_difference(Builder& b, const TfNode& n) {
  Operands o = align_operands(b, n, {b.input(n, 0), b.input(n, 1)});
  ValueId d = b.emit1(n, "Sub", o.ids);
  b.define(n, with_id(o.out, b.emit1(n, "Mul", {d, d})));
}

bool is_integer(DType t) { return t == DType::i32 || t == DType::i64 || t == DType::i8 || t == DType::u8; }

// Python-style floor division and modulo. Integer FloorDiv is exact as
// (a - mod(a, b)) / b with a floor modulo; floats floor the quotient.
void floor_mod(Builder& b, const TfNode& n) {
  Operands o = align_operands(b, n, {b.input(n, 0), b.input(n, 1)});
  Attributes a;
  a.set("fmod", int64_t(0));
  b.define(n, with_id(o.out, b.emit1(n, "Mod", o.ids, a)));
}

void floor_div(Builder& b, const TfNode& n) {
  Operands o = align_operands(b, n, {b.input(n, 0), b.input(n, 1)});
  DType t = n.get_type("T", DType::f32);
  ValueId y;
  if (is_integer(t)) {
    Attributes a;
    a.set("fmod", int64_t(0));
    ValueId m = b.emit1(n, "Mod", o.ids, a);
    y = b.emit1(n, "Div", {b.emit1(n, "Sub", {o.ids[0], m}), o.ids[1]});
  } else {
    y = b.emit1(n, "Floor", {b.emit1(n, "Div", o.ids)});
  }
  b.define(n, with_id(o.out, y));
}

void add_n(Builder& b, const TfNode& n) {
  check(!n.inputs.empty(), "AddN needs inputs", n.context());
  std::vector<TfValue> in;
  for (size_t i = 0; i < n.inputs.size(); ++i) in.push_back(b.input(n, i));
  Operands o = align_operands(b, n, in);
  ValueId acc = o.ids[0];
  for (size_t i = 1; i < o.ids.size(); ++i) acc = b.emit1(n, "Add", {acc, o.ids[i]});
  b.define(n, with_id(o.out, o.ids.size() == 1 ? b.emit1(n, "Identity", {acc}) : acc));
}

// BiasAdd: a per-channel add along C (last axis for NHWC).
void bias_add(Builder& b, const TfNode& n) {
  std::string f = n.get_string("data_format", "NHWC");
  TfValue x = b.input(n, 0), bias = b.input(n, 1);
  if (f == "NCHW") {
    check_supported(x.rank == 4, "NCHW BiasAdd on rank other than 4", n.context());
    ValueId bias4 = b.emit1(n, "Reshape", {b.native(bias), b.int64_constant(n.name + "/shape", {1, -1, 1, 1})});
    b.define(n, TfValue{b.emit1(n, "Add", {b.native(x), bias4}), 4, false});
    return;
  }
  Operands o = align_operands(b, n, {x, bias});
  b.define(n, with_id(o.out, b.emit1(n, "Add", o.ids)));
}

void unary(Builder& b, const TfNode& n, const std::string& op) {
  TfValue x = b.input(n, 0);
  b.define(n, with_id(x, b.emit1(n, op, {x.id})));
}

#define TANDEM_UNARY(fn, onnx) \
  void fn(Builder& b, const TfNode& n) { unary(b, n, onnx); }
TANDEM_UNARY(exp, "Exp")
TANDEM_UNARY(log, "Log")
TANDEM_UNARY(sqrt, "Sqrt")
TANDEM_UNARY(neg, "Neg")
TANDEM_UNARY(abs, "Abs")
TANDEM_UNARY(floor, "Floor")
TANDEM_UNARY(ceil, "Ceil")
TANDEM_UNARY(reciprocal, "Reciprocal")
TANDEM_UNARY(softplus, "Softplus")
TANDEM_UNARY(logical_not, "Not")
#undef TANDEM_UNARY

void rsqrt(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  b.define(n, with_id(x, b.emit1(n, "Reciprocal", {b.emit1(n, "Sqrt", {x.id})})));
}

void square(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  b.define(n, with_id(x, b.emit1(n, "Mul", {x.id, x.id})));
}

void activation(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  b.define(n, with_id(x, emit_activation(b, n, n.op, x.id, kNoValue, n.get_float("alpha", 0.2f))));
}

void prelu(Builder& b, const TfNode& n) {
  Operands o = align_operands(b, n, {b.input(n, 0), b.input(n, 1)});
  b.define(n, with_id(o.out, emit_activation(b, n, "Prelu", o.ids[0], o.ids[1])));
}

// Softmax over the last axis: C, which is axis 1 of the nchw form.
void softmax(Builder& b, const TfNode& n, const std::string& op) {
  TfValue x = b.input(n, 0);
  Attributes a;
  a.set("axis", int64_t(x.nchw ? 1 : -1));
  b.define(n, with_id(x, b.emit1(n, op, {x.id}, a)));
}

void softmax_op(Builder& b, const TfNode& n) { softmax(b, n, "Softmax"); }
void log_softmax_op(Builder& b, const TfNode& n) { softmax(b, n, "LogSoftmax"); }

void cast(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  b.define(n, with_id(x, b.cast(n, x.id, n.get_type("DstT", DType::f32))));
}

// Mean/Sum/Max/Min/Prod over constant axes. On an nchw value the axes are
// mapped; without keep_dims the result is made native (a rank-4 transpose of
// a tensor with size-1 axes, before squeezing them) unless the kept axes come
// out in the same order either way.
void reduce(Builder& b, const TfNode& n, const std::string& op) {
  TfValue x = b.input(n, 0);
  std::vector<int64_t> axes = b.constant_ints(n, 1, "reduction axes");
  bool keep = n.get_bool("keep_dims", false);
  check_supported(x.rank >= 0, "reduction over a value of unknown rank", n.context());
  for (int64_t& a : axes) a = normalize_tf_axis(a, x.rank, n);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.empty()) {  // TF reduces nothing; ONNX would reduce everything
    b.define(n, with_id(x, b.emit1(n, "Identity", {x.id})));
    return;
  }
  int out_rank = keep ? x.rank : x.rank - int(axes.size());
  std::vector<int64_t> onnx_axes = axes;
  bool nchw_out = false;
  ValueId in = x.id;
  if (x.nchw) {
    for (int64_t& a : onnx_axes) a = nhwc_to_nchw_axis(a);
    std::sort(onnx_axes.begin(), onnx_axes.end());
    // Kept axes keep their relative order in both forms iff C is reduced or
    // H and W both are.
    bool c_reduced = std::count(axes.begin(), axes.end(), 3) != 0;
    bool hw_reduced = std::count(axes.begin(), axes.end(), 1) && std::count(axes.begin(), axes.end(), 2);
    nchw_out = keep;
    if (!keep && !c_reduced && !hw_reduced) in = b.native(x), onnx_axes = axes;
  }
  Attributes a;
  a.set("keepdims", int64_t(keep));
  std::vector<ValueId> ins{in};
  if (op == "ReduceSum") ins.push_back(b.int64_constant(n.name + "/axes", onnx_axes));
  else a.set("axes", onnx_axes);
  b.define(n, TfValue{b.emit1(n, op, ins, a), out_rank, nchw_out});
}

#define TANDEM_REDUCE(fn, onnx) \
  void fn(Builder& b, const TfNode& n) { reduce(b, n, onnx); }
TANDEM_REDUCE(mean, "ReduceMean")
TANDEM_REDUCE(sum, "ReduceSum")
TANDEM_REDUCE(max, "ReduceMax")
TANDEM_REDUCE(min, "ReduceMin")
#undef TANDEM_REDUCE

void arg_max_min(Builder& b, const TfNode& n, const std::string& op) {
  TfValue x = b.input(n, 0);
  std::vector<int64_t> axis = b.constant_ints(n, 1, "axis");
  check(axis.size() == 1, "axis must be a scalar", n.context());
  Attributes a;
  a.set("axis", normalize_tf_axis(axis[0], x.rank, n));
  a.set("keepdims", int64_t(0));
  ValueId y = b.emit1(n, op, {b.native(x)}, a);
  b.define(n, TfValue{b.cast(n, y, n.get_type("output_type", DType::i64)), x.rank - 1, false});
}

void arg_max(Builder& b, const TfNode& n) { arg_max_min(b, n, "ArgMax"); }
void arg_min(Builder& b, const TfNode& n) { arg_max_min(b, n, "ArgMin"); }

}  // namespace

void register_math_translators() {
  register_translator("Add", add);
  register_translator("AddV2", add);
  register_translator("Sub", sub);
  register_translator("Mul", mul);
  register_translator("RealDiv", div);
  register_translator("Div", div);
  register_translator("Maximum", maximum);
  register_translator("Minimum", minimum);
  register_translator("Pow", pow);
  register_translator("Equal", equal);
  register_translator("NotEqual", not_equal);
  register_translator("Greater", greater);
  register_translator("GreaterEqual", greater_equal);
  register_translator("Less", less);
  register_translator("LessEqual", less_equal);
  register_translator("SquaredDifference", squared_difference);
  register_translator("FloorDiv", floor_div);
  register_translator("FloorMod", floor_mod);
  register_translator("AddN", add_n);
  register_translator("BiasAdd", bias_add);
  register_translator("Exp", exp);
  register_translator("Log", log);
  register_translator("Sqrt", sqrt);
  register_translator("Rsqrt", rsqrt);
  register_translator("Square", square);
  register_translator("Neg", neg);
  register_translator("Abs", abs);
  register_translator("Floor", floor);
  register_translator("Ceil", ceil);
  register_translator("Reciprocal", reciprocal);
  register_translator("Softplus", softplus);
  register_translator("LogicalNot", logical_not);
  for (const char* a : {"Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh"})
    register_translator(a, activation);
  register_translator("Prelu", prelu);
  register_translator("Softmax", softmax_op);
  register_translator("LogSoftmax", log_softmax_op);
  register_translator("Cast", cast);
  register_translator("Mean", mean);
  register_translator("Sum", sum);
  register_translator("Max", max);
  register_translator("Min", min);
  register_translator("ArgMax", arg_max);
  register_translator("ArgMin", arg_min);
}

}  // namespace tandem::tfjs
