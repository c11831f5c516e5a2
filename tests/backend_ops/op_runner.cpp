#include "tests/backend_ops/op_runner.h"

#include <memory>

#include "graph/op_eval.h"
#include "ops/schema.h"

namespace tandem::backend_ops {

namespace {

// Backend memory freed with its owner.
class Buffer {
 public:
  Buffer(Backend& b, size_t bytes) : b_(b), p_(bytes ? b.allocate(bytes) : nullptr) {}
  ~Buffer() {
    if (p_) b_.deallocate(p_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }

 private:
  Backend& b_;
  void* p_;
};
using BufferPtr = std::shared_ptr<Buffer>;

bool arrives_in_layout(const OpCall& call, size_t i) {
  const Tensor& t = call.inputs[i];
  bool is_const = i < call.constant.size() && call.constant[i];
  return t.defined() && !is_const && t.rank() == 4 && is_floating(t.dtype());
}

OpDesc describe(const OpCall& call) {
  ops::InferContext ic;
  ic.op_type = call.op;
  ic.node = "case_" + call.op;
  ic.attrs = call.attrs;
  ic.opset = call.opset;
  ic.num_outputs = call.num_outputs;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    bool present = t.defined();
    bool is_const = i < call.constant.size() && call.constant[i];
    TensorDesc d = present ? t.desc() : TensorDesc{};
    if (arrives_in_layout(call, i)) d.layout = call.layout;
    ic.inputs.push_back(d);
    ic.present.push_back(present);
    ic.constants.push_back(present && is_const ? &t : nullptr);
  }
  OpDesc d;
  d.outputs = ops::infer_outputs(ic);
  d.op_type = ic.op_type;
  d.node = ic.node;
  d.attrs = call.attrs;
  d.opset = ic.opset;
  d.inputs = ic.inputs;
  d.present = ic.present;
  d.constants = ic.constants;
  return d;
}

void run_kernel(Backend& b, Kernel& k, const std::vector<const void*>& in,
                const std::vector<void*>& out) {
  Buffer scratch(b, k.scratch_bytes());
  k.run(in.data(), out.data(), RunContext{scratch.get(), k.scratch_bytes()});
  b.synchronize();
}

// `src` (in backend memory, described by `from`) converted to layout `to`
// by the backend's own tandem.Reorder kernel.
BufferPtr reorder(Backend& b, const BufferPtr& src, const TensorDesc& from, Layout to) {
  if (from.layout == to) return src;
  KernelPlan p = prepare_reorder(b, from, to);
  TensorDesc out = from;
  out.layout = to;
  auto dst = std::make_shared<Buffer>(b, out.bytes());
  run_kernel(b, *p.kernel, {src->get()}, {dst->get()});
  return dst;
}

BufferPtr upload(Backend& b, const Tensor& host) {
  auto buf = std::make_shared<Buffer>(b, host.bytes());
  if (host.bytes()) b.copy_from_host(buf->get(), host.raw(), host.bytes());
  return buf;
}

}  // namespace

bool backend_supports(Backend& backend, const OpCall& call) {
  return backend.supports(describe(call));
}

void prepare_call(Backend& backend, const OpCall& call) { backend.prepare(describe(call)); }

std::vector<Tensor> run_call(Backend& b, const OpCall& call) {
  OpDesc d = describe(call);
  KernelPlan plan = b.prepare(d);

  std::vector<BufferPtr> in(call.inputs.size());
  std::vector<const void*> in_ptrs(call.inputs.size(), nullptr);
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!call.inputs[i].defined()) continue;
    TensorDesc plain = call.inputs[i].desc();
    in[i] = reorder(b, upload(b, call.inputs[i]), plain, plan.input_layouts.at(i));
    in_ptrs[i] = in[i]->get();
  }
  std::vector<BufferPtr> out(d.outputs.size());
  std::vector<void*> out_ptrs(d.outputs.size(), nullptr);
  std::vector<TensorDesc> out_desc = d.outputs;
  for (size_t i = 0; i < d.outputs.size(); ++i) {
    out_desc[i].layout = plan.output_layouts.at(i);
    out[i] = i == 0 && plan.alias_input >= 0 ? in.at(size_t(plan.alias_input))
                                             : std::make_shared<Buffer>(b, out_desc[i].bytes());
    out_ptrs[i] = out[i]->get();
  }
  if (plan.kernel) run_kernel(b, *plan.kernel, in_ptrs, out_ptrs);

  std::vector<Tensor> result;
  for (size_t i = 0; i < out.size(); ++i) {
    TensorDesc plain = out_desc[i];
    plain.layout = Layout::plain;
    BufferPtr p = reorder(b, out[i], out_desc[i], Layout::plain);
    Tensor host = Tensor::empty(plain);
    if (host.bytes()) b.copy_to_host(host.raw(), p->get(), host.bytes());
    result.push_back(host);
  }
  return result;
}

}  // namespace tandem::backend_ops
