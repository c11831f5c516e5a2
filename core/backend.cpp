#include "core/backend.h"

#include <cstdlib>

#include "core/error.h"

namespace tandem {

void* Backend::allocate_host(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void Backend::deallocate_host(void* ptr) { std::free(ptr); }

}  // namespace tandem
