#include "pipeline/detector.h"

#include <algorithm>

#include "formats/load_model.h"
#include "image/labels.h"
#include "pipeline/centernet.h"
#include "profile/zone.h"

namespace tandem::pipeline {

namespace {

Graph load_detector_graph(const DetectorOptions& o) {
  ModelLoadOptions lo;
  lo.tfjs.outputs = {o.heat_output, o.size_output};
  lo.tfjs.dynamic_batch = true;  // the converter fixed batch 1; the heads do not care
  return load_model(o.model, lo);
}

}  // namespace

Detector::Detector(const DetectorOptions& options)
    : options_(options), session_(load_detector_graph(options), SessionOptions::on(options.device, options.precision, options.threads)) {
  std::vector<TensorDesc> in = session_.input_descs();
  ErrorContext ctx{options.model, "", "", ""};
  check(in.size() == 1 && in[0].shape.size() == 4 && in[0].shape[3] == 3,
        "a detector needs one [N, H, W, 3] image input", ctx);
  height_ = int(in[0].shape[1]);
  width_ = int(in[0].shape[2]);
  check(width_ > 0 && height_ > 0, "the detector's input size is not fixed", ctx);
  labels_ = image::coco_labels();
}

std::vector<std::vector<Detection>> Detector::detect(const Tensor& batch,
                                                     const std::vector<std::pair<int, int>>& sizes) {
  std::vector<Tensor> out;
  {
    TANDEM_ZONE_CAT("detector network", "pipeline");
    out = session_.run({batch});
  }
  TANDEM_ZONE_CAT("detector decode", "pipeline");
  const Tensor& heat = out[0];
  const Tensor& wh = out[1];
  ErrorContext ctx{options_.model, "", "", heat.desc().str()};
  check(heat.rank() == 4 && wh.rank() == 4 && wh.dim(3) == 4 && heat.dim(1) == wh.dim(1) &&
            heat.dim(2) == wh.dim(2) && heat.dim(0) == int64_t(sizes.size()),
        "detector outputs are not CenterNet heads [N,h,w,classes] and [N,h,w,4]", ctx);
  HeatmapView v;
  v.height = int(heat.dim(1));
  v.width = int(heat.dim(2));
  v.classes = int(heat.dim(3));
  const float stride = float(height_) / float(v.height);
  std::vector<std::vector<Detection>> result;
  for (size_t i = 0; i < sizes.size(); ++i) {
    v.heat = heat.data<float>() + i * size_t(v.height) * v.width * v.classes;
    v.wh = wh.data<float>() + i * size_t(v.height) * v.width * 4;
    std::vector<Detection> dets = decode_centernet(v, stride, options_.max_detections, options_.min_score);
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
