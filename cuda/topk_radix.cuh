#pragma once
// TopK's radix select (cuda/topk.cu): the k-th key of each slice found one
// 8-bit digit per pass, high digits first, then exactly k elements gathered.
//   A pass: blocks count the digit over the elements whose higher digits
//   match those found so far (radix_histogram, many blocks per slice), then
//   one block per slice picks the digit holding the k-th key
//   (radix_select). A slice is done as soon as the elements still matching
//   are exactly the ones left to take.
//   A slice not done after every digit has `remaining` elements equal to the
//   k-th key to take, the lowest indices first: each block counts its equal
//   elements (count_ties), and the gather ranks them in index order across
//   blocks (radix_gather). Elements above the k-th key go to the first
//   slots in any order; sort_candidates orders all k.
#include <cstdint>

#include "cuda/block_reduce.cuh"
#include "cuda/float_convert.cuh"
#include "cuda/topk_order.cuh"

namespace tandem::cuda {

constexpr int kDigits = 256;  // an 8-bit digit per pass

// Slice s of the [outer, n, inner] input: element j at first(s) + j * inner;
// its output t at out_first(s) + t * inner.
struct Slices {
  int64_t n = 0, inner = 1, k = 0;
  __host__ __device__ int64_t first(int64_t s) const { return (s / inner) * n * inner + s % inner; }
  __host__ __device__ int64_t out_first(int64_t s) const {
    return (s / inner) * k * inner + s % inner;
  }
};

// Output t of slice s: the value and index of its element j.
template <typename T>
__device__ __forceinline__ void write_result(const T* x, T* values, int64_t* indices,
                                             const Slices& sl, int64_t s, int64_t t, uint32_t j) {
  int64_t o = sl.out_first(s) + t * sl.inner;
  indices[o] = int64_t(j);
  values[o] = x[sl.first(s) + int64_t(j) * sl.inner];
}

// Blocks per slice and elements per block (a multiple of 16).
struct RadixGrid {
  int64_t blocks_per_slice = 1, chunk = 0;
};

template <typename K>
struct RowState {
  K prefix;            // digits found so far, the rest zero
  uint32_t remaining;  // elements still to take among those matching
  uint32_t digits;     // digits found
  uint32_t done;       // the elements matching are exactly those to take
  uint32_t count;      // elements above the k-th gathered so far
};

template <typename K>
__device__ __forceinline__ K high_digits_mask(uint32_t digits) {
  constexpr int kAll = int(sizeof(K));
  if (digits == 0) return K(0);
  return digits >= uint32_t(kAll) ? K(~K(0)) : K(K(~K(0)) << (8 * (kAll - int(digits))));
}

template <typename K>
__device__ __forceinline__ int digit_of(K key, int pass) {
  return int(key >> (8 * (int(sizeof(K)) - 1 - pass))) & 0xff;
}

// Calls f(j, key) for every element j in [begin, end) of slice s; V > 1
// reads V neighbours at once (inner == 1, 16-byte aligned rows, begin a
// multiple of V).
template <int V, typename T, typename F>
__device__ __forceinline__ void for_each_key_in(const T* x, const Slices& sl, int64_t s,
                                                int64_t begin, int64_t end, bool largest, F&& f) {
  const int64_t first = sl.first(s);
  if constexpr (V == 1) {
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x)
      f(j, key_of(x[first + j * sl.inner], largest));
  } else {
    for (int64_t j = begin + int64_t(threadIdx.x) * V; j < end; j += int64_t(blockDim.x) * V) {
      const Pack<V, T> p = *reinterpret_cast<const Pack<V, T>*>(x + first + j);
#pragma unroll
      for (int e = 0; e < V; ++e) f(j + e, key_of(p.v[e], largest));
    }
  }
}

// The same over block b's chunk of slice s.
template <int V, typename T, typename F>
__device__ __forceinline__ void for_each_key(const T* x, const Slices& sl, int64_t s, int64_t b,
                                             const RadixGrid& g, bool largest, F&& f) {
  const int64_t begin = b * g.chunk;
  for_each_key_in<V>(x, sl, s, begin, min(sl.n, begin + g.chunk), largest, f);
}

