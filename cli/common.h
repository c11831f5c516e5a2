#pragma once
// Options every subcommand shares, and helpers the subcommands reuse.
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "formats/load_model.h"
#include "graph/session.h"
#include "profile/session.h"

namespace tandem::cli {

struct CommonOptions {
  std::string trace_path;   // --trace FILE: Chrome trace of the run
  std::string profile_dir;  // --profile DIR: trace, summary.txt, summary.json
  int threads = 0;         // --threads T: CPU compute threads (0 = all cores)
  std::string device = "auto";
  std::string precision = "fp32";  // "auto": fp16 on a GPU, fp32 on the CPU (resolve_precision)
  bool strict_device = false;  // --strict-device: an op the device cannot run is an error, not a CPU fallback
  std::string calibrate;       // --calibrate DIR|FILE.npy: what --precision int8 calibrates on
  int float_layers = -1;       // --float-layers N: convolutions --precision int8 keeps in float (-1: by measurement)
};

// Adds --trace, --profile, --threads, --device, --precision and --strict-device to a subcommand.
void add_common_options(CLI::App* sub, CommonOptions& opts);

// What --trace and --profile ask a profile::TraceSession to write.
profile::SessionOutputs session_outputs(const CommonOptions& opts);

// The device --device names ("auto": the best one present).
Device resolve_device(const CommonOptions& opts);
// The same, and for "cuda:all" every CUDA GPU present, or the devices of a
// comma-separated list ("cuda:0,cuda:2"): tag runs a pipeline on each. An
// Error when there is none.
std::vector<Device> resolve_devices(const CommonOptions& opts);

// The precision a session compiles in: --precision's, or float32 for int8,
// whose integers live in the graph (int8_rewrite) with float32 around them.
Precision graph_precision(const CommonOptions& opts, const Device& device);
// For --precision int8: what makes `model`'s loaded graph integer (it
// calibrates on --calibrate, photos through the model's preprocessing or a
// .npy input, and says on stderr what it quantized; Error without
// --calibrate). Empty for every other precision.
std::function<Graph(Graph)> int8_rewrite(const std::string& model, const CommonOptions& opts);

// --precision int8's quantization of `g` on `batches`, from the common
// flags (--threads, --float-layers) and the activations the device takes
// (u8 on the CPU; symmetric s8 on a GPU, the only form cuDNN's integer
// convolutions take). Says on stderr what it quantized: `name` (a model's,
// or empty) and `source` (what it calibrated on). A graph quantized before
// on the same batches with the same options comes from the cache instead
// (cli/int8_cache.h).
Graph quantize_for_device(Graph g, const std::vector<Tensor>& batches, const CommonOptions& opts,
                          const std::string& name, const std::string& source);

// Loads a model file (ONNX, or TF.js model.json) into a Session configured from `opts`.
// low_precision_inputs: see SessionOptions.
// --precision on `device`.
Precision resolve_precision(const CommonOptions& opts, const Device& device);
// The session options the common flags (--device, --precision, --threads,
// --strict-device) ask for.
SessionOptions session_options(const CommonOptions& opts, bool low_precision_inputs = false);
Session open_model(const std::string& path, const CommonOptions& opts, const ModelLoadOptions& load = {},
                   bool low_precision_inputs = false);

// When some of the session's ops ran on the CPU for want of a kernel on its
// device: one line on stderr with those ops and the time their CPU parts
// took in this run (`wall_s`: the run's wall time, for the share).
void say_fallback_cost(const Session& s, double wall_s);

// "data/out:0" -> "data_out_0": a file name safe on every filesystem.
std::string sanitize_name(const std::string& name);

// A CLI check for a catalog to read: an existing SQLite file or a
// postgresql:// URL (whose server answers later, naming what is wrong).
CLI::Validator existing_catalog();

}  // namespace tandem::cli
