#include "cli/train_setup.h"

#include "core/error.h"
#include "train/optim/adamw.h"
#include "train/optim/sgd.h"
#include "train/split/split_ratio.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif

namespace tandem::cli {

namespace {

// --device cuda and hetero need a GPU; said before any data is loaded.
void check_gpu_present(const std::string& device) {
  if (device == "cpu") return;
#ifdef TANDEM_HAVE_CUDA
  check_supported(cuda::device_count() > 0, "--device " + device + ": no CUDA GPU found (use --device cpu)");
#else
  check_supported(false, "--device " + device + ": this build has no CUDA backend (configure with -DTANDEM_CUDA=ON)");
#endif
}

}  // namespace

void check_train_options(const TrainCliOptions& o) {
  check_supported(o.precision != "fp16" || o.device != "hetero",
                  "--precision fp16 with --device hetero: the CPU side computes in fp32 or bf16");
  check_supported(o.precision != "fp16" || o.device != "cpu",
                  "--precision fp16 trains on the GPU (--device cuda); the CPU computes in fp32 or bf16");
  check(o.split == "auto" || o.device == "hetero", "--split applies to --device hetero only");
  train::parse_split_setting(o.split);  // a bad share is an Error before any data is loaded
  check_gpu_present(o.device);
  check(!o.resume || !o.checkpoint.empty(), "--resume needs --checkpoint FILE");
  check(o.optimizer != "adam" || o.weight_decay <= 0,
        "--optimizer adam with --weight-decay (L2 in the gradient) is not supported yet; use adamw (decoupled)");
  check(o.dropout >= 0 && o.dropout < 1, "--dropout must be in [0, 1)");
}

void set_precision(const TrainCliOptions& o, train::TrainerOptions& t) {
  if (o.precision == "bf16") t.autocast = DType::bf16;
  if (o.precision == "fp16") {
    t.autocast = DType::f16;
    t.loss_scaling = train::LossScalerOptions{};  // fp16's range needs it; bf16 has f32's
  }
}

bool channels_last(const TrainCliOptions& o) {
  if (o.memory_format != "auto") return o.memory_format == "nhwc";
  return o.device == "cuda" && (o.precision == "fp16" || o.precision == "bf16");
}

std::unique_ptr<train::Optimizer> make_optimizer(const TrainCliOptions& o, const train::ParameterList& params) {
  if (o.optimizer == "sgd") {
    train::SgdOptions s;
    s.lr = o.lr > 0 ? o.lr : 0.01;
    s.momentum = o.momentum;
    s.nesterov = o.nesterov;
    s.weight_decay = o.weight_decay >= 0 ? o.weight_decay : 0;
    return std::make_unique<train::Sgd>(params, s);
  }
  train::AdamWOptions a;  // adam is adamw without decay
  a.lr = o.lr > 0 ? o.lr : 1e-3;
  a.weight_decay = o.optimizer == "adam" ? 0 : (o.weight_decay >= 0 ? o.weight_decay : 1e-2);
  return std::make_unique<train::AdamW>(params, a);
}

train::LrSchedule make_schedule(const TrainCliOptions& o, double lr, int64_t steps_per_epoch) {
  const int64_t total = o.epochs * steps_per_epoch;
  train::LrSchedule s = train::LrSchedule::constant(lr);
  if (o.schedule == "step") {
    int64_t every = o.lr_step_epochs > 0 ? o.lr_step_epochs : std::max<int64_t>(1, o.epochs / 3);
    s = train::LrSchedule::step(lr, every * steps_per_epoch, o.lr_gamma);
  } else if (o.schedule == "cosine") {
    s = train::LrSchedule::cosine(lr, std::max<int64_t>(1, total - o.warmup_steps), 0);
  }
  // torch.optim.lr_scheduler.LinearLR's default start factor.
  return o.warmup_steps > 0 ? s.with_warmup(o.warmup_steps, 1.0 / 3) : s;
}

}  // namespace tandem::cli
