// Shape and data-movement ops on the CPU backend vs the ONNX backend node
// tests shipped with Debian's python3-onnx (1.12: opsets up to 17). Each case's
// model, inputs and expected outputs are dumped by tests/onnx_node_cases.py
// and run through run_op_cpu(). Shape-like inputs (Reshape's shape, Slice's
// starts, ...) are passed as constants, as the graph layer would; data inputs
// are not. Tolerance: exact, except float reductions and Range (1e-5 relative)
// and FLOAT->BFLOAT16 (1 bf16 ulp: onnx 1.12 made that expectation by
// truncation, tandem rounds to nearest even as numpy-style casts do).
// The case list is the onnx 1.12 node tests of these ops, less string casts,
// GatherElements/GatherND, ReduceSumSquare and *_expanded function bodies.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/numpy_ref.h"
#include "tests/onnx_node_case.h"
#include "tests/op_harness.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

const char* const kCases[] = {
    "test_argmax_default_axis_example", "test_argmax_default_axis_example_select_last_index",
    "test_argmax_default_axis_random", "test_argmax_default_axis_random_select_last_index",
    "test_argmax_keepdims_example", "test_argmax_keepdims_example_select_last_index",
    "test_argmax_keepdims_random", "test_argmax_keepdims_random_select_last_index",
    "test_argmax_negative_axis_keepdims_example",
    "test_argmax_negative_axis_keepdims_example_select_last_index",
    "test_argmax_negative_axis_keepdims_random",
    "test_argmax_negative_axis_keepdims_random_select_last_index", "test_argmax_no_keepdims_example",
    "test_argmax_no_keepdims_example_select_last_index", "test_argmax_no_keepdims_random",
    "test_argmax_no_keepdims_random_select_last_index", "test_cast_BFLOAT16_to_FLOAT",
    "test_cast_DOUBLE_to_FLOAT", "test_cast_DOUBLE_to_FLOAT16", "test_cast_FLOAT16_to_DOUBLE",
    "test_cast_FLOAT16_to_FLOAT", "test_cast_FLOAT_to_BFLOAT16", "test_cast_FLOAT_to_DOUBLE",
    "test_cast_FLOAT_to_FLOAT16", "test_castlike_BFLOAT16_to_FLOAT", "test_castlike_DOUBLE_to_FLOAT",
    "test_castlike_DOUBLE_to_FLOAT16", "test_castlike_FLOAT16_to_DOUBLE",
    "test_castlike_FLOAT16_to_FLOAT", "test_castlike_FLOAT_to_BFLOAT16",
    "test_castlike_FLOAT_to_DOUBLE", "test_castlike_FLOAT_to_FLOAT16", "test_constant",
    "test_constant_pad", "test_constantofshape_float_ones", "test_constantofshape_int_shape_zero",
    "test_constantofshape_int_zeros", "test_edge_pad", "test_equal", "test_equal_bcast",
    "test_expand_dim_changed", "test_expand_dim_unchanged", "test_flatten_axis0",
    "test_flatten_axis1", "test_flatten_axis2", "test_flatten_axis3", "test_flatten_default_axis",
    "test_flatten_negative_axis1", "test_flatten_negative_axis2", "test_flatten_negative_axis3",
    "test_flatten_negative_axis4", "test_gather_0", "test_gather_1", "test_gather_2d_indices",
    "test_gather_negative_indices", "test_greater", "test_greater_bcast", "test_greater_equal",
    "test_greater_equal_bcast", "test_less", "test_less_bcast", "test_less_equal",
    "test_less_equal_bcast", "test_range_float_type_positive_delta",
    "test_range_int32_type_negative_delta", "test_reduce_max_default_axes_keepdim_example",
    "test_reduce_max_default_axes_keepdims_random", "test_reduce_max_do_not_keepdims_example",
    "test_reduce_max_do_not_keepdims_random", "test_reduce_max_keepdims_example",
    "test_reduce_max_keepdims_random", "test_reduce_max_negative_axes_keepdims_example",
    "test_reduce_max_negative_axes_keepdims_random", "test_reduce_mean_default_axes_keepdims_example",
    "test_reduce_mean_default_axes_keepdims_random", "test_reduce_mean_do_not_keepdims_example",
    "test_reduce_mean_do_not_keepdims_random", "test_reduce_mean_keepdims_example",
    "test_reduce_mean_keepdims_random", "test_reduce_mean_negative_axes_keepdims_example",
    "test_reduce_mean_negative_axes_keepdims_random", "test_reduce_sum_default_axes_keepdims_example",
    "test_reduce_sum_default_axes_keepdims_random", "test_reduce_sum_do_not_keepdims_example",
    "test_reduce_sum_do_not_keepdims_random", "test_reduce_sum_empty_axes_input_noop_example",
    "test_reduce_sum_empty_axes_input_noop_random", "test_reduce_sum_keepdims_example",
    "test_reduce_sum_keepdims_random", "test_reduce_sum_negative_axes_keepdims_example",
    "test_reduce_sum_negative_axes_keepdims_random", "test_reflect_pad",
    "test_reshape_allowzero_reordered", "test_reshape_extended_dims", "test_reshape_negative_dim",
    "test_reshape_negative_extended_dims", "test_reshape_one_dim", "test_reshape_reduced_dims",
    "test_reshape_reordered_all_dims", "test_reshape_reordered_last_dims",
    "test_reshape_zero_and_negative_dim", "test_reshape_zero_dim", "test_shape", "test_shape_clip_end",
    "test_shape_clip_start", "test_shape_end_1", "test_shape_end_negative_1", "test_shape_example",
    "test_shape_start_1", "test_shape_start_1_end_2", "test_shape_start_1_end_negative_1",
    "test_shape_start_negative_1", "test_size", "test_size_example", "test_slice",
    "test_slice_default_axes", "test_slice_default_steps", "test_slice_end_out_of_bounds",
    "test_slice_neg", "test_slice_neg_steps", "test_slice_negative_axes",
    "test_slice_start_out_of_bounds", "test_split_equal_parts_1d", "test_split_equal_parts_2d",
    "test_split_equal_parts_default_axis", "test_split_variable_parts_1d",
    "test_split_variable_parts_2d", "test_split_variable_parts_default_axis",
    "test_split_zero_size_splits", "test_squeeze", "test_squeeze_negative_axes", "test_tile",
    "test_tile_precomputed", "test_transpose_all_permutations_0", "test_transpose_all_permutations_1",
    "test_transpose_all_permutations_2", "test_transpose_all_permutations_3",
    "test_transpose_all_permutations_4", "test_transpose_all_permutations_5", "test_transpose_default",
    "test_unsqueeze_axis_0", "test_unsqueeze_axis_1", "test_unsqueeze_axis_2", "test_unsqueeze_axis_3",
    "test_unsqueeze_negative_axes", "test_unsqueeze_three_axes", "test_unsqueeze_two_axes",
    "test_unsqueeze_unsorted_axes", "test_where_example", "test_where_long_example", "test_not_2d",
    "test_not_3d", "test_not_4d", "test_scatternd", "test_scatternd_add", "test_scatternd_multiply",
};

