#pragma once
// Shapes are plain vectors of int64 extents, outermost first. An extent of -1
// means "not known yet" (a dynamic batch before a session fixes it).
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

using Shape = std::vector<int64_t>;

// The largest extent a model file may declare (2^40): far beyond any real
// tensor, and far enough below int64's range that sums and products of a
// few extents in shape inference cannot overflow.
inline constexpr int64_t kMaxDeclaredExtent = int64_t(1) << 40;

// Number of elements; throws on negative extents or int64 overflow, since
// shapes come from untrusted model files.
int64_t shape_numel(const Shape& s);
bool shape_is_static(const Shape& s);
std::string shape_str(const Shape& s);
// Numpy-style broadcast of two shapes; throws Error if incompatible. An
// unknown extent (-1) against a known one takes the known one.
Shape broadcast_shapes(const Shape& a, const Shape& b);
// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
// Normalizes a possibly negative axis into [0, rank); throws when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

}  // namespace tandem
