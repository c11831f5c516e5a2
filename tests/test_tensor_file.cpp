// Tensor files (.pb TensorProto, .npy) against NumPy and onnx.numpy_helper
// run through /usr/bin/python3, and against values written out in the test.
// Comparisons are exact (bytewise): no conversion here may round.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <onnx/onnx_pb.h>

#include "core/half.h"
#include "formats/npy.h"
#include "formats/onnx/tensor_proto.h"
#include "formats/tensor_file.h"
#include "temp_dir.h"

using namespace tandem;
using tandem::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const fs::path kNodeData = "/usr/share/libonnx-testdata/data/node";

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  EXPECT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.bytes(), b.bytes()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << what;
}

// Expects read_tensor_file to throw a tandem::Error naming `path` and `what`.
void expect_read_error(const std::string& path, const std::string& what) {
  try {
    read_tensor_file(path);
    ADD_FAILURE() << path << " was accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "want '" << what << "' in: " << msg;
  }
}

// Writes reference.npy files with numpy from the given .pb files (widening
// int16/uint16 to int32 and uint32/uint64 to int64 as tandem does), or, with
// "check", verifies tandem's own .npy and .pb files against those .pb files.
const char* kNumpyScript = R"PY(
import sys, numpy as np, onnx, onnx.numpy_helper as nh
mode, out = sys.argv[1], sys.argv[2]
def ref(path):
    t = onnx.TensorProto(); t.ParseFromString(open(path, 'rb').read())
    a = nh.to_array(t)
    wide = {np.int16: np.int32, np.uint16: np.int32, np.uint32: np.int64, np.uint64: np.int64}
    return a.astype(wide.get(a.dtype.type, a.dtype))
bad = 0
for i, path in enumerate(sys.argv[3:]):
    a = ref(path)
    if mode == 'make':
        np.save('%s/ref_%d.npy' % (out, i), a)
        continue
    mine = np.load('%s/mine_%d.npy' % (out, i))
    t = onnx.TensorProto(); t.ParseFromString(open('%s/mine_%d.pb' % (out, i), 'rb').read())
    for got in (mine, nh.to_array(t)):
        if got.dtype != a.dtype or got.shape != a.shape or got.tobytes() != a.tobytes():
            print('mismatch', path, got.dtype, a.dtype, got.shape, a.shape); bad = 1
sys.exit(bad)
)PY";

}  // namespace

// Reference: onnx.numpy_helper.to_array + np.save / np.load (exact).
TEST(TensorFile, OnnxTestDataMatchesNumpyBothWays) {
  if (!tandem::testing::have_system_python() || !fs::exists(kNodeData))
    GTEST_SKIP() << "needs /usr/bin/python3 and libonnx-testdata";
  // One file per ONNX element type present in the test data.
  const char* files[] = {
      "test_conv_with_strides_padding/test_data_set_0/input_0.pb",  // FLOAT
      "test_and2d/test_data_set_0/input_0.pb",                      // BOOL
      "test_bernoulli/test_data_set_0/input_0.pb",                  // DOUBLE
      "test_cast_FLOAT16_to_DOUBLE/test_data_set_0/input_0.pb",     // FLOAT16
      "test_max_int16/test_data_set_0/input_0.pb",                  // INT16
      "test_basic_convinteger/test_data_set_0/output_0.pb",         // INT32
      "test_adagrad/test_data_set_0/input_1.pb",                    // INT64
      "test_clip_default_int8_inbounds/test_data_set_0/input_0.pb", // INT8
      "test_bitshift_left_uint16/test_data_set_0/input_0.pb",       // UINT16
      "test_bitshift_left_uint32/test_data_set_0/input_0.pb",       // UINT32
      "test_bitshift_left_uint64/test_data_set_0/input_0.pb",       // UINT64
      "test_add_uint8/test_data_set_0/input_0.pb",                  // UINT8
  };
  TempDir dir("tensor_numpy");
  std::string args;
  for (const char* f : files) args += " " + (kNodeData / f).string();
  ASSERT_EQ(tandem::testing::run_python(dir, kNumpyScript, "make " + dir.path().string() + args), 0);
  for (size_t i = 0; i < std::size(files); ++i) {
    Tensor mine = read_tensor_file((kNodeData / files[i]).string());
    Tensor ref = read_tensor_file(dir.file("ref_" + std::to_string(i) + ".npy"));
    expect_same_tensor(mine, ref, files[i]);
    write_tensor_file(dir.file("mine_" + std::to_string(i) + ".npy"), mine);
    write_tensor_file(dir.file("mine_" + std::to_string(i) + ".pb"), mine, "t");
  }
  EXPECT_EQ(tandem::testing::run_python(dir, kNumpyScript, "check " + dir.path().string() + args), 0);
}

