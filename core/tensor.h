#pragma once
// Tensor = description (dtype, shape, layout) + shared storage + byte offset.
// Copies are shallow (they share storage), like torch.Tensor.
#include <cstdint>
#include <cstring>
#include <vector>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/layout.h"
#include "core/memory.h"
#include "core/shape.h"

namespace tandem {

struct TensorDesc {
  DType dtype = DType::f32;
  Shape shape;
  Layout layout = Layout::plain;

  int64_t numel() const { return shape_numel(shape); }
  // Bytes needed including channel padding of blocked layouts.
  size_t bytes() const;
  std::string str() const;  // "f32[1,3,224,224]" or "f32[1,64,56,56]@nChw16c"
  bool operator==(const TensorDesc&) const = default;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(TensorDesc desc, std::shared_ptr<Storage> storage, size_t offset = 0);

  // Fresh host tensor; contents are uninitialized.
  static Tensor empty(const TensorDesc& desc);
  static Tensor empty(DType dtype, const Shape& shape) { return empty(TensorDesc{dtype, shape}); }
  static Tensor zeros(DType dtype, const Shape& shape);
  // Non-owning view of memory owned elsewhere.
  static Tensor wrap(const TensorDesc& desc, void* data, Device device = Device::cpu());

  // Host tensor with a copy of `values` (plain layout).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
    Tensor t = empty(dtype_of<T>::value, shape);
    check(int64_t(values.size()) == t.numel(), "from_vector: size does not match shape");
    if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
    return t;
  }

  bool defined() const { return storage_ != nullptr; }
  const TensorDesc& desc() const { return desc_; }
  DType dtype() const { return desc_.dtype; }
  const Shape& shape() const { return desc_.shape; }
  Layout layout() const { return desc_.layout; }
  int64_t rank() const { return int64_t(desc_.shape.size()); }
  int64_t dim(int64_t i) const { return desc_.shape.at(size_t(normalize_axis(i, rank()))); }
  int64_t numel() const { return desc_.numel(); }
  size_t bytes() const { return desc_.bytes(); }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }

  void* raw() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* data() const {
    if (dtype_of<T>::value != desc_.dtype) [[unlikely]]
      throw_dtype_mismatch(dtype_of<T>::value);
    return static_cast<T*>(raw());
  }

  // Same storage, new shape (plain layout only; element count must match).
  Tensor reshaped(const Shape& shape) const;
  // Same storage, dtype and shape, described in layout plain or nhwc (the
  // same byte count; the caller knows which arrangement the bytes hold).
  Tensor with_layout(Layout layout) const;
  // Deep copy into a new host tensor.
  Tensor clone() const;
  // Element i (plain layout) converted to double / int64; for small host tensors
  // such as shapes and scalars.
  double scalar_at(int64_t i) const;
  int64_t int_at(int64_t i) const;
  std::vector<int64_t> to_int_vector() const;

  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  [[noreturn]] void throw_dtype_mismatch(DType asked) const;
  [[noreturn]] void throw_index(int64_t i) const;

 public:
  size_t offset() const { return offset_; }

 private:
  TensorDesc desc_;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

}  // namespace tandem
