#pragma once
// `tandem train`'s options and what they build: the checks that refuse what
// is not implemented yet (with a "not supported yet" Error, never a silent
// substitute), the optimizer and the learning-rate schedule.
#include <memory>
#include <string>

#include "train/optim/lr_schedule.h"
#include "train/optim/optimizer.h"
#include "train/trainer.h"

namespace tandem::cli {

struct TrainCliOptions {
  std::string arch = "cnn";
  std::string data = "fashion-mnist";
  int64_t image_size = 224;  // image folders: the crop (torchvision's CenterCrop)
  int64_t epochs = 10;
  int64_t batch = 128;
  std::string device = "cpu";
  std::string precision = "fp32";
  // nchw, nhwc (channels last on the GPU), or auto: nhwc for fp16/bf16 on
  // --device cuda (tensor cores' layout), else nchw.
  std::string memory_format = "auto";
  std::string split = "auto";
  std::string optimizer = "adam";
  double lr = 0;            // 0: the optimizer's default (adam/adamw 1e-3, sgd 0.01)
  double weight_decay = -1; // < 0: the optimizer's default (adamw 1e-2, else 0)
  double momentum = 0.9;    // sgd
  bool nesterov = false;    // sgd
  std::string schedule = "none";
  int64_t lr_step_epochs = 0;  // step schedule: decay every this many epochs (0: a third of the run)
  double lr_gamma = 0.1;       // step schedule
  int64_t warmup_steps = 0;
  float label_smoothing = 0;
  double clip_grad = 0;
  float dropout = 0.5f;
  int64_t random_crop = 0;  // training images: RandomCrop with this padding (0: none)
  bool flip = false;        // training images: RandomHorizontalFlip
  uint64_t seed = 0;
  int workers = 2;
  int threads = 0;
  std::string out, checkpoint, log;
  bool log_steps = false;  // --log gets a line per step too
  int64_t max_steps = 0;   // stop after this many steps (0: run every epoch)
  bool distributed = false;  // one of the MPI world's ranks (mpirun, srun)
  bool resume = false;
  int64_t limit_train = 0, limit_test = 0;
  std::string trace, profile;
};

// Throws Error::unsupported for a device, precision, split or dataset this
// path does not train with yet, Error for inconsistent options.
void check_train_options(const TrainCliOptions& o);

// --precision into the trainer's options: the forward's autocast dtype, and
// loss scaling for fp16.
void set_precision(const TrainCliOptions& o, train::TrainerOptions& t);
// --memory-format resolved: whether activations stay channels last.
bool channels_last(const TrainCliOptions& o);

std::unique_ptr<train::Optimizer> make_optimizer(const TrainCliOptions& o, const train::ParameterList& params);
train::LrSchedule make_schedule(const TrainCliOptions& o, double lr, int64_t steps_per_epoch);

}  // namespace tandem::cli
