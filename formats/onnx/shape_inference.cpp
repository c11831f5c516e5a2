#include "formats/onnx/shape_inference.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

namespace tandem {

namespace {

// The inferred types of a big model are a few MB; anything near this is a
// child gone wrong.
constexpr size_t kMaxReplyBytes = size_t(256) << 20;

// ONNX's inference walks nodes in file order and stops at a domain without
// an opset import; give it nodes in dependency order and an import (version
// 1) for every custom domain so that it gets as far as it can.
void prepare_for_inference(onnx::ModelProto& model) {
  std::unordered_set<std::string> domains;
  for (const auto& o : model.opset_import()) domains.insert(o.domain());
  auto* nodes = model.mutable_graph()->mutable_node();
  for (const auto& n : *nodes)
    if (!domains.count(n.domain()) && n.domain() != "ai.onnx") {
      domains.insert(n.domain());
      auto* o = model.add_opset_import();
      o->set_domain(n.domain());
      o->set_version(1);
    }
  // Kahn's algorithm over names; nodes left unplaced (cycles, undefined
  // inputs) keep their relative order at the end.
  std::unordered_set<std::string> ready{""};
  for (const auto& v : model.graph().input()) ready.insert(v.name());
  for (const auto& t : model.graph().initializer()) ready.insert(t.name());
  std::vector<onnx::NodeProto*> pending;
  while (!nodes->empty()) pending.push_back(nodes->ReleaseLast());
  std::reverse(pending.begin(), pending.end());
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& n : pending) {
      if (!n || !std::all_of(n->input().begin(), n->input().end(),
                             [&](const std::string& in) { return ready.count(in) != 0; }))
        continue;
      for (const auto& out : n->output()) ready.insert(out);
      nodes->AddAllocated(std::exchange(n, nullptr));
      progress = true;
    }
  }
  for (auto* n : pending)
    if (n) nodes->AddAllocated(n);
}

// In the child: infer, serialize the types, write them to `fd`, never return.
[[noreturn]] void child_main(onnx::ModelProto& model, int fd) {
  int status = 1;
  try {
    prepare_for_inference(model);
    // error_mode 0: a node whose inference fails is skipped, not fatal.
    onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/false);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    onnx::GraphProto reply;
    *reply.mutable_value_info() = model.graph().value_info();
    *reply.mutable_output() = model.graph().output();
    std::string bytes;
    if (reply.SerializeToString(&bytes)) {
      size_t done = 0;
      while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) break;
        done += size_t(n);
      }
      if (done == bytes.size()) status = 0;
    }
  } catch (...) {
  }
  ::_exit(status);  // no atexit handlers or stdio flushes of the parent's state
}

// In the parent: reads the child's reply until EOF, the deadline or the cap.
bool read_reply(int fd, int timeout_ms, std::string& out) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, int(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    if (out.size() + size_t(n) > kMaxReplyBytes) return false;
    out.append(buf, size_t(n));
  }
}

}  // namespace

std::optional<onnx::GraphProto> infer_onnx_shapes_isolated(const onnx::ModelProto& model,
                                                           int timeout_ms) {
  // Build the schema registry before forking so the child never waits on a
  // lock another thread of ours held at fork time.
  (void)onnx::OpSchemaRegistry::Schema("Relu", 14, "");
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(const_cast<onnx::ModelProto&>(model), fds[1]);  // the child's own copy
  }
  ::close(fds[1]);
  std::string bytes;
  bool complete = read_reply(fds[0], timeout_ms, bytes);
  ::close(fds[0]);
  if (!complete) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  onnx::GraphProto reply;
  if (!reply.ParseFromString(bytes)) return std::nullopt;
  return reply;
}

}  // namespace tandem
