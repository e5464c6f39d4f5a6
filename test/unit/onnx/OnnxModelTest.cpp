//===- OnnxModelTest.cpp - Model::open on valid and broken models ---------===//

#include "frontend/onnx/OnnxModel.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"
#include "test/unit/onnx/ProtoWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

namespace sol::onnx {
namespace {

using hf::test::errorOf;
using hf::test::TempDir;
using hf::test::writeFile;
using test::addExternalData;
using test::attribute;
using test::modelWith;
using test::nodeHeader;
using test::ProtoWriter;
using test::rawBytes;
using test::tensorHeader;
using test::valueInfo;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Pair;
using Type = Attribute::Type;

/// The tensor's bytes as values of T.
template <typename T> std::vector<T> valuesOf(const Tensor &tensor) {
  EXPECT_EQ(tensor.bytes.size() % sizeof(T), 0u) << tensor.name;
  std::vector<T> out(tensor.bytes.size() / sizeof(T));
  if (!out.empty())
    std::memcpy(out.data(), tensor.bytes.data(), out.size() * sizeof(T));
  return out;
}

ProtoWriter opset(std::string_view domain, int64_t version) {
  return ProtoWriter().bytes(1, domain).int64(2, version);
}

ProtoWriter entry(std::string_view key, std::string_view value) {
  return ProtoWriter().bytes(1, key).bytes(2, value);
}

/// A graph whose only node is an If with `body` as its then_branch.
ProtoWriter ifAround(const ProtoWriter &body) {
  return ProtoWriter().message(
      1, nodeHeader("If", "", {"cond"}, {"y"})
             .message(5, attribute("then_branch", Type::Graph,
                                   ProtoWriter().message(6, body))));
}

class OnnxModelTest : public ::testing::Test {
protected:
  std::filesystem::path path() const { return dir / "model.onnx"; }
  Model open(const ProtoWriter &model) {
    writeFile(path(), model.str());
    return Model::open(path());
  }
  Model openGraph(const ProtoWriter &graph) { return open(modelWith(graph)); }
  std::string openError(std::string_view bytes) {
    writeFile(path(), bytes);
    return errorOf([&] { Model::open(path()); });
  }
  std::string graphError(const ProtoWriter &graph) {
    return openError(modelWith(graph).str());
  }
  /// The error of a model whose only initializer is `tensor`.
  std::string initializerError(const ProtoWriter &tensor) {
    return graphError(ProtoWriter().message(5, tensor));
  }
  /// The model file's name as errors spell it, followed by ": ".
  std::string prefix() const { return path().string() + ": "; }

