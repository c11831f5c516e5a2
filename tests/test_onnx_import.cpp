// ONNX import against the ONNX project's own test models (Debian's
// libonnx-testdata) and against hand-built models whose expected graph is
// written out here; hostile files must fail with a tandem::Error naming them.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <random>

#include <onnx/onnx_pb.h>

#include "cpu/cpu_backend.h"
#include "formats/onnx/onnx_importer.h"
#include "graph/passes.h"

#include <fstream>
#include <sstream>
#include "formats/onnx/tensor_proto.h"
#include "temp_dir.h"

using namespace tandem;
using tandem::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const fs::path kTestData = "/usr/share/libonnx-testdata/data";

onnx::ModelProto make_model(int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// dims: -1 becomes dim_param "N".
void add_value_info(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                    const std::string& name, int elem, const std::vector<int64_t>& dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) shape->add_dim()->set_dim_param("N");
    else shape->add_dim()->set_dim_value(d);
  }
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                          const std::vector<std::string>& in, const std::vector<std::string>& out,
                          const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

std::string save(const TempDir& dir, const std::string& name, const onnx::ModelProto& m) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return dir.write(name, bytes);
}

// Runs load_onnx and returns the tandem::Error message (empty if it loaded).
std::string import_error(const std::string& path) {
  try {
    load_onnx(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expects load_onnx to fail with a message naming the file and containing `what`.
void expect_import_error(const std::string& path, const std::string& what) {
  std::string msg = import_error(path);
  EXPECT_NE(msg.find(path), std::string::npos) << "message lacks the file: " << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << "message lacks '" << what << "': " << msg;
}

}  // namespace

// Reference: libonnx-testdata. Every model either imports or throws
// tandem::Error naming the file (any other exception or a crash fails).
// ONNX shape inference is off here: it forks per model, which is slow on a
// busy machine; InferredShapesMatchPythonOnnx covers it.
TEST(OnnxImport, EveryTestDataModelImportsOrThrowsError) {
  if (!fs::exists(kTestData)) GTEST_SKIP() << "libonnx-testdata is not installed";
  int imported = 0, refused = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kTestData)) {
    if (entry.path().filename() != "model.onnx") continue;
    std::string path = entry.path().string();
    try {
      Graph g = load_onnx(path, {.onnx_shape_inference = false});
      EXPECT_EQ(g.source, path);
      ++imported;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ": non-tandem exception: " << e.what();
    }
  }
  std::cout << "[ info ] imported " << imported << " models, refused " << refused << "\n";
  // Refusals are the subgraph ops, string/sequence/optional-typed graphs and
  // the few other features tandem does not model; most models must import.
  EXPECT_GT(imported, 9 * (imported + refused) / 10);
}

// Reference: the model's own text form (python onnx.load printout):
// Conv(x[1,1,7,5], W[1,1,3,3]) kernel_shape=[3,3] pads=[1,1,1,1] strides=[2,2] -> y[1,1,4,3].
TEST(OnnxImport, ConvWithStridesPadding) {
  std::string path = (kTestData / "node/test_conv_with_strides_padding/model.onnx").string();
  if (!fs::exists(path)) GTEST_SKIP() << "libonnx-testdata is not installed";
  Graph g = load_onnx(path);
  EXPECT_EQ(g.opset, 11);
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.op_type, "Conv");
  EXPECT_EQ(n.name, "Conv_0");  // synthesized: the file leaves it empty
  EXPECT_EQ(n.domain, "");
  EXPECT_EQ(n.attrs.get_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(n.attrs.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(n.attrs.get_ints("kernel_shape"), (std::vector<int64_t>{3, 3}));
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "x");
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{1, 1, 7, 5}));
  EXPECT_EQ(g.value(g.inputs[1]).shape, (Shape{1, 1, 3, 3}));
  EXPECT_EQ(n.inputs, (std::vector<ValueId>{g.inputs[0], g.inputs[1]}));
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(n.outputs[0], g.outputs[0]);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 1, 4, 3}));
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::f32);
}

