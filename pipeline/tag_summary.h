#pragma once
// The end of a `tandem tag` run in words: counts, failures by reason, speed,
// time per stage, and which stage limited the run with the next thing to try.
#include <string>

#include "pipeline/tag_profile.h"
#include "pipeline/tagger.h"

namespace tandem::pipeline {

// Fills stats.limiting_stage and stats.verdict from the stage times.
void diagnose(TagStats& stats, const TagRunFacts& facts);

// A few lines for the terminal; `skipped` files were up to date in the
// catalog, `ignored` were not images (duplicates, broken links), `unreadable`
// files and folders could not be read (permission denied, I/O errors).
std::string format_summary(const TagStats& stats, int64_t skipped, int64_t ignored, int64_t unreadable = 0);

}  // namespace tandem::pipeline
