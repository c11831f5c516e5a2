// Transpose: out dim i is input dim perm[i]; no perm reverses the dims.
#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

std::vector<int64_t> transpose_perm(const InferContext& c) {
  int64_t rank = int64_t(c.shape(0).size());
  if (!c.attributes().has("perm")) {
    std::vector<int64_t> rev;
    for (int64_t i = rank - 1; i >= 0; --i) rev.push_back(i);
    return rev;
  }
  std::vector<int64_t> perm = c.attributes().get_ints("perm");
  check(int64_t(perm.size()) == rank, "perm has " + std::to_string(perm.size()) +
                                          " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t p : perm) {
    check(p >= 0 && p < rank && !seen[size_t(p)], "perm " + shape_str(perm) + " is not a permutation");
    seen[size_t(p)] = true;
  }
  return perm;
}

namespace {

std::vector<TensorDesc> infer_transpose(const InferContext& c) {
  Shape out;
  for (int64_t p : transpose_perm(c)) out.push_back(c.shape(0)[size_t(p)]);
  return {TensorDesc{c.inputs[0].dtype, out}};
}

}  // namespace

void register_transpose_schemas() { register_schema({"Transpose", 1, 1, infer_transpose}); }

}  // namespace tandem::ops