  TempDir dir;
};

//===----------------------------------------------------------------------===//
// Valid models
//===----------------------------------------------------------------------===//

TEST_F(OnnxModelTest, ReadsModelFieldsOpsetsAndMetadata) {
  ProtoWriter model;
  model.varint(1, 9)
      .bytes(2, "pytorch")
      .bytes(3, "2.3.0")
      .bytes(4, "ai.sol")
      .varint(5, 2)
      .bytes(6, "a model")
      .message(7, ProtoWriter().bytes(2, "main_graph").bytes(10, "doc"))
      .message(8, opset("ai.onnx", 17))
      .message(8, opset("com.microsoft", 1))
      .message(8, opset("ai.onnx.ml", 3))
      .message(14, entry("author", "sol"))
      .message(14, entry("license", "MIT"))
      .message(20, ProtoWriter().bytes(1, "training info is skipped"))
      .message(25, ProtoWriter().bytes(1, "LocalFunction"))
      .message(25, ProtoWriter().bytes(1, "Other"))
      .varint(1000, 5); // a field some later onnx.proto may add
  Model m = open(model);

  EXPECT_EQ(m.path(), path());
  EXPECT_EQ(m.irVersion(), 9);
  EXPECT_EQ(m.producerName(), "pytorch");
  EXPECT_EQ(m.producerVersion(), "2.3.0");
  // "ai.onnx" is the default domain, spelled "".
  EXPECT_THAT(m.opsets(), ElementsAre(Pair("", 17), Pair("ai.onnx.ml", 3),
                                      Pair("com.microsoft", 1)));
  EXPECT_THAT(m.metadata(),
              ElementsAre(Pair("author", "sol"), Pair("license", "MIT")));
  EXPECT_EQ(m.functionCount(), 2);
  EXPECT_EQ(m.graph().name, "main_graph");
  EXPECT_TRUE(m.graph().nodes.empty());
  EXPECT_EQ(m.graph().sparseInitializerCount, 0);
}

TEST_F(OnnxModelTest, ReadsNodesWithEveryAttributeKind) {
  ProtoWriter valueTensor =
      tensorHeader("value", ElemType::Float, {2}).packedFloats(4, {1, 2});
  ProtoWriter body =
      ProtoWriter()
          .message(1, nodeHeader("Identity", "inner", {"x"}, {"y"}))
          .bytes(2, "body");
  ProtoWriter conv = nodeHeader("Conv", "conv0", {"x", "w", ""}, {"y"});
  conv.message(5,
               attribute("alpha", Type::Float, ProtoWriter().float32(2, 0.5f)))
      .message(5, attribute("axis", Type::Int, ProtoWriter().int64(3, -1)))
      .message(5, attribute("mode", Type::String,
                            ProtoWriter().bytes(4, "constant")))
      .message(5, attribute("value", Type::Tensor,
                            ProtoWriter().message(5, valueTensor)))
      .message(5,
               attribute("body", Type::Graph, ProtoWriter().message(6, body)))
      .message(5, attribute("scales", Type::Floats,
                            ProtoWriter().packedFloats(7, {1.5f, 2.5f})))
      .message(5, attribute("pads", Type::Ints,
                            ProtoWriter().int64(8, 0).int64(8, 1).int64(8, -2)))
      .message(5, attribute("strides", Type::Ints,
                            ProtoWriter().packedVarints(8, {2, 2})))
      .message(5, attribute("names", Type::Strings,
                            ProtoWriter().bytes(9, "a").bytes(9, "b")))
      .bytes(6, "doc")
      .bytes(7, "ai.onnx");
  ProtoWriter loop = nodeHeader("Loop", "", {"n"}, {"out", ""});
  loop.message(
          5, attribute("consts", Type::Tensors,
                       ProtoWriter()
                           .message(10, tensorHeader("c0", ElemType::Int64, {})
                                            .int64(7, 42))
                           .message(10, tensorHeader("c1", ElemType::Int32, {2})
                                            .packedVarints(5, {-1, 1}))))
      .message(5, attribute("branches", Type::Graphs,
                            ProtoWriter()
                                .message(11, ProtoWriter().bytes(2, "then"))
                                .message(11, ProtoWriter().bytes(2, "else"))))
      .message(5, attribute("sparse", Type::SparseTensor,
                            ProtoWriter().message(22, ProtoWriter())))
      .message(5, attribute("no_ints", Type::Ints, ProtoWriter()))
      .bytes(7, "com.microsoft");
  Model m = openGraph(ProtoWriter().message(1, conv).message(1, loop));

  ASSERT_EQ(m.graph().nodes.size(), 2u);
  const Node &n0 = m.graph().nodes[0];
  EXPECT_EQ(n0.opType, "Conv");
  EXPECT_EQ(n0.name, "conv0");
  EXPECT_EQ(n0.domain, "");
  EXPECT_THAT(n0.inputs, ElementsAre("x", "w", ""));
  EXPECT_THAT(n0.outputs, ElementsAre("y"));
  ASSERT_EQ(n0.attributes.size(), 9u);

  const Attribute *alpha = n0.attribute("alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->type, Type::Float);
  EXPECT_EQ(alpha->f, 0.5f);
  EXPECT_EQ(n0.attribute("axis")->type, Type::Int);
  EXPECT_EQ(n0.attribute("axis")->i, -1);
  EXPECT_EQ(n0.attribute("mode")->s, "constant");

  const Attribute *value = n0.attribute("value");
  ASSERT_EQ(value->type, Type::Tensor);
  ASSERT_NE(value->t, nullptr);
  EXPECT_EQ(value->t->name, "value");
  EXPECT_EQ(value->t->elemType, ElemType::Float);
  EXPECT_THAT(value->t->dims, ElementsAre(2));
  EXPECT_THAT(valuesOf<float>(*value->t), ElementsAre(1.0f, 2.0f));
  EXPECT_EQ(value->t->origin, "float_data");

  const Attribute *bodyAttr = n0.attribute("body");
  ASSERT_EQ(bodyAttr->type, Type::Graph);
  ASSERT_NE(bodyAttr->g, nullptr);
  EXPECT_EQ(bodyAttr->g->name, "body");
  ASSERT_EQ(bodyAttr->g->nodes.size(), 1u);
  EXPECT_EQ(bodyAttr->g->nodes[0].opType, "Identity");

  EXPECT_THAT(n0.attribute("scales")->floats, ElementsAre(1.5f, 2.5f));
  EXPECT_THAT(n0.attribute("pads")->ints, ElementsAre(0, 1, -2));
  EXPECT_THAT(n0.attribute("strides")->ints, ElementsAre(2, 2));
  EXPECT_EQ(n0.attribute("names")->type, Type::Strings);
  EXPECT_THAT(n0.attribute("names")->strings, ElementsAre("a", "b"));
  EXPECT_EQ(n0.attribute("missing"), nullptr);

  const Node &n1 = m.graph().nodes[1];
  EXPECT_EQ(n1.opType, "Loop");
  EXPECT_EQ(n1.domain, "com.microsoft");
  EXPECT_THAT(n1.outputs, ElementsAre("out", ""));
  const Attribute *consts = n1.attribute("consts");
  ASSERT_EQ(consts->type, Type::Tensors);
  ASSERT_EQ(consts->tensors.size(), 2u);
  EXPECT_TRUE(consts->tensors[0]->dims.empty());
  EXPECT_EQ(consts->tensors[0]->numElements(), 1);
  EXPECT_THAT(valuesOf<int64_t>(*consts->tensors[0]), ElementsAre(42));
  EXPECT_THAT(valuesOf<int32_t>(*consts->tensors[1]), ElementsAre(-1, 1));
  const Attribute *branches = n1.attribute("branches");
  ASSERT_EQ(branches->type, Type::Graphs);
  ASSERT_EQ(branches->graphs.size(), 2u);
  EXPECT_EQ(branches->graphs[0]->name, "then");
  EXPECT_EQ(branches->graphs[1]->name, "else");
  EXPECT_EQ(n1.attribute("sparse")->type, Type::SparseTensor);
  EXPECT_EQ(n1.attribute("no_ints")->type, Type::Ints);
  EXPECT_TRUE(n1.attribute("no_ints")->ints.empty());
}

TEST_F(OnnxModelTest, KeepsOnlyTheValueTheTypeNamesAndInfersAMissingType) {
  ProtoWriter node = nodeHeader("Op", "n", {}, {});
  node.message(5, attribute("int_with_float", Type::Int,
                            ProtoWriter().float32(2, 3.0f).int64(3, 7)))
      // IR version 1 attributes have no type field.
      .message(5, ProtoWriter().bytes(1, "old_float").float32(2, 0.25f))
      .message(5, ProtoWriter().bytes(1, "old_ints").int64(8, 4).int64(8, 5))
      .message(5, ProtoWriter()
                      .bytes(1, "old_graph")
                      .message(6, ProtoWriter().bytes(2, "g")));
  Model m = openGraph(ProtoWriter().message(1, node));
  const Node &n = m.graph().nodes.at(0);
  EXPECT_EQ(n.attribute("int_with_float")->type, Type::Int);
  EXPECT_EQ(n.attribute("int_with_float")->i, 7);
  EXPECT_EQ(n.attribute("int_with_float")->f, 0.0f);
  EXPECT_EQ(n.attribute("old_float")->type, Type::Float);
  EXPECT_EQ(n.attribute("old_float")->f, 0.25f);
  EXPECT_EQ(n.attribute("old_ints")->type, Type::Ints);
  EXPECT_THAT(n.attribute("old_ints")->ints, ElementsAre(4, 5));
  EXPECT_EQ(n.attribute("old_graph")->type, Type::Graph);
  EXPECT_EQ(n.attribute("old_graph")->g->name, "g");
}

TEST_F(OnnxModelTest, ReadsValueInfoShapes) {
  auto typed = [](std::string_view name, const ProtoWriter &typeProto) {
    return ProtoWriter().bytes(1, name).message(2, typeProto);
  };
  ProtoWriter graph;
  graph
      .message(11, valueInfo("input_ids", ElemType::Int64,
                             {std::string("batch"), std::string("sequence")}))
      .message(12,
               valueInfo("logits", ElemType::Float,
                         {std::string("batch"), int64_t{1}, int64_t{32000}}))
      .message(13, typed("no_shape",
                         ProtoWriter().message(1, ProtoWriter().varint(1, 10))))
      .message(13, typed("scalar", ProtoWriter().message(
                                       1, ProtoWriter().varint(1, 1).message(
                                              2, ProtoWriter()))))
      .message(13,
               typed("unknown_dim",
                     ProtoWriter().message(
                         1, ProtoWriter().varint(1, 1).message(
                                2, ProtoWriter().message(
                                       1, ProtoWriter().bytes(3, "note"))))))
      .message(13, typed("a_sequence",
                         ProtoWriter().message(
                             4, ProtoWriter().message(
                                    1, ProtoWriter().message(
                                           1, ProtoWriter().varint(1, 1))))));
  Model m = openGraph(graph);
  const Graph &g = m.graph();

  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "input_ids");
  EXPECT_EQ(g.inputs[0].elemType, ElemType::Int64);
  ASSERT_TRUE(g.inputs[0].shape.has_value());
  ASSERT_EQ(g.inputs[0].shape->size(), 2u);
  EXPECT_EQ((*g.inputs[0].shape)[0].param, "batch");
  EXPECT_FALSE((*g.inputs[0].shape)[0].value.has_value());
  EXPECT_EQ((*g.inputs[0].shape)[1].param, "sequence");

  ASSERT_EQ(g.outputs.size(), 1u);
  const std::vector<Dim> &logits = g.outputs[0].shape.value();
  ASSERT_EQ(logits.size(), 3u);
  EXPECT_EQ(logits[0].param, "batch");
  EXPECT_EQ(logits[1].value, 1);
  EXPECT_TRUE(logits[1].param.empty());
  EXPECT_EQ(logits[2].value, 32000);

  ASSERT_EQ(g.valueInfo.size(), 4u);
  EXPECT_EQ(g.valueInfo[0].elemType, ElemType::Float16);
  EXPECT_FALSE(g.valueInfo[0].shape.has_value());
  ASSERT_TRUE(g.valueInfo[1].shape.has_value());
  EXPECT_TRUE(g.valueInfo[1].shape->empty());
  ASSERT_EQ(g.valueInfo[2].shape.value().size(), 1u);
  EXPECT_FALSE((*g.valueInfo[2].shape)[0].value.has_value());
  EXPECT_TRUE((*g.valueInfo[2].shape)[0].param.empty());
  EXPECT_EQ(g.valueInfo[3].name, "a_sequence");
  EXPECT_EQ(g.valueInfo[3].elemType, ElemType::Undefined);
  EXPECT_FALSE(g.valueInfo[3].shape.has_value());
}

TEST_F(OnnxModelTest, RawDataIsAViewOfTheMappedFile) {
  std::vector<float> weights = {1.0f, -2.0f, 3.5f, 4.25f};
  std::vector<int64_t> shape = {7, -8, 9};
  ProtoWriter graph;
  graph
      .message(5, tensorHeader("w", ElemType::Float, {2, 2})
                      .bytes(9, rawBytes(weights)))
      .message(
          5,
          tensorHeader("shape", ElemType::Int64, {3}).bytes(9, rawBytes(shape)))
      .message(5, tensorHeader("mask", ElemType::Bool, {3})
                      .bytes(9, std::string("\x01\x00\x01", 3)))
      .message(5, tensorHeader("q", ElemType::Int4, {3})
                      .bytes(9, std::string("\x21\x0F", 2)));
  ProtoWriter model = modelWith(graph);
  Model m = open(model);
  const std::vector<Tensor> &init = m.graph().initializers;
  ASSERT_EQ(init.size(), 4u);

  EXPECT_EQ(init[0].name, "w");
  EXPECT_EQ(init[0].elemType, ElemType::Float);
  EXPECT_THAT(init[0].dims, ElementsAre(2, 2));
  EXPECT_EQ(init[0].numElements(), 4);
  EXPECT_EQ(init[0].origin, "raw_data");
  EXPECT_THAT(valuesOf<float>(init[0]), ElementsAreArray(weights));
  EXPECT_THAT(valuesOf<int64_t>(init[1]), ElementsAreArray(shape));
  EXPECT_THAT(valuesOf<uint8_t>(init[2]), ElementsAre(1, 0, 1));
  EXPECT_THAT(valuesOf<uint8_t>(init[3]), ElementsAre(0x21, 0x0F));

  // Both spans lie in one mapping of the file, as far apart as in the file:
  // nothing was copied.
  size_t weightsAt = model.str().find(rawBytes(weights));
  size_t shapeAt = model.str().find(rawBytes(shape));
  ASSERT_NE(weightsAt, std::string::npos);
  ASSERT_NE(shapeAt, std::string::npos);
  EXPECT_EQ(init[1].bytes.data() - init[0].bytes.data(),
            static_cast<ptrdiff_t>(shapeAt - weightsAt));
}

TEST_F(OnnxModelTest, TypedFieldsBecomeTheRawLayout) {
  ProtoWriter graph;
  auto add = [&](const ProtoWriter &tensor) { graph.message(5, tensor); };
  add(tensorHeader("f_packed", ElemType::Float, {3})
          .packedFloats(4, {1, 2, 3}));
  add(tensorHeader("f_unpacked", ElemType::Float, {2})
          .float32(4, 0.5f)
          .float32(4, -1.0f));
  add(tensorHeader("i64_unpacked", ElemType::Int64, {3})
          .int64(7, 1)
          .int64(7, -2)
          .int64(7, int64_t{1} << 40));
  add(tensorHeader("i64_packed", ElemType::Int64, {2})
          .packedVarints(7, {5, -6}));
  add(tensorHeader("f16", ElemType::Float16, {2})
          .packedVarints(5, {0x3C00, 0xC000}));
  // int32_data unpacked, negative values as ten-byte varints.
  add(tensorHeader("i8", ElemType::Int8, {3})
          .int64(5, -1)
          .int64(5, 127)
          .int64(5, -128));
  add(tensorHeader("u16", ElemType::Uint16, {1}).packedVarints(5, {65535}));
  add(tensorHeader("b", ElemType::Bool, {2}).packedVarints(5, {1, 0}));
  // Three 4-bit elements 1, 2, -1: two per int32_data value.
  add(tensorHeader("i4", ElemType::Int4, {3}).packedVarints(5, {0x21, 0x0F}));
  add(tensorHeader("bf16", ElemType::BFloat16, {1}).packedVarints(5, {0x3F80}));
  add(tensorHeader("f8", ElemType::Float8E4M3FN, {1}).packedVarints(5, {0x38}));
  add(tensorHeader("d", ElemType::Double, {2}).packedDoubles(10, {0.25, -8.0}));
  add(tensorHeader("u32", ElemType::Uint32, {2})
          .packedVarints(11, {0xFFFFFFFF, 3}));
  add(tensorHeader("u64", ElemType::Uint64, {1}).packedVarints(11, {-1}));
  add(tensorHeader("c64", ElemType::Complex64, {1}).packedFloats(4, {1, -1}));
  add(tensorHeader("i32", ElemType::Int32, {2}).packedVarints(5, {-100000, 7}));
  Model m = openGraph(graph);
  const std::vector<Tensor> &t = m.graph().initializers;
  ASSERT_EQ(t.size(), 16u);

  EXPECT_THAT(valuesOf<float>(t[0]), ElementsAre(1.0f, 2.0f, 3.0f));
  EXPECT_EQ(t[0].origin, "float_data");
  EXPECT_THAT(valuesOf<float>(t[1]), ElementsAre(0.5f, -1.0f));
  EXPECT_THAT(valuesOf<int64_t>(t[2]), ElementsAre(1, -2, int64_t{1} << 40));
  EXPECT_EQ(t[2].origin, "int64_data");
  EXPECT_THAT(valuesOf<int64_t>(t[3]), ElementsAre(5, -6));
  std::vector<uint16_t> half = valuesOf<uint16_t>(t[4]);
  ASSERT_EQ(half.size(), 2u);
  EXPECT_EQ(halfToFloat(half[0]), 1.0f);
  EXPECT_EQ(halfToFloat(half[1]), -2.0f);
  EXPECT_EQ(t[4].origin, "int32_data");
  EXPECT_THAT(valuesOf<int8_t>(t[5]), ElementsAre(-1, 127, -128));
  EXPECT_THAT(valuesOf<uint16_t>(t[6]), ElementsAre(65535));
  EXPECT_THAT(valuesOf<uint8_t>(t[7]), ElementsAre(1, 0));
  EXPECT_THAT(valuesOf<uint8_t>(t[8]), ElementsAre(0x21, 0x0F));
  EXPECT_EQ(bf16ToFloat(valuesOf<uint16_t>(t[9]).at(0)), 1.0f);
  EXPECT_THAT(valuesOf<uint8_t>(t[10]), ElementsAre(0x38));
  EXPECT_THAT(valuesOf<double>(t[11]), ElementsAre(0.25, -8.0));
  EXPECT_EQ(t[11].origin, "double_data");
  EXPECT_THAT(valuesOf<uint32_t>(t[12]), ElementsAre(0xFFFFFFFFu, 3u));
  EXPECT_EQ(t[12].origin, "uint64_data");
  EXPECT_THAT(valuesOf<uint64_t>(t[13]), ElementsAre(~uint64_t{0}));
  EXPECT_THAT(valuesOf<float>(t[14]), ElementsAre(1.0f, -1.0f));
  EXPECT_THAT(valuesOf<int32_t>(t[15]), ElementsAre(-100000, 7));
}

TEST_F(OnnxModelTest, AcceptsStringEmptyAndScalarTensors) {
  ProtoWriter graph;
  graph
      .message(5, tensorHeader("words", ElemType::String, {2})
                      .bytes(6, "hello")
                      .bytes(6, ""))
      .message(5, tensorHeader("empty", ElemType::Float, {0, 3}))
      .message(5,
               tensorHeader("empty_raw", ElemType::Int64, {4, 0}).bytes(9, ""))
      .message(5, tensorHeader("scalar", ElemType::Float, {})
                      .bytes(9, rawBytes(std::vector<float>{2.5f})));
  Model m = openGraph(graph);
  const std::vector<Tensor> &t = m.graph().initializers;
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].elemType, ElemType::String);
  EXPECT_TRUE(t[0].bytes.empty());
  EXPECT_EQ(t[0].origin, "string_data");
  EXPECT_EQ(t[1].numElements(), 0);
  EXPECT_TRUE(t[1].bytes.empty());
  EXPECT_EQ(t[2].numElements(), 0);
  EXPECT_TRUE(t[2].bytes.empty());
  EXPECT_EQ(t[3].numElements(), 1);
  EXPECT_THAT(valuesOf<float>(t[3]), ElementsAre(2.5f));
}