template <typename K>
__global__ void radix_init(RowState<K>* st, uint32_t* hist, int64_t slices, uint32_t k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < slices * kDigits;
       i += int64_t(gridDim.x) * blockDim.x) {
    hist[i] = 0;
    if (i < slices) st[i] = RowState<K>{K(0), k, 0u, 0u, 0u};
  }
}

// Each thread adds runs of one digit at once: a heatmap's many equal
// values would otherwise queue on one shared counter.
template <int V, typename T>
__global__ void radix_histogram(const T* x, Slices sl, const RowState<KeyOf<T>>* st, uint32_t* hist,
                                int pass, RadixGrid g, bool largest) {
  using K = KeyOf<T>;
  __shared__ uint32_t h[kDigits];
  const int64_t s = blockIdx.x / g.blocks_per_slice, b = blockIdx.x % g.blocks_per_slice;
  const RowState<K> r = st[s];
  if (r.done) return;
  for (int d = threadIdx.x; d < kDigits; d += blockDim.x) h[d] = 0;
  __syncthreads();
  const K mask = high_digits_mask<K>(uint32_t(pass));
  int run = 0;
  uint32_t count = 0;
  for_each_key<V>(x, sl, s, b, g, largest, [&](int64_t, K key) {
    if ((key & mask) != r.prefix) return;
    int d = digit_of(key, pass);
    if (d != run) {
      if (count) atomicAdd(&h[run], count);
      run = d, count = 0;
    }
    ++count;
  });
  if (count) atomicAdd(&h[run], count);
  __syncthreads();
  for (int d = threadIdx.x; d < kDigits; d += blockDim.x)
    if (h[d]) atomicAdd(&hist[s * kDigits + d], h[d]);
}

// One block of kDigits threads per slice; clears the histogram.
template <typename K>
__global__ void radix_select(RowState<K>* st, uint32_t* hist, int pass) {
  __shared__ uint32_t h[kDigits];
  const int64_t s = blockIdx.x;
  if (st[s].done) return;
  h[threadIdx.x] = hist[s * kDigits + threadIdx.x];
  hist[s * kDigits + threadIdx.x] = 0;
  __syncthreads();
  if (threadIdx.x != 0) return;
  RowState<K> r = st[s];
  uint32_t above = 0;
  int d = kDigits - 1;
  for (; d > 0 && above + h[d] < r.remaining; --d) above += h[d];
  r.remaining -= above;
  r.prefix |= K(K(d) << (8 * (int(sizeof(K)) - 1 - pass)));
  r.digits = uint32_t(pass + 1);
  r.done = h[d] == r.remaining ? 1u : 0u;
  st[s] = r;
}

// Per block of a slice not done: its elements equal to the k-th key.
template <int V, typename T>
__global__ void count_ties(const T* x, Slices sl, const RowState<KeyOf<T>>* st, uint32_t* ties,
                           RadixGrid g, bool largest) {
  using K = KeyOf<T>;
  const int64_t s = blockIdx.x / g.blocks_per_slice, b = blockIdx.x % g.blocks_per_slice;
  if (st[s].done) return;
  const K kth = st[s].prefix;
  uint32_t n = 0;
  for_each_key<V>(x, sl, s, b, g, largest, [&](int64_t, K key) { n += key == kth ? 1u : 0u; });
  n = block_reduce(n, SumOp{}, 0u);
  if (threadIdx.x == 0) ties[blockIdx.x] = n;
}

// Ties with the k-th key before this block's chunk, from count_ties.
__device__ __forceinline__ uint32_t ties_before(const uint32_t* ties, int64_t s, int64_t b,
                                                const RadixGrid& g) {
  uint32_t n = 0;
  for (int64_t i = threadIdx.x; i < b; i += blockDim.x) n += ties[s * g.blocks_per_slice + i];
  return block_reduce(n, SumOp{}, 0u);
}

