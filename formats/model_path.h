#pragma once
// Files a model names (ONNX external data, TF.js weight shards) must lie in
// the model's own folder: a hostile model must not make tandem read
// /etc/passwd or ../../secret.
#include <string>

namespace tandem {

// base_dir / location, after checking that `location` is relative, has no
// NUL and no ".." part. Throws Error (message names the location) otherwise.
std::string resolve_model_relative(const std::string& base_dir, const std::string& location);

}  // namespace tandem