// Reference: the graph written out below by hand.
TEST(OnnxImport, BuildsGraphFromHandWrittenModel) {
  TempDir dir("onnx_import");
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_value_info(g->mutable_input(), "x", onnx::TensorProto::FLOAT, {-1, 3});
  add_value_info(g->mutable_input(), "w", onnx::TensorProto::FLOAT, {3});  // also an initializer
  *g->add_initializer() = tensor_to_proto(Tensor::from_vector<float>({1, 2, 3}, {3}), "w");
  // Nodes out of order: Add reads `r` before Relu (which makes it) is listed.
  auto* add = add_node(g, "Add", {"r", "c"}, {"y"}, "add");
  add_node(g, "Relu", {"x"}, {"r"});
  auto* c = add_node(g, "Constant", {}, {"c"}, "const");
  auto* a = c->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : {4, 5, 6}) a->add_ints(v);
  auto* f = add->add_attribute();
  f->set_name("alpha");
  f->set_type(onnx::AttributeProto::FLOAT);
  f->set_f(0.5f);
  auto* custom = add_node(g, "MyOp", {"y", "", "w"}, {"z", ""}, "custom");
  custom->set_domain("com.example");
  auto* s = custom->add_attribute();
  s->set_name("names");
  s->set_type(onnx::AttributeProto::STRINGS);
  s->add_strings("a");
  s->add_strings("b");
  add_value_info(g->mutable_output(), "z", onnx::TensorProto::FLOAT, {-1, 3});
  Graph graph = load_onnx(save(dir, "m.onnx", m));

  ASSERT_EQ(graph.inputs.size(), 1u);  // w is a constant, not a runtime input
  const Value& x = graph.value(graph.inputs[0]);
  EXPECT_EQ(x.shape, (Shape{-1, 3}));
  EXPECT_EQ(x.dim_names, (std::vector<std::string>{"N", ""}));
  const Value& w = graph.value(graph.find_value("w"));
  ASSERT_TRUE(w.is_constant());
  EXPECT_EQ(w.constant->to_int_vector(), (std::vector<int64_t>{1, 2, 3}));
  const Value& cv = graph.value(graph.find_value("c"));  // Constant node folded
  ASSERT_TRUE(cv.is_constant());
  EXPECT_EQ(cv.dtype, DType::i64);
  EXPECT_EQ(cv.constant->to_int_vector(), (std::vector<int64_t>{4, 5, 6}));

  ASSERT_EQ(graph.nodes.size(), 3u);  // Relu, Add, MyOp after the topological sort
  EXPECT_EQ(graph.nodes[0].op_type, "Relu");
  EXPECT_EQ(graph.nodes[0].name, "Relu_1");
  EXPECT_EQ(graph.nodes[1].name, "add");
  EXPECT_FLOAT_EQ(graph.nodes[1].attrs.get_float("alpha", 0), 0.5f);
  const Node& my = graph.nodes[2];
  EXPECT_EQ(my.domain, "com.example");
  EXPECT_EQ(my.inputs[1], kNoValue);
  EXPECT_EQ(my.outputs[1], kNoValue);
  EXPECT_EQ(std::get<std::vector<std::string>>(my.attrs.all().at("names")),
            (std::vector<std::string>{"a", "b"}));
  // ONNX shape inference fills Relu's and Add's outputs from x.
  for (const char* name : {"r", "y"}) {
    const Value& v = graph.value(graph.find_value(name));
    EXPECT_EQ(v.shape, (Shape{-1, 3})) << name;
    EXPECT_EQ(v.dim_names, (std::vector<std::string>{"N", ""})) << name;
  }
  EXPECT_EQ(graph.value(graph.outputs[0]).name, "z");
}

TEST(OnnxImport, RefusesHostileFiles) {
  TempDir dir("onnx_hostile");
  expect_import_error(dir.file("missing.onnx"), "not found");
  expect_import_error(dir.write("empty.onnx", ""), "empty file");
  std::mt19937 rng(1234);
  std::string noise(4096, '\0');
  for (char& ch : noise) ch = char(rng());
  expect_import_error(dir.write("noise.onnx", noise), "");

  // First half of a real model: parse fails or required parts are missing.
  onnx::ModelProto real = make_model();
  add_value_info(real.mutable_graph()->mutable_input(), "x", onnx::TensorProto::FLOAT, {1, 64});
  *real.mutable_graph()->add_initializer() =
      tensor_to_proto(Tensor::zeros(DType::f32, {64, 64}), "w");
  add_node(real.mutable_graph(), "MatMul", {"x", "w"}, {"y"});
  add_value_info(real.mutable_graph()->mutable_output(), "y", onnx::TensorProto::FLOAT, {1, 64});
  std::string bytes;
  ASSERT_TRUE(real.SerializeToString(&bytes));
  expect_import_error(dir.write("half.onnx", bytes.substr(0, bytes.size() / 2)), "");
  fs::path conv = kTestData / "node/test_conv_with_strides_padding/model.onnx";
  if (fs::exists(conv)) {
    std::ifstream in(conv, std::ios::binary);
    std::string real_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    expect_import_error(dir.write("conv_half.onnx", real_bytes.substr(0, real_bytes.size() / 2)),
                        "");
  }

  onnx::ModelProto huge = real;
  auto* t = huge.mutable_graph()->mutable_initializer(0);
  t->clear_dims();
  t->add_dims(int64_t(1) << 40);
  t->add_dims(int64_t(1) << 40);
  expect_import_error(save(dir, "huge.onnx", huge), "tensor 'w'");

  onnx::ModelProto shortraw = real;
  shortraw.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(100);
  expect_import_error(save(dir, "short.onnx", shortraw), "raw_data has 100 bytes");

  onnx::ModelProto undefined = real;
  undefined.mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
  expect_import_error(save(dir, "undef.onnx", undefined), "input 'nowhere'");

  onnx::ModelProto dup = real;
  add_node(dup.mutable_graph(), "Relu", {"x"}, {"y"}, "again");
  expect_import_error(save(dir, "dup.onnx", dup), "defined more than once");

  onnx::ModelProto noopset = real;
  noopset.clear_opset_import();
  expect_import_error(save(dir, "noopset.onnx", noopset), "opset");

  onnx::ModelProto sub = real;
  auto* iff = add_node(sub.mutable_graph(), "If", {"x"}, {"branch"}, "if");
  auto* ga = iff->add_attribute();
  ga->set_name("then_branch");
  ga->set_type(onnx::AttributeProto::GRAPH);
  ga->mutable_g()->set_name("then");
  expect_import_error(save(dir, "if.onnx", sub), "unsupported op");
}