// The k elements of each slice into cand[s * k, (s + 1) * k): those above
// the k-th key first (any order), then the ties in index order.
template <int V, typename T>
__global__ void radix_gather(const T* x, Slices sl, RowState<KeyOf<T>>* st, const uint32_t* ties,
                             Entry<KeyOf<T>>* cand, RadixGrid g, bool largest) {
  using K = KeyOf<T>;
  __shared__ uint32_t warp_ties[32];
  const int64_t s = blockIdx.x / g.blocks_per_slice, b = blockIdx.x % g.blocks_per_slice;
  const K prefix = st[s].prefix;
  const uint32_t done = st[s].done, remaining = st[s].remaining;
  Entry<K>* out = cand + s * sl.k;
  if (done) {  // everything at or above the prefix digits
    const K mask = high_digits_mask<K>(st[s].digits);
    for_each_key<V>(x, sl, s, b, g, largest, [&](int64_t j, K key) {
      if ((key & mask) < prefix) return;
      uint32_t slot = atomicAdd(&st[s].count, 1u);
      if (slot < sl.k) out[slot] = Entry<K>{key, uint32_t(j)};
    });
    return;
  }
  const uint32_t above = uint32_t(sl.k) - remaining;
  uint32_t rank = ties_before(ties, s, b, g);  // of this block's next tie
  const int64_t first = sl.first(s), begin = b * g.chunk, end = min(sl.n, begin + g.chunk);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = int(blockDim.x + 31) >> 5;
  // Tiles of V elements a thread while ties are still to take (rank is the
  // same in every thread, so is the trip count: the block syncs inside).
  int64_t j0 = begin;
  for (; j0 < end && rank < remaining; j0 += int64_t(blockDim.x) * V) {
    const int64_t j = j0 + int64_t(threadIdx.x) * V;
    K key[V];
    uint32_t mine = 0;  // this thread's ties
    if (j < end) {      // then all V are: end - begin is a multiple of V
      if constexpr (V == 1) {
        key[0] = key_of(x[first + j * sl.inner], largest);
      } else {
        const Pack<V, T> p = *reinterpret_cast<const Pack<V, T>*>(x + first + j);
#pragma unroll
        for (int e = 0; e < V; ++e) key[e] = key_of(p.v[e], largest);
      }
#pragma unroll
      for (int e = 0; e < V; ++e) mine += key[e] == prefix ? 1u : 0u;
    }
    uint32_t before = mine;  // an inclusive scan over the warp's threads
    for (int o = 1; o < 32; o <<= 1) {
      uint32_t t = __shfl_up_sync(0xffffffffu, before, o);
      if (lane >= o) before += t;
    }
    if (lane == 31) warp_ties[warp] = before;
    __syncthreads();
    before += rank - mine;
    uint32_t tile = 0;
    for (int w = 0; w < warps; ++w) {
      before += w < warp ? warp_ties[w] : 0u;
      tile += warp_ties[w];
    }
    if (j < end) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if (key[e] > prefix) {
          uint32_t slot = atomicAdd(&st[s].count, 1u);
          if (slot < above) out[slot] = Entry<K>{key[e], uint32_t(j + e)};
        } else if (key[e] == prefix) {
          if (before < remaining) out[above + before] = Entry<K>{key[e], uint32_t(j + e)};
          ++before;
        }
      }
    }
    rank += tile;
    __syncthreads();  // warp_ties is rewritten by the next tile
  }
  // The rest of the chunk: only the elements above the k-th key.
  for_each_key_in<V>(x, sl, s, j0, end, largest, [&](int64_t j, K key) {
    if (key <= prefix) return;
    uint32_t slot = atomicAdd(&st[s].count, 1u);
    if (slot < above) out[slot] = Entry<K>{key, uint32_t(j)};
  });
}

// One block per slice: its k candidates sorted in shared memory, written
// as values and int64 indices.
template <typename T>
__global__ void sort_candidates(const T* x, T* values, int64_t* indices, Slices sl,
                                const Entry<KeyOf<T>>* cand, int p) {
  using K = KeyOf<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  Entry<K>* e = reinterpret_cast<Entry<K>*>(smem);
  const int64_t s = blockIdx.x;
  for (int j = threadIdx.x; j < p; j += blockDim.x)
    e[j] = j < sl.k ? cand[s * sl.k + j] : sentinel<K>();
  bitonic_sort(e, p);
  for (int t = threadIdx.x; t < sl.k; t += blockDim.x)
    write_result(x, values, indices, sl, s, t, e[t].index);
}

}  // namespace tandem::cuda
