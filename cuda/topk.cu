// TopK along one axis (ops/topk.h) of f32, f16, bf16, int32 and int64, plain
// layout: values and int64 indices, best first whatever `sorted` says, ties
// lower index first, NaN above every number: the CPU kernel's order exactly
// (cuda/topk_order.cuh). The input is viewed as `slices` = outer * inner
// slices of n elements (stride inner). Three paths:
//   n <= 2048: a block per slice sorts all of it in shared memory.
//   k <= 2048: radix select (cuda/topk_radix.cuh): the k-th key one 8-bit
//     digit per pass, many blocks per slice, then exactly k elements
//     gathered and sorted in shared memory.
//   Otherwise: CUB's segmented radix sort of every slice's keys with their
//     indices (an LSD radix sort, so stable: equal keys keep index order),
//     its first k kept.
#include <algorithm>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <memory>
#include <vector>

#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/launch.h"
#include "cuda/registry.h"
#include "cuda/topk_radix.cuh"
#include "ops/shape_ops.h"
#include "ops/topk.h"

namespace tandem::cuda {

namespace {

constexpr int kSortMax = 2048;  // entries one block sorts in shared memory
constexpr int kRadixThreads = 256;

// --- n <= 2048: a slice sorted whole ---------------------------------------

template <typename T>
__global__ void sort_slices(const T* x, T* values, int64_t* indices, Slices sl, int64_t slices,
                            int p, bool largest) {
  using K = KeyOf<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  Entry<K>* e = reinterpret_cast<Entry<K>*>(smem);
  for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
    const int64_t first = sl.first(s);
    for (int j = threadIdx.x; j < p; j += blockDim.x)
      e[j] = j < sl.n ? Entry<K>{key_of(x[first + j * sl.inner], largest), uint32_t(j)}
                      : sentinel<K>();
    bitonic_sort(e, p);
    for (int t = threadIdx.x; t < sl.k; t += blockDim.x)
      write_result(x, values, indices, sl, s, t, e[t].index);
    __syncthreads();  // e is refilled for the next slice
  }
}

// --- otherwise: a segmented sort of every slice ------------------------------

template <typename T>
__global__ void slice_keys(const T* x, Slices sl, int64_t n_all, KeyOf<T>* keys, uint32_t* index,
                           bool largest) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_all;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = i / sl.n, j = i - s * sl.n;
    keys[i] = key_of(x[sl.first(s) + j * sl.inner], largest);
    index[i] = uint32_t(j);
  }
}

template <typename T>
__global__ void write_sorted(const T* x, T* values, int64_t* indices, Slices sl, int64_t n_out,
                             const uint32_t* index) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_out;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = i / sl.k, t = i - s * sl.k;
    write_result(x, values, indices, sl, s, t, index[s * sl.n + t]);
  }
}

// --- the kernel ----------------------------------------------------------------

// Consecutive 256-byte-aligned pieces of one scratch buffer.
struct Carve {
  size_t at = 0;
  size_t take(size_t bytes) {
    size_t o = at;
    at += (bytes + 255) / 256 * 256;
    return o;
  }
};

template <typename T>
class TopKKernel final : public Kernel {
  using K = KeyOf<T>;

 public:
  TopKKernel(Context& c, Slices sl, int64_t slices, bool largest, ErrorContext where)
      : c_(c), sl_(sl), slices_(slices), largest_(largest), where_(std::move(where)) {
    // Nothing to select (k = 0 or an empty tensor): run() returns at once.
    if (sl_.n <= kSortMax || sl_.k == 0 || slices_ == 0)
      path_ = Path::sort_slices;
    else if (sl_.k <= kSortMax)
      plan_radix();
    else
      plan_segmented_sort();
  }

  size_t scratch_bytes() const override { return scratch_; }

  void run(const void* const* in, void* const* out, const RunContext& ctx) override {
    if (sl_.k == 0 || slices_ == 0) return;
    const T* x = static_cast<const T*>(in[0]);
    T* values = static_cast<T*>(out[0]);
    int64_t* indices = static_cast<int64_t*>(out[1]);
    char* scratch = static_cast<char*>(ctx.scratch);
    switch (path_) {
      case Path::sort_slices:
        return run_sort_slices(x, values, indices);
      case Path::radix_select:
        return run_radix(x, values, indices, scratch);
      case Path::segmented_sort:
        return run_segmented_sort(x, values, indices, scratch);
    }
  }

 private:
  enum class Path { sort_slices, radix_select, segmented_sort };

  static int sort_threads(int p) { return std::min(1024, std::max(32, p / 2)); }