// External data: a valid file loads; a location climbing out of the model
// folder, an absolute one and a file too short are refused.
// A few hundred bytes that ask for a 4 TiB constant: folding leaves it to
// run time (found by the onnx_model fuzzer, where the fold's allocation
// was the crash), and a small constant beside it is still folded.
TEST(OnnxImport, HugeConstantIsLeftToRunTime) {
  TempDir dir("onnx_huge_fold");
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  *g->add_initializer() = tensor_to_proto(Tensor::from_vector<int64_t>({1 << 20, 1 << 20}, {2}), "huge_shape");
  *g->add_initializer() = tensor_to_proto(Tensor::from_vector<int64_t>({2, 3}, {2}), "small_shape");
  add_node(g, "ConstantOfShape", {"huge_shape"}, {"huge"});
  add_node(g, "ConstantOfShape", {"small_shape"}, {"small"});
  add_value_info(g->mutable_output(), "huge", onnx::TensorProto::FLOAT, {1 << 20, 1 << 20});
  add_value_info(g->mutable_output(), "small", onnx::TensorProto::FLOAT, {2, 3});
  Graph graph = load_onnx(save(dir, "m.onnx", m));
  infer_and_fold(graph, cpu::cpu_backend());
  const Value& huge = graph.value(graph.find_value("huge"));
  EXPECT_FALSE(huge.is_constant());
  EXPECT_EQ(huge.shape, (Shape{1 << 20, 1 << 20}));
  const Value& small = graph.value(graph.find_value("small"));
  ASSERT_TRUE(small.is_constant());
  EXPECT_EQ(small.constant->shape(), (Shape{2, 3}));
}

TEST(OnnxImport, ExternalData) {
  TempDir dir("onnx_external");
  std::vector<float> w(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i) * 0.25f;
  std::string blob(8, 'x');  // offset 8 in the data file
  blob.append(reinterpret_cast<const char*>(w.data()), w.size() * 4);
  dir.write("weights.bin", blob);

  auto model_with = [&](const std::string& location, const std::string& offset) {
    onnx::ModelProto m = make_model();
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(4);
    t->add_dims(4);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    kv = t->add_external_data();
    kv->set_key("offset");
    kv->set_value(offset);
    add_node(m.mutable_graph(), "Relu", {"w"}, {"y"});
    add_value_info(m.mutable_graph()->mutable_output(), "y", onnx::TensorProto::FLOAT, {4, 4});
    return m;
  };
  Graph g = load_onnx(save(dir, "ok.onnx", model_with("weights.bin", "8")));
  const Tensor& t = *g.value(g.find_value("w")).constant;
  ASSERT_EQ(t.shape(), (Shape{4, 4}));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(t.data<float>()[i], w[size_t(i)]);

  expect_import_error(save(dir, "escape.onnx", model_with("../../etc/passwd", "0")),
                      "leaves the model folder");
  expect_import_error(save(dir, "abs.onnx", model_with("/etc/passwd", "0")), "not relative");
  expect_import_error(save(dir, "short.onnx", model_with("weights.bin", "9")), "weights.bin");
  expect_import_error(save(dir, "garbage.onnx", model_with("weights.bin", "8x")), "offset");
  expect_import_error(save(dir, "nofile.onnx", model_with("none.bin", "0")), "not found");
}

