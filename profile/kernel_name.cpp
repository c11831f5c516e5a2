#include "profile/kernel_name.h"

#include <cxxabi.h>

#include <cstdlib>

namespace tandem::profile {

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && d != nullptr ? d : mangled;
  std::free(d);
  return name;
}

// Where the argument list starts: the first '(' outside template brackets and
// outside another parenthesis, that is not "(anonymous namespace)".
size_t argument_list(const std::string& name) {
  static const std::string kAnon = "(anonymous namespace)";
  int angle = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '<') angle++;
    if (c == '>' && angle > 0) angle--;
    if (c != '(' || angle > 0 || i == 0) continue;
    if (name.compare(i, kAnon.size(), kAnon) == 0) {
      i += kAnon.size() - 1;
      continue;
    }
    return i;
  }
  return std::string::npos;
}

// The return type ends at the last space before the name proper, outside
// template brackets ("void f<a b>" -> "f<a b>").
size_t name_start(const std::string& s) {
  int angle = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') angle++;
    if (s[i] == '>' && angle > 0) angle--;
    if (s[i] == '(' && s.compare(i, 21, "(anonymous namespace)") == 0) i += 20;
    else if (s[i] == ' ' && angle == 0) start = i + 1;
  }
  return start;
}

}  // namespace

std::string short_kernel_name(const char* mangled) {
  if (mangled == nullptr || *mangled == '\0') return "(unnamed kernel)";
  std::string name = demangle(mangled);
  size_t args = argument_list(name);
  if (args != std::string::npos) name.resize(args);
  return name.substr(name_start(name));
}

}  // namespace tandem::profile
