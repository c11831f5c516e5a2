#pragma once
// The verdict of `tandem tag --profile`: which stage of the pipeline limited
// the run, read from the time split of its threads (named by the tagger:
// "decoder-N", "gpu-decoder-N", "inference", "writer"), and what to try next.
#include <string>

#include "profile/summary.h"

namespace tandem::pipeline {

// What the verdict's advice depends on beyond the profile.
struct TagRunFacts {
  bool inference_on_cpu = true;
  bool low_precision = false;  // fp16/bf16 already
};

// The zone the inference thread opens while the model's plan compiles.
inline constexpr const char* kPrepareModelZone = "prepare model (while decoding starts)";

// profile::generic_verdict when the summary has no inference or decoder thread.
std::string tag_profile_verdict(const profile::ProfileSummary& s, const TagRunFacts& facts);

}  // namespace tandem::pipeline
