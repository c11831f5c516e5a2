// tandem.QConv on the GPU (ops/qconv.h): s8 activations and weights, int32
// accumulation, and the whole epilogue -- per-channel scale, bias,
// residual, ReLU, requantization -- inside the convolution's kernel, as one
// cuDNN graph (cuda/cudnn_graph.h). Channels-last, weights KRSC, uploaded
// once at prepare.
//
// What cuDNN 9 runs (bench/qconv_gpu.cpp on an H200): s8 x s8 with an s8 or
// float output; no engine takes u8 activations. So the GPU's QConv takes
// symmetric s8 activations (zero point 0), 2-D, one group, equal begin and
// end pads, a ReLU or no activation; anything else is refused as
// unsupported and runs on the CPU (graph/fuse_qdq.cpp does not make such a
// QConv for a GPU session).
//
// In real values y = act(acc * sx * sw[k] + b[k] + rs * r) / sy, acc the
// integer sum, r the residual's integers (or a real residual with rs = 1).
// ReLU and identity commute with a positive factor u, so the graph
// computes
//   y = act(acc * (sx sw[k] / u) + b[k] / u + r) * (u / sy)
// with u = rs when there is a residual (it is added as it is stored, and
// cuDNN reads the integers itself) and u = sy when there is none (the last
// multiplication drops). The two per-channel vectors and the final factor
// are device constants; the output converts to s8 with saturation.
#include "ops/qconv.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/shape.h"
#include "cuda/check.h"
#include "cuda/cudnn_conv.h"
#include "cuda/cudnn_graph.h"
#include "cuda/device_buffer.h"
#include "cuda/registry.h"
#include "ops/conv.h"

