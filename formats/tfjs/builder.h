#pragma once
// Builds tandem IR from TF nodes while keeping TensorFlow's NHWC semantics.
//
// tandem's convolution, pooling and resize ops are NCHW (ONNX). Rather than
// wrapping each of them in a pair of transposes, every 4-D value is tracked in
// one of two forms: `native` (the TF tensor as is, NHWC) or `nchw` (its
// NCHW transposition). Layout-sensitive ops take and give nchw; elementwise
// ops keep whichever form their inputs have (constants are transposed at
// import); ops that depend on element order (Reshape, TopK, StridedSlice ...)
// and graph outputs take native. A transpose is emitted only where the form
// changes, once per value, so a CNN becomes transpose-free except at its
// input and outputs.
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "formats/tfjs/tf_node.h"

namespace tandem::tfjs {

struct TfValue {
  ValueId id = kNoValue;
  int rank = -1;      // -1: unknown at import
  bool nchw = false;  // id holds the NCHW transposition of this rank-4 NHWC tensor
};

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  Graph& graph() { return g_; }

  // Defines the outputs of TF node `name` (output k is "name:k").
  void define(const std::string& name, std::vector<TfValue> outputs);
  void define(const TfNode& n, TfValue out) { define(n.name, {out}); }
  // Resolves a TF input reference "node" / "node:k".
  TfValue resolve(const std::string& ref, const ErrorContext& ctx) const;
  TfValue input(const TfNode& n, size_t i) const;

  // The constant behind a value, or nullptr.
  const Tensor* constant(const TfValue& v) const;
  // Input i must be constant (a weight, an axis, a shape): its tensor.
  const Tensor& constant_input(const TfNode& n, size_t i, const std::string& what) const;
  std::vector<int64_t> constant_ints(const TfNode& n, size_t i, const std::string& what) const;

  // The value in NCHW form (rank-4 only) / in TF's own form.
  ValueId nchw(const TfValue& v);
  ValueId native(const TfValue& v);
  // A constant of rank <= 4 made broadcast-compatible with nchw values:
  // padded to rank 4 (NHWC broadcasting aligns trailing axes), then transposed.
  ValueId constant_as_nchw(const TfValue& v);

  // Adds one node named after `n` (suffixed when n emits several) and returns
  // its outputs.
  std::vector<ValueId> emit(const TfNode& n, const std::string& op_type, std::vector<ValueId> inputs,
                            Attributes attrs = {}, int num_outputs = 1);
  ValueId emit1(const TfNode& n, const std::string& op_type, std::vector<ValueId> inputs,
                Attributes attrs = {}) {
    return emit(n, op_type, std::move(inputs), std::move(attrs))[0];
  }
  ValueId cast(const TfNode& n, ValueId x, DType to);
  ValueId add_constant(const std::string& name, Tensor t);
  ValueId int64_constant(const std::string& name, const std::vector<int64_t>& v);
  ValueId float_scalar(const std::string& name, float v);

 private:
  std::string unique_name(const std::string& base);
  ValueId transposed(ValueId from, const char* suffix, std::vector<int64_t> perm,
                     std::unordered_map<ValueId, ValueId>& forward, std::unordered_map<ValueId, ValueId>& backward);

  Graph& g_;
  std::unordered_map<std::string, std::vector<TfValue>> defined_;
  std::unordered_map<ValueId, ValueId> nchw_of_, native_of_;
  std::unordered_map<std::string, int> name_uses_;
};

// NHWC axis -> the same axis of the NCHW form.
inline int64_t nhwc_to_nchw_axis(int64_t a) {
  static constexpr int64_t map[4] = {0, 2, 3, 1};
  return map[a];
}

// Normalizes a possibly negative axis of a rank-r tensor; Error when out of range.
int64_t normalize_tf_axis(int64_t axis, int rank, const TfNode& n);

}  // namespace tandem::tfjs
