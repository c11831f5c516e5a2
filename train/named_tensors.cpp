#include "train/named_tensors.h"

#include <map>

#include "train/device_tensor.h"

namespace tandem::train {

namespace {

std::map<std::string, const Tensor*> index_by_name(const NamedTensors& tensors, const std::string& what,
                                                    const ErrorContext& ctx) {
  std::map<std::string, const Tensor*> index;
  for (const auto& [name, t] : tensors)
    check(index.emplace(name, &t).second, what + ": duplicate name '" + name + "'", ctx);
  return index;
}

// "; "-separated list of what differs; empty when the two sides match.
std::string differences(const std::map<std::string, const Tensor*>& targets,
                        const std::map<std::string, const Tensor*>& sources) {
  std::string out;
  for (const auto& [name, t] : targets) {
    auto it = sources.find(name);
    if (it == sources.end()) out += "; missing '" + name + "'";
    else if (it->second->desc() != t->desc())
      out += "; '" + name + "' is " + it->second->desc().str() + ", expected " + t->desc().str();
  }
  for (const auto& entry : sources)
    if (!targets.count(entry.first)) out += "; unexpected '" + entry.first + "'";
  return out.empty() ? out : out.substr(2);
}

}  // namespace

void check_same_tensors(const NamedTensors& targets, const NamedTensors& sources, const std::string& what,
                        const ErrorContext& ctx) {
  std::string diff = differences(index_by_name(targets, what, ctx), index_by_name(sources, what, ctx));
  check(diff.empty(), what + " do not match: " + diff, ctx);
}

void copy_by_name(const NamedTensors& targets, const NamedTensors& sources, const std::string& what,
                  const ErrorContext& ctx) {
  check_same_tensors(targets, sources, what, ctx);
  auto target_index = index_by_name(targets, what, ctx);
  auto source_index = index_by_name(sources, what, ctx);
  for (const auto& [name, t] : target_index) copy_tensor(*t, *source_index.at(name));
}

}  // namespace tandem::train