namespace tandem::cuda {

namespace {

namespace cg = cudnn_graph;

// The graph's tensors.
enum Uid : int64_t { kX = 1, kW, kY, kScale, kBias, kResidual, kOutScale, kVirtual = 100 };

struct QConvShape {
  ops::ConvGeometry g;
  ops::QConvParams p;
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, oh = 0, ow = 0, r = 0, s = 0;
  bool has_residual() const { return p.residual != ops::QResidual::none; }
  bool relu() const { return p.activation.kind == ops::ActivationKind::relu; }
  // u of the header: what the sums are divided by before the activation.
  float u() const {
    if (p.residual == ops::QResidual::quantized) return p.r_scale;
    if (p.residual == ops::QResidual::real) return 1.f;
    return p.y_dtype == DType::f32 ? 1.f : p.y_scale;
  }
  float out_factor() const { return u() / (p.y_dtype == DType::f32 ? 1.f : p.y_scale); }
};

QConvShape describe(const OpDesc& op) {
  QConvShape q;
  const ErrorContext where = op.context();
  const TensorDesc& x = op.inputs[0];
  check_supported(x.shape.size() == 4, "CUDA QConv is 2-D only, got " + x.str(), where);
  check_supported(
      op.constants.size() > 1 && op.constants[1] && op.constants[1]->dtype() == DType::i8,
      "CUDA QConv needs constant i8 weights", where);
  check_supported(
      op.constants.size() > 2 && op.constants[2] && op.constants[2]->dtype() == DType::f32,
      "CUDA QConv needs a constant f32 bias", where);
  q.p = ops::qconv_params(op.attributes());
  q.g = ops::conv_geometry(op.attributes(), x.shape, op.inputs[1].shape);
  // cuDNN's engines: s8 x s8, symmetric (see the header).
  check_supported(x.dtype == DType::i8 && q.p.x_zero_point == 0,
                  "CUDA QConv takes symmetric s8 activations (cuDNN has no u8 engine), got " +
                      std::string(dtype_name(x.dtype)) + " with zero point " +
                      std::to_string(q.p.x_zero_point),
                  where);
  check_supported(q.p.y_dtype == DType::f32 || (q.p.y_dtype == DType::i8 && q.p.y_zero_point == 0),
                  "CUDA QConv writes s8 (zero point 0) or f32", where);
  check_supported(q.p.residual != ops::QResidual::quantized ||
                      (op.inputs[3].dtype == DType::i8 && q.p.r_zero_point == 0),
                  "CUDA QConv adds an s8 residual with zero point 0", where);
  check_supported(q.p.residual != ops::QResidual::real || op.inputs[3].dtype == DType::f32,
                  "CUDA QConv adds a real residual in f32", where);
  check_supported(q.p.activation.kind == ops::ActivationKind::none ||
                      q.p.activation.kind == ops::ActivationKind::relu,
                  "CUDA QConv applies ReLU or no activation", where);
  check_supported(q.g.group == 1, "CUDA QConv of " + std::to_string(q.g.group) + " groups", where);
  // Unequal pads (TF's SAME at stride 2) are not among the forms measured.
  check_supported(q.g.window.pads_begin == q.g.window.pads_end,
                  "CUDA QConv with unequal begin and end pads", where);
  q.n = x.shape[0], q.c = x.shape[1], q.h = x.shape[2], q.w = x.shape[3];
  const Shape& y = op.outputs[0].shape;
  q.m = y[1], q.oh = y[2], q.ow = y[3];
  q.r = q.g.window.kernel[0], q.s = q.g.window.kernel[1];
  check_supported(op.outputs[0].numel() > 0 && x.numel() > 0,
                  "CUDA QConv of an empty tensor " + x.str(), where);
  return q;
}

// One problem's graph and the plan chosen for it. The integer convolutions
// of one shape and form build the same graph (the same uids, extents and
// steps; only the pointers differ), and choosing its plan -- cuDNN compiles
// and times four -- is most of preparing one; ResNet-50's 52 integer
// convolutions are some two dozen problems.
struct SharedPlan {
  explicit SharedPlan(cudnnHandle_t h, const ErrorContext& where) : graph(h, where) {}
  cg::OpGraph graph;  // kept alive as long as its plan
  cg::Plan plan;
};

// The plans chosen so far in this process, by device and problem.
class PlanStore {
 public:
  std::shared_ptr<SharedPlan> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : it->second;
  }
  void store(const std::string& key, std::shared_ptr<SharedPlan> p) {
    std::lock_guard<std::mutex> lock(mutex_);
    plans_.emplace(key, std::move(p));
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<SharedPlan>> plans_;
};

PlanStore& plan_store() {
  static PlanStore s;
  return s;
}

class QConvKernel final : public Kernel {
 public:
  QConvKernel(const OpDesc& op, Context& c) : c_(c), where_(op.context()), q_(describe(op)) {
    upload_constants(*op.constants[1], *op.constants[2]);
    uids_ = uids();
    const std::string key = problem_key();
    shared_ = plan_store().find(key);
    if (shared_) return;
    shared_ = std::make_shared<SharedPlan>(c.cudnn, where_);
    build_graph(shared_->graph);
    shared_->plan = choose_plan(shared_->graph);
    plan_store().store(key, shared_);
  }

  void run(const void* const* in, void* const* out, const RunContext& rc) override {
    check(rc.scratch_bytes >= scratch_bytes(), "CUDA QConv got too little scratch", where_);
    cg::execute(c_.cudnn, shared_->plan, uids_,
                pointers(in[0], out[0], q_.has_residual() ? in[3] : nullptr), rc.scratch, where_);
  }

  size_t scratch_bytes() const override { return size_t(shared_->plan.workspace); }

 private:
  std::vector<int64_t> x_dims() const { return {q_.n, q_.c, q_.h, q_.w}; }
  std::vector<int64_t> y_dims() const { return {q_.n, q_.m, q_.oh, q_.ow}; }

  // The memory of uids(), in its order: x, y and the residual (or null)
  // given, the constants the kernel holds.
  std::vector<void*> pointers(const void* x, void* y, const void* residual) const {
    std::vector<void*> p{const_cast<void*>(x), weights_.get(), y, scale_.get(), bias_.get()};
    if (q_.has_residual()) p.push_back(const_cast<void*>(residual));
    if (out_scale_.get()) p.push_back(out_scale_.get());
    return p;
  }

