#pragma once
// Glue between tandem's descriptions and oneDNN's. Every oneDNN call that can
// fail goes through dnnl_guarded(), which turns dnnl::error into tandem::Error.
#include <dnnl.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/tensor.h"
#include "ops/spatial.h"

namespace tandem::cpu {

// The process-wide CPU engine and its in-order stream.
dnnl::engine& engine();
dnnl::stream& stream();

// oneDNN's type for `t`, or nullopt when it has none (bool, i64, f64);
// to_dnnl throws for those.
std::optional<dnnl::memory::data_type> dnnl_type(DType t);
dnnl::memory::data_type to_dnnl(DType t);
dnnl::memory::dims to_dims(const Shape& s);
// Memory descriptor for an activation in one of tandem's layouts. Layouts
// other than plain are only defined for 4-D tensors.
dnnl::memory::desc md(const TensorDesc& d);
dnnl::memory::desc md(DType t, const Shape& s, Layout l);

// A sliding window in oneDNN's terms (a dilation counts the skipped
// elements), the one setup of every convolution and pooling primitive,
// imported or trained.
struct DnnlWindow {
  dnnl::memory::dims kernel, strides, dilates, pad_l, pad_r;
};
// An imported op's window; given the spatial extents `in`, the end pads
// include what ceil_mode's last partial window needs (Window::effective_pad_end).
DnnlWindow dnnl_window(const ops::Window& w, const Shape& in = {});
// Training's 2-D window (PyTorch's arguments: the same padding on both sides).
DnnlWindow dnnl_window_2d(const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2]);

// Whether oneDNN picked a reference implementation: orders of magnitude
// slower than its JIT ones.
bool is_reference(const std::string& impl_info);

// A kernel whose work is one oneDNN primitive (most CPU kernels). Arguments
// are bound by index at run time: `args[k]` says which DNNL_ARG_* receives
// input k (or output k), constant memories are bound once.
class PrimitiveKernel : public Kernel {
 public:
  PrimitiveKernel(dnnl::primitive prim, dnnl::memory::desc scratch_md);
  // Binds DNNL_ARG `arg` to input `index` at run time.
  void bind_input(int arg, int index, const dnnl::memory::desc& m);
  void bind_output(int arg, int index, const dnnl::memory::desc& m);
  // Binds an owned memory (reordered weights, bias) once.
  void bind_constant(int arg, dnnl::memory m);
  // Runs `p` after the primitive, in place on output `index` (bound as its
  // SRC and DST): an activation apart from the primitive (post_ops.h).
  void then_in_place(dnnl::primitive p, int index) { after_.push_back({std::move(p), index}); }
  void run(const void* const* in, void* const* out, const RunContext& ctx) override;
  size_t scratch_bytes() const override { return scratch_md_.get_size(); }

 private:
  struct Binding { int arg; int index; dnnl::memory mem; };
  dnnl::primitive prim_;
  dnnl::memory::desc scratch_md_;
  dnnl::memory scratch_;
  std::vector<Binding> inputs_, outputs_;
  std::unordered_map<int, dnnl::memory> args_;
  std::vector<std::pair<dnnl::primitive, int>> after_;  // then_in_place
};

// Primitive attributes with the scratchpad lent by the executor (RunContext)
// instead of allocated by oneDNN on every execution.
dnnl::primitive_attr user_scratchpad_attr();

// The plan of a kernel that is one primitive reading input 0 (`src`, bound as
// `src_arg`) and writing output 0 (`dst`, bound as `dst_arg`). Inputs beyond
// the first (constants folded into the primitive) are planned plain.
KernelPlan single_primitive_plan(dnnl::primitive prim, const dnnl::memory::desc& scratch,
                                 const dnnl::memory::desc& src, Layout src_layout,
                                 const dnnl::memory::desc& dst, Layout dst_layout,
                                 size_t num_inputs = 1, int src_arg = DNNL_ARG_SRC,
                                 int dst_arg = DNNL_ARG_DST);

// Copies a constant host tensor (plain layout) into a new memory of layout
// `target`, reordering as needed. Used for weights at prepare time.
dnnl::memory constant_memory(const Tensor& value, const dnnl::memory::desc& target);

// Runs `fn` converting dnnl::error into tandem::Error with context `ctx`
// (an imported op's, or a training entry's: cpu/train_common.h).
template <typename F>
auto dnnl_guarded(const ErrorContext& ctx, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN: ") + e.what() + " (status " + std::to_string(int(e.status)) + ")", ctx);
  }
}

}  // namespace tandem::cpu
