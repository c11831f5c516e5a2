#pragma once
// Activations that exporters write out as several elementwise nodes, found
// after a producer's output so the conv/gemm epilogue can absorb them.
// MobileNetV3 from TensorFlow (e.g. the shipped CenterNet) spells
//   hard_swish(y)   = (y * c) * relu6(y + 3)
//   hard_sigmoid(y) = relu6(y + 3) * c
// with c = 1/6, often rounded (float16 weights: 0.16662598). They map onto
// HardSwish [scale 6c] and HardSigmoid [alpha c, beta 3c, max 6c], which give
// the same values as the written-out form for any c > 0. TensorFlow's
// clip_by_value, with or without a Relu before it, maps onto Clip.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tandem {

struct ActivationTail {
  std::string activation;     // fused activation name (ops/activation.h)
  std::vector<float> params;  // its activation_params
  ValueId output = kNoValue;  // the chain's result, which the fused node now produces
  std::vector<NodeId> nodes;  // the chain's nodes, to be removed
};

// True when every reader of `y` belongs to one such chain (and no
// intermediate is read elsewhere or is a graph output).
bool match_activation_tail(const Graph& g, const std::vector<std::vector<NodeId>>& cons, ValueId y,
                           ActivationTail* tail);

}  // namespace tandem
