// tandem_backend_ops [--backend cpu|cuda] [--filter TEXT] [--verbose]
//
// Runs every op case on the backend's inference kernels and every training
// case on its training table, checks that each registered kernel and table
// entry has a case, and prints a summary. Exit status: 0 when nothing
// failed, 1 on a failure, 77 (ctest's skip) for --backend cuda without a GPU.
#include <cstdio>
#include <cstring>
#include <string>

#include "cpu/cpu_backend.h"
#include "cpu/registry.h"
#include "tests/backend_ops/checks.h"
#include "train/backend.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#include "cuda/cuda_backend.h"
#include "cuda/registry.h"
#endif

namespace tandem::backend_ops {
namespace {

struct Options {
  std::string backend = "cpu";
  std::string filter;
  bool verbose = false;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--verbose")
      o.verbose = true;
    else if (a == "--backend" && i + 1 < argc)
      o.backend = argv[++i];
    else if (a == "--filter" && i + 1 < argc)
      o.filter = argv[++i];
    else
      return false;
  }
  return o.backend == "cpu" || o.backend == "cuda";
}

bool cpu_has_kernel(const std::string& op) { return cpu::find_kernel(op) != nullptr; }

BackendUnderTest cpu_under_test() { return {"cpu", &cpu::cpu_backend(), cpu_has_kernel}; }
TableUnderTest cpu_table() {
  return {"cpu", &train::train_backend(Device::cpu()), &cpu::cpu_backend()};
}

#ifdef TANDEM_HAVE_CUDA
bool cuda_has_kernel(const std::string& op) { return cuda::find_kernel(op) != nullptr; }
#endif

// The registries' coverage needs no device: registration is host code.
void check_coverage(const std::vector<OpCase>& ops, const std::vector<TrainCase>& train,
                    Tally& tally) {
  check_op_coverage(ops, cpu_under_test(), tally);
  check_train_coverage(train, cpu_table(), tally);
#ifdef TANDEM_HAVE_CUDA
  check_op_coverage(ops, {"cuda", nullptr, cuda_has_kernel}, tally);
#endif
}

int run(const Options& o) {
  Tally tally;
  tally.set_verbose(o.verbose);
  std::vector<OpCase> ops = all_op_cases();
  std::vector<TrainCase> train = all_train_cases();
  check_coverage(ops, train, tally);
  if (o.backend == "cpu") {
    check_op_cases(ops, cpu_under_test(), cpu::cpu_backend(), o.filter, tally);
    check_train_cases(train, cpu_table(), cpu_table(), o.filter, tally);
  } else {
#ifdef TANDEM_HAVE_CUDA
    if (cuda::device_count() == 0) {
      std::printf("no CUDA GPU here: skipped\n");
      return 77;
    }
    TableUnderTest gpu_table{"cuda", &train::train_backend(Device::cuda(0)),
                             &cuda::cuda_backend(0)};
    check_train_coverage(train, gpu_table, tally);
    check_op_cases(ops, {"cuda", &cuda::cuda_backend(0), cuda_has_kernel}, cpu::cpu_backend(),
                   o.filter, tally);
    check_train_cases(train, gpu_table, cpu_table(), o.filter, tally);
#else
    std::printf("built without CUDA: skipped\n");
    return 77;
#endif
  }
  std::printf("%zu op cases, %zu training cases\n", ops.size(), train.size());
  tally.print_summary();
  return tally.ok() ? 0 : 1;
}

}  // namespace
}  // namespace tandem::backend_ops

int main(int argc, char** argv) {
  tandem::backend_ops::Options o;
  if (!tandem::backend_ops::parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: tandem_backend_ops [--backend cpu|cuda] [--filter TEXT] [--verbose]\n");
    return 2;
  }
  try {
    return tandem::backend_ops::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem_backend_ops: %s\n", e.what());
    return 1;
  }
}