TEST_F(OnnxModelTest, ReadsExternalDataFromOneFile) {
  std::vector<float> a = {1, 2, 3, 4};
  std::vector<int64_t> b = {10, -20};
  std::string data(4096 + 16, '\0');
  std::memcpy(data.data(), a.data(), 16);
  std::memcpy(data.data() + 4096, b.data(), 16);
  writeFile(dir / "model.onnx_data", data);

  ProtoWriter ta = tensorHeader("a", ElemType::Float, {4});
  addExternalData(ta, "model.onnx_data", "0", "16");
  ProtoWriter tb = tensorHeader("b", ElemType::Int64, {2});
  // No length (the tensor's size), and a checksum, which is not verified.
  tb.message(13, entry("checksum", "0123"));
  addExternalData(tb, "model.onnx_data", "4096");
  Model m = openGraph(ProtoWriter().message(5, ta).message(5, tb));
  const std::vector<Tensor> &t = m.graph().initializers;
  ASSERT_EQ(t.size(), 2u);

  EXPECT_THAT(valuesOf<float>(t[0]), ElementsAreArray(a));
  EXPECT_EQ(t[0].origin, "external data 'model.onnx_data' at offset 0");
  EXPECT_THAT(valuesOf<int64_t>(t[1]), ElementsAreArray(b));
  EXPECT_EQ(t[1].origin, "external data 'model.onnx_data' at offset 4096");
  // One mapping of the file serves both.
  EXPECT_EQ(t[1].bytes.data() - t[0].bytes.data(), 4096);
}