  // The graph's inputs and outputs.
  std::vector<int64_t> uids() const {
    std::vector<int64_t> u{kX, kW, kY, kScale, kBias};
    if (q_.has_residual()) u.push_back(kResidual);
    if (out_scale_.get()) u.push_back(kOutScale);
    return u;
  }

  // Everything build_graph reads: the device, the extents, the window, the
  // output and residual types, the activation and the last factor.
  std::string problem_key() const {
    const ops::Window& win = q_.g.window;
    std::string k = std::to_string(c_.device);
    for (int64_t v : {q_.n, q_.c, q_.h, q_.w, q_.m, q_.oh, q_.ow, q_.r, q_.s})
      k += "," + std::to_string(v);
    for (const Shape* v : {&win.pads_begin, &win.pads_end, &win.strides, &win.dilations})
      k += "|" + shape_str(*v);
    k += "|" + std::string(dtype_name(q_.p.y_dtype)) + "|" + std::to_string(int(q_.p.residual)) +
         "|" + std::to_string(q_.relu()) + "|" + std::to_string(out_scale_.get() != nullptr);
    return k;
  }

  void upload_constants(const Tensor& w, const Tensor& b) {
    const std::vector<char> krsc = to_krsc(w, q_.c);
    weights_ = DeviceBuffer::upload(c_, krsc.data(), krsc.size(), where_);
    const float u = q_.u();
    std::vector<float> scale(size_t(q_.m)), bias(size_t(q_.m)), out(size_t(q_.m), q_.out_factor());
    for (int64_t k = 0; k < q_.m; ++k) {
      const float ws = q_.p.w_scales[q_.p.w_scales.size() > 1 ? size_t(k) : 0];
      scale[size_t(k)] = q_.p.x_scale * ws / u;
      bias[size_t(k)] = b.data<float>()[k] / u;
    }
    scale_ = DeviceBuffer::upload(c_, scale.data(), scale.size() * 4, where_);
    bias_ = DeviceBuffer::upload(c_, bias.data(), bias.size() * 4, where_);
    if (out[0] != 1.f) out_scale_ = DeviceBuffer::upload(c_, out.data(), out.size() * 4, where_);
  }

  void build_graph(cg::OpGraph& graph) {
    const auto cl = cg::channels_last_strides;
    const std::vector<int64_t> xd = x_dims(), yd = y_dims(), wd{q_.m, q_.c, q_.r, q_.s},
                               vd{1, q_.m, 1, 1};
    const cudnnDataType_t y_type = q_.p.y_dtype == DType::i8 ? CUDNN_DATA_INT8 : CUDNN_DATA_FLOAT;
    graph.tensor({kX, CUDNN_DATA_INT8, xd, cl(xd)});
    graph.tensor({kW, CUDNN_DATA_INT8, wd, cl(wd)});
    graph.tensor({kY, y_type, yd, cl(yd)});
    graph.tensor({kScale, CUDNN_DATA_FLOAT, vd, cl(vd)});
    graph.tensor({kBias, CUDNN_DATA_FLOAT, vd, cl(vd)});
    // The steps after the convolution, each a pointwise op on the running
    // value and an operand (or none).
    std::vector<std::pair<cudnnPointwiseMode_t, int64_t>> steps{{CUDNN_POINTWISE_MUL, kScale},
                                                                {CUDNN_POINTWISE_ADD, kBias}};
    if (q_.has_residual()) {
      const cudnnDataType_t r_type =
          q_.p.residual == ops::QResidual::quantized ? CUDNN_DATA_INT8 : CUDNN_DATA_FLOAT;
      graph.tensor({kResidual, r_type, yd, cl(yd)});
      steps.push_back({CUDNN_POINTWISE_ADD, kResidual});
    }
    if (q_.relu()) steps.push_back({CUDNN_POINTWISE_RELU_FWD, -1});
    if (out_scale_.get()) {
      graph.tensor({kOutScale, CUDNN_DATA_FLOAT, vd, cl(vd)});
      steps.push_back({CUDNN_POINTWISE_MUL, kOutScale});
    }
    const ops::Window& win = q_.g.window;
    int64_t v = kVirtual;
    graph.tensor({v, CUDNN_DATA_INT32, yd, cl(yd), true});
    graph.conv_forward(
        kX, kW, v, {win.pads_begin, win.pads_end, win.strides, win.dilations, CUDNN_DATA_INT32});
    for (size_t i = 0; i < steps.size(); ++i) {
      const bool last = i + 1 == steps.size();
      const int64_t next = last ? int64_t(kY) : v + 1;
      if (!last) graph.tensor({next, CUDNN_DATA_FLOAT, yd, cl(yd), true});
      graph.pointwise(steps[i].first, v, steps[i].second, next);
      v = next;
    }
    graph.finalize();
  }

