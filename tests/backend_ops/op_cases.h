#pragma once
// The inference op cases: one op, its attributes and fixed-seed inputs, the
// dtypes and layouts to try it in, and its reference. Each case runs on
// every backend that has a kernel for the op (cpu/registry.h,
// cuda/registry.h); a backend that refuses a dtype or layout counts it as
// unsupported.
#include <functional>
#include <string>
#include <vector>

#include "core/attributes.h"
#include "core/tensor.h"

namespace tandem::backend_ops {

// Outputs in float64 (or the exact dtype of an integer or boolean output)
// from the inputs as the kernel saw them (f16 and bf16 ones widened to f32).
using Reference = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;

struct OpCase {
  std::string op;
  std::string label;  // the shape class ("4d", "broadcast", ...)
  Attributes attrs;
  std::vector<Tensor> inputs;  // host, plain; undefined = omitted optional input
  std::vector<bool> constant;
  int num_outputs = 1;
  int opset = 17;
  // f32 inputs (but an op's value inputs, Resize's scales) take each of
  // these dtypes in turn, as a graph lowered to that precision feeds them.
  std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16};
  bool nhwc = false;  // also present 4-D activations channels-last
  // Float outputs must equal the reference exactly (ops that only move or
  // select values), not within the dtype's NMSE.
  bool exact = false;
  // Empty: the CPU backend's f32 result on the same (rounded) inputs, for
  // ops whose float64 version would repeat a long kernel (conv, resize).
  Reference reference;

  OpCase(std::string op_type, std::string shape_class)
      : op(std::move(op_type)), label(std::move(shape_class)) {}
  OpCase& in(Tensor t) { return add(std::move(t), false); }
  OpCase& constant_in(Tensor t) { return add(std::move(t), true); }
  OpCase& absent() { return add(Tensor(), false); }
  OpCase& attr(const std::string& name, AttrValue v) {
    attrs.set(name, std::move(v));
    return *this;
  }
  OpCase& ref(Reference r) {
    reference = std::move(r);
    return *this;
  }
  OpCase& f32_only() {
    dtypes = {DType::f32};
    return *this;
  }
  OpCase& channels_last() {
    nhwc = true;
    return *this;
  }
  OpCase& exactly() {
    exact = true;
    return *this;
  }
  OpCase& outputs(int n) {
    num_outputs = n;
    return *this;
  }
  std::string name() const { return op + "/" + label; }

 private:
  OpCase& add(Tensor t, bool is_const) {
    inputs.push_back(std::move(t));
    constant.push_back(is_const);
    return *this;
  }
};

// The case tables, by op group.
void add_math_cases(std::vector<OpCase>& cases);    // element-wise, binary, comparisons, reductions
void add_nn_cases(std::vector<OpCase>& cases);      // conv, gemm, pooling, norms, softmax, quantize
void add_qconv_cases(std::vector<OpCase>& cases);   // tandem.QConv (integer convolution)
void add_topk_cases(std::vector<OpCase>& cases);    // TopK
void add_resize_cases(std::vector<OpCase>& cases);  // Resize, Upsample
void add_data_cases(std::vector<OpCase>& cases);    // shapes, copies, indexing, casts, constants
std::vector<OpCase> all_op_cases();

// float64 references shared by the tables.
Reference unary_ref(double (*f)(double));
Reference binary_ref(double (*f)(double, double));

}  // namespace tandem::backend_ops