TEST_F(OnnxModelTest, ReadsExternalDataFromTwoFiles) {
  std::string first(128, '\0');
  std::string second(64, '\0');
  for (size_t i = 0; i < first.size(); ++i)
    first[i] = static_cast<char>(i);
  for (size_t i = 0; i < second.size(); ++i)
    second[i] = static_cast<char>(200 - i);
  writeFile(dir / "model.onnx_data", first);
  writeFile(dir / "model.onnx_data_1", second);

  ProtoWriter t0 = tensorHeader("t0", ElemType::Uint8, {8});
  addExternalData(t0, "model.onnx_data", "16", "8");
  ProtoWriter t1 = tensorHeader("t1", ElemType::Uint8, {4});
  addExternalData(t1, "model.onnx_data_1", "60", "4");
  ProtoWriter t2 = tensorHeader("t2", ElemType::Uint16, {2});
  addExternalData(t2, "./model.onnx_data", "100"); // the same file
  Model m =
      openGraph(ProtoWriter().message(5, t0).message(5, t1).message(5, t2));
  const std::vector<Tensor> &t = m.graph().initializers;
  ASSERT_EQ(t.size(), 3u);

  EXPECT_THAT(valuesOf<uint8_t>(t[0]),
              ElementsAre(16, 17, 18, 19, 20, 21, 22, 23));
  EXPECT_THAT(valuesOf<uint8_t>(t[1]), ElementsAre(140, 139, 138, 137));
  EXPECT_EQ(t[1].origin, "external data 'model.onnx_data_1' at offset 60");
  EXPECT_EQ(t[2].bytes.size(), 4u);
  EXPECT_EQ(static_cast<uint8_t>(t[2].bytes[0]), 100);
  EXPECT_EQ(t[2].bytes.data() - t[0].bytes.data(), 100 - 16);
}

