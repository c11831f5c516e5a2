#include "ops/train_backend.h"

namespace tandem {

ErrorContext op_context(const char* op, const Tensor& t) {
  return {"", "", op, t.defined() ? shape_str(t.shape()) : std::string()};
}

void require_shape(const char* op, const Tensor& t, const Shape& want, const char* what) {
  TANDEM_CHECK(t.defined() && t.shape() == want,
               std::string(what) + " must be " + shape_str(want) +
                   (t.defined() ? ", got " + shape_str(t.shape()) : std::string(", got none")),
               op_context(op, t));
}

}  // namespace tandem
