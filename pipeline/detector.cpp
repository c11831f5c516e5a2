#include "pipeline/detector.h"

#include <algorithm>
#include <map>

#include "cpu/cpu_backend.h"
#include "formats/load_model.h"
#include "graph/passes.h"
#include "pipeline/centernet.h"
#include "pipeline/model_store.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

std::vector<ValueId> add_node(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs,
                              Attributes attrs, int outputs = 1) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (int i = 0; i < outputs; ++i) {
    Value v;
    v.name = name + (i ? ":" + std::to_string(i) : "");
    v.dtype = i ? DType::i64 : DType::f32;
    n.outputs.push_back(g.add_value(std::move(v)));
  }
  std::vector<ValueId> out = n.outputs;
  g.add_node(std::move(n));
  return out;
}

// The graph's own decoding ranks peaks over the whole batch (the converter
// fixed batch 1 into its Reshape); this ranks each image's: Reshape to
// [N, h * w * classes], TopK k. Outputs: scores [N, k], flat indices [N, k],
// and the size head.
void append_peak_ranking(Graph& g, ValueId peaks, ValueId sizes, int k) {
  ValueId shape = g.add_constant("tandem/peaks/shape", Tensor::from_vector<int64_t>({0, -1}, {2}));
  ValueId flat = add_node(g, "Reshape", "tandem/peaks/flatten", {peaks, shape}, {})[0];
  ValueId kv = g.add_constant("tandem/peaks/k", Tensor::from_vector<int64_t>({k}, {1}));
  Attributes a;
  a.set("axis", int64_t(-1));
  std::vector<ValueId> best = add_node(g, "TopK", "tandem/peaks/top_k", {flat, kv}, a, 2);
  g.outputs = {best[0], best[1], sizes};
}

// The peak map's extents for one image: the loader leaves intermediate
// shapes open until the input's batch is bound, so infer them on a copy.
Shape peak_map_shape(const Graph& g) {
  Graph one = g;
  std::map<std::string, Shape> shapes;
  for (ValueId in : one.inputs) {
    Shape s = one.value(in).shape;
    if (!s.empty() && s[0] < 0) s[0] = 1;
    shapes[one.value(in).name] = s;
  }
  bind_input_shapes(one, shapes);
  infer_and_fold(one, cpu::cpu_backend());
  return one.value(one.outputs.at(0)).shape;
}

// The importer's NCHW -> NHWC Transpose that ends at the peak map, or null.
// Ranking its input instead ranks the same values without writing the map
// once more (on the CPU the transpose took 7% of the network's time).
const Node* nhwc_transpose_of(const Graph& g, ValueId v) {
  NodeId p = g.value(v).producer;
  if (p < 0) return nullptr;
  const Node& n = g.nodes[size_t(p)];
  if (n.dead || n.op_type != "Transpose" || n.inputs.size() != 1) return nullptr;
  return n.attrs.get_ints("perm", {}) == std::vector<int64_t>{0, 2, 3, 1} ? &n : nullptr;
}

Graph load_detector_graph(const DetectorOptions& o, int& heat_height, int& heat_width, int& classes,
                          bool& class_major) {
  ModelLoadOptions lo;
  lo.tfjs.outputs = {o.peaks_output, o.size_output};
  lo.tfjs.dynamic_batch = true;  // the converter fixed batch 1; the heads do not care
  Graph g = load_model(o.model, lo);
  const Shape heat = peak_map_shape(g);
  check(heat.size() == 4 && heat[1] > 0 && heat[2] > 0 && heat[3] > 0,
        "the detector's peak map '" + o.peaks_output + "' is not [N, h, w, classes] with fixed h, w, classes",
        {o.model, "", "", shape_str(heat)});
  heat_height = int(heat[1]), heat_width = int(heat[2]), classes = int(heat[3]);
  ValueId peaks = g.outputs[0];
  const Node* t = nhwc_transpose_of(g, peaks);
  class_major = t != nullptr;
  if (t) peaks = t->inputs[0];
  append_peak_ranking(g, peaks, g.outputs[1], std::max(1, o.max_detections));
  g.remove_unused_nodes();
  return g;
}

SessionOptions detector_session_options(const DetectorOptions& o) {
  SessionOptions so = SessionOptions::on(o.device, o.precision, o.threads);
  so.strict_device = o.strict_device;
  return so;
}

}  // namespace

Graph detector_graph(const DetectorOptions& options) {
  int h = 0, w = 0, c = 0;
  bool class_major = false;
  return load_detector_graph(options, h, w, c, class_major);
}

Detector::Detector(const DetectorOptions& options)
    : options_(options),
      session_(load_detector_graph(options, heat_height_, heat_width_, classes_, class_major_),
               detector_session_options(options)) {
  std::vector<TensorDesc> in = session_.input_descs();
  ErrorContext ctx{options.model, "", "", ""};
  check(in.size() == 1 && in[0].shape.size() == 4 && in[0].shape[3] == 3,
        "a detector needs one [N, H, W, 3] image input", ctx);
  height_ = int(in[0].shape[1]);
  width_ = int(in[0].shape[2]);
  check(width_ > 0 && height_ > 0, "the detector's input size is not fixed", ctx);
  labels_ = detector_labels(options.model);
}

std::vector<std::vector<Detection>> Detector::detect(const Tensor& batch,
                                                     const std::vector<std::pair<int, int>>& sizes) {
  std::vector<Tensor> out;
  {
    TANDEM_ZONE_CAT("detector network", "pipeline");
    out = session_.run({batch});
  }
  TANDEM_ZONE_CAT("detector decode", "pipeline");
  const Tensor &score = out.at(0), &index = out.at(1), &wh = out.at(2);
  ErrorContext ctx{options_.model, "", "", score.desc().str() + ", " + index.desc().str() + ", " + wh.desc().str()};
  const int64_t n = int64_t(sizes.size());
  check(score.rank() == 2 && score.dim(0) == n && index.shape() == score.shape() && index.dtype() == DType::i64 &&
            wh.rank() == 4 && wh.dim(0) == n && wh.dim(1) == heat_height_ && wh.dim(2) == heat_width_ && wh.dim(3) == 4,
        "detector outputs are not ranked peaks [N,k] and a CenterNet size head [N,h,w,4]", ctx);
  const int k = int(score.dim(1));
  const float stride = float(height_) / float(heat_height_);
  const size_t wh_floats = size_t(heat_height_) * size_t(heat_width_) * 4;
  std::vector<std::vector<Detection>> result;
  for (size_t i = 0; i < sizes.size(); ++i) {
    PeakList peaks{score.data<float>() + i * size_t(k), index.data<int64_t>() + i * size_t(k), k, class_major_};
    std::vector<Detection> dets = boxes_of_peaks(peaks, wh.data<float>() + i * wh_floats, heat_height_, heat_width_,
                                                 classes_, stride, options_.min_score);
    const float sx = float(sizes[i].first) / float(width_), sy = float(sizes[i].second) / float(height_);
    for (Detection& d : dets) {
      d.box = {std::clamp(d.box.x1 * sx, 0.f, float(sizes[i].first)), std::clamp(d.box.y1 * sy, 0.f, float(sizes[i].second)),
               std::clamp(d.box.x2 * sx, 0.f, float(sizes[i].first)), std::clamp(d.box.y2 * sy, 0.f, float(sizes[i].second))};
    }
    result.push_back(non_max_suppression(std::move(dets), options_.iou, options_.cross_class_iou,
                                         size_t(options_.max_detections)));
  }
  return result;
}

}  // namespace tandem::pipeline