TEST_F(OnnxModelTest, ReadsExternalDataFromASubdirectory) {
  std::filesystem::create_directory(dir / "weights");
  writeFile(dir / "weights" / "part.bin", std::string("\x05\x06", 2));
  ProtoWriter tensor = tensorHeader("w", ElemType::Int8, {2});
  addExternalData(tensor, "weights/part.bin");
  Model m = openGraph(ProtoWriter().message(5, tensor));
  EXPECT_THAT(valuesOf<int8_t>(m.graph().initializers.at(0)),
              ElementsAre(5, 6));
}

TEST_F(OnnxModelTest, ReadsExternalDataPastFourGigabytes) {
  // A sparse 5 GiB file: offsets past 2^32 must not wrap anywhere.
  constexpr uint64_t kSize = uint64_t{5} << 30;
  constexpr uint64_t kOffset = (uint64_t{9} << 29) + 12; // 4.5 GiB + 12
  std::filesystem::path data = dir / "model.onnx_data";
  writeFile(data, "");
  std::error_code ec;
  std::filesystem::resize_file(data, kSize, ec);
  if (ec)
    GTEST_SKIP() << "cannot make a sparse 5 GiB file: " << ec.message();
  {
    std::fstream out(data, std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(static_cast<std::streamoff>(kOffset));
    out.write("\x2A\x00\x00\x00", 4);
    ASSERT_TRUE(out.good());
  }
  ProtoWriter tensor = tensorHeader("far", ElemType::Int32, {1});
  addExternalData(tensor, "model.onnx_data", std::to_string(kOffset));
  ProtoWriter pastEnd = tensorHeader("past", ElemType::Int32, {2});
  addExternalData(pastEnd, "model.onnx_data", std::to_string(kSize - 4));

  Model m = openGraph(ProtoWriter().message(5, tensor));
  EXPECT_THAT(valuesOf<int32_t>(m.graph().initializers.at(0)), ElementsAre(42));
  EXPECT_THAT(initializerError(pastEnd),
              HasSubstr(cat("external data offset ", kSize - 4,
                            " + length 8 runs past the end of "
                            "'model.onnx_data' (",
                            kSize, " bytes)")));
}

TEST_F(OnnxModelTest, KeepAliveKeepsTheBytesAfterTheModelIsGone) {
  writeFile(dir / "model.onnx_data", std::string("\x07\x08", 2));
  ProtoWriter external = tensorHeader("ext", ElemType::Uint8, {2});
  addExternalData(external, "model.onnx_data");
  ProtoWriter graph;
  graph.message(5, external)
      .message(5, tensorHeader("raw", ElemType::Uint8, {1}).bytes(9, "\x09"))
      .message(5, tensorHeader("typed", ElemType::Int64, {1}).int64(7, 11));
  writeFile(path(), modelWith(graph).str());

  std::shared_ptr<const void> keepAlive;
  std::vector<Tensor> tensors;
  {
    Model m = Model::open(path());
    keepAlive = m.keepAlive();
    tensors = m.graph().initializers;
  }
  ASSERT_NE(keepAlive, nullptr);
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_THAT(valuesOf<uint8_t>(tensors[0]), ElementsAre(7, 8));
  EXPECT_THAT(valuesOf<uint8_t>(tensors[1]), ElementsAre(9));
  EXPECT_THAT(valuesOf<int64_t>(tensors[2]), ElementsAre(11));
}

TEST_F(OnnxModelTest, AcceptsSubgraphsThirtyTwoLevelsDeep) {
  ProtoWriter graph = ProtoWriter().bytes(2, "innermost");
  for (int level = 0; level < 32; ++level)
    graph = ifAround(graph);
  Model m = openGraph(graph);
  const Graph *g = &m.graph();
  for (int level = 0; level < 32; ++level)
    g = g->nodes.at(0).attribute("then_branch")->g.get();
  EXPECT_EQ(g->name, "innermost");
}

//===----------------------------------------------------------------------===//
// Malformed protobuf
//===----------------------------------------------------------------------===//

TEST_F(OnnxModelTest, EveryTruncationOfAModelIsAnError) {
  std::vector<float> weights = {1, 2, 3, 4, 5, 6};
  ProtoWriter graph;
  graph
      .message(
          1, nodeHeader("MatMul", "mm", {"x", "w"}, {"y"})
                 .message(5, attribute("alpha", Type::Float,
                                       ProtoWriter().float32(2, 1.0f)))
                 .message(5, attribute("perm", Type::Ints,
                                       ProtoWriter().packedVarints(8, {1, 0}))))
      .bytes(2, "g")
      .message(5, tensorHeader("w", ElemType::Float, {2, 3})
                      .bytes(9, rawBytes(weights)))
      .message(11, valueInfo("x", ElemType::Float,
                             {std::string("batch"), int64_t{2}}))
      .message(12, valueInfo("y", ElemType::Float,
                             {std::string("batch"), int64_t{3}}));
  std::string full = modelWith(graph).str();
  writeFile(path(), full);
  ASSERT_NO_THROW(Model::open(path()));
  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::string message = openError(full.substr(0, cut));
    ASSERT_THAT(message, HasSubstr(prefix())) << "cut at byte " << cut;
    if (cut > 0) {
      EXPECT_THAT(message, HasSubstr("truncated")) << "cut at byte " << cut;
    }
  }
}

TEST_F(OnnxModelTest, CorruptBytesGiveSolErrorsOnly) {
  ProtoWriter graph;
  graph
      .message(
          1, nodeHeader("Add", "add", {"x", "c"}, {"y"})
                 .message(
                     5, attribute("t", Type::Tensor,
                                  ProtoWriter().message(
                                      5, tensorHeader("c", ElemType::Float, {2})
                                             .packedFloats(4, {1, 2})))))
      .message(5,
               tensorHeader("i", ElemType::Int8, {2}).packedVarints(5, {1, -1}))
      .message(11, valueInfo("x", ElemType::Float, {int64_t{2}}));
  std::string full = modelWith(graph).str();
  // Every byte set to values that change varints, lengths and wire types:
  // each file either reads or throws sol::Error (anything else escapes and
  // fails the test; a crash fails it under ASan).
  for (size_t at = 0; at < full.size(); ++at) {
    for (char value : {'\x00', '\x7F', '\x80', '\xFF', '\x05'}) {
      std::string corrupt = full;
      corrupt[at] = value;
      writeFile(path(), corrupt);
      try {
        Model::open(path());
      } catch (const sol::Error &) {
      }
    }
  }
}

TEST_F(OnnxModelTest, NamesTheByteAndFieldOfALengthThatRunsPastItsMessage) {
  // A node field claiming 900 bytes inside a 4-byte graph.
  ProtoWriter graph;
  graph.tag(1, 2).raw(test::varintBytes(900)).raw("a");
  ProtoWriter model = modelWith(graph);
  size_t graphAt = model.str().find(graph.str());
  ASSERT_NE(graphAt, std::string::npos);
  EXPECT_EQ(openError(model.str()),
            cat(prefix(), "malformed ONNX protobuf at byte ", graphAt,
                " (graph): field 1 (length 900) runs past the end of its "
                "message (ends at byte ",
                graphAt + graph.size(),
                "); the file is truncated or not an ONNX model"));
}

