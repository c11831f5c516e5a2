// Softmax and LogSoftmax on the CPU backend vs float64 formulas written here:
// opset 13 normalizes over one axis, opset 11 over the 2-D coercion at axis
// (all trailing dims together); plain, nChw16c and nhwc inputs. Tolerance: 1e-5 absolute on softmax (values
// in [0,1]), 1e-5 * max|ref| on log-softmax; inputs in [-5, 5].
#include <gtest/gtest.h>

#include <cmath>

#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

// Normalizes x viewed as [outer, len, inner] over len.
std::vector<double> reference_softmax(const Tensor& x, int64_t outer, int64_t len, int64_t inner, bool log) {
  std::vector<double> y(size_t(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t l) { return (o * len + l) * inner + i; };
      double mx = -INFINITY, sum = 0;
      for (int64_t l = 0; l < len; ++l) mx = std::max(mx, x.scalar_at(at(l)));
      for (int64_t l = 0; l < len; ++l) sum += std::exp(x.scalar_at(at(l)) - mx);
      for (int64_t l = 0; l < len; ++l) {
        double v = x.scalar_at(at(l)) - mx;
        y[size_t(at(l))] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

struct Case {
  Shape x;
  int64_t axis;
  int opset;
  int64_t outer, len, inner;  // expected view
};

}  // namespace

TEST(CpuSoftmax, MatchesFormulaPerOpsetAxisRule) {
  std::vector<Case> cases = {
      {{4, 1000}, -1, 13, 4, 1000, 1},
      {{2, 3, 7, 5}, 1, 13, 2, 3, 35},
      {{2, 21, 4, 3}, 1, 13, 2, 21, 12},  // channels, partial nChw16c block
      {{2, 3, 7, 5}, -2, 13, 6, 7, 5},
      {{2, 3, 7, 5}, 0, 13, 1, 2, 105},
      {{2, 3, 7, 5}, 1, 11, 2, 105, 1},  // coerced to [2, 105]
      {{2, 3, 7, 5}, 2, 12, 6, 35, 1},
      {{2, 3, 7, 5}, -1, 11, 42, 5, 1},
      {{9}, 0, 13, 1, 9, 1},
  };
  uint64_t seed = 20;
  for (const Case& c : cases)
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      Tensor x = random_tensor(c.x, seed += 3, -5.f, 5.f);
      bool log = std::string(op) == "LogSoftmax";
      std::vector<double> ref = reference_softmax(x, c.outer, c.len, c.inner, log);
      double scale = 0;
      for (double r : ref) scale = std::max(scale, std::fabs(r));
      double tol = log ? 1e-5 * scale : 1e-5;
      std::vector<Layout> layouts{Layout::plain};
      if (c.x.size() == 4) layouts = {Layout::plain, Layout::blocked16, Layout::nhwc};
      for (Layout l : layouts) {
        OpCall call;
        call.op_type = op;
        call.attrs.set("axis", c.axis);
        call.inputs = {x};
        call.opset = c.opset;
        call.input_layout = l;
        Tensor y = run_op_cpu(call)[0];
        std::string what = std::string(op) + " x" + shape_str(c.x) + " axis " + std::to_string(c.axis) +
                           " opset " + std::to_string(c.opset) + " layout " + std::string(layout_name(l));
        ASSERT_EQ(y.shape(), c.x) << what;
        for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.scalar_at(i), ref[size_t(i)], tol) << what << " at " << i;
      }
    }
}

TEST(CpuSoftmax, DefaultAxisDependsOnOpset) {
  Tensor x = random_tensor({3, 4, 5}, 9);
  OpCall v13;
  v13.op_type = "Softmax";
  v13.inputs = {x};
  OpCall v11 = v13;
  v11.opset = 11;
  std::vector<double> last = reference_softmax(x, 12, 5, 1, false), coerced = reference_softmax(x, 3, 20, 1, false);
  Tensor y13 = run_op_cpu(v13)[0], y11 = run_op_cpu(v11)[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_NEAR(y13.scalar_at(i), last[size_t(i)], 1e-5);
    ASSERT_NEAR(y11.scalar_at(i), coerced[size_t(i)], 1e-5);
  }
  OpCall bad = v13;
  bad.attrs.set("axis", int64_t(3));
  EXPECT_THROW(run_op_cpu(bad), Error);
}