// Inputs the graph layer would see as constants (shapes, axes, pads, ...).
const std::map<std::string, std::set<size_t>> kConstantInputs = {
    {"Reshape", {1}}, {"Squeeze", {1}}, {"Unsqueeze", {1}}, {"Slice", {1, 2, 3, 4}},
    {"Split", {1}}, {"Expand", {1}}, {"Tile", {1}}, {"Range", {0, 1, 2}}, {"Pad", {1, 3}},
    {"ReduceSum", {1}}, {"ReduceMean", {1}}, {"ReduceMax", {1}}, {"ConstantOfShape", {0}},
};

// Dumps every case once per test run; returns the folder.
const std::string& case_dir() {
  static const std::string dir = dump_onnx_node_cases(std::vector<std::string>(std::begin(kCases), std::end(kCases)));
  return dir;
}

// Allowed |got - want| for element i of a float output.
double tolerance(const std::string& op, double want) {
  bool approx = op.rfind("Reduce", 0) == 0 || op == "Range";
  return approx ? 1e-5 * std::max(1.0, std::fabs(want)) : 0.0;
}

void expect_matches(const std::string& op, const Tensor& got, const Tensor& want, size_t k) {
  ASSERT_EQ(got.dtype(), want.dtype()) << "output " << k;
  ASSERT_EQ(got.shape(), want.shape()) << "output " << k;
  for (int64_t i = 0; i < want.numel(); ++i) {
    if (want.dtype() == DType::bf16 && (op == "Cast" || op == "CastLike")) {
      int a = static_cast<const uint16_t*>(got.raw())[i], b = static_cast<const uint16_t*>(want.raw())[i];
      ASSERT_LE(std::abs(a - b), 1) << "output " << k << " element " << i;
    } else if (is_floating(want.dtype())) {
      double g = got.scalar_at(i), w = want.scalar_at(i);
      if (std::isnan(w)) {
        ASSERT_TRUE(std::isnan(g)) << "output " << k << " element " << i;
      } else if (g != w) {  // inf == inf passes here
        ASSERT_LE(std::fabs(g - w), tolerance(op, w)) << "output " << k << " element " << i;
      }
    } else {
      ASSERT_EQ(got.int_at(i), want.int_at(i)) << "output " << k << " element " << i;
    }
  }
}

// One test over all cases, so the dump (python + onnx import) runs once per
// process; each failure names its case.
TEST(OnnxNodeTests, ShapeOpsMatchExpectedOutputs) {
  if (!have_reference_python()) GTEST_SKIP() << kReferencePython << " not present";
  int checked = 0;
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    try {
      OnnxNodeCase nc = load_onnx_node_case(case_dir(), name, kConstantInputs);
      std::vector<Tensor> got = run_op_cpu(nc.call);
      if (got.size() != nc.expected.size()) {
        ADD_FAILURE() << got.size() << " outputs, expected " << nc.expected.size();
        continue;
      }
      for (size_t k = 0; k < got.size(); ++k) expect_matches(nc.call.op_type, got[k], nc.expected[k], k);
      ++checked;
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_EQ(checked, int(std::size(kCases)));
}

}  // namespace
