#pragma once
// What the CPU training entries share: the table's context (a primitive
// cache), input checks and oneDNN error wrapping, oneDNN memory over plain
// tensors, and where a backward writes a gradient.
#include <cstring>
#include <initializer_list>
#include <string>
#include <unordered_map>

#include "core/keyed_cache.h"
#include "cpu/dnnl_utils.h"
#include "ops/train_backend.h"

namespace tandem::cpu::train {

// The CPU table's `ctx`: oneDNN primitives built once per shape and
// attributes (keys from cache_key, core/keyed_cache.h).
struct Context {
  KeyedCache cache;
};

inline Context& context(void* ctx) { return *static_cast<Context*>(ctx); }

// Training's primitives are built once, cached in the Context, and run from
// whichever thread trains (data-parallel ranks may be threads). In its
// default mode oneDNN 2.x gives a primitive the scratchpad of the thread
// that created it, a thread-local buffer: run from another thread it finds
// none there (a write through a null pointer by the reference convolution
// on an emulated Neoverse N1), or one sized for other primitives. So every
// training primitive is built with user_scratchpad_attr() (dnnl_utils.h)
// and run with run_primitive, which lends it a scratchpad of the running
// thread's.
void run_primitive(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args);

// Each defined tensor must be a plain f32 host tensor; bf16 is not yet here.
// (op_context and require_shape: ops/train_backend.h.)
void require_f32(const char* op, std::initializer_list<const Tensor*> tensors);

// Runs `fn`, turning oneDNN's exceptions into tandem::Error naming the op.
template <typename F>
auto guarded(const char* op, const Tensor& t, F&& fn) -> decltype(fn()) {
  return dnnl_guarded(op_context(op, t), std::forward<F>(fn));
}

// A plain (row-major) descriptor and memory over a host tensor; `dims`
// re-reads the same bytes with other extents (grouped conv weights).
dnnl::memory::desc plain_md(const Tensor& t);
dnnl::memory::desc plain_md(DType dtype, const dnnl::memory::dims& dims);
dnnl::memory plain_memory(const Tensor& t);
dnnl::memory plain_memory(const Tensor& t, const dnnl::memory::dims& dims);

// `m` itself when a primitive wants its layout, else a reordered copy.
dnnl::memory in_layout(const dnnl::memory& m, const dnnl::memory::desc& want);

// A primitive's output bound to a plain memory: written in place when the
// layouts agree, else into a temporary that finish() reorders into it.
class OutputMemory {
 public:
  OutputMemory(const dnnl::memory& user, const dnnl::memory::desc& want);
  const dnnl::memory& get() const { return prim_; }
  void finish();

 private:
  dnnl::memory user_, prim_;
};

// Where a backward writes one gradient of shape `shape`: into the
// destination (overwrite), into a temporary that commit() adds to it
// (accumulate: oneDNN's backward primitives only overwrite), or into a
// scratch tensor that is dropped (not wanted, but the primitive writes it).
class GradTarget {
 public:
  GradTarget(const GradOut& g, const Shape& shape, const char* op);
  const Tensor& tensor() const { return write_; }
  void commit();

 private:
  GradOut out_;
  Tensor write_;
};

// dst[i] += src[i].
void add_into(float* dst, const float* src, int64_t n);

// Kernel entries of the CPU table, each in its op's file beside the
// inference kernel (cpu/conv.cpp, cpu/pool.cpp, ...; dropout in cpu/eltwise.cpp).
void conv2d_forward(void*, const ops::Conv2dParams&, const Tensor&, const Tensor&, const Tensor&, const Tensor&);
void conv2d_backward(void*, const ops::Conv2dParams&, const Tensor&, const Tensor&, const Tensor&,
                     const GradOut&, const GradOut&, const GradOut&);
void linear_forward(void*, const Tensor&, const Tensor&, const Tensor&, const Tensor&);
void linear_backward(void*, const Tensor&, const Tensor&, const Tensor&, const GradOut&, const GradOut&,
                     const GradOut&);
void batch_norm_forward(void*, const ops::BatchNormParams&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, const Tensor&, const Tensor&, Tensor*);
void batch_norm_backward(void*, const ops::BatchNormParams&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, const GradOut&, const GradOut&, const GradOut&);
void layer_norm_forward(void*, const ops::LayerNormParams&, const Tensor&, const Tensor&, const Tensor&,
                        const Tensor&, Tensor*);
void layer_norm_backward(void*, const ops::LayerNormParams&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, const GradOut&, const GradOut&, const GradOut&);
void eltwise_forward(void*, const ops::Activation&, const Tensor&, const Tensor&);
void eltwise_backward(void*, const ops::Activation&, const Tensor&, const Tensor&, const GradOut&);
void pool2d_forward(void*, const ops::Pool2dParams&, const Tensor&, const Tensor&, Tensor*);
void pool2d_backward(void*, const ops::Pool2dParams&, const Tensor&, const Tensor&, const GradOut&);
void add_forward(void*, const Tensor&, const Tensor&, const Tensor&);
void sum_to(void*, const Tensor&, const GradOut&);
void cast(void*, const Tensor&, const GradOut&);
void concat_forward(void*, int64_t, std::span<const Tensor>, const Tensor&);
void concat_backward(void*, int64_t, const Tensor&, std::span<const int64_t>, std::span<const GradOut>);
void dropout_forward(void*, const ops::DropoutParams&, const Tensor&, const Tensor&, Tensor*);
void dropout_backward(void*, const ops::DropoutParams&, const Tensor&, const Tensor&, const GradOut&);
void cross_entropy_forward(void*, const ops::CrossEntropyParams&, const Tensor&, const Tensor&, const Tensor&,
                           Tensor*);
void cross_entropy_backward(void*, const ops::CrossEntropyParams&, const Tensor&, const Tensor&, const Tensor&,
                            const GradOut&);

void fake_quant_forward(void*, const ops::FakeQuantParams&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                        Tensor*);
void fake_quant_backward(void*, const Tensor&, const Tensor&, const GradOut&);
void min_max(void*, const Tensor&, int64_t, const Tensor&, const Tensor&);
bool qconv2d_forward(void*, const ops::Conv2dParams&, const ops::QConvParams&, const Tensor&,
                     const Tensor&, const Tensor&, const Tensor&);

}  // namespace tandem::cpu::train