// Every tensor file in the ONNX node tests reads or throws tandem::Error
// (STRING tensors and sequences are the expected refusals).
TEST(TensorFile, EveryOnnxTestTensorReadsOrThrowsError) {
  if (!fs::exists(kNodeData)) GTEST_SKIP() << "libonnx-testdata is not installed";
  int read = 0, refused = 0;
  for (const auto& e : fs::recursive_directory_iterator(kNodeData)) {
    if (e.path().extension() != ".pb") continue;
    try {
      read_tensor_file(e.path().string());
      ++read;
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(e.path().string()), std::string::npos);
      ++refused;
    }
  }
  std::cout << "[ info ] read " << read << " tensor files, refused " << refused << "\n";
  // 2,816 of the 2,887 files hold numeric tensors; the rest are STRING
  // tensors and sequences/optionals stored in .pb files of their own type.
  EXPECT_GE(read, 2816);
}

// Reference: values np.arange produces, written here as i * 0.25 etc.
TEST(TensorFile, ReadsNumpyVersionsAndDtypes) {
  if (!tandem::testing::have_system_python()) GTEST_SKIP() << "needs /usr/bin/python3";
  TempDir dir("npy_versions");
  const char* script = R"PY(
import sys, numpy as np
from numpy.lib import format as F
d = sys.argv[1]
a = (np.arange(12, dtype=np.float32) * 0.25).reshape(3, 4)
for v in [(1, 0), (2, 0), (3, 0)]:
    with open('%s/v%d.npy' % (d, v[0]), 'wb') as f: F.write_array(f, a, version=v)
np.save(d + '/f16.npy', np.arange(5, dtype=np.float16) - 2)
np.save(d + '/i64.npy', np.array([-(2**40), 7], dtype=np.int64))
np.save(d + '/u16.npy', np.array([65535, 1], dtype=np.uint16))
np.save(d + '/b1.npy', np.array([True, False, True]))
np.save(d + '/scalar.npy', np.float64(2.5))
np.save(d + '/empty.npy', np.zeros((0, 3), dtype=np.int8))
np.save(d + '/fortran.npy', np.asfortranarray(a))
np.save(d + '/bigendian.npy', a.astype('>f4'))
np.save(d + '/complex.npy', np.zeros(2, dtype=np.complex64))
)PY";
  ASSERT_EQ(tandem::testing::run_python(dir, script, dir.path().string()), 0);
  for (const char* v : {"v1.npy", "v2.npy", "v3.npy"}) {
    Tensor t = read_tensor_file(dir.file(v));
    ASSERT_EQ(t.shape(), (Shape{3, 4})) << v;
    for (int i = 0; i < 12; ++i) EXPECT_EQ(t.data<float>()[i], float(i) * 0.25f) << v;
  }
  Tensor f16 = read_tensor_file(dir.file("f16.npy"));
  ASSERT_EQ(f16.dtype(), DType::f16);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(f16.scalar_at(i), double(i - 2));
  EXPECT_EQ(read_tensor_file(dir.file("i64.npy")).to_int_vector(),
            (std::vector<int64_t>{-(int64_t(1) << 40), 7}));
  Tensor u16 = read_tensor_file(dir.file("u16.npy"));  // widened to i32
  EXPECT_EQ(u16.dtype(), DType::i32);
  EXPECT_EQ(u16.to_int_vector(), (std::vector<int64_t>{65535, 1}));
  EXPECT_EQ(read_tensor_file(dir.file("b1.npy")).to_int_vector(), (std::vector<int64_t>{1, 0, 1}));
  Tensor scalar = read_tensor_file(dir.file("scalar.npy"));
  EXPECT_EQ(scalar.shape(), Shape{});
  EXPECT_EQ(scalar.data<double>()[0], 2.5);
  EXPECT_EQ(read_tensor_file(dir.file("empty.npy")).shape(), (Shape{0, 3}));
  expect_read_error(dir.file("fortran.npy"), "fortran_order");
  expect_read_error(dir.file("bigendian.npy"), "big-endian");
  expect_read_error(dir.file("complex.npy"), "unsupported .npy dtype");
}

