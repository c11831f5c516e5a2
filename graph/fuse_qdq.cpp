// Folds a QDQ model's quantize/dequantize pairs into integer convolutions
// (tandem.QConv, ops/qconv.h). Runs after fuse_conv_epilogues, so a
// convolution arrives with its residual add and activation already
// gathered into one tandem.FusedConv whose operands are DequantizeLinear
// outputs:
//   DQ(xq) -> FusedConv(DQ(wq), b [, r]) [-> QuantizeLinear -> yq]
// becomes QConv(xq, wq, b [, rq or r]) -> yq (or a float output when no
// QuantizeLinear follows). The dequantized copies that no one reads any
// more go, so the integers flow from one convolution to the next.
#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "graph/rewrite_utils.h"
#include "ops/conv.h"
#include "ops/qconv.h"

namespace tandem {

namespace {

bool is_int8(DType t) { return t == DType::u8 || t == DType::i8; }

bool per_tensor_int8(const std::optional<LinearQuantization>& q) {
  return q && q->per_tensor() && is_int8(q->dtype);
}

// An activation's quantization the backend's integer convolution reads or
// writes.
bool takes(const IntegerConvForm& f, const std::optional<LinearQuantization>& q) {
  return per_tensor_int8(q) &&
         (f.any_zero_point || (q->dtype == DType::i8 && q->zero_points[0] == 0));
}

// Begin and end pads the same on every axis, auto_pad resolved.
bool equal_pads(const Graph& g, const Node& conv) {
  const ops::ConvGeometry geo =
      ops::conv_geometry(conv.attrs, g.value(conv.inputs[0]).shape, g.value(conv.inputs[1]).shape);
  return geo.window.pads_begin == geo.window.pads_end;
}

// The convolution itself within the form: shape, groups, activation,
// channels.
bool conv_in_form(const Graph& g, const Node& conv, const IntegerConvForm& f) {
  const Shape& w = g.value(conv.inputs[1]).shape;
  if (!f.any_shape &&
      (conv.attrs.get_int("group", 1) != 1 || w.size() != 4 || !equal_pads(g, conv)))
    return false;
  if (w.at(0) % f.channel_multiple != 0 || w.at(1) % f.channel_multiple != 0) return false;
  const std::string act = conv.attrs.get_string("activation", "");
  return f.any_activation || act.empty() || act == "Relu";
}

bool is_max_pool(const Node& n) {
  return !n.dead && (n.op_type == "MaxPool" || n.op_type == "GlobalMaxPool") &&
         n.outputs.size() == 1;
}

// a -> first -> b -> second -> c, where second alone reads b, becomes
// a -> second -> b' -> first -> c; `between` describes b' (the caller
// knows its shape and type). The nodes keep their places in the list:
// the caller sorts once it is done.
void swap_with_reader(Graph& g, NodeId first, NodeId second, Value between) {
  between.constant.reset();
  between.producer = second;
  const ValueId mid = g.add_value(std::move(between));
  Node& f = g.nodes[size_t(first)];
  Node& s = g.nodes[size_t(second)];
  const ValueId a = f.inputs[0], b = f.outputs[0], c = s.outputs[0];
  s.inputs[0] = a;
  s.outputs[0] = mid;
  f.inputs[0] = mid;
  f.outputs[0] = c;
  g.value(c).producer = first;
  g.value(b).producer = -1;
}

int sorted_after(Graph& g, int moved) {
  if (moved) {
    g.compact();
    g.topo_sort();
  }
  return moved;
}

// Moves a per-tensor QuantizeLinear above the max pooling it reads:
// quantizing is monotone, so the maximum of the quantized values is the
// quantized maximum, and the pooling then moves a quarter of the bytes and
// the convolution before it can write integers. Returns the count moved.
int hoist_quantize_above_max_pool(Graph& g) {
  auto cons = g.consumers();
  int moved = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].dead || !per_tensor_int8(quantize_params(g, NodeId(i)))) continue;
    const ValueId pooled = g.nodes[i].inputs[0];
    const NodeId p = g.value(pooled).producer;
    if (p < 0 || !is_max_pool(g.nodes[size_t(p)]) || sole_consumer(g, cons, pooled) != NodeId(i))
      continue;
    Value q = g.value(g.nodes[size_t(p)].inputs[0]);  // the pooling's input, quantized
    q.name += "_quantized";
    q.dtype = g.value(g.nodes[i].outputs[0]).dtype;
    swap_with_reader(g, p, NodeId(i), std::move(q));
    ++moved;
  }
  return sorted_after(g, moved);
}

// The mirror image: a per-tensor DequantizeLinear read only by a max
// pooling moves below it (a QAT export's Relu -> Q -> DQ -> MaxPool ->
// Conv), so the pooling runs on the integers and the convolution after it
// finds a dequantized input. Returns the count moved.
int sink_dequantize_below_max_pool(Graph& g) {
  auto cons = g.consumers();
  int moved = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!is_max_pool(g.nodes[i])) continue;
    const ValueId real = g.nodes[i].inputs[0];
    auto dq = dequantize_of(g, real);
    if (!per_tensor_int8(dq) || sole_consumer(g, cons, real) != NodeId(i)) continue;
    Value q = g.value(g.nodes[i].outputs[0]);  // the pooling's output, in integers
    q.name += "_integers";
    q.dtype = dq->dtype;
    swap_with_reader(g, dq->node, NodeId(i), std::move(q));
    ++moved;
  }
  return sorted_after(g, moved);
}

