// ONNX backend node conformance: runs every test in Debian's libonnx-testdata
// on one device (tests/conformance/node_runner.h says how each is judged) and
// prints the failures and a summary. Exit status 1 if anything failed, or if
// fewer tests than --min-pass passed with kernels on the device; 77 (ctest's
// skip) when the data or the device is absent. Unsupported tests are counted
// by op; --list-unsupported lists them, and so does the file named by
// $TANDEM_CONFORMANCE_UNSUPPORTED_LIST (one per line, with the reason).
//   tandem_conformance [--root DIR] [--device cpu|cuda[:N]] [--min-pass N]
//                      [--list-unsupported] [--verbose] [NAME_FILTER]
// The data folder is --root, else $TANDEM_ONNX_NODE_DATA, else Debian's.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/conformance/node_runner.h"
#ifdef TANDEM_HAVE_CUDA
#include "cuda/context.h"
#endif

namespace fs = std::filesystem;
using namespace tandem;
using namespace tandem::conformance;

namespace {

constexpr int kSkip = 77;

struct Args {
  fs::path root = "/usr/share/libonnx-testdata/data/node";
  Device device = Device::cpu();
  int min_pass = 0;
  bool list_unsupported = false;
  bool verbose = false;
  std::string filter;
};

Args parse_args(int argc, char** argv) {
  Args a;
  if (const char* env = std::getenv("TANDEM_ONNX_NODE_DATA"); env && *env) a.root = env;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    bool has_value = i + 1 < argc;
    if (s == "--verbose" || s == "-v") a.verbose = true;
    else if (s == "--list-unsupported") a.list_unsupported = true;
    else if (s == "--root" && has_value) a.root = argv[++i];
    else if (s == "--device" && has_value) a.device = Device::parse(argv[++i]);
    else if (s == "--min-pass" && has_value) a.min_pass = std::stoi(argv[++i]);
    else a.filter = s;
  }
  return a;
}

// Why `d` cannot be used here, or empty when it can.
std::string device_missing(const Device& d) {
  if (d.is_cpu()) return "";
#ifdef TANDEM_HAVE_CUDA
  if (cuda::device_count() > d.index) return "";
  return "no CUDA GPU " + d.str() + " here";
#else
  return "built without CUDA";
#endif
}

using Listing = std::vector<std::pair<std::string, std::string>>;

void print_listing(const std::string& heading, const Listing& list) {
  for (const auto& [name, why] : list) std::printf("%s %s: %s\n", heading.c_str(), name.c_str(), why.c_str());
}

// One line however many tests: "Resize 39, Slice 20, ...", most first.
void print_by_op(const std::string& heading, const std::map<std::string, int>& count) {
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [op, n] : count) order.push_back({-n, op});
  std::sort(order.begin(), order.end());
  std::string line;
  for (const auto& [n, op] : order) line += (line.empty() ? "" : ", ") + op + " " + std::to_string(-n);
  if (!line.empty()) std::printf("%s by op: %s\n", heading.c_str(), line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem_conformance: %s\n", e.what());
    return 2;
  }
  if (!fs::exists(args.root)) {
    std::printf("SKIP: %s not found (install libonnx-testdata, or set TANDEM_ONNX_NODE_DATA)\n", args.root.c_str());
    return kSkip;
  }
  if (std::string why = device_missing(args.device); !why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return kSkip;
  }
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(args.root))
    if (e.is_directory() && e.path().filename().string().find(args.filter) != std::string::npos)
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());

  SessionOptions options;
  options.device = args.device;
  options.strict_device = true;  // the device's own kernels are under test, not the CPU's
  std::map<Verdict, Listing> by;
  std::map<std::string, int> unsupported_ops;
  size_t host_only = 0;  // passed, but compilation folded everything on the host
  for (const fs::path& t : tests) {
    NodeResult r = run_node_test(t, options);
    by[r.verdict].push_back({t.filename().string(), r.detail});
    if (r.verdict == Verdict::pass && r.device_steps == 0) ++host_only;
    if (r.verdict == Verdict::unsupported) ++unsupported_ops[r.op.empty() ? "(no op named)" : r.op];
    if (args.verbose) std::printf("%-60s %s %s\n", t.filename().c_str(), verdict_name(r.verdict), r.detail.c_str());
  }

  const std::string dev = args.device.str();
  if (args.list_unsupported) print_listing("UNSUPPORTED ON " + dev, by[Verdict::unsupported]);
  print_by_op("UNSUPPORTED ON " + dev, unsupported_ops);
  print_listing("BAD TEST DATA", by[Verdict::bad_data]);
  print_listing("FAILED", by[Verdict::fail]);
  size_t passed = by[Verdict::pass].size(), on_device = passed - host_only;
  std::printf("onnx node tests on %s: %zu passed (%zu ran kernels on %s, %zu were folded into constants on the "
              "host), %zu failed, %zu unsupported on %s, %zu with bad test data (of %zu)\n",
              dev.c_str(), passed, on_device, dev.c_str(), host_only, by[Verdict::fail].size(),
              by[Verdict::unsupported].size(), dev.c_str(), by[Verdict::bad_data].size(), tests.size());
  if (const char* list = std::getenv("TANDEM_CONFORMANCE_UNSUPPORTED_LIST")) {
    // Full list of unsupported tests with reasons, for docs and triage.
    if (FILE* f = std::fopen(list, "w")) {
      for (const auto& [name, why] : by[Verdict::unsupported]) std::fprintf(f, "%s\t%s\n", name.c_str(), why.c_str());
      std::fclose(f);
    }
  }
  bool ok = by[Verdict::fail].empty();
  if (on_device < size_t(args.min_pass)) {
    std::printf("FAILED: only %zu tests passed with kernels on %s; at least %d should\n", on_device, dev.c_str(),
                args.min_pass);
    ok = false;
  }
  return ok ? 0 : 1;
}
