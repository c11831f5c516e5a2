#include "pipeline/detector.h"

#include <algorithm>

#include "formats/load_model.h"
#include "pipeline/centernet.h"
#include "pipeline/model_store.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

// Appends a node whose outputs have the dtypes `outputs` (their shapes are
// inferred when a plan is compiled).
std::vector<ValueId> add_node(Graph& g, const std::string& op, const std::string& name, std::vector<ValueId> inputs,
                              Attributes attrs, const std::vector<DType>& outputs) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value v;
    v.name = name + (i ? ":" + std::to_string(i) : "");
    v.dtype = outputs[i];
    n.outputs.push_back(g.add_value(std::move(v)));
  }
  std::vector<ValueId> out = n.outputs;
  g.add_node(std::move(n));
  return out;
}

// The graph's own decoding ranks peaks over the whole batch (the converter
// fixed batch 1 into its Reshape); this ranks each image's: Reshape to
// [N, map size], TopK k. Outputs: scores [N, k], flat indices [N, k], the
// size head [N, h, w, 4], and the flattened map's shape [N, map size], a
// constant once the plan's shapes are known, from which the class count
// follows (map size / (h * w)).
void append_peak_ranking(Graph& g, ValueId peaks, ValueId sizes, int k) {
  ValueId shape = g.add_constant("tandem/peaks/shape", Tensor::from_vector<int64_t>({0, -1}, {2}));
  ValueId flat = add_node(g, "Reshape", "tandem/peaks/flatten", {peaks, shape}, {}, {DType::f32})[0];
  ValueId kv = g.add_constant("tandem/peaks/k", Tensor::from_vector<int64_t>({k}, {1}));
  Attributes a;
  a.set("axis", int64_t(-1));
  std::vector<ValueId> best = add_node(g, "TopK", "tandem/peaks/top_k", {flat, kv}, a, {DType::f32, DType::i64});
  ValueId map_size = add_node(g, "Shape", "tandem/peaks/map_size", {flat}, {}, {DType::i64})[0];
  g.outputs = {best[0], best[1], sizes, map_size};
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

// class_major: the peaks are ranked in the map's [classes, h, w] order.
Graph load_detector_graph(const DetectorOptions& o, bool& class_major) {
  Graph g = load_model(o.model, heads_load_options(o));
  ValueId peaks = g.outputs.at(0);
  const Node* t = nhwc_transpose_of(g, peaks);
  class_major = t != nullptr;
  if (t) peaks = t->inputs[0];
  append_peak_ranking(g, peaks, g.outputs.at(1), std::max(1, o.max_detections));
  g.remove_unused_nodes();
  return g;
}

Graph rewritten(const DetectorOptions& o, Graph g) { return o.rewrite ? o.rewrite(std::move(g)) : g; }

}  // namespace

ModelLoadOptions heads_load_options(const DetectorOptions& o) {
  ModelLoadOptions lo;
  lo.tfjs.outputs = {o.peaks_output, o.size_output};
  lo.tfjs.dynamic_batch = true;  // the converter fixed batch 1; the heads do not care
  return lo;
}

Graph detector_graph(const DetectorOptions& options) {
  bool class_major = false;
  return rewritten(options, load_detector_graph(options, class_major));
}

Detector::Detector(const DetectorOptions& options)
    : options_(options),
      session_(rewritten(options, load_detector_graph(options, class_major_)),
               SessionOptions::on(options.device, options.precision, options.threads, options.strict_device)) {
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
  const Tensor &score = out.at(0), &index = out.at(1), &wh = out.at(2), &map_size = out.at(3);
  ErrorContext ctx{options_.model, "", "", score.desc().str() + ", " + index.desc().str() + ", " + wh.desc().str()};
  const int64_t n = int64_t(sizes.size());
  check(score.rank() == 2 && score.dim(0) == n && index.shape() == score.shape() && index.dtype() == DType::i64 &&
            wh.rank() == 4 && wh.dim(0) == n && wh.dim(1) > 0 && wh.dim(2) > 0 && wh.dim(3) == 4 &&
            map_size.dtype() == DType::i64 && map_size.numel() == 2,
        "detector outputs are not ranked peaks [N,k] and a CenterNet size head [N,h,w,4]", ctx);
  const int heat_height = int(wh.dim(1)), heat_width = int(wh.dim(2));
  const int64_t cells = int64_t(heat_height) * heat_width, flat = map_size.data<int64_t>()[1];
  check(flat > 0 && flat % cells == 0, "the detector's peak map is not classes x the size head's h x w", ctx);
  const int classes = int(flat / cells);
  const int k = int(score.dim(1));
  const float stride = float(height_) / float(heat_height);
  const size_t wh_floats = size_t(cells) * 4;
  std::vector<std::vector<Detection>> result;
  for (size_t i = 0; i < sizes.size(); ++i) {
    PeakList peaks{score.data<float>() + i * size_t(k), index.data<int64_t>() + i * size_t(k), k, class_major_};
    std::vector<Detection> dets = boxes_of_peaks(peaks, wh.data<float>() + i * wh_floats, heat_height, heat_width,
                                                 classes, stride, options_.min_score);
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
