//===- OnnxFixtureTest.cpp - A model written by onnx's Python writer ------===//
//
// data/tiny.onnx and data/tiny.onnx_data come from data/make-tiny-model.py
// (onnx.helper and onnx.save_model with external data), so this test checks
// the reader against real serialized output rather than ProtoWriter's. The
// expected values are the ones the script writes; onnx's own Python reader
// (numpy_helper.to_array) gave the same bytes for every initializer.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxModel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace sol::onnx {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using Type = Attribute::Type;

std::filesystem::path dataDir() {
  const char *root = std::getenv("SOL_SOURCE_DIR");
  std::filesystem::path base =
      root && *root ? root : std::filesystem::current_path();
  return base / "test/unit/onnx/data";
}

template <typename T> std::vector<T> valuesOf(const Tensor &tensor) {
  std::vector<T> out(tensor.bytes.size() / sizeof(T));
  if (!out.empty())
    std::memcpy(out.data(), tensor.bytes.data(), out.size() * sizeof(T));
  return out;
}

const Tensor *findInitializer(const Graph &graph, std::string_view name) {
  for (const Tensor &tensor : graph.initializers)
    if (tensor.name == name)
      return &tensor;
  return nullptr;
}

TEST(OnnxFixtureTest, ReadsAModelWrittenByOnnxPython) {
  Model m = Model::open(dataDir() / "tiny.onnx");
  EXPECT_EQ(m.irVersion(), 8);
  EXPECT_EQ(m.producerName(), "sol-fixture");
  EXPECT_EQ(m.producerVersion(), "1");
  EXPECT_THAT(m.opsets(), ElementsAre(Pair("", 17), Pair("com.sol.test", 1)));
  EXPECT_THAT(m.metadata(), ElementsAre(Pair("purpose", "sol reader test")));

  const Graph &g = m.graph();
  EXPECT_EQ(g.name, "tiny");
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_TRUE(g.inputs[0].shape.has_value());
  EXPECT_EQ((*g.inputs[0].shape)[0].param, "batch");
  EXPECT_EQ((*g.inputs[0].shape)[1].value, 8);
  ASSERT_EQ(g.valueInfo.size(), 1u);
  const std::vector<Dim> &hidden = g.valueInfo[0].shape.value();
  ASSERT_EQ(hidden.size(), 2u);
  EXPECT_FALSE(hidden[1].value.has_value()); // written as None
  EXPECT_TRUE(hidden[1].param.empty());

  // Initializers: external, raw_data and typed fields.
  std::ifstream in(dataDir() / "tiny.onnx_data", std::ios::binary);
  std::stringstream external;
  external << in.rdbuf();
  ASSERT_EQ(external.str().size(), 768u);
  const Tensor *weight = findInitializer(g, "weight");
  const Tensor *bigBias = findInitializer(g, "big_bias");
  ASSERT_TRUE(weight && bigBias);
  EXPECT_THAT(weight->dims, ElementsAre(16, 8));
  EXPECT_EQ(weight->origin, "external data 'tiny.onnx_data' at offset 0");
  ASSERT_EQ(weight->bytes.size(), 512u);
  EXPECT_EQ(std::memcmp(weight->bytes.data(), external.str().data(), 512), 0);
  EXPECT_EQ(bigBias->origin, "external data 'tiny.onnx_data' at offset 512");
  EXPECT_EQ(bigBias->bytes.data() - weight->bytes.data(), 512);
  EXPECT_EQ(
      std::memcmp(bigBias->bytes.data(), external.str().data() + 512, 256), 0);

  EXPECT_EQ(findInitializer(g, "bias")->origin, "raw_data");
  EXPECT_THAT(valuesOf<float>(*findInitializer(g, "bias")),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(findInitializer(g, "f32_typed")->origin, "float_data");
  EXPECT_THAT(valuesOf<float>(*findInitializer(g, "f32_typed")),
              ElementsAre(1, 2, 3));
  EXPECT_THAT(valuesOf<int64_t>(*findInitializer(g, "i64_typed")),
              ElementsAre(-5, int64_t{1} << 40));
  std::vector<uint16_t> half =
      valuesOf<uint16_t>(*findInitializer(g, "f16_typed"));
  ASSERT_EQ(half.size(), 2u);
  EXPECT_EQ(halfToFloat(half[0]), 1.0f);
  EXPECT_EQ(halfToFloat(half[1]), -2.0f);
  EXPECT_THAT(valuesOf<int8_t>(*findInitializer(g, "i8_typed")),
              ElementsAre(-1, 127, -128));
  EXPECT_THAT(valuesOf<uint8_t>(*findInitializer(g, "bool_typed")),
              ElementsAre(1, 0));

  // Every attribute kind; onnx.helper sorts them by name.
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node &node = g.nodes[0];
  EXPECT_EQ(node.opType, "SolTestOp");
  EXPECT_EQ(node.domain, "com.sol.test");
  EXPECT_THAT(node.inputs, ElementsAre("input", "weight", ""));
  EXPECT_EQ(node.attribute("alpha")->f, 0.25f);
  EXPECT_EQ(node.attribute("axis")->i, -1);
  EXPECT_EQ(node.attribute("mode")->s, "constant");
  EXPECT_THAT(node.attribute("scales")->floats, ElementsAre(1.5f, 2.5f));
  EXPECT_THAT(node.attribute("pads")->ints, ElementsAre(0, 1, -2));
  EXPECT_THAT(node.attribute("names")->strings, ElementsAre("a", "b"));
  const Attribute *value = node.attribute("value");
  ASSERT_EQ(value->type, Type::Tensor);
  EXPECT_THAT(valuesOf<float>(*value->t), ElementsAre(0.5f, 2.0f));
  const Attribute *body = node.attribute("body");
  ASSERT_EQ(body->type, Type::Graph);
  EXPECT_EQ(body->g->nodes.at(0).opType, "Identity");
  const Attribute *consts = node.attribute("consts");
  ASSERT_EQ(consts->type, Type::Tensors);
  ASSERT_EQ(consts->tensors.size(), 2u);
  EXPECT_THAT(valuesOf<int64_t>(*consts->tensors[1]), ElementsAre(1));
  const Attribute *branches = node.attribute("branches");
  ASSERT_EQ(branches->type, Type::Graphs);
  ASSERT_EQ(branches->graphs.size(), 2u);
  EXPECT_EQ(branches->graphs[1]->name, "body");
  EXPECT_EQ(g.nodes[1].opType, "Add");
}

} // namespace
} // namespace sol::onnx
