#include "graph/weight_rounding.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/conv.h"

namespace tandem {

namespace {

std::vector<float> row_scales(const Tensor& w) {
  const int64_t m = w.dim(0), per = w.numel() / m;
  std::vector<float> scales(size_t(m), 1.f);
  for (int64_t o = 0; o < m; ++o) {
    const float* row = w.data<float>() + o * per;
    float peak = 0.f;
    for (int64_t k = 0; k < per; ++k) peak = std::max(peak, std::fabs(row[k]));
    if (peak > 0.f) scales[size_t(o)] = peak / 127.f;
  }
  return scales;
}

int8_t to_int8(double v, float scale) {
  return int8_t(std::clamp(std::nearbyint(v / double(scale)), -127.0, 127.0));
}

// h[a][b] += sum_s x[s][a] * x[s][b] for b >= a, over the k columns of x
// (row-major, s_count rows of `stride` floats) from `first` on. Blocks of
// kA rows by kB columns keep the partial sums in registers and L1; the
// inner loop is an axpy over a row the compiler vectorizes.
void accumulate_gram(const float* x, int64_t s_count, int64_t stride, int64_t first, int64_t k,
                     double* h) {
  x += first;
  constexpr int64_t kA = 8, kB = 64;
  float acc[kA * kB];
  for (int64_t a0 = 0; a0 < k; a0 += kA) {
    const int64_t na = std::min(kA, k - a0);
    for (int64_t b0 = a0 / kB * kB; b0 < k; b0 += kB) {
      const int64_t nb = std::min(kB, k - b0);
      std::fill(acc, acc + kA * kB, 0.f);
      for (int64_t s = 0; s < s_count; ++s) {
        const float* row = x + s * stride;
        for (int64_t i = 0; i < na; ++i) {
          const float xa = row[a0 + i];
          if (xa == 0.f) continue;  // ReLU's zeros: half of most inputs
          float* ac = acc + i * kB;
          for (int64_t j = 0; j < nb; ++j) ac[j] += xa * row[b0 + j];
        }
      }
      for (int64_t i = 0; i < na; ++i)
        for (int64_t j = std::max<int64_t>(0, a0 + i - b0); j < nb; ++j)
          h[(a0 + i) * k + b0 + j] += double(acc[i * kB + j]);
    }
  }
}

// In place: a (n x n, symmetric positive definite, row-major) becomes its
// lower Cholesky factor L (a = L L^T; the upper triangle is zeroed). False
// when a pivot is not positive.
bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t p = 0; p < j; ++p) d -= a[j * n + p] * a[j * n + p];
    if (!(d > 0)) return false;
    const double ljj = std::sqrt(d);
    a[j * n + j] = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      double v = a[i * n + j];
      for (int64_t p = 0; p < j; ++p) v -= a[i * n + p] * a[j * n + p];
      a[i * n + j] = v / ljj;
    }
    for (int64_t i = 0; i < j; ++i) a[i * n + j] = 0;
  }
  return true;
}

// The upper factor U of h^-1 = U^T U, GPTQ's form of the inverse: row i of
// U holds how rounding column i should move the columns after it. Found
// as the reversal J L'^-1 J of the Cholesky factor L' of J h J (J reverses
// the order), which is upper triangular and needs one factorization and
// one triangular inverse. False when h is not positive definite.
bool inverse_upper_factor(const std::vector<double>& h, int64_t n, std::vector<double>& u) {
  std::vector<double> r(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) r[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
  if (!cholesky_lower(r, n)) return false;
  // Inverse of the lower triangular r, column by column.
  std::vector<double> inv(size_t(n * n), 0.0);
  for (int64_t c = 0; c < n; ++c) {
    inv[c * n + c] = 1.0 / r[c * n + c];
    for (int64_t i = c + 1; i < n; ++i) {
      double v = 0;
      for (int64_t p = c; p < i; ++p) v -= r[i * n + p] * inv[p * n + c];
      inv[i * n + c] = v / r[i * n + i];
    }
  }
  u.assign(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) u[i * n + j] = inv[(n - 1 - i) * n + (n - 1 - j)];
  return true;
}

}  // namespace

IntegerWeights round_to_nearest(const Tensor& w) {
  check(w.dtype() == DType::f32 && w.rank() >= 2, "weights to round must be f32 [M, ...]");
  IntegerWeights r{Tensor::empty(DType::i8, w.shape()), row_scales(w)};
  const int64_t m = w.dim(0), per = w.numel() / m;
  for (int64_t o = 0; o < m; ++o)
    for (int64_t k = 0; k < per; ++k)
      r.values.data<int8_t>()[o * per + k] =
          to_int8(w.data<float>()[o * per + k], r.scales[size_t(o)]);
  return r;
}

