// `tandem train --arch cnn --data fashion-mnist --epochs 10 --out model.onnx`:
// trains a CNN (train/models) with the training loop of train/trainer.h,
// evaluates it after every epoch, checkpoints, and exports the result as an
// ONNX model that `tandem run` / `classify` and PyTorch load.
#include <fmt/core.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/train_data.h"
#include "cli/train_progress.h"
#include "cli/train_setup.h"
#include "cpu/cpu_backend.h"
#include "profile/session.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif
#include "train/distributed/communicator.h"
#include "train/export.h"
#include "train/models/models.h"
#include "train/precision.h"
#include "train/split/place.h"
#include "train/train_profile.h"
#include "train/trainer.h"

namespace tandem::cli {

namespace {

// The ranks of a --distributed run; one process otherwise.
struct Ranks {
  std::unique_ptr<train::Communicator> comm;
  int rank = 0, size = 1;
  bool leads() const { return rank == 0; }
};

train::LoaderOptions loader_options(const TrainCliOptions& o, bool shuffle, float fill = 0) {
  train::LoaderOptions l;
  l.batch_size = o.batch;
  l.shuffle = shuffle;
  l.seed = o.seed;
  l.workers = o.workers;
  if (shuffle) {  // the training set's loader
    l.augment.crop_padding = o.random_crop;
    l.augment.horizontal_flip = o.flip;
    l.augment.fill = fill;
  }
  return l;
}

nlohmann::json epoch_json(const train::EpochReport& r, const std::string& precision) {
  nlohmann::json j = {{"epoch", r.epoch + 1},          {"precision", precision},          {"train_loss", r.train_loss},
                      {"train_accuracy", r.train_accuracy}, {"train_seconds", r.train_seconds},
                      {"eval_seconds", r.eval_seconds}, {"images_per_second", r.images_per_second},
                      {"skipped_steps", r.skipped_steps}};
  if (r.test) j["test_loss"] = r.test->loss, j["test_accuracy"] = r.test->accuracy;
  return j;
}

void print_plan(const TrainCliOptions& o, const train::Dataset& tr, const train::Dataset* te, int64_t batches,
                const train::Optimizer& opt, int ranks) {
  const std::string test = te ? fmt::format("{} test", te->size()) : "no test";
  const std::string batch =
      ranks > 1 ? fmt::format("{} ({} ranks x {})", o.batch * ranks, ranks, o.batch) : std::to_string(o.batch);
  fmt::print(
      "training {} on {}: {} train / {} images {}, {} classes, {} batches of {} per epoch, {} lr "
      "{:g}, "
      "{} epochs, {} {}{}\n",
      o.arch, o.data, tr.size(), test, shape_str(tr.image_shape()), tr.num_classes(), batches,
      batch, o.optimizer, opt.lr(), o.epochs, o.device, o.precision,
      channels_last(o) && o.device != "cpu" ? " nhwc" : "");
  std::fflush(stdout);
}

// The first batch the training loader would give (in order, no workers):
// what the split is measured on.
Tensor first_batch(const TrainCliOptions& o, const train::Dataset& tr) {
  train::LoaderOptions lo = loader_options(o, false);
  lo.workers = 0;
  train::DataLoader first(tr, lo);
  first.start_epoch(0);
  std::optional<train::Batch> b = first.next();
  check(b.has_value(), "--device hetero: the training set is empty");
  return b->images;
}

// --device hetero: every conv and linear layer split between the GPU and the
// CPU, the split tuned per layer on a training batch's real shapes (--split
// auto) or fixed (--split R: the CPU's share of each layer's channels). In a
// data-parallel run rank 0 tunes and every rank takes its split. Under QAT
// each rank also times its layers' CPU side in float and on integers and
// runs the faster (the two give the same values but for rounding).
void place_split(const TrainCliOptions& o, train::Sequential& model, const train::Dataset& tr, Device gpu,
                 const Ranks& ranks) {
  const train::SplitSetting setting = train::parse_split_setting(o.split);
  const int n = train::place_hetero(model, gpu, setting);
  if (!setting.automatic) {
    if (o.precision != "int8-qat") return;
    if (ranks.leads())
      fmt::print("timing the CPU side of {} layers in float and int8 on a batch of {}...\n", n,
                 o.batch);
    train::prepare_split(model, first_batch(o, tr));
    return;
  }
  if (ranks.leads()) {
    fmt::print("tuning the split of {} layers on a batch of {}...\n", n, o.batch);
    std::fflush(stdout);
    train::prepare_split(model, first_batch(o, tr));
  }
  if (!ranks.comm) return;
  std::vector<int64_t> rows = train::split_home_rows(model);
  ranks.comm->broadcast(Tensor::wrap(TensorDesc{DType::i64, {int64_t(rows.size())}, Layout::plain}, rows.data()), 0);
  train::set_split_home_rows(model, rows);
}

// GPUs this build can use: none without the CUDA backend.
int gpu_count() {
#ifdef TANDEM_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

// A rank's GPU: the one of its machine its place there picks.
Device rank_gpu(const Ranks& r) {
  if (!r.comm) return Device::cuda(0);
  const int gpus = gpu_count();
  check(gpus > 0, "rank " + std::to_string(r.rank) + " found no CUDA GPU");
  return Device::cuda(r.comm->local_rank() % gpus);
}

nlohmann::json step_json(const train::StepReport& r) {
  return {{"epoch", r.epoch + 1}, {"batch", r.batch},   {"step", r.step},
          {"loss", r.loss},       {"lr", r.lr},         {"seconds", r.seconds},
          {"skipped_steps", r.skipped_steps}};
}

int train_run(const TrainCliOptions& o, Ranks& ranks);

// GPU ranks sum their gradients through NCCL when each has a GPU of its own
// (NCCL refuses two ranks on one GPU) and NCCL is installed, else through
// MPI on the host. The ranks agree on one way before any takes it.
void choose_gpu_sums(Ranks& r) {
  const int gpus = gpu_count();
  std::string why_not;
  const bool crowded = r.comm->local_rank() >= gpus;
  if (!crowded) train::nccl_available(&why_not);
  double unable[2] = {crowded ? 1.0 : 0.0, why_not.empty() ? 0.0 : 1.0};
  r.comm->sum(unable);
  const bool nccl = unable[0] == 0 && unable[1] == 0;
  if (r.leads())
    fmt::print("gradients of {} ranks summed {}\n", r.size,
               nccl          ? std::string("on the GPUs (NCCL)")
               : unable[0] > 0 ? std::string("through the host (MPI): ranks share a GPU, which NCCL refuses")
                               : "through the host (MPI): " +
                                     (why_not.empty() ? "NCCL cannot be loaded on another rank" : why_not));
  if (!nccl) return;
  const int device = rank_gpu(r).index;
  r.comm = train::with_nccl(std::move(r.comm), device);
}

int train_command(const TrainCliOptions& o) {
  check_train_options(o);
  Ranks ranks;
  if (o.distributed) {
    ranks.comm = train::mpi_world();
    ranks.rank = ranks.comm->rank();
    ranks.size = ranks.comm->size();
  }
  try {
    if (ranks.comm && o.device != "cpu") choose_gpu_sums(ranks);
    return train_run(o, ranks);
  } catch (const std::exception& e) {
    if (ranks.size == 1) throw;
    // The other ranks would wait for this one in their next collective:
    // the whole run ends here, and the launcher says which rank failed.
    std::fprintf(stderr, "tandem: rank %d of %d: %s\n", ranks.rank, ranks.size, e.what());
    std::fflush(stderr);
    ranks.comm->abort(1);
  }
  return 1;  // not reached: abort() ends the process
}

// Rank r > 0 of a distributed run writes its trace and profile beside
// rank 0's: PATH.rankR.
std::string for_rank(const std::string& path, const Ranks& r) {
  return path.empty() || r.rank == 0 ? path : path + ".rank" + std::to_string(r.rank);
}

int train_run(const TrainCliOptions& o, Ranks& ranks) {
  profile::TraceSession trace(profile::SessionOutputs{for_rank(o.trace, ranks), for_rank(o.profile, ranks)});
  trace.set_verdict([&o](const profile::ProfileSummary& s) {
    return train::train_profile_verdict(
        s, {"main", o.device != "cpu", o.precision == "fp16" || o.precision == "bf16"});
  });
  cpu::set_num_threads(o.threads);
  TrainData data = load_train_data(o);
  const train::Dataset& tr = data.train.get();
  Shape sample = tr.image_shape();
  train::ModelConfig mc{sample[0], sample[1], sample[2], tr.num_classes(), o.dropout};
  train::Rng rng(o.seed);
  std::unique_ptr<train::Sequential> model = train::make_model(o.arch, mc, rng);
  train::apply_precision(*model, o.precision);
  // Placed before the optimizer is made: its state lives with the weights,
  // and a split layer's parameters are its two slices.
  if (o.device == "cuda") model->to(rank_gpu(ranks));
  if (o.device == "hetero") place_split(o, *model, tr, rank_gpu(ranks), ranks);
  std::unique_ptr<train::Optimizer> optimizer = make_optimizer(o, model->parameters());
  train::LoaderOptions train_lo = loader_options(o, true, data.fill);
  train_lo.shard = ranks.rank;
  train_lo.shards = ranks.size;
  train::DataLoader train_loader(tr, train_lo);
  std::unique_ptr<train::DataLoader> test_loader;
  if (data.test) test_loader = std::make_unique<train::DataLoader>(data.test.get(), loader_options(o, false));
  const int64_t batches = train_loader.batches_per_epoch();
  train::TrainerOptions to;
  to.epochs = o.epochs;
  to.label_smoothing = o.label_smoothing;
  to.clip_grad_norm = o.clip_grad;
  to.checkpoint = o.checkpoint;
  to.channels_last = channels_last(o);
  to.max_steps = o.max_steps;
  to.communicator = ranks.comm.get();
  set_precision(o, to);
  train::Trainer trainer(*model, *optimizer, make_schedule(o, optimizer->lr(), batches), to);
  if (o.resume) {
    trainer.resume();
    if (ranks.leads())
      fmt::print("resumed from {} at epoch {}, batch {} (step {})\n", o.checkpoint, trainer.state().epoch + 1,
               trainer.state().epoch_batch, trainer.state().step);
  }
  if (ranks.leads()) print_plan(o, tr, data.test ? &data.test.get() : nullptr, batches, *optimizer, ranks.size);
  std::ofstream log;
  if (!o.log.empty() && ranks.leads()) {
    log.open(o.log, std::ios::app);
    check(bool(log), "cannot open the log file", {o.log, "", "", ""});
  }
  TrainProgress progress(o.epochs, o.precision);
  // Every rank's step report holds the global batch's loss; rank 0 shows it.
  if (ranks.leads()) {
    trainer.on_step = [&](const train::StepReport& r) {
      progress.step(r);
      if (log.is_open() && o.log_steps) log << step_json(r).dump() << std::endl;
    };
    trainer.on_epoch = [&](const train::EpochReport& r) {
      progress.epoch(r);
      if (log.is_open()) log << epoch_json(r, o.precision).dump() << std::endl;
    };
  }
  trainer.fit(train_loader, test_loader.get());
  if (!ranks.leads()) return 0;
  if (o.device == "hetero") fmt::print("CPU/GPU split (cpu share: of each layer's output channels)\n{}",
                                       train::format_split_summary(train::split_summary(*model)));
  if (!o.out.empty()) {
    train::export_onnx(*model, sample, o.out);
    fmt::print("wrote {}\n", o.out);
  }
  trace.finish();
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainCliOptions>();
  CLI::App* sub = app.add_subcommand("train", "Train a CNN (CPU or GPU; fp32, fp16, bf16 or int8 QAT) and export it as ONNX");
  sub->add_option("--arch", o->arch, "lenet5, cnn, resnet20, resnet18 or convnext")
      ->check(CLI::IsMember({"lenet5", "cnn", "resnet20", "resnet18", "convnext"}));
  sub->add_option("--data", o->data, "fashion-mnist (Debian's dataset-fashion-mnist) or an image folder DIR");
  sub->add_option("--image-size", o->image_size, "image folders: the square crop S the network sees (resize to S*256/224)")
      ->check(CLI::Range(8, 1024));
  sub->add_option("--epochs", o->epochs, "Passes over the training set")->check(CLI::NonNegativeNumber);
  sub->add_option("--batch", o->batch, "Images per step")->check(CLI::PositiveNumber);
  sub->add_option("--device", o->device, "cpu, cuda or hetero (CPU and GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "hetero"}));
  sub->add_option("--precision", o->precision, "fp32, fp16, bf16 or int8-qat")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "int8-qat"}));
  sub->add_option("--memory-format", o->memory_format,
                  "nchw, nhwc (on the GPU activations stay channels last through conv, batch "
                  "norm and pooling), or auto: nhwc for fp16/bf16 on cuda, else nchw")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}));
  sub->add_option("--split", o->split,
                  "hetero: share of each layer's output channels on the CPU (0: all on the GPU), or auto (tuned per "
                  "layer)");
  sub->add_option("--optimizer", o->optimizer, "adam, adamw or sgd")->check(CLI::IsMember({"adam", "adamw", "sgd"}));
  sub->add_option("--lr", o->lr, "Learning rate (default: 1e-3 adam/adamw, 0.01 sgd)")->check(CLI::PositiveNumber);
  sub->add_option("--weight-decay", o->weight_decay, "Weight decay (default: 1e-2 adamw, 0 sgd; adam: none)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--momentum", o->momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0));
  sub->add_flag("--nesterov", o->nesterov, "SGD with Nesterov momentum");
  sub->add_option("--schedule", o->schedule, "Learning-rate schedule: none, step or cosine")
      ->check(CLI::IsMember({"none", "step", "cosine"}));
  sub->add_option("--lr-step-epochs", o->lr_step_epochs, "step schedule: epochs per decay (default: a third of them)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--lr-gamma", o->lr_gamma, "step schedule: decay factor")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--warmup-steps", o->warmup_steps, "Linear warmup from lr/3 over this many steps")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--label-smoothing", o->label_smoothing, "Cross-entropy label smoothing")
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--clip-grad", o->clip_grad, "Clip the global gradient norm to this (0: off)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--dropout", o->dropout, "cnn: dropout probability before the last layer");
  sub->add_option("--random-crop", o->random_crop, "augment: pad training images by P pixels, crop at random")
      ->check(CLI::Range(0, 16));
  sub->add_flag("--flip", o->flip, "augment: flip training images left-right at random");
  sub->add_option("--seed", o->seed, "Seed of the initial weights, shuffling and dropout");
  sub->add_option("--workers", o->workers, "Batch-making threads (0: on the training thread)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--threads", o->threads, "CPU compute threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  sub->add_option("--out", o->out, "Write the trained model (eval mode) as ONNX to MODEL.onnx");
  sub->add_option("--checkpoint", o->checkpoint, "Checkpoint FILE, written after every epoch");
  sub->add_flag("--resume", o->resume, "Continue the run saved in --checkpoint (with any number of ranks)");
  sub->add_option("--max-steps", o->max_steps, "Stop after this many optimizer steps, checkpointed (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--log-steps", o->log_steps, "--log gets one JSON line per step too (loss, lr, seconds)");
  sub->add_flag("--distributed", o->distributed,
                "Data-parallel: this process is one rank of an MPI world (mpirun -np N tandem train ... or srun); "
                "--batch is per rank, gradients are summed across ranks, rank 0 evaluates, logs and checkpoints");
  sub->add_option("--limit-train", o->limit_train, "Train on the first N images only")->check(CLI::NonNegativeNumber);
  sub->add_option("--limit-test", o->limit_test, "Evaluate on the first N images only")->check(CLI::NonNegativeNumber);
  sub->add_option("--log", o->log, "Append one JSON line per epoch (losses, accuracies, times) to FILE");
  sub->add_option("--trace", o->trace, "Write a Chrome trace (Perfetto) of the run to FILE");
  sub->add_option("--profile", o->profile,
                  "Profile the run into DIR: trace.json, summary.txt (forward, backward, optimizer, data wait) and "
                  "summary.json");
  on_run(sub, [o] { return train_command(*o); });
}

}  // namespace tandem::cli
