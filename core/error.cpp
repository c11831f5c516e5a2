#include "core/error.h"

namespace tandem {

Error::Error(const std::string& message, ErrorContext ctx, ErrorKind kind)
    : std::runtime_error(format(message, ctx)), message_(message), ctx_(std::move(ctx)), kind_(kind) {}

Error Error::with_context(const ErrorContext& outer) const {
  ErrorContext c = ctx_;
  if (c.file.empty()) c.file = outer.file;
  if (c.node.empty()) c.node = outer.node;
  if (c.op.empty()) c.op = outer.op;
  if (c.shape.empty()) c.shape = outer.shape;
  return Error(message_, c, kind_);
}

std::string Error::format(const std::string& message, const ErrorContext& c) {
  std::string s;
  if (!c.file.empty()) s += c.file + ": ";
  if (!c.node.empty() || !c.op.empty()) {
    s += "node '" + c.node + "'";
    if (!c.op.empty()) s += " (" + c.op + ")";
    s += ": ";
  }
  s += message;
  if (!c.shape.empty()) s += " [shape " + c.shape + "]";
  return s;
}

}  // namespace tandem
