#pragma once
// Zone names that more than one layer needs: the code that opens the zone
// and the summary rules that read it.
namespace tandem::profile {

// A bounded queue's waits (pipeline/bounded_queue.h): a push waiting for
// room (the stage after it is slower), a pop waiting for an item (the stage
// before it is).
inline constexpr const char* kQueueFullZone = "queue full (push waits)";
inline constexpr const char* kQueueEmptyZone = "queue empty (pop waits)";

}  // namespace tandem::profile
