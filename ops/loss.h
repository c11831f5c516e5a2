#pragma once
// Softmax cross-entropy, the classification loss training computes.
namespace tandem::ops {

struct CrossEntropyParams {
  float label_smoothing = 0;  // in [0, 1]: the target is (1 - s) one-hot + s / K
  // The caller has checked every label is in [0, K) (on the host, before
  // the upload): a GPU need not read its bad-label flag back, a wait for its
  // stream in the middle of a training step.
  bool labels_checked = false;
};

}  // namespace tandem::ops
