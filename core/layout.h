#pragma once
// Physical arrangement of a 4-D activation [N,C,H,W]. Only activations carry a
// non-plain layout; weights are owned and reordered by the kernel using them.
//   plain     : row-major in logical order (NCHW for 4-D)
//   nhwc      : channels last
//   blocked8  : oneDNN nChw8c  [N, ceil(C/8),  H, W, 8]  (C padded with zeros)
//   blocked16 : oneDNN nChw16c [N, ceil(C/16), H, W, 16]
#include <cstdint>
#include <string_view>

namespace tandem {

enum class Layout : uint8_t { plain, nhwc, blocked8, blocked16 };

std::string_view layout_name(Layout l);
// Channel block of a blocked layout, 1 otherwise.
int64_t layout_block(Layout l);

}  // namespace tandem
