#pragma once
// Runs one op on a backend the way the executor would: infer output shapes
// with ops/, prepare a kernel, convert inputs to the layouts the kernel asks
// for, run, and convert outputs back to plain. Shared by all kernel tests.
#include <string>
#include <vector>

#include "core/backend.h"

namespace tandem::testing {

struct OpCall {
  std::string op_type;
  Attributes attrs;
  std::vector<Tensor> inputs;       // undefined Tensor = omitted optional input
  std::vector<bool> constant;       // per input: pass as constant (weights); default false
  int num_outputs = 1;
  int opset = 17;
  // Layout to present 4-D activation inputs in (the kernel may ask for another).
  Layout input_layout = Layout::plain;
};

inline OpCall make_call(const std::string& op, Attributes attrs, std::vector<Tensor> inputs,
                        std::vector<bool> constant) {
  OpCall c;
  c.op_type = op;
  c.attrs = std::move(attrs);
  c.inputs = std::move(inputs);
  c.constant = std::move(constant);
  return c;
}

// Output layout the CPU kernel plans for operands described by `inputs`
// (layouts included); constants[i] is input i's value when constant.
Layout planned_output_layout(const std::string& op, const Attributes& attrs,
                             const std::vector<TensorDesc>& inputs,
                             std::vector<const Tensor*> constants = {});

// Returns outputs as plain host tensors. Throws tandem::Error like the executor.
std::vector<Tensor> run_op(Backend& backend, const OpCall& call);
std::vector<Tensor> run_op_cpu(const OpCall& call);

// Fresh uniform random tensor in [lo, hi) from a seeded generator.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f);
// max |a - b| over all elements (both f32, plain).
double max_abs_diff(const Tensor& a, const Tensor& b);
double max_abs(const Tensor& a);

}  // namespace tandem::testing