  void plan_radix() {
    path_ = Path::radix_select;
    int64_t target = int64_t(c_.props.multiProcessorCount) * (2048 / kRadixThreads);
    int64_t most = (sl_.n + kSortMax - 1) / kSortMax;  // at least kSortMax elements a block
    int64_t blocks = std::max<int64_t>(1, std::min((target + slices_ - 1) / slices_, most));
    grid_.chunk = (sl_.n + blocks - 1) / blocks;
    grid_.chunk = (grid_.chunk + 15) / 16 * 16;  // whole 16-byte vectors
    grid_.blocks_per_slice = (sl_.n + grid_.chunk - 1) / grid_.chunk;
    check_supported(slices_ * grid_.blocks_per_slice < (int64_t(1) << 31),
                    "CUDA TopK of " + std::to_string(slices_) + " slices", where_);
    Carve cv;
    st_at_ = cv.take(size_t(slices_) * sizeof(RowState<K>));
    hist_at_ = cv.take(size_t(slices_) * kDigits * sizeof(uint32_t));
    ties_at_ = cv.take(size_t(slices_ * grid_.blocks_per_slice) * sizeof(uint32_t));
    cand_at_ = cv.take(size_t(slices_ * sl_.k) * sizeof(Entry<K>));
    scratch_ = cv.at;
  }

  void plan_segmented_sort() {
    path_ = Path::segmented_sort;
    int64_t n_all = slices_ * sl_.n;
    check_supported(n_all < (int64_t(1) << 31), "CUDA TopK with k > 2048 of 2^31 or more elements",
                    where_);
    std::vector<int> offsets(size_t(slices_) + 1);
    for (int64_t s = 0; s <= slices_; ++s) offsets[size_t(s)] = int(s * sl_.n);
    offsets_ = DeviceBuffer::upload(c_, offsets.data(), offsets.size() * sizeof(int), where_);
    size_t temp = 0;
    const int* o = static_cast<const int*>(offsets_.get());
    check_cuda(cub::DeviceSegmentedRadixSort::SortPairsDescending(
                   nullptr, temp, static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                   static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
                   int(n_all), int(slices_), o, o + 1, 0, int(sizeof(K) * 8), c_.stream),
               "cub::DeviceSegmentedRadixSort (temporary storage size)", where_);
    Carve cv;
    keys_at_[0] = cv.take(size_t(n_all) * sizeof(K));
    keys_at_[1] = cv.take(size_t(n_all) * sizeof(K));
    index_at_[0] = cv.take(size_t(n_all) * sizeof(uint32_t));
    index_at_[1] = cv.take(size_t(n_all) * sizeof(uint32_t));
    temp_at_ = cv.take(temp);
    temp_bytes_ = temp;
    scratch_ = cv.at;
  }

  void run_sort_slices(const T* x, T* values, int64_t* indices) {
    int p = pow2_at_least(sl_.n);
    unsigned blocks =
        unsigned(std::min<int64_t>(slices_, int64_t(c_.props.multiProcessorCount) * 32));
    sort_slices<T><<<blocks, sort_threads(p), size_t(p) * sizeof(Entry<K>), c_.stream>>>(
        x, values, indices, sl_, slices_, p, largest_);
    check_launch("sort_slices", where_);
  }

  // The radix select into the candidates (cuda/topk_radix.cuh), reading V
  // elements at a time.
  template <int V>
  void select_k(const T* x, char* scratch) {
    auto* st = reinterpret_cast<RowState<K>*>(scratch + st_at_);
    auto* hist = reinterpret_cast<uint32_t*>(scratch + hist_at_);
    auto* ties = reinterpret_cast<uint32_t*>(scratch + ties_at_);
    auto* cand = reinterpret_cast<Entry<K>*>(scratch + cand_at_);
    radix_init<K><<<blocks_for(slices_ * kDigits, c_.props), kThreads, 0, c_.stream>>>(
        st, hist, slices_, uint32_t(sl_.k));
    check_launch("radix_init", where_);
    const unsigned blocks = unsigned(slices_ * grid_.blocks_per_slice);
    const cudaStream_t stream = c_.stream;
    for (int pass = 0; pass < int(sizeof(K)); ++pass) {
      radix_histogram<V, T>
          <<<blocks, kRadixThreads, 0, stream>>>(x, sl_, st, hist, pass, grid_, largest_);
      check_launch("radix_histogram", where_);
      radix_select<K><<<unsigned(slices_), kDigits, 0, stream>>>(st, hist, pass);
      check_launch("radix_select", where_);
    }
    count_ties<V, T><<<blocks, kRadixThreads, 0, stream>>>(x, sl_, st, ties, grid_, largest_);
    check_launch("count_ties", where_);
    radix_gather<V, T>
        <<<blocks, kRadixThreads, 0, stream>>>(x, sl_, st, ties, cand, grid_, largest_);
    check_launch("radix_gather", where_);
  }

