// fuse_matmul_bias (graph/passes.h): MatMul by a 2-D W plus a constant bias
// along the last axis becomes one Gemm between views, for a 2-D and a 3-D
// X and either operand order of the Add; a bias over more than the last
// axis, or a product someone else reads, stays. The pass runs in GPU
// sessions; here it is applied by hand and the result run on the CPU.
// Reference: X W + b in float64 (1e-5 x max|ref|).
#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "graph/session.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

constexpr int64_t kK = 12, kN = 10;

enum class Form { rows, tokens, bias_first, bias_per_row, product_also_output };

Shape x_shape(Form f) { return f == Form::rows ? Shape{6, kK} : Shape{2, 5, kK}; }

Graph matmul_add(Form f, const Tensor& w, const Tensor& b) {
  GraphBuilder g;
  ValueId x = g.input("x", x_shape(f));
  ValueId y = g.node("MatMul", {x, g.constant("w", w)});
  ValueId bias = g.constant("b", b);
  g.output(f == Form::bias_first ? g.node("Add", {bias, y}) : g.node("Add", {y, bias}));
  if (f == Form::product_also_output) g.output(y);
  return g.g;
}

}  // namespace

TEST(FuseMatmulBias, FusesABiasAlongTheLastAxisOnly) {
  const struct {
    Form form;
    int fused;
  } cases[] = {{Form::rows, 1},
               {Form::tokens, 1},
               {Form::bias_first, 1},
               {Form::bias_per_row, 0},
               {Form::product_also_output, 0}};
  const Tensor w = random_tensor({kK, kN}, 1);
  for (const auto& c : cases) {
    const Tensor b =
        c.form == Form::bias_per_row ? random_tensor({5, kN}, 2) : random_tensor({1, kN}, 2);
    const Tensor x = random_tensor(x_shape(c.form), 3);
    Graph g = matmul_add(c.form, w, b);
    infer_and_fold(g, cpu::cpu_backend());
    EXPECT_EQ(fuse_matmul_bias(g), c.fused) << int(c.form);
    int gemms = 0;
    for (const Node& n : g.nodes) gemms += n.op_type == "Gemm";
    EXPECT_EQ(gemms, c.fused) << int(c.form);
    Session s(std::move(g));
    const Tensor got = s.run({x})[0];
    const int64_t rows = x.numel() / kK;
    Tensor want = Tensor::empty(DType::f32, got.shape());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        double acc = b.scalar_at(c.form == Form::bias_per_row ? (i % 5) * kN + j : j);
        for (int64_t k = 0; k < kK; ++k)
          acc += double(x.scalar_at(i * kK + k)) * w.scalar_at(k * kN + j);
        want.data<float>()[i * kN + j] = float(acc);
      }
    EXPECT_LE(max_abs_diff(got, want), 1e-5 * max_abs(want)) << int(c.form);
  }
}
