#include "cpu/dnnl_utils.h"

namespace tandem::cpu {

using tag = dnnl::memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  static dnnl::stream s(engine());
  return s;
}

std::optional<dnnl::memory::data_type> dnnl_type(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
    case DType::f32: return dt::f32;
    case DType::f16: return dt::f16;
    case DType::bf16: return dt::bf16;
    case DType::i8: return dt::s8;
    case DType::u8: return dt::u8;
    case DType::i32: return dt::s32;
    default:
      return std::nullopt;
  }
}

dnnl::memory::data_type to_dnnl(DType t) {
  if (std::optional<dnnl::memory::data_type> d = dnnl_type(t)) return *d;
  throw Error("dtype " + std::string(dtype_name(t)) + " has no oneDNN equivalent");
}

dnnl::memory::dims to_dims(const Shape& s) { return dnnl::memory::dims(s.begin(), s.end()); }

dnnl::memory::desc md(DType t, const Shape& s, Layout l) {
  auto dims = to_dims(s);
  auto dt = to_dnnl(t);
  if (l == Layout::plain) {
    auto st = contiguous_strides(s);
    return dnnl::memory::desc(dims, dt, dnnl::memory::dims(st.begin(), st.end()));
  }
  check(s.size() == 4, "layout " + std::string(layout_name(l)) + " needs a 4-D tensor, got " + shape_str(s));
  switch (l) {
    case Layout::nhwc: return dnnl::memory::desc(dims, dt, tag::nhwc);
    case Layout::blocked8: return dnnl::memory::desc(dims, dt, tag::nChw8c);
    case Layout::blocked16: return dnnl::memory::desc(dims, dt, tag::nChw16c);
    default: break;
  }
  throw Error("unknown layout");
}

dnnl::memory::desc md(const TensorDesc& d) { return md(d.dtype, d.shape, d.layout); }

DnnlWindow dnnl_window(const ops::Window& w, const Shape& in) {
  DnnlWindow d;
  for (size_t i = 0; i < w.rank(); ++i) {
    d.kernel.push_back(w.kernel[i]);
    d.strides.push_back(w.strides[i]);
    d.dilates.push_back(w.dilations[i] - 1);
    d.pad_l.push_back(w.pads_begin[i]);
    d.pad_r.push_back(in.empty() ? w.pads_end[i] : w.effective_pad_end(i, in[i]));
  }
  return d;
}

DnnlWindow dnnl_window_2d(const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                          const int64_t dilation[2]) {
  DnnlWindow d;
  d.kernel = {kernel[0], kernel[1]};
  d.strides = {stride[0], stride[1]};
  d.dilates = {dilation[0] - 1, dilation[1] - 1};
  d.pad_l = d.pad_r = {padding[0], padding[1]};
  return d;
}

bool is_reference(const std::string& impl) { return impl.rfind("ref", 0) == 0 || impl.find(":ref") != std::string::npos; }

PrimitiveKernel::PrimitiveKernel(dnnl::primitive prim, dnnl::memory::desc scratch_md)
    : prim_(std::move(prim)), scratch_md_(std::move(scratch_md)) {}

void PrimitiveKernel::bind_input(int arg, int index, const dnnl::memory::desc& m) {
  inputs_.push_back({arg, index, dnnl::memory(m, engine(), DNNL_MEMORY_NONE)});
  args_[arg] = inputs_.back().mem;
}

void PrimitiveKernel::bind_output(int arg, int index, const dnnl::memory::desc& m) {
  outputs_.push_back({arg, index, dnnl::memory(m, engine(), DNNL_MEMORY_NONE)});
  args_[arg] = outputs_.back().mem;
}

void PrimitiveKernel::bind_constant(int arg, dnnl::memory m) { args_[arg] = std::move(m); }

void PrimitiveKernel::run(const void* const* in, void* const* out, const RunContext& ctx) {
  for (auto& b : inputs_) b.mem.set_data_handle(const_cast<void*>(in[b.index]));
  for (auto& b : outputs_) b.mem.set_data_handle(out[b.index]);
  if (scratch_md_.get_size() > 0) {
    if (!scratch_) scratch_ = dnnl::memory(scratch_md_, engine(), DNNL_MEMORY_NONE);
    scratch_.set_data_handle(ctx.scratch);
    args_[DNNL_ARG_SCRATCHPAD] = scratch_;
  }
  prim_.execute(stream(), args_);
  for (auto& [prim, index] : after_)
    for (const Binding& b : outputs_)
      if (b.index == index) prim.execute(stream(), {{DNNL_ARG_SRC, b.mem}, {DNNL_ARG_DST, b.mem}});
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

KernelPlan single_primitive_plan(dnnl::primitive prim, const dnnl::memory::desc& scratch,
                                 const dnnl::memory::desc& src, Layout src_layout,
                                 const dnnl::memory::desc& dst, Layout dst_layout, size_t num_inputs,
                                 int src_arg, int dst_arg) {
  auto k = std::make_unique<PrimitiveKernel>(std::move(prim), scratch);
  k->bind_input(src_arg, 0, src);
  k->bind_output(dst_arg, 0, dst);
  KernelPlan plan;
  plan.kernel = std::move(k);
  plan.input_layouts.assign(num_inputs, Layout::plain);
  plan.input_layouts[0] = src_layout;
  plan.output_layouts = {dst_layout};
  return plan;
}

dnnl::memory constant_memory(const Tensor& value, const dnnl::memory::desc& target) {
  dnnl::memory dst(target, engine());
  dnnl::memory::desc src_md = md(value.dtype(), value.shape(), Layout::plain);
  if (src_md.dims() != target.dims()) src_md = src_md.reshape(target.dims());
  dnnl::memory src(src_md, engine(), value.raw());
  dnnl::reorder(src, dst).execute(stream(), src, dst);
  stream().wait();
  return dst;
}

}  // namespace tandem::cpu
