#pragma once
// The verdict of `tandem tag --profile`: which stage of the pipeline limited
// the run, read from the time split of its threads (named by the tagger:
// "decoder-N", "gpu-decoder-N", "inference", "writer"), and what to try next.
#include <string>

#include "profile/summary.h"

namespace tandem::pipeline {

// profile::generic_verdict when the summary has no inference or decoder thread.
std::string tag_profile_verdict(const profile::ProfileSummary& s, bool inference_on_cpu);

}  // namespace tandem::pipeline