// Reference: the bytes numpy 1.24 writes for np.save of np.zeros((2, 3),
// np.float32) and np.zeros(5, np.int8): header padded with spaces and '\n'
// to 118 bytes so that the data starts at byte 128.
TEST(TensorFile, WritesNumpyHeaderLikeNumpy) {
  auto numpy_bytes = [](const std::string& dict, size_t data_bytes) {
    return std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
           std::string(117 - dict.size(), ' ') + "\n" + std::string(data_bytes, '\0');
  };
  EXPECT_EQ(encode_npy(Tensor::zeros(DType::f32, {2, 3})),
            numpy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24));
  EXPECT_EQ(encode_npy(Tensor::zeros(DType::i8, {5})),
            numpy_bytes("{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }", 5));
  TempDir dir("npy_write");
  EXPECT_THROW(write_tensor_file(dir.file("x.npy"), Tensor::zeros(DType::bf16, {2})), Error);
  Tensor blocked(TensorDesc{DType::f32, {1, 3, 2, 2}, Layout::blocked16},
                 Storage::allocate_host(TensorDesc{DType::f32, {1, 3, 2, 2}, Layout::blocked16}.bytes()));
  EXPECT_THROW(write_tensor_file(dir.file("x.npy"), blocked), Error);
  EXPECT_THROW(write_tensor_file(dir.file("x.pb"), blocked), Error);
  EXPECT_THROW(write_tensor_file(dir.file("x.txt"), Tensor::zeros(DType::f32, {2})), Error);
}

TEST(TensorFile, RefusesHostileFiles) {
  TempDir dir("tensor_hostile");
  expect_read_error(dir.file("missing.npy"), "not found");
  expect_read_error(dir.write("empty.npy", ""), "bad magic");
  expect_read_error(dir.write("empty.pb", ""), "TensorProto");
  expect_read_error(dir.write("x.txt", "1 2 3"), "extension");
  std::mt19937 rng(99);
  std::string noise(2048, '\0');
  for (char& c : noise) c = char(rng());
  expect_read_error(dir.write("noise.npy", noise), "bad magic");
  auto npy = [](const std::string& header, const std::string& data) {
    std::string s("\x93NUMPY\x01\x00", 8);
    s += char(header.size() & 0xff);
    s += char(header.size() >> 8);
    return s + header + data;
  };
  std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  EXPECT_EQ(read_tensor_file(dir.write("ok.npy", npy(f4, std::string(8, '\0')))).numel(), 2);
  expect_read_error(dir.write("short.npy", npy(f4, std::string(7, '\0'))), "needs 8");
  expect_read_error(dir.write("garbage.npy", npy("{'descr': <f4 ]]]", "")), "bad .npy header");
  expect_read_error(dir.write("unterminated.npy", npy("{'descr': '<f4", "")), "bad .npy header");
  expect_read_error(dir.write("fortran.npy",
                              npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                                  std::string(8, '\0'))),
                    "fortran_order");
  expect_read_error(dir.write("huge.npy",
                              npy("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (1099511627776, 1099511627776), }", "")),
                    "16 GiB");
  expect_read_error(dir.write("overflow.npy",
                              npy("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (99999999999999999999999,), }", "")),
                    "too large");
  expect_read_error(dir.write("negative.npy",
                              npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "")),
                    "non-negative");
  expect_read_error(dir.write("nokeys.npy", npy("{}", "")), "lacks");
  std::string liar("\x93NUMPY\x01\x00\xff\xff{}", 12);  // header length past the end
  expect_read_error(dir.write("liar.npy", liar), "truncated");
  expect_read_error(dir.write("noise.pb", noise), "");
}