// Reference: onnx.shape_inference.infer_shapes in /usr/bin/python3 on the
// same files; every value_info it reports must appear with the same shape.
TEST(OnnxImport, InferredShapesMatchPythonOnnx) {
  if (!tandem::testing::have_system_python() || !fs::exists(kTestData))
    GTEST_SKIP() << "needs /usr/bin/python3 and libonnx-testdata";
  const char* models[] = {
      "pytorch-converted/test_PixelShuffle/model.onnx",  // Reshape with a Constant shape
      "pytorch-converted/test_AvgPool1d/model.onnx",
      "pytorch-converted/test_GLU/model.onnx",
      "pytorch-converted/test_Softsign/model.onnx",
      "pytorch-operator/test_operator_basic/model.onnx",
  };
  TempDir dir("onnx_infer");
  const char* script = R"PY(
import sys, onnx, onnx.shape_inference
with open(sys.argv[1], 'w') as out:
    for i, path in enumerate(sys.argv[2:]):
        m = onnx.shape_inference.infer_shapes(onnx.load(path))
        for v in m.graph.value_info:
            dims = [str(d.dim_value) if d.HasField('dim_value') else '-1'
                    for d in v.type.tensor_type.shape.dim]
            out.write('%d %s %s\n' % (i, v.name, ','.join(dims) or '-'))
)PY";
  std::string args = dir.file("shapes.txt");
  for (const char* m : models) args += " " + (kTestData / m).string();
  ASSERT_EQ(tandem::testing::run_python(dir, script, args), 0);
  std::vector<Graph> graphs;
  for (const char* m : models) graphs.push_back(load_onnx((kTestData / m).string()));
  std::ifstream in(dir.file("shapes.txt"));
  std::string line;
  int compared = 0;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    size_t index;
    std::string name, dims;
    ls >> index >> name >> dims;
    Shape want;
    std::istringstream ds(dims == "-" ? "" : dims);
    for (std::string d; std::getline(ds, d, ',');) want.push_back(std::stoll(d));
    const Graph& g = graphs.at(index);
    ValueId id = g.find_value(name);
    ASSERT_NE(id, kNoValue) << models[index] << ": " << name;
    EXPECT_EQ(g.value(id).shape, want) << models[index] << ": " << name;
    ++compared;
  }
  EXPECT_GE(compared, 15);  // python3-onnx 1.12 reports 15 values for these five
}

// libonnx 1.12's Conv inference divides by the strides: strides = [0, 0]
// kills a process that runs it (python -c "onnx.shape_inference.infer_shapes"
// dies with SIGFPE on this model). The import must survive and keep the node.
TEST(OnnxImport, SurvivesCrashInOnnxShapeInference) {
  TempDir dir("onnx_sigfpe");
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_value_info(g->mutable_input(), "x", onnx::TensorProto::FLOAT, {1, 1, 5, 5});
  add_value_info(g->mutable_input(), "w", onnx::TensorProto::FLOAT, {1, 1, 3, 3});
  auto* conv = add_node(g, "Conv", {"x", "w"}, {"y"}, "conv");
  auto* a = conv->add_attribute();
  a->set_name("strides");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(0);
  a->add_ints(0);
  g->add_output()->set_name("y");
  Graph graph = load_onnx(save(dir, "zero_strides.onnx", m));
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0].attrs.get_ints("strides"), (std::vector<int64_t>{0, 0}));
}

// Bit-flipped copies of real models (fixed seed): each imports or throws
// tandem::Error; a crash anywhere, ONNX shape inference included, fails.
TEST(OnnxImport, BitFlippedModelsImportOrThrowError) {
  if (!fs::exists(kTestData)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const char* models[] = {"node/test_conv_with_strides_padding/model.onnx",
                          "node/test_maxpool_2d_pads/model.onnx",
                          "node/test_convtranspose_pads/model.onnx",
                          "pytorch-converted/test_PixelShuffle/model.onnx"};
  TempDir dir("onnx_flips");
  std::mt19937 rng(2024);
  int imported = 0, refused = 0;
  for (int it = 0; it < 200; ++it) {
    std::ifstream in(kTestData / models[it % std::size(models)], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.empty());
    for (int f = 0; f < 3; ++f) bytes[rng() % bytes.size()] ^= char(1 << (rng() % 8));
    std::string path = dir.write("flipped.onnx", bytes);
    try {
      load_onnx(path);
      ++imported;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      ++refused;
    }
  }
  std::cout << "[ info ] flipped models: " << imported << " imported, " << refused << " refused\n";
}
