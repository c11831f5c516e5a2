// ONNX import, structure-aware: inputs stay valid ModelProtos while their
// fields change (the byte-level target rarely gets past protobuf's parser
// to tandem's own checks). The mutator parses the input, changes one thing a
// hostile or broken exporter could (a dimension, an initializer's size or
// type or external location, an attribute, an op type, a node's inputs,
// the opset) and serializes it again; unparsable inputs get libFuzzer's
// byte mutations.
#include <onnx/onnx_pb.h>

#include <cstring>
#include <random>

#include "fuzz/onnx_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::import_onnx_bytes({data, size});
  return 0;
}

#ifdef TANDEM_LIBFUZZER
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937;

template <typename T>
T pick(Rng& rng, std::initializer_list<T> values) {
  return *(values.begin() + rng() % values.size());
}

int64_t interesting_extent(Rng& rng) {
  return pick<int64_t>(rng, {0, 1, 2, 3, 7, 64, 255, -1, -2, int64_t(1) << 31, int64_t(1) << 40,
                             INT64_MAX, INT64_MIN, int64_t(rng() % 1024)});
}

void mutate_dims(google::protobuf::RepeatedField<int64_t>* dims, Rng& rng) {
  switch (rng() % 3) {
    case 0:
      if (!dims->empty()) dims->Set(int(rng() % unsigned(dims->size())), interesting_extent(rng));
      break;
    case 1: dims->Add(interesting_extent(rng)); break;
    default:
      if (!dims->empty()) dims->RemoveLast();
  }
}

void mutate_initializer(onnx::TensorProto* t, Rng& rng) {
  switch (rng() % 6) {
    case 0: mutate_dims(t->mutable_dims(), rng); break;
    case 1: t->set_data_type(int32_t(rng() % 24)); break;
    case 2: {  // raw data cut or grown: sizes that disagree with the dims
      std::string* raw = t->mutable_raw_data();
      raw->resize(rng() % 2 ? raw->size() / 2 : raw->size() + 1 + rng() % 64, '\x7f');
      break;
    }
    case 3: {  // the same values moved from raw bytes to a typed field, or a stray one
      t->add_float_data(pick<float>(rng, {0.f, -1.f, 1e30f, std::numeric_limits<float>::quiet_NaN()}));
      if (rng() % 2) t->clear_raw_data();
      break;
    }
    case 4: {  // external data, where a model file may point anywhere
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto* e = t->add_external_data();
      e->set_key(pick<const char*>(rng, {"location", "offset", "length", "checksum"}));
      e->set_value(pick<const char*>(rng, {"model.onnx", "../../../../etc/passwd", "/dev/zero", "missing.bin", "",
                                           "-1", "18446744073709551615", "4096", "x"}));
      break;
    }
    default: t->set_name(pick<const char*>(rng, {"", "x", "input", "output", "0"})); break;
  }
}

void mutate_attribute(onnx::AttributeProto* a, Rng& rng) {
  switch (rng() % 5) {
    case 0: a->set_i(interesting_extent(rng)); break;
    case 1:
      if (a->ints_size() > 0) a->set_ints(int(rng() % unsigned(a->ints_size())), interesting_extent(rng));
      else a->add_ints(interesting_extent(rng));
      break;
    case 2: a->set_f(pick<float>(rng, {0.f, -1.f, 1e30f, std::numeric_limits<float>::infinity()})); break;
    case 3: a->set_type(onnx::AttributeProto::AttributeType(rng() % 15)); break;
    default: a->clear_ints(); break;
  }
}

void mutate_node(onnx::NodeProto* n, const onnx::GraphProto& g, Rng& rng) {
  switch (rng() % 6) {
    case 0:
      n->set_op_type(pick<const char*>(rng, {"Conv", "Gemm", "MatMul", "Reshape", "Resize", "TopK", "Gather",
                                             "Concat", "Slice", "Transpose", "Expand", "Pad", "MaxPool",
                                             "BatchNormalization", "Softmax", "Cast", "Unknown"}));
      break;
    case 1:
      if (n->attribute_size() > 0) mutate_attribute(n->mutable_attribute(int(rng() % unsigned(n->attribute_size()))), rng);
      break;
    case 2:
      if (n->input_size() > 0) n->mutable_input()->RemoveLast();
      break;
    case 3: {  // an input from elsewhere in the graph: cycles, later values, missing names
      std::string name = "nowhere";
      if (g.node_size() > 0) {
        const auto& other = g.node(int(rng() % unsigned(g.node_size())));
        if (other.output_size() > 0) name = other.output(0);
      }
      n->add_input(name);
      break;
    }
    case 4: n->set_domain(pick<const char*>(rng, {"", "ai.onnx", "com.microsoft", "ai.onnx.ml"})); break;
    default: n->clear_attribute(); break;
  }
}

void mutate_value_info(onnx::ValueInfoProto* v, Rng& rng) {
  auto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
  if (rng() % 4 == 0) {
    v->mutable_type()->mutable_tensor_type()->set_elem_type(int32_t(rng() % 24));
  } else if (shape->dim_size() > 0 && rng() % 2) {
    auto* d = shape->mutable_dim(int(rng() % unsigned(shape->dim_size())));
    if (rng() % 3 == 0) d->set_dim_param("N");
    else d->set_dim_value(interesting_extent(rng));
  } else {
    shape->add_dim()->set_dim_value(interesting_extent(rng));
  }
}

void mutate_model(onnx::ModelProto& m, Rng& rng) {
  onnx::GraphProto* g = m.mutable_graph();
  switch (rng() % 7) {
    case 0:
      if (g->initializer_size() > 0) mutate_initializer(g->mutable_initializer(int(rng() % unsigned(g->initializer_size()))), rng);
      break;
    case 1:
      if (g->node_size() > 0) mutate_node(g->mutable_node(int(rng() % unsigned(g->node_size()))), *g, rng);
      break;
    case 2:
      if (g->input_size() > 0) mutate_value_info(g->mutable_input(int(rng() % unsigned(g->input_size()))), rng);
      break;
    case 3:
      if (g->output_size() > 0) mutate_value_info(g->mutable_output(int(rng() % unsigned(g->output_size()))), rng);
      break;
    case 4:
      if (m.opset_import_size() > 0) m.mutable_opset_import(0)->set_version(pick<int64_t>(rng, {1, 6, 7, 11, 13, 18, 21, 99, -1}));
      break;
    case 5:  // a node dropped or run twice
      if (g->node_size() > 0) {
        if (rng() % 2) g->mutable_node()->DeleteSubrange(int(rng() % unsigned(g->node_size())), 1);
        else *g->add_node() = g->node(int(rng() % unsigned(g->node_size())));
      }
      break;
    default:  // the graph's output renamed to some node's: another value, or an input
      if (g->node_size() > 0 && g->output_size() > 0) {
        const auto& n = g->node(int(rng() % unsigned(g->node_size())));
        if (n.output_size() > 0) g->mutable_output(0)->set_name(n.output(0));
      }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto m;
  if (rng() % 8 == 0 || !m.ParseFromArray(data, int(size))) return LLVMFuzzerMutate(data, size, max_size);
  const int changes = 1 + int(rng() % 3);
  for (int i = 0; i < changes; ++i) mutate_model(m, rng);
  const std::string out = m.SerializeAsString();
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
#endif
