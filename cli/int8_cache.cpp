#include "cli/int8_cache.h"

#include <fmt/core.h>
#include <sys/stat.h>

#define XXH_INLINE_ALL  // header-only: no link dependency
#include <xxhash.h>

#include <filesystem>
#include <string_view>

#include "core/cache_dir.h"
#include "core/error.h"
#include "core/file_write.h"
#include "formats/onnx/onnx_exporter.h"
#include "formats/onnx/onnx_importer.h"

namespace tandem::cli {

namespace {

// Bumped when what a cached file means changes in a way the binary's
// identity would not catch.
constexpr std::string_view kFormat = "tandem int8 cache 1";

template <typename T>
void add(XXH3_state_t* s, const T& v) {
  XXH3_128bits_update(s, &v, sizeof v);
}

void add(XXH3_state_t* s, std::string_view bytes) {
  add(s, static_cast<uint64_t>(bytes.size()));
  XXH3_128bits_update(s, bytes.data(), bytes.size());
}

// The running binary's size and modification time: a rebuilt tandem (a
// changed quantizer) does not read what an older one wrote.
bool add_binary_identity(XXH3_state_t* s) {
  struct stat st {};
  if (stat("/proc/self/exe", &st) != 0) return false;
  add(s, static_cast<int64_t>(st.st_size));
  add(s, static_cast<int64_t>(st.st_mtim.tv_sec));
  add(s, static_cast<int64_t>(st.st_mtim.tv_nsec));
  return true;
}

void add_options(XXH3_state_t* s, const PtqOptions& p) {
  // threads is left out: it changes how fast, not what.
  add(s, static_cast<int>(p.method ? static_cast<int>(*p.method) : -1));
  add(s, p.percentile);
  add(s, p.float_layers);
  add(s, static_cast<int>(p.activations));
  add(s, p.compensate_weights);
}

bool add_batches(XXH3_state_t* s, const std::vector<Tensor>& batches) {
  add(s, static_cast<uint64_t>(batches.size()));
  for (const Tensor& t : batches) {
    if (!t.device().is_cpu()) return false;
    add(s, static_cast<int>(t.dtype()));
    add(s, static_cast<uint64_t>(t.shape().size()));
    for (int64_t d : t.shape()) add(s, d);
    add(s, std::string_view(static_cast<const char*>(t.raw()), t.bytes()));
  }
  return true;
}

}  // namespace

std::string int8_cache_path(const Graph& g, const std::vector<Tensor>& batches,
                            const PtqOptions& p) {
  const std::string dir = cache_dir();
  if (dir.empty()) return "";
  XXH3_state_t* s = XXH3_createState();
  if (!s) return "";
  XXH3_128bits_reset(s);
  add(s, kFormat);
  bool keyed = add_binary_identity(s) && add_batches(s, batches);
  if (keyed) {
    try {
      add(s, std::string_view(to_onnx_model(g).SerializeAsString()));
    } catch (const Error&) {
      keyed = false;  // ops with no ONNX form: nothing to store the result as
    }
  }
  add_options(s, p);
  const XXH128_hash_t h = XXH3_128bits_digest(s);
  XXH3_freeState(s);
  if (!keyed) return "";
  return fmt::format("{}/int8/{:016x}{:016x}.onnx", dir, h.high64, h.low64);
}

std::optional<Graph> load_cached_int8(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    // The file carries its values' types; the executor infers the rest.
    OnnxImportOptions o;
    o.onnx_shape_inference = false;
    return load_onnx(path, o);
  } catch (const Error& e) {
    fmt::print(stderr, "tandem: warning: int8 cache {}: {} (quantizing afresh)\n", path, e.what());
    return std::nullopt;
  }
}

void store_cached_int8(const Graph& q, const std::string& path) {
  if (path.empty()) return;
  try {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    save_onnx(q, path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tandem: warning: int8 cache {}: {} (not kept)\n", path, e.what());
  }
}

}  // namespace tandem::cli