ConvInputMoments::ConvInputMoments(const Attributes& attrs, const Shape& x, const Shape& w,
                                   int64_t max_positions)
    : max_positions_(std::max<int64_t>(1, max_positions)) {
  const ops::ConvGeometry g = ops::conv_geometry(attrs, x, w);
  check(g.window.rank() == 2, "input moments are gathered for 2-D convolutions");
  groups_ = g.group;
  c_per_group_ = w[1];
  kh_ = w[2];
  kw_ = w[3];
  k_ = c_per_group_ * kh_ * kw_;
  // Whole input channels to a block, at most kMaxBlock columns unless one
  // channel's taps alone are more.
  block_ = std::min(k_, std::max<int64_t>(1, kMaxBlock / (kh_ * kw_)) * kh_ * kw_);
  blocks_ = (k_ + block_ - 1) / block_;
  for (int i = 0; i < 2; ++i) {
    stride_[i] = g.window.strides[size_t(i)];
    dilation_[i] = g.window.dilations[size_t(i)];
    pad_[i] = g.window.pads_begin[size_t(i)];
    out_[i] = g.window.out[size_t(i)];
    in_[i] = x[size_t(2 + i)];
  }
  for (int64_t g = 0; g < groups_; ++g)
    for (int64_t b = 0; b < blocks_; ++b)
      sums_.emplace_back(size_t(block_size(b) * block_size(b)), 0.0);
}

void ConvInputMoments::add(const Tensor& x) {
  check(x.dtype() == DType::f32 && x.rank() == 4 && x.dim(1) == groups_ * c_per_group_ &&
            x.dim(2) == in_[0] && x.dim(3) == in_[1],
        "input moments: the tensor " + shape_str(x.shape()) + " is not the convolution's input");
  const int64_t n = x.dim(0), plane = in_[0] * in_[1], positions = n * out_[0] * out_[1];
  const int64_t step = (positions + max_positions_ - 1) / max_positions_;
  // A different phase each batch, so that sampled positions do not always
  // fall on the same pixels of every image.
  const int64_t phase = batches_++ % step;
  std::vector<int64_t> picks;
  for (int64_t p = phase; p < positions; p += step) picks.push_back(p);
  const int64_t s_count = int64_t(picks.size());
  std::vector<float> cols(size_t(s_count * k_));
  const float* xs = x.data<float>();
  for (int64_t g = 0; g < groups_; ++g) {
    for (int64_t s = 0; s < s_count; ++s) {
      const int64_t p = picks[size_t(s)], img = p / (out_[0] * out_[1]);
      const int64_t oy = (p / out_[1]) % out_[0], ox = p % out_[1];
      float* col = cols.data() + s * k_;
      for (int64_t c = 0; c < c_per_group_; ++c) {
        const float* ch = xs + (img * groups_ * c_per_group_ + g * c_per_group_ + c) * plane;
        for (int64_t ky = 0; ky < kh_; ++ky) {
          const int64_t iy = oy * stride_[0] - pad_[0] + ky * dilation_[0];
          for (int64_t kx = 0; kx < kw_; ++kx) {
            const int64_t ix = ox * stride_[1] - pad_[1] + kx * dilation_[1];
            const bool inside = iy >= 0 && iy < in_[0] && ix >= 0 && ix < in_[1];
            *col++ = inside ? ch[iy * in_[1] + ix] : 0.f;
          }
        }
      }
    }
    for (int64_t b = 0; b < blocks_; ++b)
      accumulate_gram(cols.data(), s_count, k_, b * block_, block_size(b),
                      sums_[size_t(g * blocks_ + b)].data());
  }
  samples_ += s_count;
}

std::vector<double> ConvInputMoments::moments(int64_t group, int64_t block) const {
  std::vector<double> h = sums_[size_t(group * blocks_ + block)];
  const int64_t n = block_size(block);
  const double inv = samples_ > 0 ? 1.0 / double(samples_) : 1.0;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = a; b < n; ++b) h[a * n + b] = h[b * n + a] = h[a * n + b] * inv;
  return h;
}

IntegerWeights round_compensating(const Tensor& w, const ConvInputMoments& m) {
  IntegerWeights r = round_to_nearest(w);
  const int64_t rows = w.dim(0), k = m.columns(), per_group = rows / m.groups();
  check(w.numel() / rows == k && rows % m.groups() == 0,
        "weights " + shape_str(w.shape()) + " do not match the input moments' columns");
  std::vector<double> row;
  for (int64_t g = 0; g < m.groups(); ++g)
    for (int64_t b = 0; b < m.blocks(); ++b) {
      const int64_t first = b * m.block_columns(), n = m.block_size(b);
      std::vector<double> h = m.moments(g, b);
      // A column whose input is always zero can take any value: rounded to
      // nearest, with nothing to spread.
      double mean_diag = 0;
      for (int64_t i = 0; i < n; ++i) mean_diag += h[i * n + i];
      mean_diag /= double(n);
      if (!(mean_diag > 0)) continue;
      // Dampening by a hundredth of the mean diagonal, GPTQ's own choice:
      // it keeps the factorization stable where inputs are nearly collinear.
      for (int64_t i = 0; i < n; ++i) h[i * n + i] += h[i * n + i] > 0 ? 0.01 * mean_diag : 1.0;
      std::vector<double> u;
      if (!inverse_upper_factor(h, n, u)) continue;  // stays rounded to nearest
      for (int64_t o = g * per_group; o < (g + 1) * per_group; ++o) {
        const float scale = r.scales[size_t(o)];
        const float* src = w.data<float>() + o * k + first;
        int8_t* dst = r.values.data<int8_t>() + o * k + first;
        row.assign(src, src + n);
        for (int64_t i = 0; i < n; ++i) {
          const int8_t q = to_int8(row[size_t(i)], scale);
          dst[i] = q;
          const double err = (row[size_t(i)] - double(q) * scale) / u[i * n + i];
          for (int64_t j = i + 1; j < n; ++j) row[size_t(j)] -= err * u[i * n + j];
        }
      }
    }
  return r;
}

}  // namespace tandem
