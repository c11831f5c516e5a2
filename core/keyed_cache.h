#pragma once
// Objects built once per key and kept, for the training tables (oneDNN
// primitives on the CPU, cuDNN plans and cuBLASLt matmuls on a GPU): building
// one (and choosing its implementation) costs far more than running a small
// one. Keys start with the op's name, so one key never holds two entry types.
// Entries are never evicted: a training run sees a handful of shapes.
// Thread-safe.
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "core/tensor.h"

namespace tandem {

class KeyedCache {
 public:
  // The entry under `key`, made by build() the first time: build returns a
  // T, or a std::unique_ptr<T> for a T that cannot move (one holding a mutex
  // or library handles).
  template <typename T, typename Build>
  T& get(const std::string& key, Build&& build) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      std::shared_ptr<T> made;
      if constexpr (std::is_same_v<std::invoke_result_t<Build>, std::unique_ptr<T>>) made = build();
      else made = std::make_shared<T>(build());
      it = entries_.emplace(key, std::move(made)).first;
    }
    return *static_cast<T*>(it->second.get());
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<void>> entries_;
};

// "conv2d|f32[2,3,8,8]|1|..." from the values that select an entry.
inline void append_key(std::string& k, const Tensor& t) { k += t.desc().str(); }
inline void append_key(std::string& k, const Shape& s) { k += shape_str(s); }
inline void append_key(std::string& k, DType t) { k += dtype_name(t); }
void append_key(std::string& k, float v);  // exact (hex), so nearby values never share a key
template <typename T>
void append_key(std::string& k, const T& v) { k += std::to_string(v); }
template <typename... T>
std::string cache_key(const char* op, const T&... parts) {
  std::string k = op;
  ((k += '|', append_key(k, parts)), ...);
  return k;
}

}  // namespace tandem