// Reference: the element values set in each proto below.
TEST(TensorProto, TypedFieldsAndChecks) {
  onnx::TensorProto p;
  p.set_name("h");
  p.set_data_type(onnx::TensorProto::FLOAT16);
  p.add_dims(2);
  p.add_int32_data(float_to_f16(1.5f));
  p.add_int32_data(float_to_f16(-2.0f));
  Tensor h = tensor_from_proto(p, "");
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.scalar_at(0), 1.5);
  EXPECT_EQ(h.scalar_at(1), -2.0);

  p.set_data_type(onnx::TensorProto::BFLOAT16);
  p.set_int32_data(0, float_to_bf16(3.0f));
  EXPECT_EQ(tensor_from_proto(p, "").scalar_at(0), 3.0);
  p.set_int32_data(0, 70000);  // not a 16-bit pattern
  EXPECT_THROW(tensor_from_proto(p, ""), Error);

  p.set_data_type(onnx::TensorProto::INT8);
  p.set_int32_data(0, -128);
  p.set_int32_data(1, 127);
  EXPECT_EQ(tensor_from_proto(p, "").to_int_vector(), (std::vector<int64_t>{-128, 127}));
  p.set_int32_data(1, 128);
  EXPECT_THROW(tensor_from_proto(p, ""), Error);

  p.set_data_type(onnx::TensorProto::BOOL);
  EXPECT_EQ(tensor_from_proto(p, "").to_int_vector(), (std::vector<int64_t>{1, 1}));

  onnx::TensorProto u;
  u.set_name("u");
  u.set_data_type(onnx::TensorProto::UINT64);
  u.add_dims(1);
  u.add_uint64_data(uint64_t(1) << 63);  // does not fit int64
  EXPECT_THROW(tensor_from_proto(u, ""), Error);
  u.set_uint64_data(0, 42);
  EXPECT_EQ(tensor_from_proto(u, "").to_int_vector(), (std::vector<int64_t>{42}));

  onnx::TensorProto d;
  d.set_name("d");
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_dims(2);
  d.add_double_data(0.1);
  EXPECT_THROW(tensor_from_proto(d, ""), Error);  // 1 value for 2 elements
  d.add_double_data(-7.25);
  Tensor dt = tensor_from_proto(d, "");
  EXPECT_EQ(dt.dtype(), DType::f64);
  EXPECT_EQ(dt.data<double>()[0], 0.1);
  EXPECT_EQ(dt.data<double>()[1], -7.25);
  d.set_dims(0, -1);
  EXPECT_THROW(tensor_from_proto(d, ""), Error);

  onnx::TensorProto s;
  s.set_name("s");
  s.set_data_type(onnx::TensorProto::STRING);
  s.add_string_data("a");
  EXPECT_THROW(tensor_from_proto(s, ""), Error);
}

// Reference: the tensor that went in.
TEST(TensorProto, RoundTripsEveryDType) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8,
                  DType::i32, DType::i64, DType::boolean}) {
    Tensor a = Tensor::empty(t, {2, 3});
    auto* bytes = static_cast<uint8_t*>(a.raw());
    for (size_t i = 0; i < a.bytes(); ++i) bytes[i] = uint8_t(i * 37 + 1);
    if (t == DType::boolean)
      for (size_t i = 0; i < a.bytes(); ++i) bytes[i] &= 1;
    onnx::TensorProto p = tensor_to_proto(a, "a");
    expect_same_tensor(tensor_from_proto(p, ""), a, std::string(dtype_name(t)));
  }
}
