// Runs the training cases on one device's table: per case, each dtype and
// layout the table takes for activations; the forward against the CPU
// table's f32 result, the backward against finite differences (overwriting
// and, in f32, accumulating gradients).
#include <cstdio>

#include "tests/backend_ops/checks.h"

namespace tandem::backend_ops {

namespace {

bool is_4d_activation(const TrainInput& in) { return in.activation && in.value.rank() == 4; }

// A host tensor on the table's device in `dtype` and `layout`, converted by
// the table's own cast entry where either differs from the host's.
Tensor up(const TableUnderTest& u, const Tensor& host, DType dtype, Layout layout) {
  if (!host.defined()) return Tensor();  // an absent optional input
  const TrainBackend& t = *u.table;
  Tensor d = t.empty(t.ctx, host.dtype(), host.shape());
  if (host.bytes()) u.memory->copy_from_host(d.raw(), host.raw(), host.bytes());
  if (dtype == host.dtype() && layout == Layout::plain) return d;
  Tensor c = t.empty(t.ctx, dtype, host.shape());
  if (layout != Layout::plain) c = c.with_layout(layout);
  t.cast(t.ctx, d, GradOut{c});
  return c;
}

// A device tensor back on the host as f32 plain (labels and other integer
// tensors as they are).
Tensor down(const TableUnderTest& u, const Tensor& dev) {
  const TrainBackend& t = *u.table;
  Tensor src = dev;
  if (is_floating(dev.dtype()) && (dev.dtype() != DType::f32 || dev.layout() != Layout::plain)) {
    src = t.empty(t.ctx, DType::f32, dev.shape());
    t.cast(t.ctx, dev, GradOut{src});
  }
  u.memory->synchronize();
  Tensor host = Tensor::empty(src.dtype(), src.shape());
  if (host.bytes()) u.memory->copy_to_host(host.raw(), src.raw(), host.bytes());
  return host;
}

TrainCall forward_on(const TableUnderTest& u, const TrainCase& c, const std::vector<Tensor>& host,
                     DType dtype, Layout layout) {
  TrainCall call{*u.table, {}, {}, {}};
  for (size_t i = 0; i < host.size(); ++i) {
    const TrainInput& in = c.inputs[i];
    call.in.push_back(up(u, host[i], in.activation || !host[i].defined() ? dtype : host[i].dtype(),
                         is_4d_activation(in) ? layout : Layout::plain));
  }
  c.forward(call);
  return call;
}

// y = the CPU table's f32 forward of `host`, output 0, on the host.
Tensor cpu_y(const TableUnderTest& cpu, const TrainCase& c, const std::vector<Tensor>& host) {
  TrainCall call = forward_on(cpu, c, host, DType::f32, Layout::plain);
  return down(cpu, call.out.at(0));
}

// d(sum(y * r))/d(input) for each differentiable input (undefined for the
// others), by central differences of the CPU table's f32 forward, summed in
// float64.
std::vector<Tensor> finite_differences(const TableUnderTest& cpu, const TrainCase& c,
                                       const std::vector<Tensor>& host, const Tensor& r) {
  std::vector<double> rv = widen(r);
  std::vector<Tensor> grads(host.size());
  for (size_t k = 0; k < host.size(); ++k) {
    if (!c.inputs[k].differentiable) continue;
    std::vector<double> g(size_t(host[k].numel()));
    for (int64_t i = 0; i < host[k].numel(); ++i) {
      std::vector<Tensor> plus = host, minus = host;
      plus[k] = host[k].clone();
      minus[k] = host[k].clone();
      plus[k].data<float>()[i] += c.h;
      minus[k].data<float>()[i] -= c.h;
      // The step as the f32 inputs really moved.
      double step = double(plus[k].data<float>()[i]) - double(minus[k].data<float>()[i]);
      std::vector<double> yp = widen(cpu_y(cpu, c, plus)), ym = widen(cpu_y(cpu, c, minus));
      double dl = 0;
      for (size_t j = 0; j < yp.size(); ++j) dl += (yp[j] - ym[j]) * rv[j];
      g[size_t(i)] = dl / step;
    }
    grads[k] = f64_tensor(host[k].shape(), g);
  }
  return grads;
}

std::string variant_name(const std::string& kind, const TrainCase& c, DType dtype, Layout layout) {
  return kind + " " + c.name + " " + std::string(dtype_name(dtype)) +
         (layout == Layout::plain ? "" : " nhwc");
}

std::string over(const char* what, double e, double tol) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s NMSE %.3g > %.3g", what, e, tol);
  return buf;
}

void record(Tally& tally, const std::string& backend, const std::string& what,
            const std::string& problem) {
  const char* known = known_discrepancy(backend, what);
  if (problem.empty())
    tally.record(backend, what, Verdict::pass,
                 known ? "(listed as a known discrepancy, now passes: remove it)" : "");
  else
    tally.record(backend, what, known ? Verdict::known : Verdict::fail,
                 known ? problem + "; known: " + known : problem);
}

// The forward's outputs against the CPU table's; empty when they agree.
std::string compare_forward(const TableUnderTest& u, const TableUnderTest& cpu, const TrainCase& c,
                            const TrainCall& call, const std::vector<Tensor>& wide, DType dtype) {
  TrainCall ref = forward_on(cpu, c, wide, DType::f32, Layout::plain);
  double tol = c.exact ? 0 : forward_tolerance(dtype) * c.cross_device_scale;
  for (size_t i = 0; i < call.out.size(); ++i) {
    double e = nmse(down(u, call.out[i]), down(cpu, ref.out[i]));
    if (!(e <= tol)) return over(("output " + std::to_string(i)).c_str(), e, tol);
  }
  return "";
}

// The backward's wanted gradients (one per input) against `want` (times
// `scale`: 2 after a second, accumulating backward) within `tol`; empty when
// they agree.
std::string compare_gradients(const TableUnderTest& u, const std::vector<GradOut>& grads,
                              const std::vector<Tensor>& want, double scale, double tol,
                              const char* against) {
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].wanted()) continue;
    std::vector<double> w = widen(want[k]);
    for (double& v : w) v *= scale;
    double e = nmse(down(u, grads[k].t), f64_tensor(want[k].shape(), w));
    if (!(e <= tol))
      return over(("gradient " + std::to_string(k) + (scale == 1 ? "" : " (accumulated)") +
                   " against " + against)
                      .c_str(),
                  e, tol);
  }
  return "";
}

