// Pad: grows (or, with negative pads, crops) each dim. Pads are
// [b_0, b_1, ..., e_0, e_1, ...] for the padded axes (all dims by default).
#include <cstdlib>

#include "ops/all_ops.h"
#include "ops/shape_ops.h"

namespace tandem::ops {

PadSpec pad_spec(const InferContext& c) {
  const Shape& in = c.shape(0);
  int64_t rank = int64_t(in.size());
  PadSpec s;
  s.mode = c.attributes().get_string("mode", "constant");
  check(s.mode == "constant" || s.mode == "reflect" || s.mode == "edge" || s.mode == "wrap",
        "pad mode '" + s.mode + "' is not supported");
  std::vector<int64_t> pads;
  if (c.opset >= 11) {
    check(c.has_input(1), "Pad needs a pads input from opset 11");
    const Tensor& t = c.constant(1);
    check(t.dtype() == DType::i64 && t.rank() == 1, "pads must be int64 1-D, got " + t.desc().str());
    pads = t.to_int_vector();
  } else {
    pads = c.attributes().get_ints("pads");
  }
  std::vector<int64_t> axes;
  if (auto a = list_arg(c, "axes", 3, 18); a && c.opset >= 18) axes = normalize_axes(*a, rank);
  else
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  check(pads.size() == 2 * axes.size(), "pads has " + std::to_string(pads.size()) + " entries for " +
                                            std::to_string(axes.size()) + " axes");
  s.begin.assign(size_t(rank), 0);
  s.end.assign(size_t(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    s.begin[size_t(axes[i])] = pads[i];
    s.end[size_t(axes[i])] = pads[i + axes.size()];
  }
  return s;
}

int64_t pad_source_index(int64_t o, int64_t begin, int64_t n, const std::string& mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((i % n) + n) % n;
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1), m = ((i % period) + period) % period;
  return m < n ? m : period - m;
}

namespace {

constexpr int64_t kMaxPad = int64_t(1) << 40;

std::vector<TensorDesc> infer_pad(const InferContext& c) {
  const Shape& in = c.shape(0);
  PadSpec s = pad_spec(c);
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    check(std::abs(s.begin[i]) < kMaxPad && std::abs(s.end[i]) < kMaxPad, "pad value is too large");
    if (in[i] < 0) {
      out[i] = -1;
      continue;
    }
    out[i] = in[i] + s.begin[i] + s.end[i];
    check(out[i] >= 0, "pads crop dim " + std::to_string(i) + " of " + shape_str(in) + " below zero");
    check(s.mode == "constant" || in[i] > 0 || out[i] == 0,
          s.mode + " padding of an empty dim in " + shape_str(in));
  }
  if (c.opset >= 11 && c.has_input(2))
    check(c.inputs[2].dtype == c.inputs[0].dtype && c.inputs[2].numel() == 1,
          "constant_value must be one element of the data's dtype, got " + c.inputs[2].str());
  TensorDesc d{c.inputs[0].dtype, out};
  check_size(d);
  return {d};
}

}  // namespace

void register_pad_schemas() { register_schema({"Pad", 1, 4, infer_pad}); }

}  // namespace tandem::ops