  // The fastest of cuDNN's first plans, timed on scratch tensors.
  cg::Plan choose_plan(const cg::OpGraph& graph) {
    std::vector<cg::Plan> plans = graph.plans(4);
    check_supported(!plans.empty(), "cuDNN has no engine for this integer convolution", where_);
    if (plans.size() == 1) return std::move(plans[0]);
    const size_t y_elements = size_t(q_.n * q_.m * q_.oh * q_.ow);
    const size_t r_size = q_.p.residual == ops::QResidual::real ? 4 : 1;
    DeviceBuffer x(size_t(q_.n * q_.c * q_.h * q_.w), "cudaMalloc(QConv trial input)", where_);
    DeviceBuffer y(y_elements * (q_.p.y_dtype == DType::i8 ? 1 : 4),
                   "cudaMalloc(QConv trial output)", where_);
    DeviceBuffer r(q_.has_residual() ? y_elements * r_size : 0, "cudaMalloc(QConv trial residual)",
                   where_);
    check_cuda(cudaMemsetAsync(x.get(), 0, x.bytes(), c_.stream), "cudaMemsetAsync", where_);
    if (r.get())
      check_cuda(cudaMemsetAsync(r.get(), 0, r.bytes(), c_.stream), "cudaMemsetAsync", where_);
    const std::vector<void*> ptrs = pointers(x.get(), y.get(), r.get());
    double best = 1e30;
    size_t pick = 0;
    for (size_t i = 0; i < plans.size(); ++i) {
      DeviceBuffer ws(size_t(plans[i].workspace), "cudaMalloc(QConv trial workspace)", where_);
      try {
        cg::execute(c_.cudnn, plans[i], uids_, ptrs, ws.get(), where_);  // warm-up
        check_cuda(cudaStreamSynchronize(c_.stream), "cudaStreamSynchronize", where_);
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < 3; ++k) cg::execute(c_.cudnn, plans[i], uids_, ptrs, ws.get(), where_);
        check_cuda(cudaStreamSynchronize(c_.stream), "cudaStreamSynchronize", where_);
        const double t =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (t < best) best = t, pick = i;
      } catch (const Error&) {
        cudaGetLastError();  // a plan that fails here is not chosen
      }
    }
    check_supported(best < 1e30, "no cuDNN plan ran this integer convolution", where_);
    return std::move(plans[pick]);
  }

  Context& c_;
  ErrorContext where_;
  QConvShape q_;
  DeviceBuffer weights_, scale_, bias_, out_scale_;
  std::shared_ptr<SharedPlan> shared_;
  std::vector<int64_t> uids_;
};

KernelPlan make_qconv(const OpDesc& op, Context& c) {
  // The weights kept in KRSC, the bias divided by u.
  return channels_last_conv_plan(op, std::make_unique<QConvKernel>(op, c), {false, true, true});
}

}  // namespace

void register_qconv_kernels() { register_kernel(ops::kQConvOp, make_qconv); }

}  // namespace tandem::cuda
