#include "train/split/slice_names.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "train/device_tensor.h"

namespace tandem::train {

namespace {

struct SliceOf {
  std::string plain;  // the name without its "[a:b/n]"
  int64_t begin = 0, end = 0, rows = 0;
};

std::optional<SliceOf> parse(const std::string& name) {
  size_t open = name.find('[');
  if (open == std::string::npos) return std::nullopt;
  size_t close = name.find(']', open);
  if (close == std::string::npos) return std::nullopt;
  SliceOf s;
  long long a = 0, b = 0, n = 0;
  std::string inside = name.substr(open + 1, close - open - 1);
  if (std::sscanf(inside.c_str(), "%lld:%lld/%lld", &a, &b, &n) != 3) return std::nullopt;
  s.plain = name.substr(0, open) + name.substr(close + 1);
  s.begin = a, s.end = b, s.rows = n;
  return s;
}

// Bytes of one row (dim 0) of t.
size_t row_bytes(const Tensor& t) { return t.dim(0) ? t.bytes() / size_t(t.dim(0)) : 0; }

Tensor rows_of(const Tensor& full, int64_t begin, int64_t end) {
  Tensor host = to_host(full);
  Shape s = host.shape();
  s[0] = end - begin;
  Tensor out = Tensor::empty(host.dtype(), s);
  if (out.bytes()) std::memcpy(out.raw(), static_cast<const char*>(host.raw()) + size_t(begin) * row_bytes(host), out.bytes());
  return out;
}

}  // namespace

std::string slice_name(const std::string& name, int64_t begin, int64_t end, int64_t rows) {
  if (begin == 0 && end == rows) return name;
  // The marker goes right after the parameter's name, before any slot suffix.
  return name + "[" + std::to_string(begin) + ":" + std::to_string(end) + "/" + std::to_string(rows) + "]";
}

NamedTensors gather_slices(const NamedTensors& tensors) {
  std::map<std::string, std::vector<std::pair<SliceOf, Tensor>>> groups;
  for (const auto& [name, t] : tensors)
    if (auto s = parse(name)) groups[s->plain].emplace_back(*s, t);
  NamedTensors out;
  std::set<std::string> done;
  for (const auto& [name, t] : tensors) {
    auto s = parse(name);
    if (!s) {
      out.emplace_back(name, t);
      continue;
    }
    if (!done.insert(s->plain).second) continue;
    auto& parts = groups[s->plain];
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
    Tensor first = to_host(parts.front().second);
    Shape full_shape = first.shape();
    full_shape[0] = s->rows;
    Tensor full = Tensor::empty(first.dtype(), full_shape);
    int64_t next = 0;
    for (const auto& [slice, part] : parts) {
      check(slice.begin == next && slice.end > slice.begin && slice.rows == s->rows && part.dim(0) == slice.end - slice.begin,
            "the slices of '" + s->plain + "' do not tile its " + std::to_string(s->rows) + " rows");
      Tensor h = to_host(part);
      std::memcpy(static_cast<char*>(full.raw()) + size_t(slice.begin) * row_bytes(full), h.raw(), h.bytes());
      next = slice.end;
    }
    check(next == s->rows, "the slices of '" + s->plain + "' cover " + std::to_string(next) + " of its " +
                               std::to_string(s->rows) + " rows");
    out.emplace_back(s->plain, full);
  }
  return out;
}

NamedTensors slice_like(const NamedTensors& targets, const NamedTensors& sources) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : sources) by_name[name] = &t;
  NamedTensors out;
  std::set<std::string> used;
  for (const auto& [name, t] : targets) {
    auto s = parse(name);
    if (!s) continue;
    auto it = by_name.find(s->plain);
    if (it == by_name.end()) continue;
    const Tensor& full = *it->second;
    // A source of another row count stays whole, for the name check to report.
    if (full.rank() == 0 || full.dim(0) != s->rows) continue;
    used.insert(s->plain);
    out.emplace_back(name, rows_of(full, s->begin, s->end));
  }
  for (const auto& [name, t] : sources)
    if (!used.count(name)) out.emplace_back(name, t);
  return out;
}

}  // namespace tandem::train
