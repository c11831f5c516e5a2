#pragma once
// A training profile, one row per layer: from the zones train/ opens per
// named module ("forward <name>", "backward <name>", and for a layer split
// between devices "split <name> gpu|home|cpu forward|backward") and the GPU
// time each of those zones launched (gpu_by_stage.h). Every figure is
// inclusive: a container's row (a Sequential, a residual block) holds its
// children's. Runs without such zones have no rows.
#include <cstdint>
#include <string>
#include <vector>

#include "profile/gpu_by_stage.h"

namespace tandem::profile {

struct StageSummary;

struct LayerRow {
  std::string layer;
  uint64_t forward_ns = 0, backward_ns = 0;  // host thread time
  uint64_t cpu_side_ns = 0;                  // a split layer's CPU part, forward + backward (within the above)
  uint64_t gpu_ns = 0;  // GPU time its zones (and its children's) launched, forward + backward
};

// Largest host time (forward + backward) first.
std::vector<LayerRow> layer_table(const std::vector<StageSummary>& stages, const std::vector<StageGpuStats>& gpu);

}  // namespace tandem::profile
