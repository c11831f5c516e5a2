// tandem.Reorder: same values, another layout (attribute to_layout) — the
// executor's layout conversion, visible as an op so every backend provides it.
#include "core/backend.h"
#include "ops/schema.h"

namespace tandem::ops {

namespace {
std::vector<TensorDesc> infer_reorder(const InferContext& c) {
  TensorDesc d = c.inputs[0];
  d.layout = Layout(c.attributes().get_int("to_layout", int64_t(Layout::plain)));
  return {d};
}
}  // namespace

void register_reorder_schemas() { register_schema({kReorderOp, 1, 1, infer_reorder}); }

}  // namespace tandem::ops