  void run_radix(const T* x, T* values, int64_t* indices, char* scratch) {
    if (sl_.inner == 1 && sl_.n % kPackOf<T> == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0)
      select_k<kPackOf<T>>(x, scratch);  // rows read 16 bytes at a time
    else
      select_k<1>(x, scratch);
    auto* cand = reinterpret_cast<Entry<K>*>(scratch + cand_at_);
    int p = pow2_at_least(sl_.k);
    sort_candidates<T>
        <<<unsigned(slices_), sort_threads(p), size_t(p) * sizeof(Entry<K>), c_.stream>>>(
            x, values, indices, sl_, cand, p);
    check_launch("sort_candidates", where_);
  }

  void run_segmented_sort(const T* x, T* values, int64_t* indices, char* scratch) {
    int64_t n_all = slices_ * sl_.n, n_out = slices_ * sl_.k;
    auto* keys = reinterpret_cast<K*>(scratch + keys_at_[0]);
    auto* sorted_keys = reinterpret_cast<K*>(scratch + keys_at_[1]);
    auto* index = reinterpret_cast<uint32_t*>(scratch + index_at_[0]);
    auto* sorted_index = reinterpret_cast<uint32_t*>(scratch + index_at_[1]);
    slice_keys<T><<<blocks_for(n_all, c_.props), kThreads, 0, c_.stream>>>(x, sl_, n_all, keys,
                                                                           index, largest_);
    check_launch("slice_keys", where_);
    size_t temp = temp_bytes_;
    const int* o = static_cast<const int*>(offsets_.get());
    check_cuda(cub::DeviceSegmentedRadixSort::SortPairsDescending(
                   scratch + temp_at_, temp, keys, sorted_keys, index, sorted_index, int(n_all),
                   int(slices_), o, o + 1, 0, int(sizeof(K) * 8), c_.stream),
               "cub::DeviceSegmentedRadixSort", where_);
    write_sorted<T><<<blocks_for(n_out, c_.props), kThreads, 0, c_.stream>>>(
        x, values, indices, sl_, n_out, sorted_index);
    check_launch("write_sorted", where_);
  }

  Context& c_;
  Slices sl_;
  int64_t slices_;
  bool largest_;
  ErrorContext where_;
  Path path_ = Path::sort_slices;
  size_t scratch_ = 0;
  // radix select
  RadixGrid grid_;
  size_t st_at_ = 0, hist_at_ = 0, ties_at_ = 0, cand_at_ = 0;
  // segmented sort
  DeviceBuffer offsets_;
  size_t keys_at_[2] = {}, index_at_[2] = {}, temp_at_ = 0, temp_bytes_ = 0;
};

template <typename F>
std::unique_ptr<Kernel> with_topk_type(DType t, const ErrorContext& w, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    default:
      break;
  }
  throw Error::unsupported(
      "CUDA TopK takes f32, f16, bf16, int32 or int64, not " + std::string(dtype_name(t)), w);
}

KernelPlan make_topk(const OpDesc& op, Context& c) {
  const ErrorContext w = op.context();
  ops::TopKSpec spec = ops::topk_spec(ops::infer_context_of(op));
  const Shape& x = op.inputs[0].shape;
  size_t axis = size_t(spec.axis);
  Slices sl;
  sl.n = x[axis];
  sl.inner = shape_numel(Shape(x.begin() + std::ptrdiff_t(axis) + 1, x.end()));
  sl.k = op.outputs[0].shape[axis];
  int64_t outer = shape_numel(Shape(x.begin(), x.begin() + std::ptrdiff_t(axis)));
  check_supported(sl.n < (int64_t(1) << 31), "CUDA TopK along an axis of 2^31 or more elements", w);
  KernelPlan plan;
  plan.kernel = with_topk_type(op.inputs[0].dtype, w, [&](auto t) {
    return std::unique_ptr<Kernel>(
        std::make_unique<TopKKernel<decltype(t)>>(c, sl, outer * sl.inner, spec.largest, w));
  });
  plan.input_layouts.assign(op.inputs.size(), Layout::plain);
  plan.output_layouts = {Layout::plain, Layout::plain};
  // K was read at prepare (the output shape); run() never reads it.
  plan.keeps_constant.assign(op.inputs.size(), false);
  for (size_t i = 1; i < op.inputs.size(); ++i)
    plan.keeps_constant[i] = op.constants.size() > i && op.constants[i];
  return plan;
}

}  // namespace

void register_topk_kernels() { register_kernel("TopK", make_topk); }

}  // namespace tandem::cuda
