#include "cuda/cudnn_graph.h"

#include <algorithm>

#include "cuda/check.h"

namespace tandem::cuda::cudnn_graph {

Descriptor::Descriptor(cudnnBackendDescriptorType_t type, const ErrorContext& where)
    : where_(where) {
  check_cudnn(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor", where_);
}

Descriptor::~Descriptor() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

Descriptor& Descriptor::operator=(Descriptor&& o) noexcept {
  if (this != &o) {
    if (d_) cudnnBackendDestroyDescriptor(d_);
    d_ = std::exchange(o.d_, nullptr);
    where_ = std::move(o.where_);
  }
  return *this;
}

void Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     int64_t count, const void* values) {
  check_cudnn(cudnnBackendSetAttribute(d_, name, type, count, values), "cudnnBackendSetAttribute",
              where_);
}

void Descriptor::finalize() {
  check_cudnn(cudnnBackendFinalize(d_), "cudnnBackendFinalize", where_);
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& dims) {
  // Order in memory: N, spatial..., C.
  std::vector<int64_t> s(dims.size(), 1);
  if (dims.size() < 2) return s;
  int64_t step = dims[1];
  for (size_t i = dims.size(); i-- > 2;) {
    s[i] = step;
    step *= dims[i];
  }
  s[0] = step;
  return s;
}

int64_t OpGraph::tensor(const TensorSpec& t) {
  Descriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR, where_);
  d.set_type(CUDNN_ATTR_TENSOR_DATA_TYPE, t.dtype);
  d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, t.dims);
  d.set(CUDNN_ATTR_TENSOR_STRIDES, t.strides);
  d.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, t.uid);
  // tandem's device memory comes from cudaMalloc and the stream-ordered
  // pool, both 256-byte aligned; 16 is what tensor-core engines require.
  d.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, int64_t(16));
  const bool v = t.is_virtual;
  d.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v);
  d.finalize();
  tensors_.emplace_back(t.uid, std::move(d));
  return t.uid;
}

const Descriptor& OpGraph::find(int64_t uid) const {
  for (const auto& [id, d] : tensors_)
    if (id == uid) return d;
  throw Error("cuDNN graph: no tensor " + std::to_string(uid), where_);
}

void OpGraph::conv_forward(int64_t x, int64_t w, int64_t y, const ConvSpec& c) {
  Descriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, where_);
  conv.set_type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, c.compute);
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, int64_t(c.strides.size()));
  conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, c.dilations);
  conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, c.strides);
  conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, c.pads_begin);
  conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, c.pads_end);
  conv.finalize();

  Descriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, where_);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, find(x));
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, find(w));
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, find(y));
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  // The scaling lives in the pointwise operations after it.
  const float alpha = 1.f, beta = 0.f;
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  op.finalize();
  op_parts_.push_back(std::move(conv));
  ops_.push_back(std::move(op));
}

void OpGraph::pointwise(cudnnPointwiseMode_t mode, int64_t x, int64_t b, int64_t y) {
  Descriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, where_);
  pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  pw.set_type(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  pw.finalize();
  Descriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, where_);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, find(x));
  if (b >= 0) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, find(b));
  op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, find(y));
  op.finalize();
  op_parts_.push_back(std::move(pw));
  ops_.push_back(std::move(op));
}

void OpGraph::finalize() {
  graph_ = Descriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, where_);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& o : ops_) raw.push_back(o.get());
  graph_.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, int64_t(raw.size()),
             raw.data());
  graph_.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h_);
  const cudnnStatus_t s = cudnnBackendFinalize(graph_.get());
  if (s == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_BAD_PARAM)
    throw Error::unsupported(
        std::string("cuDNN refuses the operation graph: ") + cudnnGetErrorString(s), where_);
  check_cudnn(s, "cudnnBackendFinalize(operation graph)", where_);
}

namespace {

int64_t engine_index(cudnnBackendDescriptor_t cfg) {
  cudnnBackendDescriptor_t raw = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &raw) != CUDNN_STATUS_SUCCESS)
    return -1;
  int64_t n = 0, index = -1;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &n, &raw) == CUDNN_STATUS_SUCCESS)
    cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
  cudnnBackendDestroyDescriptor(raw);
  return index;
}

}  // namespace

std::vector<Plan> OpGraph::plans_of(cudnnBackendHeurMode_t mode, size_t limit) const {
  Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, where_);
  heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph_);
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return {};
  int64_t count = 0;
  check_cudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "cudnnBackendGetAttribute(heuristics' count)", where_);
  std::vector<Descriptor> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cfgs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, where_);
    raw.push_back(cfgs.back().get());
  }
  int64_t got = 0;
  check_cudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
              "cudnnBackendGetAttribute(heuristics' results)", where_);
  std::vector<Plan> out;
  for (int64_t i = 0; i < got && out.size() < limit; ++i) {
    Plan p;
    p.plan = Descriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, where_);
    p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h_);
    cudnnBackendDescriptor_t cfg = raw[size_t(i)];
    p.plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    // An engine the heuristics list may still refuse this graph (a layout,
    // an alignment): not an error, the next one is tried.
    if (cudnnBackendFinalize(p.plan.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t n = 0;
    check_cudnn(cudnnBackendGetAttribute(p.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                         CUDNN_TYPE_INT64, 1, &n, &p.workspace),
                "cudnnBackendGetAttribute(plan workspace)", where_);
    p.engine = "engine " + std::to_string(engine_index(cfg));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Plan> OpGraph::plans(size_t limit) const {
  std::vector<Plan> out = plans_of(CUDNN_HEUR_MODE_A, limit);
  if (out.size() < limit) {
    for (Plan& p : plans_of(CUDNN_HEUR_MODE_FALLBACK, limit - out.size())) {
      const bool seen =
          std::any_of(out.begin(), out.end(), [&](const Plan& q) { return q.engine == p.engine; });
      if (!seen) out.push_back(std::move(p));
    }
  }
  return out;
}

void execute(cudnnHandle_t h, const Plan& plan, const std::vector<int64_t>& uids,
             const std::vector<void*>& pointers, void* workspace, const ErrorContext& where) {
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, where);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, int64_t(pointers.size()),
           pointers.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize();
  check_cudnn(cudnnBackendExecute(h, plan.plan.get(), pack.get()), "cudnnBackendExecute", where);
}

}  // namespace tandem::cuda::cudnn_graph
