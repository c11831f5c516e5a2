#pragma once
// GPU time by the host zone that launched it: each kernel, memset and copy
// is charged to the innermost zone open on its launching thread when the
// launching API call began (joined by correlation id). A training step then
// reads GPU time per layer ("forward features.0", "backward layer1.0.conv1")
// beside the host time of the stage table; an inference run reads it per
// stage. Work whose launch is unknown (no API record, a thread without
// zones, a launch outside every zone) is charged to "(no zone)".
#include <cstdint>
#include <string>
#include <vector>

#include "profile/trace.h"

namespace tandem::profile {

struct StageGpuStats {
  std::string stage;
  uint64_t ops = 0;        // kernels, memsets and copies
  uint64_t kernel_ns = 0;  // kernels and memsets
  uint64_t copy_ns = 0;
  uint64_t total_ns() const { return kernel_ns + copy_ns; }
};

inline constexpr const char* kNoZone = "(no zone)";

// Every stage that launched GPU work, largest total first (ties by name).
std::vector<StageGpuStats> gpu_time_by_stage(const Trace& trace);

}  // namespace tandem::profile
