// Runs the op cases on one backend: per case, each dtype its f32 inputs
// take and each layout its activations arrive in, against the case's
// reference computed once per dtype.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "ops/schema.h"
#include "tests/backend_ops/checks.h"
#include "tests/backend_ops/op_runner.h"

namespace tandem::backend_ops {

namespace {

bool is_value_input(const OpCase& c, size_t i) {
  const std::vector<int>& v = ops::value_inputs(c.op);
  return std::find(v.begin(), v.end(), int(i)) != v.end();
}

bool takes_dtype(const OpCase& c, size_t i) {
  return c.inputs[i].defined() && c.inputs[i].dtype() == DType::f32 && !is_value_input(c, i);
}

// The dtypes to try: the case's, or only the inputs' own when no input
// takes a float dtype (integer, boolean or no inputs).
std::vector<DType> dtypes_of(const OpCase& c) {
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (takes_dtype(c, i)) return c.dtypes;
  return {DType::f32};
}

bool has_4d_activation(const OpCase& c) {
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (takes_dtype(c, i) && !c.constant[i] && c.inputs[i].rank() == 4) return true;
  return false;
}

// The case's inputs as the kernel sees them in `dtype` (f32 ones rounded),
// and the same values widened back to f32 for the references.
std::pair<std::vector<Tensor>, std::vector<Tensor>> inputs_in(const OpCase& c, DType dtype) {
  std::vector<Tensor> kernel = c.inputs, wide = c.inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (takes_dtype(c, i)) {
      kernel[i] = narrow(c.inputs[i], dtype);
      wide[i] = to_f32(kernel[i]);
    }
  return {kernel, wide};
}

OpCall call_of(const OpCase& c, std::vector<Tensor> inputs, Layout layout) {
  OpCall call;
  call.op = c.op;
  call.attrs = &c.attrs;
  call.inputs = std::move(inputs);
  call.constant = c.constant;
  call.num_outputs = c.num_outputs;
  call.opset = c.opset;
  call.layout = layout;
  return call;
}

// Empty when `got` matches `want`, else what differs. Float outputs by NMSE
// against the tolerance of the coarser of the variant's and the output's
// dtype; integer and boolean outputs, and those of exact cases, to the bit
// (-0 is not +0; NaN matches any NaN: a payload may change in a cast).
std::string compare(const std::vector<Tensor>& got, const std::vector<Tensor>& want, DType dtype,
                    bool exact) {
  if (got.size() != want.size())
    return "outputs: " + std::to_string(got.size()) + ", expected " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::string at = "output " + std::to_string(i) + " ";
    if (got[i].shape() != want[i].shape())
      return at + "shape " + shape_str(got[i].shape()) + ", expected " + shape_str(want[i].shape());
    if (is_floating(got[i].dtype()) && !exact) {
      double tol = std::max(forward_tolerance(dtype), forward_tolerance(got[i].dtype()));
      double e = nmse(got[i], want[i]);
      if (!(e <= tol)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "NMSE %.3g > %.3g", e, tol);
        return at + buf;
      }
    } else {
      std::vector<double> a = widen(got[i]), b = widen(want[i]);
      bool signed_zeros = is_floating(got[i].dtype());
      for (size_t k = 0; k < a.size(); ++k)
        if (!(std::isnan(a[k]) && std::isnan(b[k])) &&
            (a[k] != b[k] || (signed_zeros && std::signbit(a[k]) != std::signbit(b[k]))))
          return at + "element " + std::to_string(k) + " is " + std::to_string(a[k]) +
                 ", expected " + std::to_string(b[k]);
    }
  }
  return "";
}

std::string variant_name(const OpCase& c, DType dtype, Layout layout) {
  return c.name() + " " + std::string(dtype_name(dtype)) + (layout == Layout::plain ? "" : " nhwc");
}