TEST_F(OnnxModelTest, RejectsABadVarint) {
  ProtoWriter model;
  model.tag(1, 0).raw(std::string(10, '\xFF')).raw("\x01");
  EXPECT_THAT(openError(model.str()),
              AllOf(HasSubstr(prefix() + "malformed ONNX protobuf at byte 0 "
                                         "(ModelProto)"),
                    HasSubstr("field 1 is longer than 10 bytes")));
  ProtoWriter node = nodeHeader("Op", "", {}, {});
  node.tag(5, 2).raw(std::string(9, '\xFF')).raw("\x7F");
  EXPECT_THAT(graphError(ProtoWriter().message(1, node)),
              AllOf(HasSubstr("(graph.node[0])"),
                    HasSubstr("the length of field 5 overflows 64 bits")));
}

TEST_F(OnnxModelTest, RejectsGroupWireTypes) {
  ProtoWriter node = nodeHeader("Op", "", {}, {});
  node.message(5, ProtoWriter().bytes(1, "a").tag(20, 3));
  EXPECT_THAT(graphError(ProtoWriter().message(1, node)),
              AllOf(HasSubstr(prefix() + "malformed ONNX protobuf"),
                    HasSubstr("(graph.node[0].attribute[0]): field 20 uses "
                              "wire type 3 (group), which ONNX never writes")));
}

TEST_F(OnnxModelTest, RejectsAFieldWithTheWrongWireType) {
  ProtoWriter graph;
  graph.message(1, ProtoWriter().varint(4, 1)); // op_type as a varint
  EXPECT_THAT(graphError(graph),
              HasSubstr("(graph.node[0]): field 4 has wire type 0 (varint) "
                        "where onnx.proto declares 2 (length-delimited)"));
}

TEST_F(OnnxModelTest, RejectsFilesThatAreNotOnnxModels) {
  EXPECT_EQ(openError(""), prefix() + "the file is empty, not an ONNX model");
  EXPECT_THAT(openError("{\"not\": \"onnx\"}"),
              AllOf(HasSubstr(prefix() + "malformed ONNX protobuf"),
                    HasSubstr("not an ONNX model")));
  ProtoWriter noGraph;
  noGraph.varint(1, 8).message(8, opset("", 17));
  EXPECT_EQ(openError(noGraph.str()),
            prefix() + "the model has no graph (ModelProto field 7); the file "
                       "is truncated or not an ONNX model");
  ProtoWriter noOpset;
  noOpset.varint(1, 8).message(7, ProtoWriter());
  EXPECT_THAT(openError(noOpset.str()),
              HasSubstr("has no opset_import (ModelProto field 8)"));
  EXPECT_THAT(errorOf([&] { Model::open(dir / "missing.onnx"); }),
              HasSubstr((dir / "missing.onnx").string()));
}

//===----------------------------------------------------------------------===//
// Invalid models
//===----------------------------------------------------------------------===//

TEST_F(OnnxModelTest, RejectsByteCountsThatDoNotMatchTheTensor) {
  EXPECT_EQ(initializerError(tensorHeader("w", ElemType::Float, {2, 3})
                                 .bytes(9, std::string(20, '\0'))),
            prefix() + "graph.initializer[0] (tensor 'w'): FLOAT [2, 3] is 24 "
                       "bytes, but raw_data holds 20");
  EXPECT_THAT(initializerError(tensorHeader("w", ElemType::Float, {2, 3})
                                   .packedFloats(4, {1, 2, 3, 4, 5})),
              HasSubstr("graph.initializer[0] (tensor 'w'): FLOAT [2, 3] has "
                        "6 elements, but float_data holds 5 values"));
  EXPECT_THAT(
      initializerError(
          tensorHeader("q", ElemType::Int4, {3}).packedVarints(5, {0x21})),
      HasSubstr("INT4 [3] has 3 elements (2 values, two 4-bit "
                "elements in each), but int32_data holds 1 values"));
  EXPECT_THAT(
      initializerError(
          tensorHeader("c", ElemType::Complex64, {2}).packedFloats(4, {1, 2})),
      HasSubstr("(4 values, real and imaginary parts)"));
  writeFile(dir / "model.onnx_data", std::string(64, '\0'));
  ProtoWriter external = tensorHeader("e", ElemType::Float, {4});
  addExternalData(external, "model.onnx_data", "0", "12");
  EXPECT_THAT(initializerError(external),
              HasSubstr("(tensor 'e'): FLOAT [4] is 16 bytes, but its external "
                        "data length is 12"));
  // In an attribute, the path says which node and attribute.
  ProtoWriter node = nodeHeader("Constant", "", {}, {"c"});
  node.message(5, attribute("value", Type::Tensor,
                            ProtoWriter().message(
                                5, tensorHeader("v", ElemType::Int64, {2})
                                       .bytes(9, std::string(8, '\0')))));
  EXPECT_THAT(graphError(ProtoWriter().message(1, node)),
              HasSubstr("graph.node[0].attribute[0].t (tensor 'v'): INT64 [2] "
                        "is 16 bytes, but raw_data holds 8"));
}

TEST_F(OnnxModelTest, RejectsMissingShortAndOverrunExternalFiles) {
  ProtoWriter missing = tensorHeader("w", ElemType::Float, {4});
  addExternalData(missing, "model.onnx_data");
  EXPECT_THAT(initializerError(missing),
              AllOf(HasSubstr(prefix() + "graph.initializer[0] (tensor 'w'): "
                                         "cannot read its external data file "
                                         "'model.onnx_data'"),
                    HasSubstr((dir / "model.onnx_data").string()),
                    HasSubstr("No such file")));

  writeFile(dir / "model.onnx_data", std::string(10, '\0'));
  EXPECT_THAT(initializerError(missing),
              HasSubstr("(tensor 'w'): external data offset 0 + length 16 runs "
                        "past the end of 'model.onnx_data' (10 bytes)"));

  writeFile(dir / "model.onnx_data", std::string(2048, '\0'));
  ProtoWriter pastEnd = tensorHeader("w", ElemType::Uint8, {1024});
  addExternalData(pastEnd, "model.onnx_data", "4096", "1024");
  EXPECT_EQ(initializerError(pastEnd),
            prefix() + "graph.initializer[0] (tensor 'w'): external data "
                       "offset 4096 + length 1024 runs past the end of "
                       "'model.onnx_data' (2048 bytes)");
  ProtoWriter hugeOffset = tensorHeader("w", ElemType::Uint8, {16});
  addExternalData(hugeOffset, "model.onnx_data", "18446744073709551615");
  EXPECT_THAT(initializerError(hugeOffset),
              HasSubstr("offset 18446744073709551615 + length 16 runs past"));
}

