// ONNX export (formats/onnx/onnx_exporter.h): a hand-built graph written
// out is accepted by python3-onnx's checker (full check, with its shape
// inference) and reads back through the importer as the same graph: the
// same outputs from a Session (within 1e-5), every attribute kind, a dynamic
// batch, another domain's opset; internal ops and bad value names are errors.
#include <gtest/gtest.h>

#include <cmath>

#include "formats/onnx/onnx_exporter.h"
#include "formats/onnx/onnx_importer.h"
#include "graph/session.h"
#include "graph_builder.h"
#include "temp_dir.h"

using namespace tandem;
using namespace tandem::testing;

namespace {

Tensor ramp(const Shape& s, float scale) {
  Tensor t = Tensor::empty(DType::f32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * float((i * 37) % 19 - 9);
  return t;
}

Attributes ints(const std::string& name, std::vector<int64_t> v) {
  Attributes a;
  a.set(name, std::move(v));
  return a;
}

// input [batch, 3, 8, 8] -> Conv -> Relu -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm -> [batch, 5].
Graph small_cnn() {
  GraphBuilder b;
  ValueId x = b.input("input", {-1, 3, 8, 8});
  b.g.value(x).dim_names = {"batch", "", "", ""};
  Attributes conv = ints("pads", {1, 1, 1, 1});
  conv.set("kernel_shape", std::vector<int64_t>{3, 3});
  ValueId y = b.node("Conv", {x, b.constant("w", ramp({4, 3, 3, 3}, 0.05f)), b.constant("b", ramp({4}, 0.1f))}, conv);
  y = b.node("Relu", {y});
  Attributes pool = ints("kernel_shape", {2, 2});
  pool.set("strides", std::vector<int64_t>{2, 2});
  y = b.node("MaxPool", {y}, pool);
  y = b.node("Flatten", {b.node("GlobalAveragePool", {y})});
  Attributes gemm;
  gemm.set("transB", int64_t(1));
  y = b.node("Gemm", {y, b.constant("fc", ramp({5, 4}, 0.2f)), b.constant("fc_b", ramp({5}, 0.01f))}, gemm);
  b.g.value(y).shape = {-1, 5};
  b.output(y);
  return b.g;
}

bool onnx_checker_accepts(const TempDir& dir, const std::string& model) {
  return run_python(dir,
                    "import sys, onnx\n"
                    "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)\n",
                    model) == 0;
}

}  // namespace

TEST(OnnxExport, CheckerAcceptsAndTheFileRunsAsTheGraph) {
  TempDir dir("onnx_export");
  std::string path = dir.file("cnn.onnx");
  save_onnx(small_cnn(), path);
  if (have_system_python()) {
    EXPECT_TRUE(onnx_checker_accepts(dir, path));
  }

  Graph back = load_onnx(path);
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_EQ(back.value(back.inputs[0]).shape, (Shape{-1, 3, 8, 8}));
  EXPECT_EQ(back.value(back.inputs[0]).dim_names[0], "batch");
  Session original(small_cnn()), loaded(std::move(back));
  for (int64_t n : {1, 3}) {
    Tensor x = ramp({n, 3, 8, 8}, 0.1f);
    Tensor want = original.run({x})[0], got = loaded.run({x})[0];
    ASSERT_EQ(got.desc(), want.desc());
    // Not bit-exact: each plan chooses its own conv algorithm.
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5 * std::fabs(want.data<float>()[i]) + 1e-6)
          << "batch " << n << " element " << i;
  }
}

TEST(OnnxExport, EveryAttributeKindAndOtherDomainsRoundTrip) {
  GraphBuilder b;
  ValueId x = b.input("x", {2});
  Attributes a;
  a.set("i", int64_t(-3));
  a.set("f", 0.25f);
  a.set("s", std::string("text"));
  a.set("is", std::vector<int64_t>{1, 2});
  a.set("fs", std::vector<float>{0.5f});
  a.set("ss", std::vector<std::string>{"a", "b"});
  a.set("t", ramp({2, 2}, 1));
  ValueId y = b.node("Custom", {x, kNoValue, x}, a);
  b.g.value(y).shape = {2};
  b.g.nodes.back().domain = "com.example";
  b.output(y);
  TempDir dir("onnx_export_attrs");
  save_onnx(b.g, dir.file("m.onnx"));
  Graph back = load_onnx(dir.file("m.onnx"), {.onnx_shape_inference = false});
  ASSERT_EQ(back.nodes.size(), 1u);
  const Node& n = back.nodes[0];
  EXPECT_EQ(n.domain, "com.example");
  EXPECT_EQ(n.inputs[1], kNoValue);
  EXPECT_EQ(n.attrs.get_int("i"), -3);
  EXPECT_EQ(n.attrs.get_float("f", 0), 0.25f);
  EXPECT_EQ(n.attrs.get_string("s", ""), "text");
  EXPECT_EQ(n.attrs.get_ints("is"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(n.attrs.get_floats("fs"), (std::vector<float>{0.5f}));
  EXPECT_EQ(std::get<std::vector<std::string>>(n.attrs.all().at("ss")), (std::vector<std::string>{"a", "b"}));
  const Tensor& t = n.attrs.get_tensor("t");
  EXPECT_EQ(t.desc(), ramp({2, 2}, 1).desc());
  EXPECT_EQ(std::memcmp(t.raw(), ramp({2, 2}, 1).raw(), t.bytes()), 0);
  onnx::ModelProto m = to_onnx_model(b.g);
  ASSERT_EQ(m.opset_import_size(), 2);
  EXPECT_EQ(m.opset_import(1).domain(), "com.example");
}

TEST(OnnxExport, InternalOpsAndBadNamesAreErrors) {
  Graph fused = small_cnn();
  fused.nodes[0].op_type = "tandem.FusedConv";
  EXPECT_THROW(to_onnx_model(fused), Error);

  Graph twice = small_cnn();
  twice.value(twice.nodes[1].outputs[0]).name = "w";  // an initializer's name
  EXPECT_THROW(to_onnx_model(twice), Error);

  Graph nameless = small_cnn();
  nameless.value(nameless.nodes[1].outputs[0]).name = "";
  EXPECT_THROW(to_onnx_model(nameless), Error);

  try {
    save_onnx(small_cnn(), "/nonexistent-dir/m.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.context().file, "/nonexistent-dir/m.onnx");
  }
}
