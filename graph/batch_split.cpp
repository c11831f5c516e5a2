#include "graph/batch_split.h"

#include <cstring>

namespace tandem {

namespace {

Shape with_batch(Shape s, int64_t batch) {
  s[0] = batch;
  return s;
}

}  // namespace

int64_t shared_batch(const std::vector<Tensor>& inputs, const std::vector<TensorDesc>& declared) {
  if (inputs.empty() || inputs.size() != declared.size()) return 0;
  int64_t batch = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const Shape& d = declared[i].shape;
    if (!t.defined() || t.layout() != Layout::plain || t.rank() == 0 || d.size() != t.shape().size() || d[0] >= 0)
      return 0;
    if (batch >= 0 && t.dim(0) != batch) return 0;
    batch = t.dim(0);
  }
  return batch;
}

std::vector<Tensor> batch_rows(const std::vector<Tensor>& inputs, int64_t begin, int64_t count) {
  std::vector<Tensor> r;
  for (const Tensor& t : inputs) {
    size_t row = t.dim(0) ? t.bytes() / size_t(t.dim(0)) : 0;
    TensorDesc d = t.desc();
    d.shape[0] = count;
    r.emplace_back(d, t.storage(), t.offset() + size_t(begin) * row);
  }
  return r;
}

bool joinable(const std::vector<std::vector<Tensor>>& parts, const std::vector<int64_t>& counts) {
  if (parts.empty() || parts.size() != counts.size()) return false;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].size() != parts[0].size()) return false;
    for (size_t o = 0; o < parts[p].size(); ++o) {
      const Tensor& t = parts[p][o];
      const Tensor& first = parts[0][o];
      if (!t.defined() || t.layout() != Layout::plain || t.rank() == 0 || t.dim(0) != counts[p]) return false;
      if (t.dtype() != first.dtype() || with_batch(t.shape(), 0) != with_batch(first.shape(), 0)) return false;
    }
  }
  return true;
}

std::vector<Tensor> join_batches(const std::vector<std::vector<Tensor>>& parts) {
  std::vector<Tensor> r;
  for (size_t o = 0; o < parts[0].size(); ++o) {
    int64_t rows = 0;
    for (const auto& p : parts) rows += p[o].dim(0);
    Tensor out = Tensor::empty(parts[0][o].dtype(), with_batch(parts[0][o].shape(), rows));
    char* dst = static_cast<char*>(out.raw());
    for (const auto& p : parts) {
      std::memcpy(dst, p[o].raw(), p[o].bytes());
      dst += p[o].bytes();
    }
    r.push_back(std::move(out));
  }
  return r;
}

}  // namespace tandem
