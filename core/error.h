#pragma once
// One exception type for everything a user can cause (bad file, bad model,
// unsupported op). It carries where it happened so the CLI can print one line:
//   tandem: model.onnx: node 'conv1' (Conv): weight shape [64,3,7] is not 4-D
#include <stdexcept>
#include <string>

namespace tandem {

struct ErrorContext {
  std::string file;   // model or image path
  std::string node;   // graph node name
  std::string op;     // op type
  std::string shape;  // offending shape, printed as [a,b,c]
};

// What kind of failure: bad input (a malformed model or file), a valid
// model using something tandem does not implement (an op, a dtype, an
// attribute value), a device out of memory (a smaller batch may fit; the
// session retries with one), or a service that is away for now (a database
// server restarting: the same request may succeed after a reconnect).
// Conformance reports count "unsupported" apart.
enum class ErrorKind { invalid, unsupported, out_of_memory, unavailable };

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorContext ctx = {},
                 ErrorKind kind = ErrorKind::invalid);
  static Error unsupported(const std::string& message, ErrorContext ctx = {}) {
    return Error(message, std::move(ctx), ErrorKind::unsupported);
  }
  static Error out_of_memory(const std::string& message, ErrorContext ctx = {}) {
    return Error(message, std::move(ctx), ErrorKind::out_of_memory);
  }
  static Error unavailable(const std::string& message, ErrorContext ctx = {}) {
    return Error(message, std::move(ctx), ErrorKind::unavailable);
  }

  ErrorKind kind() const { return kind_; }

  const std::string& message() const { return message_; }
  const ErrorContext& context() const { return ctx_; }

  // Returns a copy with empty context fields filled from `outer`; used when an
  // error crosses a layer that knows more (the executor knows the node, the
  // CLI knows the file).
  Error with_context(const ErrorContext& outer) const;

 private:
  static std::string format(const std::string& message, const ErrorContext& ctx);
  std::string message_;
  ErrorContext ctx_;
  ErrorKind kind_;
};

// Throws Error(message) if `ok` is false. For checks on user-controlled data.
inline void check(bool ok, const std::string& message, const ErrorContext& ctx = {}) {
  if (!ok) throw Error(message, ctx);
}

// Throws Error::unsupported(message) if `ok` is false: for valid input that
// uses something tandem does not implement (a dtype, an attribute value).
inline void check_supported(bool ok, const std::string& message, const ErrorContext& ctx = {}) {
  if (!ok) throw Error::unsupported(message, ctx);
}

// check() and check_supported() for code that runs per op or per step: a
// function's arguments are built before the test, and a message or context
// made of formatted shapes and concatenated strings costs microseconds,
// more than a GPU kernel launch. These build them only on failure:
//   TANDEM_CHECK(t.defined(), "the " + what + " is missing", op_context(op, t));
#define TANDEM_CHECK(ok, ...)                      \
  do {                                             \
    if (!(ok)) throw ::tandem::Error(__VA_ARGS__); \
  } while (0)
#define TANDEM_CHECK_SUPPORTED(ok, ...)                         \
  do {                                                          \
    if (!(ok)) throw ::tandem::Error::unsupported(__VA_ARGS__); \
  } while (0)

}  // namespace tandem
