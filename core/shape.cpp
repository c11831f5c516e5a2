#include "core/shape.h"

#include <limits>

#include "core/error.h"

namespace tandem {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    // The message is built only on failure: this runs in per-element loops.
    if (d < 0) throw Error("negative or unknown extent in shape " + shape_str(s));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw Error("shape " + shape_str(s) + " has too many elements");
    n *= d;
  }
  return n;
}

bool shape_is_static(const Shape& s) {
  for (int64_t d : s)
    if (d < 0) return false;
  return true;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return r + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else if (da < 0) out[i] = db;  // unknown extent: the known one must match at run time
    else if (db < 0) out[i] = da;
    else throw Error("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  check(a >= 0 && a < rank,
        "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return a;
}

}  // namespace tandem
