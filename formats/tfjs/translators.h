#pragma once
// One translator per TF op type: reads a TfNode, emits tandem IR through the
// Builder and defines the node's outputs. Families register themselves in
// translators.cpp (nn: conv/pool/resize/matmul; math: elementwise,
// reductions, casts; array: shapes, slicing, gathering, top-k).
#include <string>

#include "formats/tfjs/builder.h"

namespace tandem::tfjs {

using Translator = void (*)(Builder&, const TfNode&);

void register_translator(const std::string& op, Translator t);
// nullptr for an op tandem cannot import.
Translator find_translator(const std::string& op);

void register_nn_translators();
void register_math_translators();
void register_array_translators();

}  // namespace tandem::tfjs