TEST_F(OnnxModelTest, RejectsUnsafeExternalLocations) {
  writeFile(dir / "model.onnx_data", std::string(16, '\0'));
  auto locationError = [&](std::string_view location) {
    ProtoWriter tensor = tensorHeader("w", ElemType::Float, {4});
    addExternalData(tensor, location);
    return initializerError(tensor);
  };
  EXPECT_EQ(locationError("../model.onnx_data"),
            prefix() + "graph.initializer[0] (tensor 'w'): external data "
                       "location '../model.onnx_data' has a '..' component; "
                       "ONNX requires a path inside the model's directory");
  EXPECT_THAT(locationError("sub/../../x"), HasSubstr("has a '..' component"));
  EXPECT_EQ(locationError((dir / "model.onnx_data").string()),
            prefix() +
                "graph.initializer[0] (tensor 'w'): external data "
                "location '" +
                (dir / "model.onnx_data").string() +
                "' is an absolute path; ONNX requires a path relative to the "
                "model's directory");
  EXPECT_THAT(locationError(""),
              HasSubstr("(tensor 'w'): has data_location EXTERNAL but no "
                        "external_data 'location'"));
}

TEST_F(OnnxModelTest, RejectsExternalOffsetsAndLengthsThatAreNotNumbers) {
  writeFile(dir / "model.onnx_data", std::string(16, '\0'));
  auto numberError = [&](std::string_view key, std::string_view value) {
    ProtoWriter tensor = tensorHeader("w", ElemType::Float, {4});
    tensor.message(13, entry(key, value));
    addExternalData(tensor, "model.onnx_data");
    return initializerError(tensor);
  };
  EXPECT_EQ(numberError("offset", "12abc"),
            prefix() + "graph.initializer[0] (tensor 'w'): external data "
                       "offset '12abc' is not a decimal byte count");
  EXPECT_THAT(numberError("offset", "-1"), HasSubstr("offset '-1' is not"));
  EXPECT_THAT(numberError("offset", ""), HasSubstr("offset '' is not"));
  EXPECT_THAT(numberError("length", "0x10"), HasSubstr("length '0x10' is not"));
  EXPECT_THAT(numberError("length", "99999999999999999999"),
              HasSubstr("length '99999999999999999999' is not a decimal"));
}

TEST_F(OnnxModelTest, RejectsExternalDataWithoutDataLocation) {
  ProtoWriter tensor = tensorHeader("w", ElemType::Float, {4});
  tensor.message(13, entry("location", "model.onnx_data"));
  EXPECT_THAT(initializerError(tensor),
              HasSubstr("has external_data entries but data_location is "
                        "DEFAULT"));
  EXPECT_THAT(
      initializerError(tensorHeader("w", ElemType::Float, {1}).varint(14, 2)),
      HasSubstr("data_location is 2; onnx.proto defines 0 (DEFAULT) "
                "and 1 (EXTERNAL)"));
}

TEST_F(OnnxModelTest, RejectsSubgraphsNestedTooDeep) {
  ProtoWriter graph = ProtoWriter().bytes(2, "innermost");
  for (int level = 0; level < 33; ++level)
    graph = ifAround(graph);
  std::string message = graphError(graph);
  EXPECT_THAT(message,
              AllOf(HasSubstr(prefix() + "graph.node[0].attribute[0].g.node[0]"
                                         ".attribute[0].g"),
                    HasSubstr("subgraphs nest more than 32 levels deep")));
}

TEST_F(OnnxModelTest, RejectsSegmentedTensors) {
  ProtoWriter tensor = tensorHeader("w", ElemType::Float, {1});
  tensor.message(3, ProtoWriter().int64(1, 0).int64(2, 1))
      .bytes(9, std::string(4, '\0'));
  EXPECT_EQ(initializerError(tensor),
            prefix() + "graph.initializer[0] (tensor 'w'): is segmented "
                       "(TensorProto.segment), which is not supported; save "
                       "the model with each tensor whole");
}

TEST_F(OnnxModelTest, RejectsBadTensorHeaders) {
  EXPECT_THAT(initializerError(tensorHeader("w", ElemType::Float, {2, -1})),
              HasSubstr("(tensor 'w'): dims[1] is -1; a tensor's dims must be "
                        ">= 0"));
  EXPECT_THAT(initializerError(tensorHeader("w", ElemType::Float,
                                            std::vector<int64_t>(65, 1))),
              HasSubstr("has 65 dims; at most 64 are accepted"));
  EXPECT_THAT(initializerError(tensorHeader(
                  "w", ElemType::Float, {int64_t{1} << 32, int64_t{1} << 32})),
              HasSubstr("dims [4294967296, 4294967296] have more elements "
                        "than int64 can count"));
  EXPECT_THAT(initializerError(
                  tensorHeader("w", ElemType::Complex128, {int64_t{1} << 61})),
              HasSubstr("is more bytes than 64 bits can count"));
  EXPECT_THAT(
      initializerError(tensorHeader("w", static_cast<ElemType>(99), {1})),
      HasSubstr("has data_type 99, which is not a "
                "TensorProto.DataType this reader knows (1 to 23)"));
  EXPECT_THAT(initializerError(ProtoWriter().int64(1, 1).bytes(8, "w")),
              HasSubstr("(tensor 'w'): has no data_type"));
}

TEST_F(OnnxModelTest, RejectsContentsInTheWrongPlace) {
  EXPECT_THAT(initializerError(tensorHeader("w", ElemType::Float, {2})),
              HasSubstr("(tensor 'w'): FLOAT [2] has 2 elements but no "
                        "contents"));
  EXPECT_THAT(initializerError(tensorHeader("w", ElemType::Float, {1})
                                   .packedFloats(4, {1})
                                   .bytes(9, std::string(4, '\0'))),
              HasSubstr("has both raw_data and float_data"));
  EXPECT_THAT(initializerError(
                  tensorHeader("w", ElemType::Int64, {1}).packedFloats(4, {1})),
              HasSubstr("float_data cannot hold INT64 values; onnx.proto "
                        "allows it for FLOAT and COMPLEX64 only"));
  EXPECT_THAT(initializerError(
                  tensorHeader("w", ElemType::Float, {1}).bytes(6, "text")),
              HasSubstr("string_data is only for STRING tensors, but "
                        "data_type is FLOAT"));
  EXPECT_THAT(
      initializerError(tensorHeader("s", ElemType::String, {1}).bytes(9, "x")),
      HasSubstr("is a STRING tensor but its contents are in raw_data"));
  EXPECT_THAT(
      initializerError(tensorHeader("s", ElemType::String, {2}).bytes(6, "x")),
      HasSubstr("STRING [2] has 2 elements, but string_data holds 1 "
                "strings"));
  EXPECT_THAT(
      initializerError(
          tensorHeader("w", ElemType::Int8, {2}).packedVarints(5, {1, 300})),
      HasSubstr("(tensor 'w'): int32_data[1] is 300, which does not "
                "fit INT8"));
  EXPECT_THAT(initializerError(
                  tensorHeader("w", ElemType::Bool, {1}).packedVarints(5, {2})),
              HasSubstr("int32_data[0] is 2, which does not fit BOOL"));
  // Two values counted, the bytes after them a truncated third varint.
  EXPECT_THAT(
      initializerError(
          tensorHeader("w", ElemType::Int8, {2}).bytes(5, "\x01\x02\x80")),
      AllOf(HasSubstr("malformed ONNX protobuf"),
            HasSubstr("(graph.initializer[0]): a value of packed "
                      "field 5 runs past the end")));
  EXPECT_THAT(initializerError(tensorHeader("w", ElemType::Uint32, {1})
                                   .packedVarints(11, {int64_t{1} << 32})),
              HasSubstr("uint64_data[0] is 4294967296, which does not fit "
                        "UINT32"));
}