// Weights as the integer convolution takes them: i8 constants, symmetric,
// one scale or one per output channel (ONNX's axis 0).
bool integer_weights(const Graph& g, const std::optional<LinearQuantization>& w,
                     int64_t out_channels) {
  if (!w || w->dtype != DType::i8 || !g.value(w->integer).is_constant()) return false;
  for (int64_t z : w->zero_points)
    if (z != 0) return false;
  return w->per_tensor() || (w->axis == 0 && int64_t(w->scales.size()) == out_channels);
}

// The bias as an f32 constant: as it is, or a dequantized integer constant
// (ONNX Runtime's int32 bias) multiplied out. kNoValue when it is neither.
ValueId real_bias(Graph& g, ValueId b, const std::string& name) {
  if (constant_f32(g, b)) return b;
  auto q = dequantize_of(g, b);
  if (!q || !g.value(q->integer).is_constant()) return kNoValue;
  const Tensor& t = *g.value(q->integer).constant;
  if (!q->per_tensor() && int64_t(q->scales.size()) != t.numel()) return kNoValue;
  Tensor r = Tensor::empty(DType::f32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const size_t c = q->per_tensor() ? 0 : size_t(i);
    r.data<float>()[i] = float((t.scalar_at(i) - double(q->zero_points[c])) * q->scales[c]);
  }
  return g.add_constant(name + "_bias_real", std::move(r));
}

// How `conv`'s residual joins its integer form (`y`: the quantization of its
// output, when it has one the form takes): the 8-bit residual of an 8-bit
// output as a sum post-op reading it in the output's buffer, else as a
// float where the form adds one right; nullopt where neither (the
// convolution then stays float).
std::optional<ops::QResidual> residual_form(const Graph& g, const Node& conv,
                                            const IntegerConvForm& form,
                                            const std::optional<LinearQuantization>& y) {
  if (conv.attrs.get_int("has_residual", 0) != 1) return ops::QResidual::none;
  if (takes(form, dequantize_of(g, conv.inputs[3])) && takes(form, y))
    return ops::QResidual::quantized;
  if (form.real_residual) return ops::QResidual::real;
  return std::nullopt;
}

// Turns one FusedConv with dequantized operands into a QConv. Returns false
// (the graph untouched) when its operands are not integers it can take.
bool quantize_conv(Graph& g, const std::vector<std::vector<NodeId>>& cons, NodeId id,
                   const IntegerConvForm& form) {
  const Node& conv = g.nodes[size_t(id)];
  auto x = dequantize_of(g, conv.inputs[0]);
  auto w = dequantize_of(g, conv.inputs[1]);
  const int64_t m = g.value(conv.inputs[1]).shape.at(0);
  if (!takes(form, x) || !integer_weights(g, w, m) || !conv_in_form(g, conv, form)) return false;
  const NodeId requant = sole_consumer(g, cons, conv.outputs[0]);
  std::optional<LinearQuantization> y;
  if (requant >= 0) y = quantize_params(g, requant);
  const std::optional<ops::QResidual> residual = residual_form(g, conv, form, y);
  if (!residual) return false;
  const ValueId bias = real_bias(g, g.nodes[size_t(id)].inputs[2], conv.name);
  if (bias == kNoValue) return false;
  Node q = g.nodes[size_t(id)];
  ops::QConvParams p;
  p.x_scale = x->scales[0];
  p.x_zero_point = x->zero_points[0];
  p.w_scales = w->scales;
  if (takes(form, y)) {
    p.y_dtype = y->dtype;
    p.y_scale = y->scales[0];
    p.y_zero_point = y->zero_points[0];
    q.outputs[0] = y->integer;
    g.nodes[size_t(requant)].dead = true;
  }
  q.inputs = {x->integer, w->integer, bias};
  p.residual = *residual;
  if (*residual == ops::QResidual::quantized) {
    auto rq = dequantize_of(g, g.nodes[size_t(id)].inputs[3]);
    p.r_scale = rq->scales[0];
    p.r_zero_point = rq->zero_points[0];
    q.inputs.push_back(rq->integer);
  } else if (*residual == ops::QResidual::real) {
    q.inputs.push_back(g.nodes[size_t(id)].inputs[3]);
  }
  q.op_type = ops::kQConvOp;
  set_qconv_params(q.attrs, p);
  g.nodes[size_t(id)] = std::move(q);
  if (p.y_dtype != DType::f32) g.value(g.nodes[size_t(id)].outputs[0]).producer = id;
  return true;
}

}  // namespace

IntegerConvForm cpu_integer_conv_form() {
  IntegerConvForm f;
  f.real_residual = cpu::integer_conv_takes_float_residual();
  return f;
}

IntegerConvForm gpu_integer_conv_form() {
  IntegerConvForm f;
  f.any_zero_point = false;
  f.any_activation = false;
  f.any_shape = false;
  f.integer_max_pool = false;
  // cuDNN's int8 engines read channels in 16-byte vectors.
  f.channel_multiple = 16;
  return f;
}

int fuse_qdq(Graph& g, const IntegerConvForm& form, int* left_in_float) {
  if (form.integer_max_pool) {
    hoist_quantize_above_max_pool(g);
    sink_dequantize_below_max_pool(g);
  }
  int folded = 0;
  if (left_in_float) *left_in_float = 0;
  auto cons = g.consumers();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].dead || g.nodes[i].op_type != ops::kFusedConvOp) continue;
    if (quantize_conv(g, cons, NodeId(i), form)) {
      ++folded;
      cons = g.consumers();
    } else if (left_in_float && dequantize_of(g, g.nodes[i].inputs[1])) {
      ++*left_in_float;
    }
  }
  if (folded) g.remove_unused_nodes();
  return folded;
}

}  // namespace tandem
