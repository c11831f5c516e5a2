#include "graph/plan.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>

#include "graph/op_eval.h"
#include "profile/dynamic_location.h"
#include "profile/zone.h"

namespace tandem {

// Turns graph nodes into steps: prepares kernels, inserts reorders where a
// consumer wants another layout than its producer made, and records
// lifetimes for the memory planner.
class ExecutionPlan::Builder {
 public:
  Builder(ExecutionPlan& p, const Graph& g) : p_(p), g_(g), value_slot_(g.values.size(), -1) {}

  void build() {
    last_reader_.assign(g_.values.size(), -1);
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      for (ValueId v : g_.nodes[n].inputs)
        if (v != kNoValue) last_reader_[size_t(v)] = int(n);
    for (ValueId v : g_.outputs) last_reader_[size_t(v)] = std::numeric_limits<int>::max();
    for (size_t i = 0; i < g_.inputs.size(); ++i) add_input(int(i), g_.inputs[i]);
    for (size_t n = 0; n < g_.nodes.size(); ++n) {
      current_node_ = int(n);
      try {
        add_node(g_.nodes[n]);
      } catch (const Error& e) {
        throw e.with_context(g_.context(NodeId(n)));
      }
    }
    for (ValueId v : g_.outputs) {
      p_.output_slots_.push_back(slot_in_layout(slot_of(v), Layout::plain, g_.value(v).name));
      materialize(p_.output_slots_.back());
    }
    finish_lifetimes();
  }

 private:
  ExecutionPlan& p_;
  const Graph& g_;
  std::vector<int> value_slot_;
  std::map<std::pair<int, Layout>, int> reordered_;  // (slot, layout) -> slot
  std::vector<int> last_reader_;  // per value: index of the last node reading it
  int current_node_ = -1;

  // Whether output 0 of the current node may overwrite input i's buffer: an
  // arena value read for the last time here, once, and seen through no view.
  bool reusable(const Node& n, size_t i, int slot) const {
    ValueId v = n.inputs[i];
    if (v == kNoValue || slot < 0 || p_.slots_[size_t(slot)].kind != Slot::Kind::arena) return false;
    if (last_reader_[size_t(v)] != current_node_) return false;
    if (std::count(n.inputs.begin(), n.inputs.end(), v) != 1) return false;
    for (const Slot& s : p_.slots_)
      if (s.kind == Slot::Kind::view && s.view_of == slot) return false;
    return true;
  }

  int new_slot(Slot s) {
    p_.slots_.push_back(std::move(s));
    return int(p_.slots_.size() - 1);
  }

  void add_input(int index, ValueId v) {
    const Value& val = g_.value(v);
    check(shape_is_static(val.shape), "input '" + val.name + "' has unknown extents " + shape_str(val.shape));
    Slot s;
    s.kind = Slot::Kind::input;
    s.desc = TensorDesc{val.dtype, val.shape};
    s.input_index = index;
    value_slot_[size_t(v)] = new_slot(std::move(s));
    p_.input_descs_.push_back(TensorDesc{val.dtype, val.shape});
    p_.input_names_.push_back(val.name);
  }

  // A constant's slot. On the CPU it is the host tensor itself; elsewhere
  // the device copy is made by materialize(), for the steps that read it.
  int constant_slot(const Tensor& t) {
    Slot s;
    s.kind = Slot::Kind::constant;
    s.desc = t.desc();
    if (p_.backend_.device().is_cpu()) {
      Tensor keep = t;
      s.storage = std::shared_ptr<void>(keep.raw(), [keep](void*) mutable { keep = Tensor(); });
    } else {
      s.pending = t;
    }
    return new_slot(std::move(s));
  }

  // Makes sure a constant slot that a step reads at run time is on the device.
  void materialize(int slot) {
    Slot& s = p_.slots_[size_t(slot)];
    if (s.kind != Slot::Kind::constant || s.storage) return;
    Backend& b = p_.backend_;
    void* d = b.allocate(std::max<size_t>(s.pending.bytes(), 1));
    s.storage = std::shared_ptr<void>(d, [&b](void* ptr) { b.deallocate(ptr); });
    b.copy_from_host(d, s.pending.raw(), s.pending.bytes());
    s.pending = Tensor();
  }