TEST_F(OnnxModelTest, RejectsBadAttributes) {
  auto attributeError = [&](const ProtoWriter &attr) {
    return graphError(ProtoWriter().message(
        1, nodeHeader("Op", "", {}, {}).message(5, attr)));
  };
  EXPECT_EQ(attributeError(ProtoWriter().bytes(1, "alpha").bytes(21, "a")),
            prefix() + "graph.node[0].attribute[0] (attribute 'alpha'): refers "
                       "to the function attribute 'a' (ref_attr_name), which "
                       "is only valid inside a function body, not in a "
                       "model's graph");
  EXPECT_THAT(attributeError(ProtoWriter().bytes(1, "x").varint(20, 99)),
              HasSubstr("(attribute 'x'): has type 99, which is not an "
                        "AttributeProto type (1 to 14)"));
  EXPECT_THAT(
      attributeError(ProtoWriter().bytes(1, "x").float32(2, 1).int64(3, 1)),
      HasSubstr("has no type field and holds both FLOAT and INT values"));
  EXPECT_THAT(attributeError(ProtoWriter().bytes(1, "x")),
              HasSubstr("(attribute 'x'): has neither a type (field 20) nor a "
                        "value"));
  EXPECT_THAT(attributeError(attribute("x", Type::Tensor, ProtoWriter())),
              HasSubstr("has type TENSOR but no tensor (field 5)"));
}

TEST_F(OnnxModelTest, RejectsConflictingOpsetVersions) {
  ProtoWriter model = modelWith(ProtoWriter());
  model.message(8, opset("ai.onnx", 13));
  EXPECT_THAT(
      openError(model.str()),
      HasSubstr("opset_import[1]: domain 'ai.onnx' is imported twice, at "
                "versions 17 and 13"));
}

//===----------------------------------------------------------------------===//
// Type tables
//===----------------------------------------------------------------------===//

TEST(OnnxTypesTest, NamesAndSizes) {
  EXPECT_EQ(elemTypeName(ElemType::Float), "FLOAT");
  EXPECT_EQ(elemTypeName(ElemType::BFloat16), "BFLOAT16");
  EXPECT_EQ(elemTypeName(ElemType::Float8E5M2FNUZ), "FLOAT8E5M2FNUZ");
  EXPECT_EQ(elemTypeName(ElemType::Float4E2M1), "FLOAT4E2M1");
  EXPECT_EQ(elemTypeName(ElemType::Undefined), "UNDEFINED");
  EXPECT_EQ(elemTypeName(static_cast<ElemType>(99)), "type 99");
  EXPECT_EQ(elemTypeName(static_cast<ElemType>(-3)), "type -3");

  EXPECT_EQ(attributeTypeName(Type::Floats), "FLOATS");
  EXPECT_EQ(attributeTypeName(Type::TypeProtos), "TYPE_PROTOS");
  EXPECT_EQ(attributeTypeName(static_cast<Type>(40)), "type 40");

  EXPECT_EQ(rawByteSize(ElemType::Float, 3), 12u);
  EXPECT_EQ(rawByteSize(ElemType::Bool, 3), 3u);
  EXPECT_EQ(rawByteSize(ElemType::Complex128, 2), 32u);
  EXPECT_EQ(rawByteSize(ElemType::Int4, 3), 2u);
  EXPECT_EQ(rawByteSize(ElemType::Uint4, 4), 2u);
  EXPECT_EQ(rawByteSize(ElemType::Float4E2M1, 1), 1u);
  EXPECT_EQ(rawByteSize(ElemType::Float8E4M3FNUZ, 5), 5u);
  EXPECT_EQ(rawByteSize(ElemType::Float, 0), 0u);
  EXPECT_EQ(rawByteSize(ElemType::String, 1), std::nullopt);
  EXPECT_EQ(rawByteSize(ElemType::Undefined, 1), std::nullopt);
  EXPECT_EQ(rawByteSize(ElemType::Float, -1), std::nullopt);
  EXPECT_EQ(rawByteSize(ElemType::Int64, int64_t{1} << 62), std::nullopt);

  EXPECT_EQ(toDType(ElemType::Float), DType::F32);
  EXPECT_EQ(toDType(ElemType::Float16), DType::F16);
  EXPECT_EQ(toDType(ElemType::BFloat16), DType::BF16);
  EXPECT_EQ(toDType(ElemType::Double), DType::F64);
  EXPECT_EQ(toDType(ElemType::Int8), DType::I8);
  EXPECT_EQ(toDType(ElemType::Uint8), DType::U8);
  EXPECT_EQ(toDType(ElemType::Int16), DType::I16);
  EXPECT_EQ(toDType(ElemType::Int32), DType::I32);
  EXPECT_EQ(toDType(ElemType::Int64), DType::I64);
  EXPECT_EQ(toDType(ElemType::Uint16), DType::U16);
  EXPECT_EQ(toDType(ElemType::Uint32), DType::U32);
  EXPECT_EQ(toDType(ElemType::Uint64), DType::U64);
  EXPECT_EQ(toDType(ElemType::Bool), DType::Bool);
  EXPECT_EQ(toDType(ElemType::Float8E4M3FN), DType::F8E4M3);
  EXPECT_EQ(toDType(ElemType::Float8E5M2), DType::F8E5M2);
  EXPECT_EQ(toDType(ElemType::Int4), DType::I4);
  for (ElemType none :
       {ElemType::String, ElemType::Complex64, ElemType::Complex128,
        ElemType::Float8E4M3FNUZ, ElemType::Float8E5M2FNUZ, ElemType::Uint4,
        ElemType::Float4E2M1, ElemType::Undefined})
    EXPECT_EQ(toDType(none), std::nullopt) << elemTypeName(none);
}

} // namespace
} // namespace sol::onnx
