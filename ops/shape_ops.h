#pragma once
// Data-movement and shape ops (Reshape, Gather, Slice, Pad, Cast, reductions,
// ...): the argument parsers that shape inference and every backend's kernels
// share, so an op's meaning is decoded in one place.
//
// Extents may be -1 ("unknown until a session fixes the batch"); inference
// keeps them -1 where the output depends on them. Kernels only ever see static
// shapes.
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "ops/schema.h"

namespace tandem::ops {

// The InferContext of a prepared op, so kernels can call the parsers below.
InferContext infer_context_of(const OpDesc& op);

// ONNX TensorProto.DataType code -> DType (FLOAT=1, UINT8=2, INT8=3, INT32=6,
// INT64=7, BOOL=9, FLOAT16=10, DOUBLE=11, BFLOAT16=16). Throws Error for codes
// tandem has no dtype for (STRING, INT16, UINT32, complex, ...).
DType dtype_from_onnx(int64_t code);
int64_t onnx_code_of(DType t);

// Normalizes each axis into [0, rank); throws on out-of-range or repeated axes.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank);

// An axes-like list that moved from attribute `name` to input `index` at opset
// `input_since` (Squeeze/Unsqueeze/Split 13, ReduceSum 13, other reduces 18).
// nullopt when neither is given. The input must be a constant.
std::optional<std::vector<int64_t>> list_arg(const InferContext& c, const char* name, size_t index,
                                             int input_since);

// Throws when a static desc would need more than 2^62 bytes (sizes built from
// untrusted constants: Range, Tile, Expand, ConstantOfShape, Pad).
void check_size(const TensorDesc& d);

// Constant's output from its value / value_float(s) / value_int(s) attribute.
Tensor constant_attr_value(const Attributes& a);
// ConstantOfShape's one-element fill value (default f32 0).
Tensor constant_of_shape_value(const Attributes& a);
// Range's element count max(ceil((limit - start) / delta), 0) from its scalar inputs.
int64_t range_count(const Tensor& start, const Tensor& limit, const Tensor& delta);

// Transpose's `perm`, validated as a permutation of [0, rank); default reverses.
std::vector<int64_t> transpose_perm(const InferContext& c);

// Slice resolved per input dim (rank entries): output index o of dim d reads
// input index start[d] + o * step[d]. Dims the slice does not touch get
// start 0, step 1. Unknown extents give out[d] = -1.
struct SliceSpec {
  Shape out;
  std::vector<int64_t> start, step;
};
SliceSpec slice_spec(const InferContext& c);

// Split: the extent of every output along `axis`.
struct SplitSpec {
  int64_t axis = 0;
  std::vector<int64_t> sizes;
};
SplitSpec split_spec(const InferContext& c);

// Pad: per dim, elements added before/after (negative crops). mode is
// "constant", "reflect" or "edge". The constant value is input 2 (opset >= 11,
// read by the kernel) or attribute `value` (opset < 11).
struct PadSpec {
  std::string mode = "constant";
  std::vector<int64_t> begin, end;
};
PadSpec pad_spec(const InferContext& c);
// The input index that output index o of a dim of extent n reads after
// `begin` elements of padding (o - begin mapped back into [0, n) by the
// mode: edge clamps, wrap repeats, reflect mirrors with period 2(n-1) like
// numpy.pad), or -1 where constant padding reads the fill value.
int64_t pad_source_index(int64_t o, int64_t begin, int64_t n, const std::string& mode);

// Reduce*: which input dims are reduced and the output shape. With no axes and
// noop_with_empty_axes = 1 nothing is reduced (identity).
struct ReduceSpec {
  std::vector<bool> reduced;
  bool keepdims = true;
  Shape out;
};
ReduceSpec reduce_spec(const InferContext& c);

}  // namespace tandem::ops
