#include "cpu/binary_reference.h"

#include <cmath>
#include <type_traits>

namespace tandem::cpu {

namespace {

// Element strides of `s` broadcast to rank-`r` output `y`: 0 where s is 1.
std::vector<int64_t> broadcast_strides(const Shape& s, const Shape& y) {
  size_t r = y.size(), lead = r - s.size();
  std::vector<int64_t> st(r, 0);
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[lead + i] = s[i] == 1 ? 0 : acc;
    acc *= s[i];
  }
  return st;
}

// Merges neighbouring output dims that every operand walks alike (both
// broadcast, or the outer one's stride spanning the inner dim) and drops
// extents of 1: Swin's window-mask add [B,64,3,49,49] + [1,64,1,49,49]
// becomes [B,64,3,2401] + [1,64,1,2401], whose rows are long enough to
// vectorize.
void collapse_dims(Shape* y, std::vector<std::vector<int64_t>>* strides) {
  Shape ny;
  std::vector<std::vector<int64_t>> ns(strides->size());
  for (size_t d = 0; d < y->size(); ++d) {
    const int64_t ext = (*y)[d];
    if (ext == 1) continue;
    bool merge = !ny.empty();
    for (size_t k = 0; merge && k < ns.size(); ++k) {
      const int64_t outer = ns[k].back(), inner = (*strides)[k][d];
      merge = outer == inner * ext;  // both broadcast (0 == 0), or contiguous across the pair
    }
    if (merge) {
      ny.back() *= ext;
      for (size_t k = 0; k < ns.size(); ++k) ns[k].back() = (*strides)[k][d];
    } else {
      ny.push_back(ext);
      for (size_t k = 0; k < ns.size(); ++k) ns[k].push_back((*strides)[k][d]);
    }
  }
  if (ny.empty() && shape_numel(*y) == 1 && !y->empty()) {  // all extents 1: one element
    ny = {1};
    for (auto& st : ns) st = {0};
  }
  *y = std::move(ny);
  *strides = std::move(ns);
}

// One output row: the contiguous and scalar operand patterns as loops the
// compiler vectorizes, anything else strided.
template <typename T, typename U, typename F>
void row_loop(int64_t n, const T* a, int64_t ia, const U* b, int64_t ib, T* out, F f) {
  if (ia == 1 && ib == 1) {
    for (int64_t j = 0; j < n; ++j) out[j] = f(a[j], b[j]);
  } else if (ia == 1 && ib == 0) {
    const U q = b[0];
    for (int64_t j = 0; j < n; ++j) out[j] = f(a[j], q);
  } else if (ia == 0 && ib == 1) {
    const T p = a[0];
    for (int64_t j = 0; j < n; ++j) out[j] = f(p, b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = f(a[j * ia], b[j * ib]);
  }
}

// out[i] = f(a[...], b[...]) over y, innermost dimension as a tight loop.
template <typename T, typename U, typename F>
void broadcast_loop(const Shape& y, const T* a, const std::vector<int64_t>& sa, const U* b,
                    const std::vector<int64_t>& sb, T* out, F f) {
  int64_t total = shape_numel(y);
  if (total == 0) return;
  if (y.empty()) {
    out[0] = f(a[0], b[0]);
    return;
  }
  size_t r = y.size();
  int64_t inner = y[r - 1], ia = sa[r - 1], ib = sb[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t o = 0; o < total; o += inner) {
    row_loop(inner, a + oa, ia, b + ob, ib, out + o, f);
    for (size_t d = r - 1; d-- > 0;) {  // odometer over the outer dims
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < y[d]) break;
      oa -= sa[d] * y[d];
      ob -= sb[d] * y[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
T wrap(std::make_unsigned_t<T> v) { return static_cast<T>(v); }

template <typename T>
T divide(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) throw Error("integer division by zero");
    if constexpr (std::is_signed_v<T>)
      if (b == -1) return wrap<T>(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
    return T(a / b);  // truncates toward zero, as C and ONNX Runtime
  } else {
    return a / b;
  }
}

template <typename T>
void apply_same(BinaryOp op, const Shape& y, const T* a, const std::vector<int64_t>& sa, const T* b,
                const std::vector<int64_t>& sb, T* out) {
  // Integer +,-,* wrap around instead of overflowing (undefined in C++).
  using W = std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T>>;
  using U = typename W::type;
  switch (op) {
    case BinaryOp::add: broadcast_loop(y, a, sa, b, sb, out, [](T p, T q) { return T(U(p) + U(q)); }); break;
    case BinaryOp::sub: broadcast_loop(y, a, sa, b, sb, out, [](T p, T q) { return T(U(p) - U(q)); }); break;
    case BinaryOp::mul: broadcast_loop(y, a, sa, b, sb, out, [](T p, T q) { return T(U(p) * U(q)); }); break;
    case BinaryOp::div: broadcast_loop(y, a, sa, b, sb, out, divide<T>); break;
    case BinaryOp::max: broadcast_loop(y, a, sa, b, sb, out, [](T p, T q) { return p < q ? q : p; }); break;
    case BinaryOp::min: broadcast_loop(y, a, sa, b, sb, out, [](T p, T q) { return q < p ? q : p; }); break;
    case BinaryOp::pow: break;  // handled with its own exponent dtype
  }
}

template <typename T, typename E>
void apply_pow(const Shape& y, const T* a, const std::vector<int64_t>& sa, const E* b,
               const std::vector<int64_t>& sb, T* out) {
  broadcast_loop(y, a, sa, b, sb, out, [](T p, E q) { return T(std::pow(double(p), double(q))); });
}

// Calls f(T{}) for the C++ type of t.
template <typename F>
void dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(float{}); return;
    case DType::f64: f(double{}); return;
    case DType::i8: f(int8_t{}); return;
    case DType::u8: f(uint8_t{}); return;
    case DType::i32: f(int32_t{}); return;
    case DType::i64: f(int64_t{}); return;
    default: throw Error::unsupported("CPU binary ops do not support dtype " + std::string(dtype_name(t)));
  }
}

class ReferenceBinaryKernel : public Kernel {
 public:
  ReferenceBinaryKernel(BinaryOp op, std::vector<TensorDesc> in, TensorDesc out)
      : op_(op), in_(std::move(in)), out_(std::move(out)) {
    for (const TensorDesc& t : in_) strides_.push_back(broadcast_strides(t.shape, out_.shape));
    strides_.push_back(broadcast_strides(out_.shape, out_.shape));
    shape_ = out_.shape;
    collapse_dims(&shape_, &strides_);
    dense_ = strides_.back();
    strides_.pop_back();
    dispatch(out_.dtype, [](auto) {});  // rejects unsupported dtypes at prepare
    if (op_ == BinaryOp::pow) dispatch(in_[1].dtype, [](auto) {});
  }

  void run(const void* const* in, void* const* out, const RunContext&) override {
    dispatch(out_.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* a = static_cast<const T*>(in[0]);
      T* y = static_cast<T*>(out[0]);
      if (op_ == BinaryOp::pow) {
        dispatch(in_[1].dtype, [&](auto etag) {
          using E = decltype(etag);
          apply_pow(shape_, a, strides_[0], static_cast<const E*>(in[1]), strides_[1], y);
        });
        return;
      }
      // One operand (Max/Min): op(x, x) = x.
      size_t second = in_.size() > 1 ? 1 : 0;
      apply_same(op_, shape_, a, strides_[0], static_cast<const T*>(in[second]), strides_[second], y);
      for (size_t i = 2; i < in_.size(); ++i)
        apply_same(op_, shape_, static_cast<const T*>(y), dense_, static_cast<const T*>(in[i]), strides_[i], y);
    });
  }

 private:
  BinaryOp op_;
  std::vector<TensorDesc> in_;
  TensorDesc out_;
  Shape shape_;  // the output's dims as the loops walk them (collapse_dims)
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> dense_;
};

}  // namespace

std::unique_ptr<Kernel> make_reference_binary(BinaryOp op, const std::vector<TensorDesc>& inputs,
                                              const TensorDesc& output) {
  return std::make_unique<ReferenceBinaryKernel>(op, inputs, output);
}

}  // namespace tandem::cpu
