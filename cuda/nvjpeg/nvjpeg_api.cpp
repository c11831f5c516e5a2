#include "cuda/nvjpeg/nvjpeg_api.h"

#include <dlfcn.h>

#include <mutex>

#include "cuda/check.h"
#include "cuda/dl_symbol.h"

namespace tandem::cuda::nvjpeg {

namespace {

struct Loaded {
  NvjpegApi api;
  bool ok = false;
  std::string why_not;
};

Loaded load_once() {
  Loaded r;
  void* lib = nullptr;
  const char* library = nullptr;
  std::string errors;
  for (const char* name : kLibraryNames) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      library = name;
      break;
    }
    const char* err = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (err ? err : name);
  }
  if (!lib) {
    r.why_not = "cannot load the nvJPEG library (libnvjpeg.so.13 or libnvjpeg.so): " + errors;
    return r;
  }
  // The library stays loaded for the process: decoders may outlive any scope.
  NvjpegApi& a = r.api;
  std::string& w = r.why_not;
  r.ok = bind_symbol(lib, library, "nvjpegCreateEx", a.CreateEx, w) &&
         bind_symbol(lib, library, "nvjpegDestroy", a.Destroy, w) &&
         bind_symbol(lib, library, "nvjpegJpegStateCreate", a.JpegStateCreate, w) &&
         bind_symbol(lib, library, "nvjpegJpegStateDestroy", a.JpegStateDestroy, w) &&
         bind_symbol(lib, library, "nvjpegDecodeBatchedInitialize", a.DecodeBatchedInitialize, w) &&
         bind_symbol(lib, library, "nvjpegDecodeBatched", a.DecodeBatched, w) &&
         bind_symbol(lib, library, "nvjpegJpegStreamCreate", a.JpegStreamCreate, w) &&
         bind_symbol(lib, library, "nvjpegJpegStreamDestroy", a.JpegStreamDestroy, w) &&
         bind_symbol(lib, library, "nvjpegJpegStreamParseHeader", a.JpegStreamParseHeader, w) &&
         bind_symbol(lib, library, "nvjpegJpegStreamGetJpegEncoding", a.JpegStreamGetJpegEncoding, w) &&
         bind_symbol(lib, library, "nvjpegJpegStreamGetFrameDimensions", a.JpegStreamGetFrameDimensions, w) &&
         bind_symbol(lib, library, "nvjpegJpegStreamGetComponentsNum", a.JpegStreamGetComponentsNum, w) &&
         bind_symbol(lib, library, "nvjpegDecodeBatchedSupported", a.DecodeBatchedSupported, w);
  return r;
}

}  // namespace

const NvjpegApi* load_nvjpeg(std::string* why_not) {
  static const Loaded loaded = load_once();  // C++ guarantees one thread-safe initialisation
  if (!loaded.ok) {
    if (why_not) *why_not = loaded.why_not;
    return nullptr;
  }
  return &loaded.api;
}

std::string status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "nvJPEG status " + std::to_string(int(s));
}

void check_nvjpeg(nvjpegStatus_t s, const char* call) {
  if (s == NVJPEG_STATUS_SUCCESS) [[likely]]
    return;
  const std::string msg = std::string(call) + ": " + status_name(s);
  if (s == NVJPEG_STATUS_ALLOCATOR_FAILURE) throw OutOfMemory("out of GPU memory: " + msg);
  if (s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED || s == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED ||
      s == NVJPEG_STATUS_ARCH_MISMATCH)
    throw Error::unsupported(msg);
  throw Error(msg);
}

}  // namespace tandem::cuda::nvjpeg
