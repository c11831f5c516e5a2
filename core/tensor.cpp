#include "core/tensor.h"

#include <cstring>

#include "core/half.h"

namespace tandem {

size_t TensorDesc::bytes() const {
  int64_t n = numel();
  int64_t block = layout_block(layout);
  if (block > 1 && shape.size() >= 2) {
    int64_t c = shape[1];
    int64_t padded = (c + block - 1) / block * block;
    n = c == 0 ? 0 : n / c * padded;
  }
  return size_t(n) * dtype_size(dtype);
}

std::string TensorDesc::str() const {
  std::string s = std::string(dtype_name(dtype)) + shape_str(shape);
  if (layout != Layout::plain) s += "@" + std::string(layout_name(layout));
  return s;
}

Tensor::Tensor(TensorDesc desc, std::shared_ptr<Storage> storage, size_t offset)
    : desc_(std::move(desc)), storage_(std::move(storage)), offset_(offset) {
  if (storage_ && offset_ + desc_.bytes() > storage_->bytes())
    throw Error("tensor " + desc_.str() + " does not fit its storage");
}

Tensor Tensor::empty(const TensorDesc& desc) {
  return Tensor(desc, Storage::allocate_host(desc.bytes()));
}

Tensor Tensor::zeros(DType dtype, const Shape& shape) {
  Tensor t = empty(dtype, shape);
  std::memset(t.raw(), 0, t.bytes());
  return t;
}

Tensor Tensor::wrap(const TensorDesc& desc, void* data, Device device) {
  return Tensor(desc, Storage::borrow(data, desc.bytes(), device));
}

Tensor Tensor::reshaped(const Shape& shape) const {
  TANDEM_CHECK(desc_.layout == Layout::plain,
               "reshape of a tensor in layout " + std::string(layout_name(desc_.layout)));
  TensorDesc d{desc_.dtype, shape, Layout::plain};
  TANDEM_CHECK(d.numel() == numel(),
               "cannot reshape " + shape_str(desc_.shape) + " to " + shape_str(shape));
  return Tensor(d, storage_, offset_);
}

Tensor Tensor::with_layout(Layout layout) const {
  TANDEM_CHECK((layout == Layout::plain || layout == Layout::nhwc) &&
                   (desc_.layout == Layout::plain || desc_.layout == Layout::nhwc) &&
                   (layout == Layout::plain || rank() == 4),
               "a " + desc_.str() + " tensor described as " + std::string(layout_name(layout)));
  return Tensor(TensorDesc{desc_.dtype, desc_.shape, layout}, storage_, offset_);
}

Tensor Tensor::clone() const {
  TANDEM_CHECK(device().is_cpu(), "clone of a device tensor needs its backend");
  Tensor t = empty(desc_);
  if (bytes()) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

void Tensor::throw_dtype_mismatch(DType asked) const {
  throw Error("tensor holds " + std::string(dtype_name(desc_.dtype)) + ", accessed as " +
              std::string(dtype_name(asked)));
}

void Tensor::throw_index(int64_t i) const {
  throw Error("element index " + std::to_string(i) + " out of range for " + desc_.str());
}

double Tensor::scalar_at(int64_t i) const {
  if (i < 0 || i >= numel()) [[unlikely]] throw_index(i);
  const char* p = static_cast<const char*>(raw());
  switch (desc_.dtype) {
    case DType::f32: return reinterpret_cast<const float*>(p)[i];
    case DType::f64: return reinterpret_cast<const double*>(p)[i];
    case DType::f16: return f16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::bf16: return bf16_to_float(reinterpret_cast<const uint16_t*>(p)[i]);
    case DType::i8: return reinterpret_cast<const int8_t*>(p)[i];
    case DType::u8: return reinterpret_cast<const uint8_t*>(p)[i];
    case DType::i32: return reinterpret_cast<const int32_t*>(p)[i];
    case DType::i64: return double(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::boolean: return reinterpret_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::int_at(int64_t i) const {
  if (i < 0 || i >= numel()) [[unlikely]] throw_index(i);
  switch (desc_.dtype) {
    case DType::i64: return static_cast<const int64_t*>(raw())[i];
    case DType::i32: return static_cast<const int32_t*>(raw())[i];
    default: {
      // A float read as an integer (a shape or an index in a float tensor)
      // must be one int64 can hold: converting NaN, an infinity or 1e30 is
      // undefined behaviour, not a large number.
      const double d = scalar_at(i);
      if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        throw Error("element " + std::to_string(i) + " of a " + std::string(dtype_name(desc_.dtype)) + " tensor is " +
                    std::to_string(d) + ", not an integer in int64's range");
      return int64_t(d);
    }
  }
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[size_t(i)] = int_at(i);
  return v;
}

}  // namespace tandem
