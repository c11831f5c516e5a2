#pragma once
// Names of parameter slices. A layer split between two devices keeps each
// of its weight and bias as two Parameters, rows [a, b) of the full tensor's
// n rows (output channels), named "<name>[a:b/n]" ("conv1.weight[0:24/32]");
// optimizer slots follow ("conv1.weight[0:24/32].exp_avg"). What leaves the
// process (state_dict, checkpoints, ONNX export) holds full tensors under the
// plain names: gather_slices assembles them, slice_like cuts full tensors
// back into the live slices for a load.
#include <string>

#include "train/named_tensors.h"

namespace tandem::train {

// "<name>[a:b/n]"; the plain name when [a, b) is all of n.
std::string slice_name(const std::string& name, int64_t begin, int64_t end, int64_t rows);

// `tensors` with every set of slices of one name replaced by the full tensor
// (host, rows in order) at the first slice's place; other entries kept as they
// are (sharing storage). An Error when slices do not tile their rows.
NamedTensors gather_slices(const NamedTensors& tensors);

// `sources` (full tensors, plain names) as `targets` names them: each target
// named as a slice gets a host copy of its rows of the source of the plain
// name; other sources are kept. Targets with no source stay missing, for
// check_same_tensors to report.
NamedTensors slice_like(const NamedTensors& targets, const NamedTensors& sources);

}  // namespace tandem::train