  // The host value of a constant slot, wherever it is now.
  Tensor constant_value(const Slot& s) {
    if (s.pending.defined()) return s.pending;
    if (p_.backend_.device().is_cpu()) return Tensor::wrap(s.desc, s.storage.get());
    Tensor host = Tensor::empty(s.desc);
    p_.backend_.copy_to_host(host.raw(), s.storage.get(), s.desc.bytes());
    return host;
  }

  int slot_of(ValueId v) {
    if (value_slot_[size_t(v)] >= 0) return value_slot_[size_t(v)];
    const Value& val = g_.value(v);
    check(val.constant.has_value(), "value '" + val.name + "' is read before it is computed");
    value_slot_[size_t(v)] = constant_slot(*val.constant);
    return value_slot_[size_t(v)];
  }

  // The slot holding `slot`'s value in `layout`, adding a reorder if needed.
  int slot_in_layout(int slot, Layout layout, const std::string& what) {
    if (p_.slots_[size_t(slot)].desc.layout == layout) return slot;
    auto key = std::make_pair(slot, layout);
    if (auto it = reordered_.find(key); it != reordered_.end()) return it->second;
    const Slot src = p_.slots_[size_t(slot)];
    int out;
    if (src.kind == Slot::Kind::constant) {
      // Weights in another layout: convert once, now.
      out = constant_slot(reorder_tensor(p_.backend_, constant_value(src), layout));
    } else {
      out = add_reorder_step(slot, layout, what);
    }
    reordered_[key] = out;
    return out;
  }

  int add_reorder_step(int slot, Layout layout, const std::string& what) {
    auto attrs = std::make_shared<Attributes>();
    attrs->set("to_layout", int64_t(layout));
    OpDesc d;
    d.op_type = kReorderOp;
    d.node = "reorder:" + what;
    d.attrs = attrs.get();
    d.inputs = {p_.slots_[size_t(slot)].desc};
    d.present = {true};
    d.constants = {nullptr};
    TensorDesc out = d.inputs[0];
    out.layout = layout;
    d.outputs = {out};
    KernelPlan kp = p_.backend_.prepare(d);
    materialize(slot);
    Slot s;
    s.desc = out;
    int o = new_slot(std::move(s));
    Step st{d.node, d.op_type, std::move(kp.kernel), {slot}, {o}};
    p_.steps_.push_back(std::move(st));
    ++p_.stats_.reorders;
    return o;
  }

  OpDesc describe(const Node& n, const std::vector<int>& in_slots) {
    OpDesc d;
    d.op_type = n.op_type;
    d.node = n.name;
    d.attrs = &n.attrs;
    d.opset = g_.opset;
    d.allow_tf32 = g_.allow_tf32;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      bool present = n.inputs[i] != kNoValue;
      d.present.push_back(present);
      d.inputs.push_back(present ? p_.slots_[size_t(in_slots[i])].desc : TensorDesc{});
      const Value* v = present ? &g_.value(n.inputs[i]) : nullptr;
      d.constants.push_back(v && v->constant ? &*v->constant : nullptr);
    }
    for (ValueId o : n.outputs) {
      const Value& v = g_.value(o);
      check(shape_is_static(v.shape), "output '" + v.name + "' has unknown extents " + shape_str(v.shape));
      d.outputs.push_back(TensorDesc{v.dtype, v.shape});
    }
    return d;
  }

