#pragma once
// The three checks tandem_backend_ops runs: every op case on a backend,
// every training case on a device's table, and the coverage of both
// registries and the table by cases.
#include <string>
#include <vector>

#include "core/backend.h"
#include "ops/train_backend.h"
#include "tests/backend_ops/harness.h"
#include "tests/backend_ops/op_cases.h"
#include "tests/backend_ops/train_cases.h"

namespace tandem::backend_ops {

// A backend under test: `kernels` answers whether it registered a kernel for
// an op type (its registry's find_kernel).
struct BackendUnderTest {
  std::string name;
  Backend* backend;
  bool (*has_kernel)(const std::string& op);
};

// Runs each case whose name contains `filter` on `b`, against the case's
// float64 reference or `cpu`'s f32 result.
void check_op_cases(const std::vector<OpCase>& cases, const BackendUnderTest& b, Backend& cpu,
                    const std::string& filter, Tally& tally);

// A device's training table with the backend whose memory it shares (for
// copies to and from the host).
struct TableUnderTest {
  std::string name;
  const TrainBackend* table;
  Backend* memory;
};

// Runs each training case whose name contains `filter` on `t`; references
// from `cpu` (the CPU table in f32, with its memory).
void check_train_cases(const std::vector<TrainCase>& cases, const TableUnderTest& t,
                       const TableUnderTest& cpu, const std::string& filter, Tally& tally);

// Fails, in `tally`, each registered kernel (every op type the schemas know
// that a backend's registry has a kernel for) and each non-null entry of a
// table without a case.
void check_op_coverage(const std::vector<OpCase>& cases, const BackendUnderTest& b, Tally& tally);
// The entries case `c` calls that table `t` lacks (null: the table has no
// such op, as the CUDA table has no fake quantization).
std::vector<std::string> missing_entries(const TrainCase& c, const TrainBackend& t);

void check_train_coverage(const std::vector<TrainCase>& cases, const TableUnderTest& t,
                          Tally& tally);

// Why a variant ("Conv/3x3-pad1 f16 nhwc") is known to disagree on a
// backend; nullptr when it is not (known_discrepancies.cpp).
const char* known_discrepancy(const std::string& backend, const std::string& variant);

}  // namespace tandem::backend_ops
