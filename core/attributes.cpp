#include "core/attributes.h"

namespace tandem {

namespace {
template <typename T>
const T& expect(const AttrValue& v, const std::string& name, const char* type) {
  if (auto* p = std::get_if<T>(&v)) return *p;
  throw Error("attribute '" + name + "' is not of type " + type);
}
}  // namespace

const AttrValue& Attributes::find(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error("missing required attribute '" + name + "'");
  return it->second;
}

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}

int64_t Attributes::get_int(const std::string& name) const {
  return expect<int64_t>(find(name), name, "int");
}

float Attributes::get_float(const std::string& name, float fallback) const {
  if (!has(name)) return fallback;
  const AttrValue& v = find(name);
  if (auto* i = std::get_if<int64_t>(&v)) return float(*i);
  return expect<float>(v, name, "float");
}

std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  return has(name) ? expect<std::string>(find(name), name, "string") : fallback;
}

std::vector<int64_t> Attributes::get_ints(const std::string& name,
                                          const std::vector<int64_t>& fallback) const {
  return has(name) ? expect<std::vector<int64_t>>(find(name), name, "ints") : fallback;
}

std::vector<float> Attributes::get_floats(const std::string& name,
                                          const std::vector<float>& fallback) const {
  return has(name) ? expect<std::vector<float>>(find(name), name, "floats") : fallback;
}

const Tensor& Attributes::get_tensor(const std::string& name) const {
  return expect<Tensor>(find(name), name, "tensor");
}

}  // namespace tandem

#include "core/backend.h"
namespace tandem {
const Attributes& OpDesc::attributes() const {
  static const Attributes kEmpty;
  return attrs ? *attrs : kEmpty;
}
}  // namespace tandem
