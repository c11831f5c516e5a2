#include "cpu/train_common.h"

#include <memory>

#include "core/memory.h"

namespace tandem::cpu::train {

void run_primitive(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args) {
  const dnnl_memory_desc_t* md =
      dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  const size_t bytes = md ? dnnl_memory_desc_get_size(md) : 0;
  if (bytes > 0) {
    // This thread's, grown as needed: a CPU primitive's execute returns when
    // it is done with it.
    thread_local std::shared_ptr<Storage> scratch;
    if (!scratch || scratch->bytes() < bytes) scratch = Storage::allocate_host(bytes);
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(dnnl::memory::desc(*md), engine(), scratch->data());
  }
  prim.execute(stream(), args);
}

void require_f32(const char* op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (!t->defined()) continue;
    check(t->device().is_cpu(), "the CPU training kernels got a tensor on " + t->device().str(),
          op_context(op, *t));
    check_supported(t->dtype() == DType::f32 && t->layout() == Layout::plain,
                    "the CPU training kernels take plain f32 tensors, got " + t->desc().str(),
                    op_context(op, *t));
  }
}

dnnl::memory::desc plain_md(DType dtype, const dnnl::memory::dims& dims) {
  return md(dtype, Shape(dims.begin(), dims.end()), Layout::plain);
}

dnnl::memory::desc plain_md(const Tensor& t) { return md(t.dtype(), t.shape(), Layout::plain); }

dnnl::memory plain_memory(const Tensor& t) { return dnnl::memory(plain_md(t), engine(), t.raw()); }

dnnl::memory plain_memory(const Tensor& t, const dnnl::memory::dims& dims) {
  return dnnl::memory(plain_md(t.dtype(), dims), engine(), t.raw());
}

dnnl::memory in_layout(const dnnl::memory& m, const dnnl::memory::desc& want) {
  if (m.get_desc() == want) return m;
  dnnl::memory r(want, engine());
  dnnl::reorder(m, r).execute(stream(), const_cast<dnnl::memory&>(m), r);
  return r;
}

OutputMemory::OutputMemory(const dnnl::memory& user, const dnnl::memory::desc& want)
    : user_(user), prim_(user.get_desc() == want ? user : dnnl::memory(want, engine())) {}

void OutputMemory::finish() {
  if (prim_.get_data_handle() != user_.get_data_handle())
    dnnl::reorder(prim_, user_).execute(stream(), prim_, user_);
}

GradTarget::GradTarget(const GradOut& g, const Shape& shape, const char* op) : out_(g) {
  if (g.wanted()) {
    require_f32(op, {&g.t});
    require_shape(op, g.t, shape, "the gradient");
  }
  write_ = g.wanted() && g.mode == GradMode::overwrite ? g.t : Tensor::empty(DType::f32, shape);
}

void GradTarget::commit() {
  if (out_.wanted() && out_.mode == GradMode::accumulate)
    add_into(out_.t.data<float>(), write_.data<float>(), write_.numel());
}

void add_into(float* dst, const float* src, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace tandem::cpu::train
