#include "train/layers/fake_quantize.h"

namespace tandem::train {

FakeQuantize::FakeQuantize(QuantSpec spec, int64_t channels) : quantizer_(spec, channels) {
  // Shallow: the buffers are the quantizer's own range tensors.
  add_buffer("activation_post_process.min_val", quantizer_.min());
  add_buffer("activation_post_process.max_val", quantizer_.max());
}

}  // namespace tandem::train