void record(Tally& tally, const std::string& backend, const std::string& what,
            const std::string& problem) {
  const char* known = known_discrepancy(backend, what);
  if (problem.empty()) {
    tally.record(backend, what, Verdict::pass,
                 known ? "(listed as a known discrepancy, now passes: remove it)" : "");
  } else {
    tally.record(backend, what, known ? Verdict::known : Verdict::fail,
                 known ? problem + "; known: " + known : problem);
  }
}

// Whether the backend takes the variant: supports() and prepare() say so.
// A backend may decline any variant in supports() (the graph then runs the
// node elsewhere), as ggml's supports_op. Once it said yes, prepare() may
// still refuse a dtype or layout other than f32 plain (with any Error), or
// any variant with Error::unsupported; another error there is a failure.
bool takes_variant(const BackendUnderTest& b, const OpCall& call, const std::string& what,
                   DType dtype, Tally& tally) {
  bool baseline = dtype == DType::f32 && call.layout == Layout::plain;
  try {
    if (!backend_supports(*b.backend, call)) {
      tally.record(b.name, what, Verdict::unsupported, "supports() is false");
      return false;
    }
    prepare_call(*b.backend, call);
    return true;
  } catch (const Error& e) {
    bool refused = !baseline || e.kind() == ErrorKind::unsupported;
    if (refused)
      tally.record(b.name, what, Verdict::unsupported, e.what());
    else
      record(tally, b.name, what, std::string("prepare threw: ") + e.what());
    return false;
  }
}

// Returns whether the backend ran the variant (whatever the verdict).
bool check_variant(const OpCase& c, const BackendUnderTest& b, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& reference, DType dtype, Layout layout, Tally& tally) {
  std::string what = variant_name(c, dtype, layout);
  OpCall call = call_of(c, inputs, layout);
  if (!takes_variant(b, call, what, dtype, tally)) return false;
  try {
    record(tally, b.name, what, compare(run_call(*b.backend, call), reference, dtype, c.exact));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::unsupported)
      tally.record(b.name, what, Verdict::unsupported, e.what());
    else
      record(tally, b.name, what, std::string("threw: ") + e.what());
  }
  return true;
}

}  // namespace

void check_op_cases(const std::vector<OpCase>& cases, const BackendUnderTest& b, Backend& cpu,
                    const std::string& filter, Tally& tally) {
  std::map<std::string, int> ran;  // per op type: variants the backend ran
  for (const OpCase& c : cases) {
    if (!b.has_kernel(c.op) || c.name().find(filter) == std::string::npos) continue;
    for (DType dtype : dtypes_of(c)) {
      auto [inputs, wide] = inputs_in(c, dtype);
      std::vector<Tensor> reference;
      try {
        reference =
            c.reference ? c.reference(wide) : run_call(cpu, call_of(c, wide, Layout::plain));
      } catch (const Error& e) {
        tally.fail(b.name + " " + variant_name(c, dtype, Layout::plain) +
                   ": the reference threw: " + e.what());
        continue;
      }
      for (Layout layout : {Layout::plain, Layout::nhwc}) {
        if (layout == Layout::nhwc && !(c.nhwc && has_4d_activation(c))) continue;
        ran[c.op] += check_variant(c, b, inputs, reference, dtype, layout, tally);
      }
    }
  }
  // A registered kernel that declines every case of its op is as untested
  // as one without a case.
  for (const auto& [op, n] : ran)
    if (n == 0)
      tally.fail(b.name + " kernel " + op + " declines every case of its op: add one it takes");
}

void check_op_coverage(const std::vector<OpCase>& cases, const BackendUnderTest& b, Tally& tally) {
  // The registries are keyed by op type; every op type a kernel can serve
  // has a schema (shape inference comes first), so the schemas enumerate them.
  for (const std::string& op : ops::registered_ops()) {
    if (!b.has_kernel(op)) continue;
    bool covered =
        std::any_of(cases.begin(), cases.end(), [&](const OpCase& c) { return c.op == op; });
    if (!covered) tally.fail(b.name + " kernel " + op + " has no case in tests/backend_ops");
  }
}

}  // namespace tandem::backend_ops
