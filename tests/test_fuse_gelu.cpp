// fuse_gelu (graph/passes.h): GELU written out as Div/Erf/Add/Mul/Mul in
// the orders exporters use becomes one Gelu node; chains with another
// constant or an intermediate read elsewhere stay as they are. Reference:
// x/2 * (1 + erf(x / sqrt 2)) in float64 (1e-5 x max|ref|).
#include <gtest/gtest.h>

#include <cmath>

#include "graph/session.h"
#include "tests/graph_builder.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

enum class Form { half_last, half_first, mul_by_rsqrt2, div_by_two, erf_also_output };

Graph gelu_graph(Form f) {
  GraphBuilder b;
  ValueId x = b.input("x", {2, 5, 48});
  auto scalar = [&](const std::string& name, float v) { return b.constant(name, Tensor::from_vector<float>({v}, {})); };
  ValueId scaled = f == Form::mul_by_rsqrt2 ? b.node("Mul", {x, scalar("c", float(std::sqrt(0.5)))})
                                            : b.node("Div", {x, scalar("c", f == Form::div_by_two ? 2.f : 1.4142135f)});
  ValueId erf = b.node("Erf", {scaled});
  ValueId one_plus = b.node("Add", {scalar("one", 1.f), erf});
  ValueId y = f == Form::half_first ? b.node("Mul", {b.node("Mul", {scalar("half", 0.5f), x}), one_plus})
                                    : b.node("Mul", {b.node("Mul", {x, one_plus}), scalar("half", 0.5f)});
  b.output(y);
  if (f == Form::erf_also_output) b.output(erf);
  return b.g;
}

}  // namespace

TEST(FuseGelu, FusesTheExportedFormsOnly) {
  const struct {
    Form form;
    int fused;
  } cases[] = {{Form::half_last, 1}, {Form::half_first, 1}, {Form::mul_by_rsqrt2, 1}, {Form::div_by_two, 0},
               {Form::erf_also_output, 0}};
  Tensor x = random_tensor({2, 5, 48}, 5, -4.f, 4.f);
  for (const auto& c : cases) {
    Session s(gelu_graph(c.form));
    std::vector<Tensor> got = s.run({x});
    EXPECT_EQ(s.last_compile().gelus_fused, c.fused) << int(c.form);
    if (c.fused) EXPECT_EQ(s.last_compile().nodes_after, 1) << int(c.form);
    Tensor want = Tensor::empty(DType::f32, x.shape());
    const double k = c.form == Form::div_by_two ? std::sqrt(2.0) / 2 : 1.0;  // erf(x/2) = erf((x/sqrt 2) * k)
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = x.scalar_at(i);
      want.data<float>()[i] = float(0.5 * v * (1 + std::erf(v / std::sqrt(2.0) * k)));
    }
    EXPECT_LE(max_abs_diff(got[0], want), 1e-5 * max_abs(want)) << int(c.form);
  }
}
