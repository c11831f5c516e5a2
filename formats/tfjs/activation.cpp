#include "formats/tfjs/activation.h"

namespace tandem::tfjs {

bool is_activation(const std::string& op) {
  return op == "Relu" || op == "Relu6" || op == "Elu" || op == "Selu" || op == "LeakyRelu" ||
         op == "Sigmoid" || op == "Tanh" || op == "Prelu";
}

ValueId emit_activation(Builder& b, const TfNode& n, const std::string& act, ValueId x,
                        ValueId alpha, float leaky_alpha) {
  if (act == "Relu" || act == "Sigmoid" || act == "Tanh" || act == "Elu" || act == "Selu")
    return b.emit1(n, act, {x});
  if (act == "Relu6")
    return b.emit1(n, "Clip", {x, b.float_scalar(n.name + "/min", 0.0f), b.float_scalar(n.name + "/max", 6.0f)});
  if (act == "LeakyRelu") {
    Attributes a;
    a.set("alpha", leaky_alpha);
    return b.emit1(n, "LeakyRelu", {x}, a);
  }
  if (act == "Prelu") {
    // max(x, 0) + alpha * min(x, 0): tandem has no PRelu kernel of its own.
    check(alpha != kNoValue, "Prelu needs an alpha argument", n.context());
    ValueId zero = b.float_scalar(n.name + "/zero", 0.0f);
    ValueId pos = b.emit1(n, "Relu", {x});
    ValueId neg = b.emit1(n, "Mul", {alpha, b.emit1(n, "Min", {x, zero})});
    return b.emit1(n, "Add", {pos, neg});
  }
  throw Error::unsupported("unsupported fused activation '" + act + "'", n.context());
}

}  // namespace tandem::tfjs
