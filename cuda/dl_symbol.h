#pragma once
// Functions of a library loaded at run time (dlopen), typed as the
// library's header declares them: the GPU libraries not every CUDA
// installation has (nvJPEG, NCCL) are found when present and explained
// when not, instead of being linked.
#include <dlfcn.h>

#include <string>

namespace tandem::cuda {

// dlsym of `symbol` into `slot`; false, with the reason in why_not, when
// `library` (its name, for the message) lacks it.
template <typename Fn>
bool bind_symbol(void* lib, const char* library, const char* symbol, Fn& slot, std::string& why_not) {
  dlerror();  // clear a stale message
  void* p = dlsym(lib, symbol);
  if (!p) {
    const char* err = dlerror();
    why_not = std::string(library) + " has no " + symbol + (err ? std::string(": ") + err : std::string());
    return false;
  }
  slot = reinterpret_cast<Fn>(p);
  return true;
}

}  // namespace tandem::cuda
