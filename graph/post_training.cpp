#include "graph/post_training.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "cpu/cpu_backend.h"
#include "graph/passes.h"
#include "graph/quantize_graph.h"
#include "graph/session.h"

namespace tandem {

namespace {

SessionOptions cpu_options(int threads) {
  SessionOptions o;
  o.device = Device::cpu();
  o.threads = threads;
  return o;
}

bool is_input(const Graph& g, ValueId v) {
  return std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
}

// Runs the float graph over the batches `passes` times with the `watch`
// values as extra outputs, handing each to visit(pass, i, tensor) for
// watch[i]. A watched graph input is the batch itself.
template <typename Visit>
void run_watching(const Graph& g, const std::vector<ValueId>& watch,
                  const std::vector<Tensor>& batches, int threads, int passes, Visit&& visit) {
  Graph w = g;
  for (ValueId v : watch)
    if (!is_input(g, v)) w.outputs.push_back(v);
  Session s(std::move(w), cpu_options(threads));
  for (int pass = 0; pass < passes; ++pass)
    for (const Tensor& b : batches) {
      const std::vector<Tensor> out = s.run({b});
      size_t k = g.outputs.size();
      for (size_t i = 0; i < watch.size(); ++i)
        visit(pass, i, is_input(g, watch[i]) ? b : out[k++]);
    }
}

// Each watched value's statistics over the batches: a span pass, then a
// histogram pass.
std::vector<RangeCollector> collect(const Graph& g, const std::vector<ValueId>& watch,
                                    const std::vector<Tensor>& batches, int threads) {
  std::vector<RangeCollector> c(watch.size());
  run_watching(g, watch, batches, threads, 2, [&](int pass, size_t i, const Tensor& t) {
    pass == 0 ? c[i].add_span(t) : c[i].add_histogram(t);
  });
  return c;
}

// GPTQ-rounded weights for `convs` (2-D ones; the others are left out and
// round to nearest), from their inputs' moments in the float graph over
// the batches. A pass of its own: only the convolutions chosen for int8
// need them, known once the ranges are.
std::map<NodeId, IntegerWeights> compensated_weights(const Graph& g,
                                                     const std::vector<QuantizableConv>& convs,
                                                     const std::vector<Tensor>& batches,
                                                     int threads) {
  std::vector<QuantizableConv> planar;
  std::vector<ValueId> inputs;
  for (const QuantizableConv& c : convs)
    if (g.value(g.nodes[size_t(c.node)].inputs[1]).constant->rank() == 4) {
      planar.push_back(c);
      inputs.push_back(c.activation);
    }
  // Built from the first batch's tensors: the graph's shapes may leave
  // extents to run time.
  std::vector<std::optional<ConvInputMoments>> moments(planar.size());
  run_watching(g, inputs, batches, threads, 1, [&](int, size_t i, const Tensor& x) {
    const Node& n = g.nodes[size_t(planar[i].node)];
    if (!moments[i]) moments[i].emplace(n.attrs, x.shape(), g.value(n.inputs[1]).constant->shape());
    moments[i]->add(x);
  });
  std::map<NodeId, IntegerWeights> r;
  for (size_t i = 0; i < planar.size(); ++i) {
    const Node& n = g.nodes[size_t(planar[i].node)];
    r[planar[i].node] = round_compensating(*g.value(n.inputs[1]).constant, *moments[i]);
  }
  return r;
}

// ||got - want|| / ||want|| over every output together.
double relative_error(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  double num = 0, den = 0;
  for (size_t o = 0; o < want.size(); ++o) {
    if (want[o].dtype() != DType::f32) continue;
    const float *a = got[o].data<float>(), *b = want[o].data<float>();
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      const double d = double(a[i]) - double(b[i]);
      num += d * d;
      den += double(b[i]) * double(b[i]);
    }
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// The QDQ graph with `convs` quantized, their weights from `weights` where
// given, else rounded to nearest.
Graph with_quantized(const Graph& g, const std::vector<QuantizableConv>& convs,
                     const std::map<ValueId, QuantizationParams>& params,
                     const std::map<NodeId, IntegerWeights>& weights = {}) {
  Graph q = g;
  std::map<ValueId, QuantizationParams> used;
  for (const QuantizableConv& c : convs) used[c.activation] = params.at(c.activation);
  insert_qdq(q, convs, used, weights);
  return q;
}

double error_of(const Graph& q, const Tensor& batch, const std::vector<Tensor>& want, int threads) {
  Session s(q, cpu_options(threads));
  return relative_error(s.run({batch}), want);
}

// Indices of the convolutions to keep in float, the worst first.
std::vector<size_t> choose_float(const std::vector<PtqLayer>& layers, int requested) {
  std::vector<size_t> order(layers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return layers[a].error > layers[b].error; });
  if (requested >= 0) {
    order.resize(std::min(order.size(), size_t(requested)));
    return order;
  }
  std::vector<double> e;
  for (const PtqLayer& l : layers) e.push_back(l.error);
  std::nth_element(e.begin(), e.begin() + e.size() / 2, e.end());
  const double median = e[e.size() / 2];
  const size_t cap = std::max<size_t>(1, layers.size() / 10);
  std::vector<size_t> keep;
  for (size_t i : order)
    if (keep.size() < cap && layers[i].error > 3.0 * median) keep.push_back(i);
  return keep;
}

// ONNX wants every value named once; an importer may reuse a name (TF.js
// output aliases). The graph's inputs and outputs keep theirs (callers
// ask for them by name), other values that clash get a suffix.
void unique_value_names(Graph& g) {
  std::set<ValueId> io(g.inputs.begin(), g.inputs.end());
  io.insert(g.outputs.begin(), g.outputs.end());
  std::set<std::string> seen;
  for (ValueId v : io) seen.insert(g.value(v).name);
  for (size_t i = 0; i < g.values.size(); ++i) {
    Value& v = g.values[i];
    if (v.name.empty() || io.count(ValueId(i))) continue;
    std::string name = v.name;
    for (int k = 1; seen.count(name); ++k) name = v.name + "_" + std::to_string(k);
    v.name = name;
    seen.insert(name);
  }
}

}  // namespace

Graph quantize_post_training(Graph g, const std::vector<Tensor>& batches, const PtqOptions& o,
                             PtqReport* report) {
  const ErrorContext where{g.source, "", "", ""};
  check(!batches.empty(), "calibration needs at least one sample", where);
  check(g.inputs.size() == 1,
        "calibration feeds models with one input, this one has " + std::to_string(g.inputs.size()),
        where);
  infer_and_fold(g, cpu::cpu_backend());
  g.compact();
  fold_batchnorm(g);
  const std::vector<QuantizableConv> convs = quantizable_convs(g);
  check(!convs.empty(), "the model has no convolution with constant float weights to quantize",
        where);
  // A NaN or infinite weight has no integer and no scale: said here, once,
  // rather than turned into an arbitrary int8.
  for (const QuantizableConv& c : convs) {
    const Node& n = g.nodes[size_t(c.node)];
    const Tensor& w = *g.value(n.inputs[1]).constant;
    const float* v = w.data<float>();
    check(std::all_of(v, v + w.numel(), [](float x) { return std::isfinite(x); }),
          "weights hold NaN or Inf: cannot quantize them", {g.source, n.name, n.op_type, ""});
  }

  std::vector<ValueId> watch;
  for (const QuantizableConv& c : convs)
    if (std::find(watch.begin(), watch.end(), c.activation) == watch.end())
      watch.push_back(c.activation);
  std::vector<RangeCollector> stats = collect(g, watch, batches, o.threads);
  const std::vector<Tensor> want = Session(g, cpu_options(o.threads)).run({batches[0]});
  PtqReport r;
  auto params_of = [&](CalibrationMethod m) {
    std::map<ValueId, QuantizationParams> p;
    for (size_t i = 0; i < watch.size(); ++i)
      p[watch[i]] = activation_params(stats[i].range(m, o.percentile), o.activations);
    return p;
  };
  // Which rule suits a model's activations is measured, not assumed: the
  // one whose fully quantized model moves the outputs least.
  r.method = o.method.value_or(CalibrationMethod::minmax);
  double best = -1;  // the chosen method's error, everything quantized
  if (!o.method) {
    for (CalibrationMethod m : {CalibrationMethod::minmax, CalibrationMethod::percentile,
                                CalibrationMethod::entropy, CalibrationMethod::mse}) {
      const double e =
          error_of(with_quantized(g, convs, params_of(m)), batches[0], want, o.threads);
      r.method_errors.push_back({m, e});
      if (best < 0 || e < best) best = e, r.method = m;
    }
  }
  const std::map<ValueId, QuantizationParams> params = params_of(r.method);
  for (const QuantizableConv& c : convs)
    r.layers.push_back({g.nodes[size_t(c.node)].name, 0.0, false});
  if (o.float_layers != 0)
    for (size_t i = 0; i < convs.size(); ++i)
      r.layers[i].error =
          error_of(with_quantized(g, {convs[i]}, params), batches[0], want, o.threads);
  std::vector<QuantizableConv> chosen;
  const std::vector<size_t> kept = choose_float(r.layers, o.float_layers);
  for (size_t i : kept) r.layers[i].kept_float = true;
  for (size_t i = 0; i < convs.size(); ++i)
    if (!r.layers[i].kept_float) chosen.push_back(convs[i]);
  Graph q = with_quantized(g, chosen, params,
                           o.compensate_weights ? compensated_weights(g, chosen, batches, o.threads)
                                                : std::map<NodeId, IntegerWeights>{});
  r.quantized = int(chosen.size());
  r.error = error_of(q, batches[0], want, o.threads);
  unique_value_names(q);
  if (report) *report = std::move(r);
  return q;
}

}  // namespace tandem
