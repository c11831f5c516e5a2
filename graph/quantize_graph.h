#pragma once
// Post-training quantization's rewrite of a float graph into a QDQ one, the
// form every runtime reads (ONNX Runtime's quantize_static writes it too):
// an activation a convolution reads gets one QuantizeLinear (u8) and
// DequantizeLinear after it, and the convolution's weights become i8 with
// one scale per output channel behind a DequantizeLinear. Session's
// fuse_qdq then runs those convolutions on integers.
#include <map>
#include <vector>

#include "graph/calibration.h"
#include "graph/graph.h"
#include "graph/weight_rounding.h"

namespace tandem {

// A convolution PTQ can quantize: f32 constant weights, its data input
// `activation`.
struct QuantizableConv {
  NodeId node = -1;
  ValueId activation = kNoValue;
};
std::vector<QuantizableConv> quantizable_convs(const Graph& g);

// Quantizes `convs` (their activations' parameters in `activations`):
// the convolutions, and the Adds among the activation's other readers (a
// residual then joins in integers), read the dequantized copy; other
// readers keep the float tensor. A convolution's integer weights are taken
// from `weights` where it has them, else rounded to nearest.
void insert_qdq(Graph& g, const std::vector<QuantizableConv>& convs,
                const std::map<ValueId, QuantizationParams>& activations,
                const std::map<NodeId, IntegerWeights>& weights = {});

}  // namespace tandem
