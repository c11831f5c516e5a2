#include "ops/activation.h"

#include <cmath>

namespace tandem::ops {

namespace {
// Parameters with defaults; `required` of them must be present.
std::vector<float> params(const Attributes& a, const std::string& name, std::vector<float> defaults,
                          size_t required) {
  std::vector<float> p = a.get_floats("activation_params", {});
  check(p.size() >= required && p.size() <= defaults.size(),
        name + " takes " + std::to_string(required) + ".." + std::to_string(defaults.size()) +
            " activation_params, got " + std::to_string(p.size()));
  for (size_t i = p.size(); i < defaults.size(); ++i) p.push_back(defaults[i]);
  return p;
}
}  // namespace

const char* activation_op_type(ActivationKind k) {
  switch (k) {
    case ActivationKind::none: return "";
    case ActivationKind::relu: return "Relu";
    case ActivationKind::leaky_relu: return "LeakyRelu";
    case ActivationKind::clip: return "Clip";
    case ActivationKind::hard_swish: return "HardSwish";
    case ActivationKind::hard_sigmoid: return "HardSigmoid";
    case ActivationKind::sigmoid: return "Sigmoid";
    case ActivationKind::tanh: return "Tanh";
    case ActivationKind::silu: return "SiLU";
    case ActivationKind::elu: return "Elu";
    case ActivationKind::softplus: return "Softplus";
    case ActivationKind::gelu:
    case ActivationKind::gelu_tanh: return "Gelu";
  }
  return "";
}

Activation parse_fused_activation(const Attributes& a) {
  std::string name = a.get_string("activation", "");
  if (name.empty()) return {};
  if (name == "Relu") return {ActivationKind::relu};
  if (name == "HardSwish") return {ActivationKind::hard_swish, 0.f, 0.f, params(a, name, {1.f}, 0)[0]};
  if (name == "Sigmoid") return {ActivationKind::sigmoid};
  if (name == "Tanh") return {ActivationKind::tanh};
  if (name == "SiLU") return {ActivationKind::silu};
  if (name == "LeakyRelu") return {ActivationKind::leaky_relu, params(a, name, {0.01f}, 0)[0]};
  if (name == "HardSigmoid") {
    auto p = params(a, name, {0.2f, 0.5f, 1.f}, 0);
    return {ActivationKind::hard_sigmoid, p[0], p[1], p[2]};
  }
  if (name == "Clip") {
    auto p = params(a, name, {-INFINITY, INFINITY}, 2);
    check(!(p[0] > p[1]), "Clip activation has min > max");
    return {ActivationKind::clip, p[0], p[1]};
  }
  throw Error("unknown fused activation '" + name + "'");
}

}  // namespace tandem::ops
