#pragma once
// Node attributes as parsed from a model file. Getters throw tandem::Error on
// a wrong type, since attribute types come from untrusted files.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace tandem {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

class Attributes {
 public:
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttrValue>& all() const { return values_; }

  int64_t get_int(const std::string& name, int64_t fallback) const;
  int64_t get_int(const std::string& name) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name,
                                const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name,
                                const std::vector<float>& fallback = {}) const;
  const Tensor& get_tensor(const std::string& name) const;

 private:
  const AttrValue& find(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace tandem
