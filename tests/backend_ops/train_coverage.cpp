// Every entry of a training table needs a case: the entries by name, kept
// in step with ops/train_backend.h by the size check below.
#include <algorithm>

#include "tests/backend_ops/checks.h"

namespace tandem::backend_ops {

namespace {

struct Entry {
  const char* name;
  bool present;
};

constexpr int kEntries = 29;
// name, ctx, the two flags (padded to a pointer), then the entries: an
// entry added to or removed from TrainBackend must be listed below too.
static_assert(
    sizeof(TrainBackend) == 3 * sizeof(void*) + kEntries * sizeof(void (*)()),
    "TrainBackend's entries changed: update entries_of() in tests/backend_ops/train_coverage.cpp");

std::vector<Entry> entries_of(const TrainBackend& t) {
  return {{"empty", t.empty != nullptr},
          {"fill", t.fill != nullptr},
          {"cast", t.cast != nullptr},
          {"conv2d_forward", t.conv2d_forward != nullptr},
          {"conv2d_backward", t.conv2d_backward != nullptr},
          {"linear_forward", t.linear_forward != nullptr},
          {"linear_backward", t.linear_backward != nullptr},
          {"batch_norm_forward", t.batch_norm_forward != nullptr},
          {"batch_norm_backward", t.batch_norm_backward != nullptr},
          {"batch_norm_relu_forward", t.batch_norm_relu_forward != nullptr},
          {"batch_norm_relu_backward", t.batch_norm_relu_backward != nullptr},
          {"layer_norm_forward", t.layer_norm_forward != nullptr},
          {"layer_norm_backward", t.layer_norm_backward != nullptr},
          {"eltwise_forward", t.eltwise_forward != nullptr},
          {"eltwise_backward", t.eltwise_backward != nullptr},
          {"pool2d_forward", t.pool2d_forward != nullptr},
          {"pool2d_backward", t.pool2d_backward != nullptr},
          {"add_forward", t.add_forward != nullptr},
          {"sum_to", t.sum_to != nullptr},
          {"concat_forward", t.concat_forward != nullptr},
          {"concat_backward", t.concat_backward != nullptr},
          {"dropout_forward", t.dropout_forward != nullptr},
          {"dropout_backward", t.dropout_backward != nullptr},
          {"cross_entropy_forward", t.cross_entropy_forward != nullptr},
          {"cross_entropy_backward", t.cross_entropy_backward != nullptr},
          {"fake_quant_forward", t.fake_quant_forward != nullptr},
          {"fake_quant_backward", t.fake_quant_backward != nullptr},
          {"min_max", t.min_max != nullptr},
          {"qconv2d_forward", t.qconv2d_forward != nullptr}};
}

}  // namespace

std::vector<std::string> missing_entries(const TrainCase& c, const TrainBackend& t) {
  std::vector<Entry> all = entries_of(t);
  std::vector<std::string> missing;
  for (const std::string& name : c.entries)
    for (const Entry& e : all)
      if (name == e.name && !e.present) missing.push_back(name);
  return missing;
}

void check_train_coverage(const std::vector<TrainCase>& cases, const TableUnderTest& t,
                          Tally& tally) {
  for (const Entry& e : entries_of(*t.table)) {
    if (!e.present) continue;
    bool covered = std::any_of(cases.begin(), cases.end(), [&](const TrainCase& c) {
      return std::find(c.entries.begin(), c.entries.end(), e.name) != c.entries.end();
    });
    if (!covered)
      tally.fail(t.name + " training entry " + e.name + " has no case in tests/backend_ops");
  }
}

}  // namespace tandem::backend_ops
