#pragma once
// The one clock every zone, counter and benchmark reads: steady, in ns.
#include <cstdint>

namespace tandem::profile {

uint64_t now_ns();

}  // namespace tandem::profile
