// Static memory planning: each arena slot is live from the step that writes
// it to the last step that reads it (views extend their root's life). Slots
// are placed largest first at the lowest offset that does not overlap any
// placed slot live at the same time — the classic greedy-by-size heuristic,
// within a few percent of optimal on CNN graphs.
#include <algorithm>

#include "graph/plan.h"

namespace tandem {

namespace {
// cudaMalloc's alignment: GPU kernels may need 128 bytes (Hopper's tensor
// memory accelerator) or pick slower code for less; the CPU wants 64.
constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool lifetimes_overlap(const Slot& a, const Slot& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}
}  // namespace

size_t plan_memory(std::vector<Slot>& slots) {
  std::vector<int> order;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].kind == Slot::Kind::arena) order.push_back(int(i));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return slots[size_t(a)].desc.bytes() > slots[size_t(b)].desc.bytes();
  });
  std::vector<int> placed;
  size_t total = 0;
  for (int s : order) {
    Slot& slot = slots[size_t(s)];
    size_t size = align_up(std::max<size_t>(slot.desc.bytes(), 1));
    // Candidate offsets: 0 and the end of every conflicting placed slot.
    std::vector<std::pair<size_t, size_t>> busy;
    for (int p : placed) {
      const Slot& o = slots[size_t(p)];
      if (lifetimes_overlap(slot, o)) busy.push_back({o.offset, o.offset + align_up(std::max<size_t>(o.desc.bytes(), 1))});
    }
    std::sort(busy.begin(), busy.end());
    size_t best = 0;
    for (auto [lo, hi] : busy) {
      if (best + size <= lo) break;
      best = std::max(best, hi);
    }
    slot.offset = best;
    total = std::max(total, best + size);
    placed.push_back(s);
  }
  return total;
}

}  // namespace tandem