  void add_node(const Node& n) {
    std::vector<int> in_slots;
    for (ValueId v : n.inputs) in_slots.push_back(v == kNoValue ? -1 : slot_of(v));
    OpDesc d = describe(n, in_slots);
    for (size_t i = 0; i < in_slots.size(); ++i) d.reusable.push_back(reusable(n, i, in_slots[i]));
    if (!p_.backend_.supports(d))
      throw Error::unsupported("unsupported op on " + p_.backend_.name(), d.context());
    KernelPlan kp = [&] {
      TANDEM_ZONE_CAT("prepare kernel", "graph");
      return p_.backend_.prepare(d);
    }();
    for (size_t i = 0; i < in_slots.size(); ++i) {
      if (in_slots[i] < 0) continue;
      in_slots[i] = slot_in_layout(in_slots[i], kp.input_layouts[i], g_.value(n.inputs[i]).name);
      if (i >= kp.keeps_constant.size() || !kp.keeps_constant[i]) materialize(in_slots[i]);
    }
    Step st{n.name, n.op_type, std::move(kp.kernel), in_slots, {}};
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      Slot s;
      s.desc = d.outputs[k];
      s.desc.layout = kp.output_layouts[k];
      if (k == 0 && kp.alias_input >= 0) {
        s.kind = Slot::Kind::view;
        s.view_of = in_slots[size_t(kp.alias_input)];
      } else if (k == 0 && kp.inplace_input >= 0) {
        // The input was reusable, so even a reorder made for it here has no
        // other reader: the output may take its buffer.
        check(d.is_reusable(size_t(kp.inplace_input)), "kernel asked to work in place on a live input",
              d.context());
        s.kind = Slot::Kind::view;
        s.view_of = in_slots[size_t(kp.inplace_input)];
      }
      int o = new_slot(std::move(s));
      if (n.outputs[k] != kNoValue) value_slot_[size_t(n.outputs[k])] = o;
      st.outputs.push_back(o);
    }
    p_.steps_.push_back(std::move(st));
  }

  int root(int s) const {
    while (p_.slots_[size_t(s)].kind == Slot::Kind::view) s = p_.slots_[size_t(s)].view_of;
    return s;
  }

  void touch(int slot, int step) {
    Slot& r = p_.slots_[size_t(root(slot))];
    if (r.first_step < 0) r.first_step = step;
    r.last_step = std::max(r.last_step, step);
  }

  void finish_lifetimes() {
    for (size_t i = 0; i < p_.steps_.size(); ++i) {
      for (int s : p_.steps_[i].outputs) touch(s, int(i));
      for (int s : p_.steps_[i].inputs)
        if (s >= 0) touch(s, int(i));
    }
    // Outputs are read after the last step.
    for (int s : p_.output_slots_) touch(s, int(p_.steps_.size()));
  }
};

ExecutionPlan::ExecutionPlan(const Graph& g, Backend& backend) : backend_(backend), source_(g.source) {
  Builder(*this, g).build();
  for (const Slot& s : slots_)
    if (s.kind == Slot::Kind::arena) stats_.unplanned_bytes += s.desc.bytes();
  add_scratch_slots();
  stats_.arena_bytes = plan_memory(slots_);
  stats_.steps = int(steps_.size());
  for (Step& st : steps_) st.zone = profile::dynamic_location(st.op_type + " " + st.node, "op");
  arena_ = backend_.allocate(std::max<size_t>(stats_.arena_bytes, 64));
}

// A kernel's scratch is an arena slot live during its step only, so it
// shares memory with values that are dead then (conv1's packed input with
// the deeper layers' activations) instead of adding the largest scratch on
// top of the arena.
void ExecutionPlan::add_scratch_slots() {
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& st = steps_[i];
    size_t bytes = st.kernel ? st.kernel->scratch_bytes() : 0;
    if (bytes == 0) continue;
    Slot s;
    s.desc = TensorDesc{DType::u8, Shape{int64_t(bytes)}};
    s.first_step = s.last_step = int(i);
    slots_.push_back(std::move(s));
    st.scratch = int(slots_.size() - 1);
    stats_.scratch_bytes = std::max(stats_.scratch_bytes, bytes);
  }
}

ExecutionPlan::~ExecutionPlan() {
  recording_.reset();  // it refers to the kernels and buffers below
  steps_.clear();  // kernels may refer to memory below
  if (arena_) backend_.deallocate(arena_);
  for (void* p : device_inputs_)
    if (p) backend_.deallocate(p);
}

void* ExecutionPlan::input_pointer(size_t index, const Tensor& t) {
  if (backend_.device().is_cpu() || t.device() == backend_.device()) return t.raw();
  if (device_inputs_.size() <= index) device_inputs_.resize(index + 1, nullptr);
  void*& buf = device_inputs_[index];
  if (!buf) buf = backend_.allocate(std::max<size_t>(input_descs_[index].bytes(), 64));
  backend_.copy_from_host(buf, t.raw(), t.bytes());
  return buf;
}

