#include "ops/elementwise.h"

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

void check_inference_dropout(const OpDesc& op) {
  if (!op.has_input(2)) return;
  check_supported(op.constants[2] != nullptr, "Dropout with a run-time training_mode", op.context());
  float ratio = 0.5f;
  if (op.has_input(1)) {
    check_supported(op.constants[1] != nullptr, "Dropout with a run-time ratio", op.context());
    ratio = float(op.constants[1]->scalar_at(0));
  }
  check_supported(op.constants[2]->scalar_at(0) == 0 || ratio == 0,
                  "training-mode Dropout (random masks) is not supported", op.context());
}

}  // namespace tandem::ops