// The CPU table's f32 gradients for the same inputs and r.
std::vector<Tensor> cpu_gradients(const TableUnderTest& cpu, const TrainCase& c,
                                  const std::vector<Tensor>& wide, const Tensor& r) {
  TrainCall call = forward_on(cpu, c, wide, DType::f32, Layout::plain);
  Tensor dy = up(cpu, r, DType::f32, Layout::plain);
  std::vector<GradOut> grads(c.inputs.size());
  for (size_t k = 0; k < c.inputs.size(); ++k)
    if (c.inputs[k].differentiable)
      grads[k] = {cpu.table->empty(cpu.table->ctx, DType::f32, wide[k].shape()),
                  GradMode::overwrite};
  c.backward(call, dy, grads);
  std::vector<Tensor> out(grads.size());
  for (size_t k = 0; k < grads.size(); ++k)
    if (grads[k].wanted()) out[k] = down(cpu, grads[k].t);
  return out;
}

void check_backward(const TableUnderTest& u, const TableUnderTest& cpu, const TrainCase& c,
                    TrainCall& call, const std::vector<Tensor>& wide, DType dtype, Layout layout,
                    Tally& tally) {
  std::string what = variant_name("grad", c, dtype, layout);
  const Tensor& y = call.out.at(0);
  Tensor r =
      to_f32(narrow(uniform(y.shape(), 91), y.dtype() == DType::f32 ? DType::f32 : y.dtype()));
  std::vector<Tensor> on_cpu = cpu_gradients(cpu, c, wide, r);
  std::vector<Tensor> want = c.exact_gradient       ? c.exact_gradient(wide, r)
                             : c.finite_differences ? finite_differences(cpu, c, wide, r)
                                                    : on_cpu;
  const char* against = c.exact_gradient       ? "the exact rule"
                        : c.finite_differences ? "finite differences"
                                               : "the CPU table";
  Tensor dy = up(u, r, y.dtype(), y.layout());
  std::vector<GradOut> grads(c.inputs.size());
  for (size_t k = 0; k < c.inputs.size(); ++k) {
    if (!c.inputs[k].differentiable) continue;
    const Tensor& in = call.in[k];
    Tensor g = u.table->empty(u.table->ctx, in.dtype(), in.shape());
    grads[k] = {in.rank() == 4 ? g.with_layout(in.layout()) : g, GradMode::overwrite};
  }
  c.backward(call, dy, grads);
  double tol = c.finite_differences ? gradient_tolerance(dtype)
                                    : forward_tolerance(dtype) * c.cross_device_scale;
  std::string problem = compare_gradients(u, grads, want, 1, tol, against);
  // Another device's table also agrees with the CPU's, as closely as forwards do.
  if (problem.empty() && u.table != cpu.table)
    problem = compare_gradients(u, grads, on_cpu, 1,
                                forward_tolerance(dtype) * c.cross_device_scale, "the CPU table");
  if (problem.empty() && dtype == DType::f32 && layout == Layout::plain) {
    for (GradOut& g : grads) g.mode = GradMode::accumulate;
    c.backward(call, dy, grads);
    problem = compare_gradients(u, grads, want, 2, tol, against);
  }
  record(tally, u.name, what, problem);
}

