#pragma once
// Calibrated int8 models kept across runs. Post-training quantization runs
// the whole network once per method and once per convolution to measure
// what each loses (minutes for the shipped detector on two cores), while its
// result depends only on the float graph, the calibration batches and the
// options that shape it. So `--precision int8` keeps the quantized graph as
// a QDQ ONNX file in tandem's cache directory, named by a hash of those
// inputs and of the running tandem binary (a rebuilt quantizer quantizes
// afresh), and the next run with the same inputs reads it back.
//
// The cache only ever saves time: a graph with no ONNX form is quantized
// without it, and an unreadable or unwritable file is named on stderr and
// the graph quantized as without it.
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/post_training.h"

namespace tandem::cli {

// The cache file for quantizing `g` on `batches` with `p`; "" when there is
// no cache directory or `g` has no ONNX form.
std::string int8_cache_path(const Graph& g, const std::vector<Tensor>& batches,
                            const PtqOptions& p);

// The quantized graph stored at `path`, or nothing when there is none (or
// it cannot be read: said on stderr).
std::optional<Graph> load_cached_int8(const std::string& path);

// Stores `q` at `path` (atomically: a concurrent reader sees the whole file
// or none); a failure is said on stderr.
void store_cached_int8(const Graph& q, const std::string& path);

}  // namespace tandem::cli
