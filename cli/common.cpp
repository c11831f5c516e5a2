#include "cli/common.h"

#include "formats/onnx/onnx_importer.h"

namespace tandem::cli {

void add_common_options(CLI::App* sub, CommonOptions& opts) {
  sub->add_option("--trace", opts.trace_path, "Write a Chrome trace (Perfetto) of the run to FILE");
  sub->add_option("--threads", opts.threads, "CPU compute threads (0 = all cores)")->check(CLI::NonNegativeNumber);
  sub->add_option("--device", opts.device, "cpu, cuda[:N] or auto");
}

Session open_model(const std::string& path, const CommonOptions& opts) {
  SessionOptions so;
  so.device = opts.device == "auto" ? Device::cpu() : Device::parse(opts.device);
  so.threads = opts.threads;
  return Session(load_onnx(path), so);
}

std::string sanitize_name(const std::string& name) {
  std::string r;
  for (char c : name) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return r.empty() ? "output" : r;
}

}  // namespace tandem::cli
