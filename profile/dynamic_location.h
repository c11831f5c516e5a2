#pragma once
// Zone records for names known only at run time (graph nodes, file names):
// interned once and kept for the life of the process, as a Zone requires.
// Not for hot paths: it takes a lock; call it when building a plan.
#include <string_view>

#include "profile/thread_buffer.h"

namespace tandem::profile {

const SourceLocation* dynamic_location(std::string_view name, std::string_view category);

}  // namespace tandem::profile
