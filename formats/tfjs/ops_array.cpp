// Shape and data-movement ops. Element order matters to all of them, so
// they work on the native (TF) form, except ConcatV2 and Pad, which stay in
// nchw when their 4-D inputs are.
#include <climits>

#include "formats/tfjs/translators.h"

namespace tandem::tfjs {

namespace {

constexpr int64_t kMaxIndex = INT64_MAX;
constexpr int64_t kMinIndex = INT64_MIN;

void identity(Builder& b, const TfNode& n) { b.define(n, b.input(n, 0)); }

void reshape(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  TfValue shape = b.input(n, 1);
  int rank = -1;
  ValueId s;
  if (const Tensor* t = b.constant(shape)) {
    std::vector<int64_t> dims = t->to_int_vector();
    // TF's 0 is a real zero extent; ONNX's would copy the input extent.
    for (int64_t d : dims) check_supported(d != 0, "Reshape to a zero extent", n.context());
    rank = int(dims.size());
    s = b.int64_constant(n.name + "/shape", dims);
  } else {
    s = b.cast(n, b.native(shape), DType::i64);
    if (shape.rank == 1 && b.graph().value(shape.id).shape.size() == 1)
      rank = int(b.graph().value(shape.id).shape[0]);
  }
  b.define(n, TfValue{b.emit1(n, "Reshape", {b.native(x), s}), rank, false});
}

void squeeze(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  std::vector<int64_t> axes = n.get_ints("squeeze_dims");
  if (axes.empty()) axes = n.get_ints("axis");
  check_supported(!axes.empty() || x.rank >= 0, "Squeeze of all unit axes of unknown rank", n.context());
  std::vector<ValueId> ins{b.native(x)};
  int rank = -1;
  if (!axes.empty()) {
    for (int64_t& a : axes) a = normalize_tf_axis(a, x.rank, n);
    ins.push_back(b.int64_constant(n.name + "/axes", axes));
    rank = x.rank - int(axes.size());
  }
  b.define(n, TfValue{b.emit1(n, "Squeeze", ins), rank, false});
}

void expand_dims(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  std::vector<int64_t> axis = b.constant_ints(n, 1, "ExpandDims axis");
  check(axis.size() == 1, "ExpandDims axis must be one value", n.context());
  int64_t a = normalize_tf_axis(axis[0], x.rank + 1, n);
  ValueId y = b.emit1(n, "Unsqueeze", {b.native(x), b.int64_constant(n.name + "/axes", {a})});
  b.define(n, TfValue{y, x.rank + 1, false});
}

void concat(Builder& b, const TfNode& n) {
  check(n.inputs.size() >= 2, "ConcatV2 needs inputs and an axis", n.context());
  size_t count = n.inputs.size() - 1;
  std::vector<int64_t> axis = b.constant_ints(n, count, "ConcatV2 axis");
  check(axis.size() == 1, "ConcatV2 axis must be one value", n.context());
  std::vector<TfValue> in;
  bool all4 = true, any_nchw = false;
  for (size_t i = 0; i < count; ++i) {
    in.push_back(b.input(n, i));
    all4 &= in.back().rank == 4;
    any_nchw |= in.back().nchw;
  }
  int rank = in[0].rank;
  int64_t a = normalize_tf_axis(axis[0], rank, n);
  bool nchw = all4 && any_nchw;
  std::vector<ValueId> ids;
  for (const TfValue& v : in) ids.push_back(nchw ? b.nchw(v) : b.native(v));
  Attributes attrs;
  attrs.set("axis", nchw ? nhwc_to_nchw_axis(a) : a);
  b.define(n, TfValue{b.emit1(n, "Concat", ids, attrs), rank, nchw});
}

void pack(Builder& b, const TfNode& n) {
  check(!n.inputs.empty(), "Pack needs inputs", n.context());
  int rank = b.input(n, 0).rank;
  int64_t a = normalize_tf_axis(n.get_int("axis", 0), rank + 1, n);
  std::vector<ValueId> ids;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    ids.push_back(b.emit1(n, "Unsqueeze", {b.native(b.input(n, i)), b.int64_constant(n.name + "/axes", {a})}));
  Attributes attrs;
  attrs.set("axis", a);
  b.define(n, TfValue{b.emit1(n, "Concat", ids, attrs), rank + 1, false});
}

// Pad / PadV2 / MirrorPad: paddings [rank, 2] -> ONNX pads [begins..., ends...].
void pad(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  const Tensor& p = b.constant_input(n, 1, "paddings");
  std::vector<int64_t> v = p.to_int_vector();
  check(p.rank() == 2 && p.dim(1) == 2 && (x.rank < 0 || p.dim(0) == x.rank),
        "paddings must be [rank, 2]", n.context());
  int64_t r = p.dim(0);
  bool nchw = x.nchw;
  std::vector<int64_t> pads(size_t(2 * r));
  for (int64_t i = 0; i < r; ++i) {
    int64_t to = nchw ? nhwc_to_nchw_axis(i) : i;
    pads[size_t(to)] = v[size_t(2 * i)];
    pads[size_t(to + r)] = v[size_t(2 * i + 1)];
  }
  Attributes a;
  std::vector<ValueId> ins{x.id, b.int64_constant(n.name + "/pads", pads)};
  if (n.op == "MirrorPad") {
    std::string mode = n.get_string("mode", "REFLECT");
    check_supported(mode == "REFLECT", "MirrorPad mode '" + mode + "'", n.context());
    a.set("mode", std::string("reflect"));
  } else if (n.op == "PadV2") {
    const Tensor& c = b.constant_input(n, 2, "constant_values");
    check(c.numel() == 1, "constant_values must be a scalar", n.context());
    ins.push_back(b.add_constant(n.name + "/value", c.clone().reshaped({})));
  }
  b.define(n, TfValue{b.emit1(n, "Pad", ins, a), x.rank, nchw});
}

void gather(Builder& b, const TfNode& n) {
  TfValue params = b.input(n, 0), indices = b.input(n, 1);
  std::vector<int64_t> axis = n.op == "GatherV2" ? b.constant_ints(n, 2, "GatherV2 axis") : std::vector<int64_t>{0};
  check(axis.size() == 1, "Gather axis must be one value", n.context());
  check_supported(n.get_int("batch_dims", 0) == 0, "Gather with batch_dims", n.context());
  int64_t a = normalize_tf_axis(axis[0], params.rank, n);
  Attributes attrs;
  attrs.set("axis", a);
  int rank = params.rank < 0 || indices.rank < 0 ? -1 : params.rank - 1 + indices.rank;
  b.define(n, TfValue{b.emit1(n, "Gather", {b.native(params), b.native(indices)}, attrs), rank, false});
}

void transpose(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  Attributes a;
  a.set("perm", b.constant_ints(n, 1, "Transpose perm"));
  b.define(n, TfValue{b.emit1(n, "Transpose", {b.native(x)}, a), x.rank, false});
}

void shape(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  ValueId s = b.emit1(n, "Shape", {b.native(x)});
  b.define(n, TfValue{b.cast(n, s, n.get_type("out_type", DType::i32)), 1, false});
}

// TF Slice(begin, size): size -1 means "to the end".
void slice(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  std::vector<int64_t> begin = b.constant_ints(n, 1, "Slice begin");
  std::vector<int64_t> size = b.constant_ints(n, 2, "Slice size");
  check(begin.size() == size.size(), "Slice begin and size differ in length", n.context());
  std::vector<int64_t> ends, axes;
  for (size_t i = 0; i < begin.size(); ++i) {
    ends.push_back(size[i] < 0 ? kMaxIndex : begin[i] + size[i]);
    axes.push_back(int64_t(i));
  }
  ValueId y = b.emit1(n, "Slice", {b.native(x), b.int64_constant(n.name + "/starts", begin),
                                   b.int64_constant(n.name + "/ends", ends), b.int64_constant(n.name + "/axes", axes)});
  b.define(n, TfValue{y, x.rank, false});
}

// StridedSlice as Slice -> Squeeze (shrink_axis_mask) -> Unsqueeze
// (new_axis_mask), walking the slice spec the way TensorFlow does.
struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps, squeeze, unsqueeze;
  int out_rank = 0;
};

SliceSpec strided_slice_spec(const TfNode& n, int rank, const std::vector<int64_t>& begin,
                             const std::vector<int64_t>& end, const std::vector<int64_t>& strides) {
  int64_t begin_mask = n.get_int("begin_mask", 0), end_mask = n.get_int("end_mask", 0);
  int64_t ellipsis = n.get_int("ellipsis_mask", 0), new_axis = n.get_int("new_axis_mask", 0);
  int64_t shrink = n.get_int("shrink_axis_mask", 0);
  check(begin.size() == end.size() && begin.size() == strides.size(),
        "begin, end and strides differ in length", n.context());
  check_supported(rank >= 0, "StridedSlice of unknown rank", n.context());
  size_t spec = begin.size();
  int real = 0;  // spec entries that consume an input axis
  for (size_t i = 0; i < spec; ++i)
    if (!((new_axis >> i) & 1) && !((ellipsis >> i) & 1)) ++real;
  SliceSpec s;
  int64_t dim = 0, out = 0;
  bool seen_ellipsis = false;
  for (size_t i = 0; i < spec; ++i) {
    if ((ellipsis >> i) & 1) {
      check(!seen_ellipsis, "more than one ellipsis", n.context());
      seen_ellipsis = true;
      int64_t covered = rank - real;
      check(covered >= 0, "slice spec longer than the rank", n.context());
      dim += covered;
      out += covered;
      continue;
    }
    if ((new_axis >> i) & 1) {
      s.unsqueeze.push_back(out++);
      continue;
    }
    check(dim < rank, "slice spec longer than the rank", n.context());
    int64_t st = strides[i];
    check(st != 0, "stride 0", n.context());
    if ((shrink >> i) & 1) {
      s.starts.push_back(begin[i]);
      s.ends.push_back(begin[i] == -1 ? kMaxIndex : begin[i] + 1);
      s.steps.push_back(1);
      s.squeeze.push_back(dim);
    } else {
      s.starts.push_back((begin_mask >> i) & 1 ? (st > 0 ? 0 : kMaxIndex) : begin[i]);
      s.ends.push_back((end_mask >> i) & 1 ? (st > 0 ? kMaxIndex : kMinIndex) : end[i]);
      s.steps.push_back(st);
      ++out;
    }
    s.axes.push_back(dim++);
  }
  check(dim <= rank, "slice spec longer than the rank", n.context());
  s.out_rank = int(out + (rank - dim));
  return s;
}

void strided_slice(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  SliceSpec s = strided_slice_spec(n, x.rank, b.constant_ints(n, 1, "begin"), b.constant_ints(n, 2, "end"),
                                   b.constant_ints(n, 3, "strides"));
  ValueId y = b.native(x);
  if (!s.axes.empty())
    y = b.emit1(n, "Slice", {y, b.int64_constant(n.name + "/starts", s.starts), b.int64_constant(n.name + "/ends", s.ends),
                             b.int64_constant(n.name + "/axes", s.axes), b.int64_constant(n.name + "/steps", s.steps)});
  if (!s.squeeze.empty()) y = b.emit1(n, "Squeeze", {y, b.int64_constant(n.name + "/squeeze", s.squeeze)});
  if (!s.unsqueeze.empty()) y = b.emit1(n, "Unsqueeze", {y, b.int64_constant(n.name + "/unsqueeze", s.unsqueeze)});
  if (y == x.id) y = b.emit1(n, "Identity", {y});
  b.define(n, TfValue{y, s.out_rank, false});
}

// TopKV2 over the last axis; TF returns int32 indices.
void top_k(Builder& b, const TfNode& n) {
  TfValue x = b.input(n, 0);
  TfValue k = b.input(n, 1);
  ValueId kv;
  if (const Tensor* t = b.constant(k)) {
    check(t->numel() == 1, "TopKV2 k must be a scalar", n.context());
    kv = b.int64_constant(n.name + "/k", {t->int_at(0)});
  } else {
    kv = b.emit1(n, "Reshape", {b.cast(n, b.native(k), DType::i64), b.int64_constant(n.name + "/k_shape", {1})});
  }
  Attributes a;
  a.set("axis", int64_t(-1));
  a.set("largest", int64_t(1));
  a.set("sorted", int64_t(1));  // TF's sorted=false leaves the order unspecified
  std::vector<ValueId> out = b.emit(n, "TopK", {b.native(x), kv}, a, 2);
  b.define(n.name, {TfValue{out[0], x.rank, false}, TfValue{b.cast(n, out[1], DType::i32), x.rank, false}});
}

}  // namespace

void register_array_translators() {
  register_translator("Identity", identity);
  register_translator("StopGradient", identity);
  register_translator("Snapshot", identity);
  register_translator("Reshape", reshape);
  register_translator("Squeeze", squeeze);
  register_translator("ExpandDims", expand_dims);
  register_translator("ConcatV2", concat);
  register_translator("Pack", pack);
  register_translator("Pad", pad);
  register_translator("PadV2", pad);
  register_translator("MirrorPad", pad);
  register_translator("GatherV2", gather);
  register_translator("Gather", gather);
  register_translator("Transpose", transpose);
  register_translator("Shape", shape);
  register_translator("Slice", slice);
  register_translator("StridedSlice", strided_slice);
  register_translator("TopKV2", top_k);
}

}  // namespace tandem::tfjs