void check_variant(const TableUnderTest& u, const TableUnderTest& cpu, const TrainCase& c,
                   DType dtype, Layout layout, Tally& tally) {
  std::string what = variant_name("train", c, dtype, layout);
  if ((dtype != DType::f32 && !u.table->keeps_16bit_activations) ||
      (layout != Layout::plain && !u.table->takes_nhwc_activations)) {
    tally.record(u.name, what, Verdict::unsupported,
                 "the table does not take this dtype or layout");
    return;
  }
  if (std::vector<std::string> missing = missing_entries(c, *u.table); !missing.empty()) {
    tally.record(u.name, what, Verdict::unsupported, "the table has no " + missing.front());
    return;
  }
  // The forward and gradients are compared with the CPU table's, and the
  // finite differences taken through its forward: without the entry there
  // (the fused batch norm + ReLU is the GPU's alone) there is no reference.
  if (std::vector<std::string> missing = missing_entries(c, *cpu.table); !missing.empty()) {
    tally.record(u.name, what, Verdict::unsupported,
                 "the CPU reference table has no " + missing.front());
    return;
  }
  std::vector<Tensor> wide;
  for (const TrainInput& in : c.inputs)
    wide.push_back(in.activation ? to_f32(narrow(in.value, dtype)) : in.value);
  try {
    TrainCall call = forward_on(u, c, wide, dtype, layout);
    if (call.declined) {
      tally.record(u.name, what, Verdict::unsupported, "the optional entry declined the call");
      return;
    }
    record(tally, u.name, what, compare_forward(u, cpu, c, call, wide, dtype));
    if (c.backward) check_backward(u, cpu, c, call, wide, dtype, layout, tally);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::unsupported)
      tally.record(u.name, what, Verdict::unsupported, e.what());
    else
      record(tally, u.name, what, std::string("threw: ") + e.what());
  }
}

}  // namespace

void check_train_cases(const std::vector<TrainCase>& cases, const TableUnderTest& t,
                       const TableUnderTest& cpu, const std::string& filter, Tally& tally) {
  for (const TrainCase& c : cases) {
    if (c.name.find(filter) == std::string::npos) continue;
    bool any_activation = false, any_4d = false;
    for (const TrainInput& in : c.inputs) {
      any_activation |= in.activation;
      any_4d |= is_4d_activation(in);
    }
    std::vector<DType> dtypes = {DType::f32};
    if (any_activation) dtypes = {DType::f32, DType::f16, DType::bf16};
    for (DType dtype : dtypes)
      for (Layout layout : {Layout::plain, Layout::nhwc})
        if (layout == Layout::plain || (any_4d && !c.plain_only)) check_variant(t, cpu, c, dtype, layout, tally);
  }
}

}  // namespace tandem::backend_ops