void ExecutionPlan::launch_steps(const std::vector<void*>& ptr, std::vector<double>* step_ms) {
  std::vector<const void*> in;
  std::vector<void*> out;
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& st = steps_[i];
    if (!st.kernel) continue;
    in.clear();
    out.clear();
    for (int s : st.inputs) in.push_back(s >= 0 ? ptr[size_t(s)] : nullptr);
    for (int s : st.outputs) out.push_back(ptr[size_t(s)]);
    RunContext rc;
    if (st.scratch >= 0) rc = {ptr[size_t(st.scratch)], slots_[size_t(st.scratch)].desc.bytes()};
    auto t0 = std::chrono::steady_clock::now();
    {
      TANDEM_ZONE_AT(st.zone);
      st.kernel->run(in.data(), out.data(), rc);
    }
    if (step_ms) {
      backend_.synchronize();
      (*step_ms)[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
  }
}

std::vector<void*> ExecutionPlan::bind(const std::vector<Tensor>& inputs) {
  ErrorContext ctx{source_, "", "", ""};
  check(inputs.size() == input_descs_.size(),
        "model takes " + std::to_string(input_descs_.size()) + " inputs, got " + std::to_string(inputs.size()), ctx);
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorDesc want = input_descs_[i];
    check(inputs[i].defined() && inputs[i].desc() == want,
          "input '" + input_names_[i] + "' must be " + want.str() + ", got " +
              (inputs[i].defined() ? inputs[i].desc().str() : std::string("nothing")), ctx);
  }
  std::vector<void*> ptr(slots_.size(), nullptr);
  for (size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    switch (slot.kind) {
      case Slot::Kind::input:
        ptr[s] = input_pointer(size_t(slot.input_index), inputs[size_t(slot.input_index)]);
        break;
      case Slot::Kind::constant: ptr[s] = slot.storage.get(); break;
      case Slot::Kind::arena: ptr[s] = static_cast<char*>(arena_) + slot.offset; break;
      case Slot::Kind::view: ptr[s] = ptr[size_t(slot.view_of)]; break;
    }
  }
  return ptr;
}

std::vector<Tensor> ExecutionPlan::fetch_outputs(const std::vector<void*>& ptr, const std::vector<Tensor>& into) {
  std::vector<Tensor> results;
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    int s = output_slots_[i];
    bool given = i < into.size() && into[i].defined();
    TANDEM_CHECK(!given || into[i].desc() == slots_[size_t(s)].desc, "output buffer does not match the plan's output",
                 {source_, "", "", into[i].desc().str()});
    Tensor t = given ? into[i] : Tensor::empty(slots_[size_t(s)].desc);
    backend_.copy_to_host(t.raw(), ptr[size_t(s)], t.bytes());
    results.push_back(std::move(t));
  }
  return results;
}

std::vector<Tensor> ExecutionPlan::run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& into) {
  TANDEM_ZONE_CAT("plan.run", "graph");
  std::vector<void*> ptr = bind(inputs);
  static const bool graphs_off = std::getenv("TANDEM_CUDA_GRAPHS") && std::string(std::getenv("TANDEM_CUDA_GRAPHS")) == "0";
  if (backend_.device().is_cpu() || graphs_off) {
    launch_steps(ptr);
  } else if (recording_ && recorded_pointers_ == ptr) {
    TANDEM_ZONE_CAT("replay recorded plan", "graph");
    recording_->replay();
  } else if (runs_ > 0) {
    recording_ = backend_.record([&] { launch_steps(ptr); });
    recorded_pointers_ = ptr;
    if (recording_) recording_->replay();
    else launch_steps(ptr);
  } else {
    launch_steps(ptr);
  }
  ++runs_;
  backend_.synchronize();
  return fetch_outputs(ptr, into);
}

std::vector<double> ExecutionPlan::time_steps(const std::vector<Tensor>& inputs) {
  std::vector<void*> ptr = bind(inputs);
  backend_.synchronize();
  std::vector<double> ms(steps_.size(), 0.0);
  launch_steps(ptr, &ms);
  ++runs_;
  return ms;
}

}  // namespace tandem
