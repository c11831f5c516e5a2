#include "ops/elementwise.h"

#include <cmath>
#include <set>

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

namespace {

const std::set<std::string> kUnary = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                                      "HardSwish", "Clip", "Elu", "Selu", "Softplus", "Exp",
                                      "Log", "Sqrt", "Abs", "Neg", "Reciprocal", "Floor",
                                      "Ceil", "Erf", "Identity", "Dropout", "Mish", "Gelu"};
const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};

std::vector<TensorDesc> infer_unary(const InferContext& c) {
  if (c.op_type == "Gelu") gelu_uses_tanh(c.attributes());
  std::vector<TensorDesc> out{TensorDesc{c.inputs[0].dtype, c.inputs[0].shape}};
  // Dropout's optional mask output.
  if (c.op_type == "Dropout" && c.num_outputs > 1)
    out.push_back(TensorDesc{DType::boolean, c.inputs[0].shape});
  return out;
}

// Max/Min are variadic in ONNX; everything else takes exactly two operands.
std::vector<TensorDesc> infer_binary(const InferContext& c) {
  Shape s = c.shape(0);
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    check(c.inputs[i].dtype == c.inputs[0].dtype || c.op_type == "Pow",
          "operand dtypes differ: " + c.inputs[0].str() + " vs " + c.inputs[i].str());
    s = broadcast_shapes(s, c.shape(i));
  }
  return {TensorDesc{c.inputs[0].dtype, s}};
}

// Mod: fmod = 1 is C's fmod (sign of the dividend); fmod = 0 is floor
// modulo (sign of the divisor, Python's %), which ONNX defines for integers
// only; tandem gives floats numpy's np.mod there too.
std::vector<TensorDesc> infer_mod(const InferContext& c) {
  int64_t fmod = c.attributes().get_int("fmod", 0);
  check(fmod == 0 || fmod == 1, "fmod must be 0 or 1, got " + std::to_string(fmod));
  check(c.inputs[0].dtype != DType::boolean, "Mod does not take bool operands");
  return infer_binary(c);
}

}  // namespace

std::optional<Activation> activation_of(const OpDesc& op) {
  using K = ActivationKind;
  const Attributes& a = op.attributes();
  const std::string& t = op.op_type;
  if (t == "Relu") return Activation{K::relu};
  if (t == "LeakyRelu") return Activation{K::leaky_relu, a.get_float("alpha", 0.01f)};
  if (t == "Sigmoid") return Activation{K::sigmoid};
  if (t == "Tanh") return Activation{K::tanh};
  if (t == "HardSwish") return Activation{K::hard_swish};
  if (t == "HardSigmoid") return Activation{K::hard_sigmoid, a.get_float("alpha", 0.2f), a.get_float("beta", 0.5f)};
  if (t == "Elu") return Activation{K::elu, a.get_float("alpha", 1.f)};
  if (t == "Softplus") return Activation{K::softplus};
  if (t == "Gelu") return Activation{gelu_uses_tanh(a) ? K::gelu_tanh : K::gelu};
  if (t != "Clip") return std::nullopt;
  // Clip's bounds are inputs since opset 11 and attributes before.
  Activation c{K::clip, a.get_float("min", -INFINITY), a.get_float("max", INFINITY)};
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!op.has_input(i)) continue;
    check_supported(op.constants.size() > i && op.constants[i], "Clip bounds that are not constants", op.context());
    (i == 1 ? c.alpha : c.beta) = float(op.constants[i]->scalar_at(0));
  }
  return c;
}

bool is_unary_activation(const std::string& t) { return kUnary.count(t) != 0; }
bool is_binary_arithmetic(const std::string& t) { return kBinary.count(t) != 0; }

void register_elementwise_schemas() {
  for (const auto& t : kUnary) {
    // Clip takes optional min/max inputs (opset >= 11); Dropout ratio/training_mode.
    int max_in = (t == "Clip" || t == "Dropout") ? 3 : 1;
    register_schema({t, 1, max_in, infer_unary});
  }
  for (const auto& t : kBinary) {
    bool variadic = (t == "Max" || t == "Min");
    register_schema({t, variadic ? 1 : 2, variadic ? 64 : 2, infer_binary});
  }
  register_schema({"Mod", 2, 2, infer_mod});
}

bool gelu_uses_tanh(const Attributes& a) {
  const std::string approx = a.get_string("approximate", "none");
  check(approx == "none" || approx == "tanh", "Gelu approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
  return approx == "tanh";
}

bool dropout_passes_through(const Tensor* ratio, const Tensor* training_mode) {
  return !training_mode || training_mode->scalar_at(0) == 0 || (ratio && ratio->scalar_at(0) == 0);
}

void check_inference_dropout(const OpDesc& op) {
  if (!op.has_input(2)) return;
  check_supported(op.constants[2] != nullptr, "Dropout with a run-time training_mode", op.context());
  if (op.has_input(1))
    check_supported(op.constants[1] != nullptr, "Dropout with a run-time ratio", op.context());
  check_supported(dropout_passes_through(op.has_input(1) ? op.constants[1] : nullptr, op.constants[2]),
                  "training-mode Dropout (random masks) is not supported", op.context());
}

Shape add_output_shape(const Shape& a, const Shape& b) {
  TANDEM_CHECK(a.size() == b.size(),
               "add wants tensors of the same rank, the other is " + shape_str(b),
               shape_context("add", a));
  Shape y = broadcast_shapes(a, b);
  TANDEM_CHECK(y == a || y == b,
               "add: one input must have the output's shape, the other is " + shape_str(b),
               shape_context("add", a));
  return y;
}

bool sums_to(const Shape& src, const Shape& dst) {
  if (src.size() != dst.size()) return false;
  for (size_t i = 0; i < src.size(); ++i)
    if (dst[i] != src[i] && dst[i] != 1) return false;
  return true;
}

bool layout_free(const Shape& s) { return s.size() == 4 && s[2] == 1 && s[3] == 1; }

}  // namespace tandem::ops
