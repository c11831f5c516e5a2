#include "ops/norm.h"

#include "ops/all_ops.h"
#include "ops/schema.h"

namespace tandem::ops {

BatchNormParams batchnorm_params(const Attributes& a, const Shape& x) {
  check(x.size() >= 2, "BatchNormalization input must have rank >= 2, got " + shape_str(x));
  check_supported(a.get_int("training_mode", 0) == 0, "BatchNormalization training_mode=1 is not supported");
  BatchNormParams p;
  p.epsilon = a.get_float("epsilon", 1e-5f);
  check(p.epsilon >= 0.f, "BatchNormalization epsilon is negative");
  p.channels = x[1];
  return p;
}

namespace {

std::vector<TensorDesc> infer_batchnorm(const InferContext& c) {
  check_supported(c.num_outputs == 1, "BatchNormalization running-statistics outputs (training) are not supported");
  BatchNormParams p = batchnorm_params(c.attributes(), c.shape(0));
  for (size_t i = 1; i < 5; ++i) {
    const Shape& s = c.shape(i);
    check(s.size() == 1 && (s[0] == p.channels || s[0] < 0 || p.channels < 0),
          "BatchNormalization input " + std::to_string(i) + " is " + shape_str(s) + ", expected [" +
              std::to_string(p.channels) + "]");
  }
  return {TensorDesc{c.inputs[0].dtype, c.shape(0)}};
}

}  // namespace

void register_norm_schemas() { register_schema({"BatchNormalization", 5, 5, infer_batchnorm}); }

}  // namespace tandem::ops
