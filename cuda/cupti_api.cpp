#include "cuda/cupti_api.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace tandem::cuda {
namespace {

std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("TANDEM_CUPTI_LIB"); env != nullptr && *env != '\0') paths.emplace_back(env);
  paths.emplace_back("libcupti.so.13");
  paths.emplace_back("libcupti.so");
  // The toolkit keeps libcupti next to libcudart (targets/<arch>/lib), which
  // is often not on the loader's path.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) != 0 && info.dli_fname != nullptr) {
    const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
    if (!dir.empty()) paths.push_back((dir / "libcupti.so.13").string());
  }
  return paths;
}

template <class Fn>
bool bind(void* lib, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return fn != nullptr;
}

// Fills api from the first candidate that opens and has every function.
std::string load(CuptiApi& api) {
  std::string why;
  for (const std::string& path : candidates()) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      why = e != nullptr ? e : ("cannot open " + path);
      continue;
    }
    std::string missing;
    bind(lib, "cuptiGetResultString", api.get_result_string, missing);
    bind(lib, "cuptiActivityEnable", api.activity_enable, missing);
    bind(lib, "cuptiActivityDisable", api.activity_disable, missing);
    bind(lib, "cuptiActivityRegisterCallbacks", api.activity_register_callbacks, missing);
    bind(lib, "cuptiActivityGetNextRecord", api.activity_get_next_record, missing);
    bind(lib, "cuptiActivityFlushAll", api.activity_flush_all, missing);
    bind(lib, "cuptiActivityGetNumDroppedRecords", api.activity_get_num_dropped_records, missing);
    bind(lib, "cuptiGetTimestamp", api.get_timestamp, missing);
    bind(lib, "cuptiSetThreadIdType", api.set_thread_id_type, missing);
    bind(lib, "cuptiGetCallbackName", api.get_callback_name, missing);
    if (missing.empty()) {
      api.path = path;
      return "";
    }
    why = path + " lacks " + missing;
    api = CuptiApi{};
    dlclose(lib);
  }
  return why;
}

}  // namespace

std::string CuptiApi::error(CUptiResult r, const char* call) const {
  if (r == CUPTI_SUCCESS) return "";
  const char* text = nullptr;
  if (get_result_string == nullptr || get_result_string(r, &text) != CUPTI_SUCCESS || text == nullptr)
    text = "unknown CUPTI error";
  return std::string(call) + ": " + text + " (" + std::to_string(int(r)) + ")";
}

const CuptiApi* load_cupti(std::string* why) {
  static std::once_flag once;
  static CuptiApi api;
  static std::string failure;
  std::call_once(once, [] { failure = load(api); });
  if (why != nullptr) *why = failure;
  return failure.empty() ? &api : nullptr;
}

}  // namespace tandem::cuda
