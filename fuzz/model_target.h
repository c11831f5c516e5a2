#pragma once
// What a model file from the internet goes through before anything runs:
// import, then shape inference and constant folding on the CPU backend (as
// a Session does when it is created). Shared by the ONNX and TF.js targets.
#include "cpu/cpu_backend.h"
#include "fuzz/fuzz_util.h"
#include "graph/passes.h"

namespace tandem::fuzz {

template <typename Load>
void import_and_prepare(Load&& load) {
  rejecting_bad_input([&] {
    Graph g = load();
    infer_and_fold(g, cpu::cpu_backend());
  });
}

}  // namespace tandem::fuzz
