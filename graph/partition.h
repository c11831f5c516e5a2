#pragma once
// Device placement: every node runs on the session's device when that
// device's backend has a kernel for it, and on the CPU otherwise, so that no
// graph fails for want of one kernel. The placed graph is cut into segments,
// runs of nodes on one device, ordered so that a device's nodes stay together
// as far as their dependencies allow (each change of device is a copy across
// the bus). A graph that runs wholly on its device is one segment: the graph
// itself, unchanged.
#include <string>
#include <vector>

#include "core/backend.h"
#include "graph/graph.h"

namespace tandem {

// A node as a backend's supports() sees it when placing: op type, name,
// attributes and opset; no shapes yet.
OpDesc placement_desc(const Graph& g, const Node& node);

// Where each node of `g` runs: true for the fallback (the CPU). A node goes
// to the fallback when `primary` does not support its op type or it is in
// `refused` (nodes whose kernel the primary refused at prepare for their
// dtypes or attributes). Dead nodes are never placed.
std::vector<bool> place_on_fallback(const Graph& g, const Backend& primary, const std::vector<std::string>& refused);

struct Segment {
  bool on_fallback = false;
  Graph graph;                   // the segment's nodes, standalone
  std::vector<ValueId> inputs;   // per graph.inputs: the value it stands for in the whole graph
  std::vector<ValueId> outputs;  // per graph.outputs: likewise
};

// Cuts `g` into segments by `fallback` (from place_on_fallback). A
// segment's inputs are the whole graph's inputs and values made by earlier
// segments; its outputs are what later segments or the graph's outputs read.
// Constants are copied into each segment that reads them (they share
// storage).
std::vector<Segment> split_segments(const Graph& g, const std::vector<bool>& fallback);

// "Resize ×3, TopK": op types of the fallback nodes with their counts, in
// graph order.
std::string fallback_summary(const Graph& g, const std::vector<bool>& fallback);

}  // namespace tandem
