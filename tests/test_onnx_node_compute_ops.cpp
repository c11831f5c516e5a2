// Compute ops (Conv, pooling, Gemm/MatMul, BatchNormalization, softmax,
// binary arithmetic, Concat) on the CPU backend vs the ONNX backend node tests
// shipped with Debian's python3-onnx 1.12 (expected outputs computed by the
// onnx authors with numpy). Weights, BatchNormalization statistics and Gemm's
// B/C are passed as constants, as the graph layer would. Tolerance: float
// outputs 1e-5 * max(1, |want|), 1e-4 for the accumulating ops (Conv, Gemm,
// MatMul, AveragePool over many taps); integers exact.
// Not run: MaxPool's Indices output and float16 Max/Min (unsupported on the
// CPU backend: tested to throw below).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/onnx_node_case.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

const std::vector<std::string> kCases = {
    "test_basic_conv_with_padding", "test_basic_conv_without_padding", "test_conv_with_autopad_same",
    "test_conv_with_strides_and_asymmetric_padding", "test_conv_with_strides_no_padding",
    "test_conv_with_strides_padding",
    "test_averagepool_1d_default", "test_averagepool_2d_ceil", "test_averagepool_2d_default",
    "test_averagepool_2d_pads", "test_averagepool_2d_pads_count_include_pad",
    "test_averagepool_2d_precomputed_pads", "test_averagepool_2d_precomputed_pads_count_include_pad",
    "test_averagepool_2d_precomputed_same_upper", "test_averagepool_2d_precomputed_strides",
    "test_averagepool_2d_same_lower", "test_averagepool_2d_same_upper", "test_averagepool_2d_strides",
    "test_averagepool_3d_default", "test_globalaveragepool", "test_globalaveragepool_precomputed",
    "test_globalmaxpool", "test_globalmaxpool_precomputed", "test_maxpool_1d_default",
    "test_maxpool_2d_ceil", "test_maxpool_2d_default", "test_maxpool_2d_dilations", "test_maxpool_2d_pads",
    "test_maxpool_2d_precomputed_pads", "test_maxpool_2d_precomputed_same_upper",
    "test_maxpool_2d_precomputed_strides", "test_maxpool_2d_same_lower", "test_maxpool_2d_same_upper",
    "test_maxpool_2d_strides", "test_maxpool_3d_default",
    "test_gemm_all_attributes", "test_gemm_alpha", "test_gemm_beta", "test_gemm_default_matrix_bias",
    "test_gemm_default_no_bias", "test_gemm_default_scalar_bias", "test_gemm_default_single_elem_vector_bias",
    "test_gemm_default_vector_bias", "test_gemm_default_zero_bias", "test_gemm_transposeA",
    "test_gemm_transposeB", "test_matmul_2d", "test_matmul_3d", "test_matmul_4d",
    "test_batchnorm_epsilon", "test_batchnorm_example",
    "test_softmax_axis_0", "test_softmax_axis_1", "test_softmax_axis_2", "test_softmax_default_axis",
    "test_softmax_example", "test_softmax_large_number", "test_softmax_negative_axis",
    "test_logsoftmax_axis_0", "test_logsoftmax_axis_1", "test_logsoftmax_axis_2",
    "test_logsoftmax_default_axis", "test_logsoftmax_example_1", "test_logsoftmax_large_number",
    "test_logsoftmax_negative_axis",
    "test_add", "test_add_bcast", "test_sub", "test_sub_bcast", "test_sub_example", "test_mul",
    "test_mul_bcast", "test_mul_example", "test_div", "test_div_bcast", "test_div_example",
    "test_max_example", "test_max_float32", "test_max_float64", "test_max_int32", "test_max_int64",
    "test_max_one_input", "test_max_two_inputs", "test_min_example", "test_min_float32", "test_min_float64",
    "test_min_int32", "test_min_int64", "test_min_one_input", "test_min_two_inputs",
    "test_pow", "test_pow_bcast_array", "test_pow_bcast_scalar", "test_pow_example", "test_pow_types_float",
    "test_pow_types_float32_int32", "test_pow_types_float32_int64", "test_pow_types_int",
    "test_pow_types_int32_float32", "test_pow_types_int32_int32", "test_pow_types_int64_float32",
    "test_pow_types_int64_int64",
    "test_concat_1d_axis_0", "test_concat_1d_axis_negative_1", "test_concat_2d_axis_0", "test_concat_2d_axis_1",
    "test_concat_2d_axis_negative_1", "test_concat_2d_axis_negative_2", "test_concat_3d_axis_0",
    "test_concat_3d_axis_1", "test_concat_3d_axis_2", "test_concat_3d_axis_negative_1",
    "test_concat_3d_axis_negative_2", "test_concat_3d_axis_negative_3",
};

const std::map<std::string, std::set<size_t>> kConstantInputs = {
    {"Conv", {1, 2}}, {"BatchNormalization", {1, 2, 3, 4}}, {"Gemm", {1, 2}},
};

const std::string& case_dir() {
  static const std::string dir = dump_onnx_node_cases(kCases);
  return dir;
}

double tolerance(const std::string& op, double want) {
  bool accumulates = op == "Conv" || op == "Gemm" || op == "MatMul" || op == "AveragePool";
  return (accumulates ? 1e-4 : 1e-5) * std::max(1.0, std::fabs(want));
}

class OnnxComputeNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxComputeNodeTest, MatchesExpectedOutputs) {
  if (!have_reference_python()) GTEST_SKIP() << kReferencePython << " not present";
  OnnxNodeCase nc = load_onnx_node_case(case_dir(), GetParam(), kConstantInputs);
  std::vector<Tensor> got = run_op_cpu(nc.call);
  ASSERT_EQ(got.size(), nc.expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const Tensor& want = nc.expected[k];
    ASSERT_EQ(got[k].dtype(), want.dtype()) << "output " << k;
    ASSERT_EQ(got[k].shape(), want.shape()) << "output " << k;
    for (int64_t i = 0; i < want.numel(); ++i) {
      if (is_floating(want.dtype())) {
        double g = got[k].scalar_at(i), w = want.scalar_at(i);
        ASSERT_LE(std::fabs(g - w), tolerance(nc.call.op_type, w)) << "output " << k << " element " << i;
      } else {
        ASSERT_EQ(got[k].int_at(i), want.int_at(i)) << "output " << k << " element " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ComputeOps, OnnxComputeNodeTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The cases left out above are rejected with an Error rather than computed wrongly.
TEST(OnnxComputeNodeUnsupported, IndicesOutputAndFloat16Throw) {
  if (!have_reference_python()) GTEST_SKIP() << kReferencePython << " not present";
  std::vector<std::string> cases = {"test_maxpool_with_argmax_2d_precomputed_pads", "test_max_float16",
                                    "test_min_float16"};
  std::string dir = dump_onnx_node_cases(cases);
  for (const std::string& c : cases) {
    OnnxNodeCase nc = load_onnx_node_case(dir, c, kConstantInputs);
    EXPECT_THROW(run_op_cpu(nc.call), Error) << c;
  }
}

}  // namespace
