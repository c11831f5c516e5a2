#include "cpu/cpu_backend.h"

#include <dnnl.hpp>
#include <omp.h>

#include <cstdlib>
#include <cstring>

#include "core/memory.h"
#include "cpu/dnnl_utils.h"
#include "cpu/registry.h"

namespace tandem::cpu {

namespace {

bool touches_bf16(const OpDesc& op) {
  for (const TensorDesc& d : op.inputs)
    if (d.dtype == DType::bf16) return true;
  for (const TensorDesc& d : op.outputs)
    if (d.dtype == DType::bf16) return true;
  return false;
}

}  // namespace

bool CpuBackend::supports(const OpDesc& op) const { return find_kernel(op.op_type) != nullptr; }

KernelPlan CpuBackend::prepare(const OpDesc& op) {
  KernelFactory f = find_kernel(op.op_type);
  if (!f) throw Error::unsupported("no CPU kernel for this op", op.context());
  try {
    KernelPlan plan = dnnl_guarded(op.context(), [&] { return f(op); });
    if (plan.input_layouts.size() < op.inputs.size()) plan.input_layouts.resize(op.inputs.size(), Layout::plain);
    if (plan.output_layouts.size() < op.outputs.size()) plan.output_layouts.resize(op.outputs.size(), Layout::plain);
    return plan;
  } catch (const Error& e) {
    // tandem's own bf16 loops run anywhere; oneDNN's refuse a CPU without
    // bf16, which is what the user needs to hear.
    if (!has_bf16() && touches_bf16(op))
      throw Error::unsupported("bf16 on this CPU: oneDNN has no bf16 kernels here (" +
                                   instruction_set() + "): " + e.what(),
                               op.context());
    throw e.with_context(op.context());
  }
}

void* CpuBackend::allocate(size_t bytes) {
  size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded ? rounded : kHostAlignment);
  if (!p) throw Error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void CpuBackend::deallocate(void* ptr) { std::free(ptr); }

void CpuBackend::copy_from_host(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void CpuBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

CpuBackend& cpu_backend() {
  static CpuBackend b;
  return b;
}

void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

std::string instruction_set() {
  using isa = dnnl::cpu_isa;
  const dnnl_version_t* v = dnnl_version();
  std::string r = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch) + ", ";
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::avx512_core_amx: return r + "avx512_core_amx (int8 and bf16 on AMX tiles)";
    case isa::avx512_core_bf16: return r + "avx512_core_bf16 (int8 on VNNI)";
    case isa::avx512_core_vnni: return r + "avx512_core_vnni (int8 on VNNI)";
    case isa::avx2_vnni: return r + "avx2_vnni (int8 on VNNI)";
    case isa::avx512_core: return r + "avx512_core (int8 without VNNI)";
    case isa::avx2: return r + "avx2 (int8 without VNNI)";
    default: return r + "its portable kernels (no x86 vector extensions found)";
  }
}

bool has_bf16() {
  // Asked once: whether oneDNN will build a bf16 primitive at all.
  static const bool yes = [] {
    try {
      const dnnl::memory::desc m({1, 16}, dnnl::memory::data_type::bf16,
                                 dnnl::memory::format_tag::ab);
      dnnl::eltwise_forward::primitive_desc pd(
          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::eltwise_relu, m, 0.f),
          engine());
      dnnl::binary::primitive_desc bd(dnnl::binary::desc(dnnl::algorithm::binary_add, m, m, m),
                                      engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return yes;
}

bool integer_conv_takes_float_residual() {
#if defined(__x86_64__) || defined(_M_X64)
  return true;
#else
  return false;
#endif
}

}  // namespace tandem::cpu
