#include <cstring>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/index_copy.h"
#include "cuda/launch.h"
#include "cuda/memory_dims.h"

namespace tandem::cuda {

namespace {

constexpr int kMaxRank = 8;

struct Tables {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  const int64_t* table[kMaxRank] = {};
};

template <typename W>
__global__ void index_copy(const W* x, W* y, int64_t n, Tables t, const W* fill_at, W fill) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, src = 0;
    bool filled = false;
    for (int d = t.rank - 1; d >= 0; --d) {
      int64_t q = rem / t.dims[d];
      int64_t off = t.table[d][rem - q * t.dims[d]];
      filled = filled || off < 0;
      src += off;
      rem = q;
    }
    y[i] = filled ? (fill_at ? *fill_at : fill) : x[src];
  }
}

template <typename W>
class IndexCopyKernel final : public Kernel {
 public:
  IndexCopyKernel(Context& c, int64_t n, Tables t, DeviceBuffer tables, W fill, int fill_input,
                  ErrorContext where)
      : c_(c),
        n_(n),
        t_(t),
        tables_(std::move(tables)),
        fill_(fill),
        fill_input_(fill_input),
        where_(std::move(where)) {}
  void run(const void* const* in, void* const* out, const RunContext&) override {
    if (n_ == 0) return;
    const W* fill_at = fill_input_ >= 0 ? static_cast<const W*>(in[fill_input_]) : nullptr;
    index_copy<W><<<blocks_for(n_, c_.props), kThreads, 0, c_.stream>>>(
        static_cast<const W*>(in[0]), static_cast<W*>(out[0]), n_, t_, fill_at, fill_);
    check_launch("index_copy", where_);
  }

 private:
  Context& c_;
  int64_t n_;
  Tables t_;
  DeviceBuffer tables_;
  W fill_;
  int fill_input_;
  ErrorContext where_;
};

template <typename W>
std::unique_ptr<Kernel> typed(Context& c, const Shape& out,
                              const std::vector<std::vector<int64_t>>& offsets, uint64_t fill_bits,
                              int fill_input, const ErrorContext& w) {
  check_supported(out.size() <= size_t(kMaxRank),
                  "CUDA data movement up to rank 8, got " + shape_str(out), w);
  std::vector<int64_t> all;
  for (const auto& t : offsets) all.insert(all.end(), t.begin(), t.end());
  all.push_back(0);  // never empty
  DeviceBuffer buffer = DeviceBuffer::upload(c, all.data(), all.size() * sizeof(int64_t), w);
  Tables t;
  t.rank = int(out.size());
  size_t at = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    t.dims[d] = out[d];
    t.table[d] = static_cast<const int64_t*>(buffer.get()) + at;
    at += offsets[d].size();
  }
  W fill;
  std::memcpy(&fill, &fill_bits, sizeof(W));  // the low bytes: little-endian
  return std::make_unique<IndexCopyKernel<W>>(c, shape_numel(out), t, std::move(buffer), fill,
                                              fill_input, w);
}

std::unique_ptr<Kernel> make_index_copy(Context& c, const Shape& out,
                                        const std::vector<std::vector<int64_t>>& offsets,
                                        size_t elem_bytes, uint64_t fill_bits, int fill_input,
                                        const ErrorContext& w) {
  switch (elem_bytes) {
    case 1:
      return typed<uint8_t>(c, out, offsets, fill_bits, fill_input, w);
    case 2:
      return typed<uint16_t>(c, out, offsets, fill_bits, fill_input, w);
    case 4:
      return typed<uint32_t>(c, out, offsets, fill_bits, fill_input, w);
    case 8:
      return typed<uint64_t>(c, out, offsets, fill_bits, fill_input, w);
  }
  throw Error::unsupported("CUDA data movement of " + std::to_string(elem_bytes) + "-byte elements",
                           w);
}

}  // namespace

KernelPlan index_copy_plan(const OpDesc& op, Context& c, const Shape& out,
                           const SourceIndex& source, uint64_t fill_bits, int fill_input) {
  const TensorDesc& x = op.inputs[0];
  Layout l = x.layout == Layout::nhwc && x.shape.size() == 4 ? Layout::nhwc : Layout::plain;
  std::vector<size_t> order = memory_dims(x.shape.size(), l);
  Shape in_mem, out_mem;
  for (size_t d : order) in_mem.push_back(x.shape[d]), out_mem.push_back(out[d]);
  std::vector<int64_t> strides = contiguous_strides(in_mem);
  std::vector<std::vector<int64_t>> tables(order.size());
  for (size_t m = 0; m < order.size(); ++m)
    for (int64_t o = 0; o < out[order[m]]; ++o) {
      int64_t i = source(order[m], o);
      tables[m].push_back(i < 0 ? -1 : i * strides[m]);
    }
  KernelPlan plan;
  plan.kernel =
      make_index_copy(c, out_mem, tables, dtype_size(x.dtype), fill_bits, fill_input, op.context());
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.input_layouts[0] = l;
  plan.output_layouts = {l};
  return plan;
}

}  // namespace tandem::cuda
