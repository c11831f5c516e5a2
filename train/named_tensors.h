#pragma once
// Tensors keyed by name (parameters, optimizer slots) and the checked copy a
// checkpoint load needs: every name present on both sides with one shape and
// dtype, or an Error listing every difference.
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace tandem::train {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Throws unless both sides hold the same names with the same dtype and shape:
// an Error "<what> do not match: missing 'a'; 'b' is f32[3], expected f32[4];
// unexpected 'c'" (all differences) with context `ctx`.
void check_same_tensors(const NamedTensors& targets, const NamedTensors& sources, const std::string& what,
                        const ErrorContext& ctx);
// check_same_tensors, then copies each source tensor's bytes into the target
// of the same name (targets share storage with live state, so this writes
// that state; either side may be on a GPU). Nothing is copied unless
// everything matches.
void copy_by_name(const NamedTensors& targets, const NamedTensors& sources, const std::string& what,
                  const ErrorContext& ctx);

}  // namespace tandem::train
