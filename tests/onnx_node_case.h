#pragma once
// Loads ONNX backend node test cases (dumped by tests/onnx_node_cases.py from
// Debian's python3-onnx) into an OpCall plus expected outputs, so a test file
// can run them through run_op_cpu(). Header-only, like numpy_ref.h.
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/numpy_ref.h"
#include "tests/op_harness.h"

namespace tandem::testing {

struct OnnxNodeCase {
  OpCall call;
  std::vector<Tensor> expected;
};

// Dumps `cases` into a fresh temporary folder; returns it.
inline std::string dump_onnx_node_cases(const std::vector<std::string>& cases) {
  std::string d = make_temp_dir();
  std::string cmd = std::string(kReferencePython) + " " TANDEM_SOURCE_DIR "/tests/onnx_node_cases.py " + d;
  for (const std::string& c : cases) cmd += " " + c;
  check(std::system(cmd.c_str()) == 0, "onnx_node_cases.py failed: " + cmd);
  return d;
}

// Reads case `name` from `dir`; inputs listed in `constants` for the case's op
// type are passed as constants (as the graph layer passes initializers).
inline OnnxNodeCase load_onnx_node_case(const std::string& dir_root, const std::string& name,
                                        const std::map<std::string, std::set<size_t>>& constants) {
  std::string dir = dir_root + "/" + name + "/";
  std::ifstream f(dir + "manifest.txt");
  check(bool(f), "no manifest for " + name);
  OnnxNodeCase nc;
  std::set<size_t> consts;
  auto read_rest = [](std::istringstream& in) {
    std::vector<double> v;
    for (double x; in >> x;) v.push_back(x);
    return v;
  };
  for (std::string line; std::getline(f, line);) {
    std::istringstream in(line);
    std::string key, a, b;
    in >> key;
    if (key == "missing" || key == "unsupported") throw Error(name + ": " + line);
    if (key == "op") {
      in >> nc.call.op_type;
      if (constants.count(nc.call.op_type)) consts = constants.at(nc.call.op_type);
    } else if (key == "opset") {
      in >> nc.call.opset;
    } else if (key == "outputs") {
      in >> nc.call.num_outputs;
    } else if (key == "input") {
      in >> a >> b;
      nc.call.constant.push_back(consts.count(nc.call.inputs.size()) != 0);
      nc.call.inputs.push_back(a == "-" ? Tensor() : read_npy(dir + b, dtype_from_name(a)));
    } else if (key == "output") {
      in >> a >> b;
      nc.expected.push_back(read_npy(dir + b, dtype_from_name(a)));
    } else if (key == "attr_int" || key == "attr_ints") {
      in >> a;
      std::vector<int64_t> v;
      for (double x : read_rest(in)) v.push_back(int64_t(x));
      if (key == "attr_int") nc.call.attrs.set(a, v.at(0));
      else nc.call.attrs.set(a, v);
    } else if (key == "attr_float" || key == "attr_floats") {
      in >> a;
      std::vector<float> v;
      for (double x : read_rest(in)) v.push_back(float(x));
      if (key == "attr_float") nc.call.attrs.set(a, v.at(0));
      else nc.call.attrs.set(a, v);
    } else if (key == "attr_string") {
      in >> a >> b;
      nc.call.attrs.set(a, b);
    } else if (key == "attr_tensor") {
      std::string attr;
      in >> attr >> a >> b;
      nc.call.attrs.set(attr, read_npy(dir + b, dtype_from_name(a)));
    }
  }
  return nc;
}

}  // namespace tandem::testing
