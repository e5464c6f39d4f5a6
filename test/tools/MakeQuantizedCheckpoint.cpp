//===- MakeQuantizedCheckpoint.cpp - Quantized checkpoints for tests ------===//
//
//   sol-make-quantized-checkpoint SRC --format FORMAT [--group-size G]
//       --out DIR --reference DIR [--keep MODULE]... [--act-order]
//       [--experts-only]
//
// Writes, from the bf16 Hugging Face checkpoint SRC, the checkpoint an
// external quantizer would have made: every linear of the decoder layers
// quantized with Sol's own quantizer (runtime/support/Quantize.h) and packed
// as FORMAT stores it:
//
//   awq          AutoAWQ gemm: qweight, qzeros, scales (fp16)
//   gptq         GPTQ, classic format (zero points stored minus one), g_idx
//   gptq_v2      GPTQ, gptq_v2 format (zero points stored as they are)
//   fp8-channel  compressed-tensors fp8, weight_scale f32 [N, 1]
//   fp8-tensor   compressed-tensors fp8, one weight_scale f32 [1]
//   fp8-blocks   Transformers' fine-grained fp8 (Qwen3-FP8): weight e4m3,
//                weight_scale_inv f32, a scale per --block-size block
//   fp8-block    compressed-tensors fp8 of strategy "block": the same
//                codes and scales, the scales named weight_scale
//
// with config.json's quantization_config and the tokenizer and generation
// files. --reference DIR gets the bf16 checkpoint that `solc --quant` must
// turn into exactly the same codes and scales: SRC itself, except that the
// formats' own constraints are made to hold in the weights, which changes a
// few values per group or row:
//
//   int4 (awq, gptq*): the checkpoint's scales are fp16, Sol's f32. Each
//     group's minimum and maximum are moved out to m·2^e and (m + 15)·2^e
//     (m <= -1, both exact in bf16), so that Sol's scale is the power of two
//     2^e, exact in fp16, and its zero point -m >= 1 (the classic GPTQ
//     format cannot store a zero point of 0).
//   fp8-tensor: one scale for the whole weight. Each row's largest
//     magnitude is raised to the weight's, so that Sol's per-row scales are
//     all that one.
//
//   fp8-blocks, fp8-block: each block's scale is its largest magnitude over
//     448; Sol
//     imports the codes times their scale rounded to bf16, so the reference
//     holds exactly those (solc compiles it without --quant).
//
// --experts-only quantizes only the mixtures' experts (checkpoints made
// for MoE serving that keep attention in bf16), as if every other linear
// were given to --keep. --keep MODULE leaves that linear in bf16 and lists it
// in modules_to_not_convert (ignore for compressed-tensors). --act-order (gptq)
// quantizes as GPTQ's desc_act does: each linear's inputs in a permuted
// order (a shuffle seeded by the module's name), groups of g consecutive
// inputs of that order, g_idx giving each input's group; the reference is
// then the dequantized weights (exact in bf16 after the snapping below),
// which solc compiles without --quant to a plan that must compute what the
// act-order one does.
//
//===----------------------------------------------------------------------===//
#include "frontend/hf/ExpectedWeights.h"
#include "frontend/hf/ModelConfig.h"
#include "frontend/hf/Safetensors.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"
#include "runtime/support/Fp8.h"
#include "runtime/support/Quantize.h"
#include "runtime/support/QuantizedCheckpoint.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <span>
#include <tuple>

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using sol::fail;

/// A tensor to write: dtype name, shape, bytes.
struct OutTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};
using Tensors = std::map<std::string, OutTensor>;

template <typename T>
OutTensor tensor(std::string dtype, std::vector<int64_t> shape,
                 const std::vector<T> &values) {
  OutTensor t{std::move(dtype), std::move(shape), {}};
  t.bytes.resize(values.size() * sizeof(T));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

void writeSafetensors(const fs::path &path, const Tensors &tensors) {
  Json header = Json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    header[name] = {{"dtype", t.dtype},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = text.size();
  out.write(reinterpret_cast<const char *>(&size), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto &[name, t] : tensors)
    out.write(reinterpret_cast<const char *>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
  if (!out)
    fail("cannot write ", path.string());
}

std::vector<float> bf16Values(const sol::hf::TensorView &t) {
  if (t.dtype != sol::DType::BF16)
    fail(t.name, " is ", t.dtype, "; this tool reads bf16 checkpoints");
  std::vector<float> out(t.bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, t.bytes.data() + 2 * i, 2);
    out[i] = sol::bf16ToFloat(h);
  }
  return out;
}

OutTensor bf16Tensor(std::vector<int64_t> shape,
                     const std::vector<float> &values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = sol::floatToBf16(values[i]);
    if (sol::bf16ToFloat(bits[i]) != values[i])
      fail("internal error: ", values[i], " is not exact in bf16");
  }
  return tensor("BF16", std::move(shape), bits);
}

/// Moves each group's extremes out to m·2^e and (m + 15)·2^e (see the top
/// of the file).
void snapInt4Groups(std::vector<float> &w, int64_t rows, int64_t cols,
                    int64_t groupSize) {
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t g0 = 0; g0 < cols; g0 += groupSize) {
      float *group = w.data() + n * cols + g0;
      auto [minIt, maxIt] = std::minmax_element(group, group + groupSize);
      const float lo = *minIt, hi = *maxIt;
      if (minIt == maxIt)
        maxIt = minIt == group ? group + 1 : group;
      // 15·2^e >= 1e-5 keeps Sol's range floor out of the way.
      int e = std::max(-20, static_cast<int>(std::ceil(
                                std::log2(std::max(hi - lo, 1e-30f) / 15))));
      for (;; ++e) {
        const float step = std::ldexp(1.0f, e);
        const float m = std::min(std::floor(lo / step), -1.0f);
        if ((m + 15) * step >= hi && m >= -256 && m + 15 <= 256) {
          *minIt = m * step;
          *maxIt = (m + 15) * step;
          break;
        }
      }
    }
}

/// Raises each row's largest magnitude to the weight's.
void snapFp8Rows(std::vector<float> &w, int64_t rows, int64_t cols) {
  float amax = 0;
  for (float v : w)
    amax = std::max(amax, std::fabs(v));
  for (int64_t n = 0; n < rows; ++n) {
    float *row = w.data() + n * cols;
    float *big = std::max_element(row, row + cols, [](float a, float b) {
      return std::fabs(a) < std::fabs(b);
    });
    *big = std::signbit(*big) ? -amax : amax;
  }
}

std::vector<uint16_t> fp16Scales(const sol::quant::QuantizedWeight &q) {
  const int64_t groups = q.cols / q.groupSize;
  std::vector<uint16_t> out(q.scales.size());
  for (int64_t n = 0; n < q.rows; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      const float s = q.scales[n * groups + g];
      out[g * q.rows + n] = sol::floatToHalf(s);
      if (sol::halfToFloat(out[g * q.rows + n]) != s)
        fail("internal error: the int4 scale ", s, " is not exact in fp16");
    }
  return out;
}

/// Packs int4 values [groups or K, N] into int32 words along N, nibble i
/// holding column c·8 + order[i].
std::vector<int32_t> packAlongN(int64_t rows, int64_t n,
                                const std::array<int, 8> &order,
                                const auto &value) {
  std::vector<int32_t> out(rows * (n / 8));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n / 8; ++c) {
      uint32_t word = 0;
      for (int i = 0; i < 8; ++i)
        word |= (static_cast<uint32_t>(value(r, c * 8 + order[i])) & 0xF)
                << (4 * i);
      out[r * (n / 8) + c] = static_cast<int32_t>(word);
    }
  return out;
}

constexpr std::array<int, 8> kLinearOrder = {0, 1, 2, 3, 4, 5, 6, 7};

void packAwq(Tensors &out, const std::string &module,
             const sol::quant::QuantizedWeight &q) {
  const int64_t n = q.rows, k = q.cols, groups = k / q.groupSize;
  out[module + ".qweight"] = tensor(
      "I32", {k, n / 8},
      packAlongN(k, n, sol::quant::kAwqOrder, [&](int64_t kk, int64_t nn) {
        return sol::quant::int4CodeAt(q.codes, k, nn, kk);
      }));
  out[module + ".qzeros"] = tensor(
      "I32", {groups, n / 8},
      packAlongN(groups, n, sol::quant::kAwqOrder, [&](int64_t g, int64_t nn) {
        return q.zeros[nn * groups + g];
      }));
  out[module + ".scales"] = tensor("F16", {groups, n}, fp16Scales(q));
}

/// `q` quantizes the inputs in the order `order` (empty: 0, 1, ...): its
/// column j is input order[j].
void packGptq(Tensors &out, const std::string &module,
              const sol::quant::QuantizedWeight &q, bool v2,
              const std::vector<int64_t> &order) {
  const int64_t n = q.rows, k = q.cols, groups = k / q.groupSize;
  // The column of q holding each input.
  std::vector<int64_t> column(k);
  for (int64_t j = 0; j < k; ++j)
    column[order.empty() ? j : order[j]] = j;
  std::vector<int32_t> qweight(k / 8 * n);
  for (int64_t r = 0; r < k / 8; ++r)
    for (int64_t nn = 0; nn < n; ++nn) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j)
        word |= static_cast<uint32_t>(
                    sol::quant::int4CodeAt(q.codes, k, nn, column[r * 8 + j]))
                << (4 * j);
      qweight[r * n + nn] = static_cast<int32_t>(word);
    }
  out[module + ".qweight"] = tensor("I32", {k / 8, n}, qweight);
  out[module + ".qzeros"] =
      tensor("I32", {groups, n / 8},
             packAlongN(groups, n, kLinearOrder, [&](int64_t g, int64_t nn) {
               return q.zeros[nn * groups + g] - (v2 ? 0 : 1);
             }));
  out[module + ".scales"] = tensor("F16", {groups, n}, fp16Scales(q));
  std::vector<int32_t> gIdx(k);
  for (int64_t i = 0; i < k; ++i)
    gIdx[i] = static_cast<int32_t>(column[i] / q.groupSize);
  out[module + ".g_idx"] = tensor("I32", {k}, gIdx);
}

/// Fine-grained fp8: codes and a scale per block of `block` (rows,
/// columns); `w` becomes what Sol imports (the codes times their scale in
/// bf16).
void packFp8Blocks(Tensors &out, const std::string &module,
                   std::vector<float> &w, int64_t n, int64_t k,
                   const std::array<int64_t, 2> &block,
                   const std::string &scaleName) {
  const int64_t rows = (n + block[0] - 1) / block[0],
                cols = (k + block[1] - 1) / block[1];
  std::vector<float> scales(rows * cols);
  std::vector<uint8_t> codes(n * k);
  for (int64_t br = 0; br < rows; ++br)
    for (int64_t bc = 0; bc < cols; ++bc) {
      const int64_t r0 = br * block[0], r1 = std::min(n, r0 + block[0]);
      const int64_t c0 = bc * block[1], c1 = std::min(k, c0 + block[1]);
      float amax = 0;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          amax = std::max(amax, std::fabs(w[r * k + c]));
      const float scale = amax > 0 ? amax / sol::kE4M3Max : 1.0f;
      scales[br * cols + bc] = scale;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          codes[r * k + c] = sol::floatToE4M3(w[r * k + c] / scale);
          w[r * k + c] = sol::bf16ToFloat(
              sol::floatToBf16(sol::e4m3ToFloat(codes[r * k + c]) * scale));
        }
    }
  out[module + ".weight"] = tensor("F8_E4M3", {n, k}, codes);
  out[module + "." + scaleName] = tensor("F32", {rows, cols}, scales);
}

Json quantizationConfig(const std::string &format, int64_t groupSize,
                        const std::vector<std::string> &keep, bool actOrder,
                        const std::array<int64_t, 2> &block) {
  const Json kept = keep.empty() ? Json(nullptr) : Json(keep);
  if (format == "fp8-blocks")
    return {{"quant_method", "fp8"},
            {"activation_scheme", "dynamic"},
            {"fmt", "e4m3"},
            {"weight_block_size", {block[0], block[1]}},
            {"modules_to_not_convert", kept}};
  if (format == "awq")
    return {{"quant_method", "awq"},   {"bits", 4},
            {"group_size", groupSize}, {"zero_point", true},
            {"version", "gemm"},       {"modules_to_not_convert", kept}};
  if (format == "gptq" || format == "gptq_v2")
    return {{"quant_method", "gptq"},
            {"bits", 4},
            {"group_size", groupSize},
            {"desc_act", actOrder},
            {"sym", false},
            {"checkpoint_format", format},
            {"lm_head", false},
            {"modules_to_not_convert", kept}};
  std::vector<std::string> ignore = {"lm_head"};
  ignore.insert(ignore.end(), keep.begin(), keep.end());
  const bool channel = format == "fp8-channel", blocks = format == "fp8-block";
  Json args = {{"num_bits", 8},
               {"type", "float"},
               {"symmetric", true},
               {"dynamic", false},
               {"group_size", nullptr},
               {"strategy", channel  ? "channel"
                            : blocks ? "block"
                                     : "tensor"}};
  if (blocks)
    args["block_structure"] = {block[0], block[1]};
  // Block checkpoints quantize activations per group of 128 of a token.
  Json input = {{"num_bits", 8},
                {"type", "float"},
                {"symmetric", true},
                {"dynamic", true},
                {"strategy", blocks ? "group" : "token"}};
  if (blocks)
    input["group_size"] = 128;
  return {{"quant_method", "compressed-tensors"},
          {"format", "float-quantized"},
          {"quantization_status", "compressed"},
          {"config_groups",
           {{"group_0",
             {{"targets", {"Linear"}},
              {"weights", args},
              {"input_activations", input},
              {"output_activations", nullptr}}}}},
          {"ignore", ignore},
          {"kv_cache_scheme", nullptr}};
}

void copyFiles(const fs::path &from, const fs::path &to) {
  for (const char *name :
       {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    if (fs::exists(from / name))
      fs::copy_file(from / name, to / name,
                    fs::copy_options::overwrite_existing);
}

void writeConfig(const fs::path &src, const fs::path &dir,
                 const Json *quantization) {
  std::ifstream in(src / "config.json");
  Json config = Json::parse(in);
  if (quantization)
    config["quantization_config"] = *quantization;
  std::ofstream(dir / "config.json") << config.dump(2) << "\n";
}

int run(const std::string &src, const std::string &format, int64_t groupSize,
        const std::array<int64_t, 2> &block, const std::string &outDir,
        const std::string &referenceDir, std::vector<std::string> keep,
        bool actOrder, bool expertsOnly) {
  const sol::hf::ModelConfig config = sol::hf::loadModelConfig(src);
  const sol::hf::Checkpoint checkpoint = sol::hf::Checkpoint::open(src);
  // The decoder layers' linears, the experts' too (Mixtral's w1, w2, w3);
  // embeddings, norms, routers and the LM head stay.
  std::vector<std::string> linears;
  for (const sol::hf::ExpectedTensor &t : sol::hf::expectedWeights(config)) {
    const bool expert = t.name.find(".experts.") != std::string::npos;
    if (!t.name.starts_with("model.layers.") ||
        !(t.name.ends_with("_proj.weight") ||
          (expert && t.name.ends_with(".weight"))))
      continue;
    const std::string module = t.name.substr(0, t.name.size() - 7);
    if (expertsOnly && !expert)
      keep.push_back(module);
    if (std::find(keep.begin(), keep.end(), module) == keep.end())
      linears.push_back(module);
  }

  const bool int4 = format == "awq" || format.starts_with("gptq");
  if (actOrder && !format.starts_with("gptq"))
    fail("--act-order is for the gptq formats, not ", format);
  Tensors quantized, reference;
  for (const sol::hf::SafetensorsFile &file : checkpoint.files())
    for (const sol::hf::TensorView &t : file.tensors())
      quantized[t.name] = reference[t.name] =
          OutTensor{std::string(sol::dtypeName(t.dtype)), t.shape,
                    std::vector<std::byte>(t.bytes.begin(), t.bytes.end())};
  for (const std::string &module : linears) {
    const sol::hf::TensorView &t = checkpoint.get(module + ".weight");
    const int64_t n = t.shape[0], k = t.shape[1];
    std::vector<float> w = bf16Values(t);
    quantized.erase(module + ".weight");
    if (int4) {
      const int64_t g = groupSize > 0 ? groupSize : k;
      // Act-order: the inputs in a shuffled order, quantized in it.
      std::vector<int64_t> order;
      if (actOrder) {
        order.resize(k);
        std::iota(order.begin(), order.end(), 0);
        std::mt19937 rng(
            static_cast<uint32_t>(std::hash<std::string>{}(module)));
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<float> shuffled(w.size());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < k; ++j)
            shuffled[r * k + j] = w[r * k + order[j]];
        w = std::move(shuffled);
      }
      snapInt4Groups(w, n, k, g);
      const auto q = sol::quant::quantizeInt4(w, n, k, g);
      if (format == "awq")
        packAwq(quantized, module, q);
      else
        packGptq(quantized, module, q, format == "gptq_v2", order);
      if (actOrder) {
        // The reference: the dequantized weights, inputs in their order.
        std::vector<float> deq(w.size());
        sol::quant::dequantizeInto(sol::quant::Scheme::Int4, n, k, g,
                                   std::as_bytes(std::span(q.codes)), q.scales,
                                   q.zeros, deq);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < k; ++j)
            w[r * k + order[j]] = deq[r * k + j];
      }
    } else if (format == "fp8-blocks" || format == "fp8-block") {
      packFp8Blocks(quantized, module, w, n, k, block,
                    format == "fp8-blocks" ? "weight_scale_inv"
                                           : "weight_scale");
    } else {
      if (format == "fp8-tensor")
        snapFp8Rows(w, n, k);
      const auto q = sol::quant::quantizeFp8(w, n, k);
      quantized[module + ".weight"] = tensor("F8_E4M3", {n, k}, q.codes);
      if (format == "fp8-channel") {
        quantized[module + ".weight_scale"] = tensor("F32", {n, 1}, q.scales);
      } else {
        for (float s : q.scales)
          if (s != q.scales[0])
            fail("internal error: the rows of ", module,
                 " have different fp8 scales");
        quantized[module + ".weight_scale"] =
            tensor("F32", {1}, std::vector<float>{q.scales[0]});
      }
    }
    reference[module + ".weight"] = bf16Tensor(t.shape, w);
  }

  const Json quantization =
      quantizationConfig(format, groupSize, keep, actOrder, block);
  for (const auto &[dir, tensors, quant] :
       {std::tuple{fs::path(outDir), &quantized, &quantization},
        std::tuple{fs::path(referenceDir), &reference,
                   static_cast<const Json *>(nullptr)}}) {
    fs::create_directories(dir);
    writeSafetensors(dir / "model.safetensors", *tensors);
    writeConfig(src, dir, quant);
    copyFiles(src, dir);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"sol-make-quantized-checkpoint: an AutoAWQ, GPTQ, "
               "compressed-tensors fp8 or block-scaled fp8 checkpoint of a "
               "bf16 model, made with Sol's quantizer (for tests)"};
  std::string src, format, out, reference;
  std::vector<std::string> keep;
  int64_t groupSize = 128;
  std::vector<int64_t> blockSize = {128, 128};
  bool actOrder = false, expertsOnly = false;
  app.add_option("source", src, "bf16 Hugging Face checkpoint directory")
      ->required();
  app.add_option("--format", format,
                 "awq, gptq, gptq_v2, fp8-channel, fp8-tensor, fp8-block or "
                 "fp8-blocks")
      ->required()
      ->check(CLI::IsMember({"awq", "gptq", "gptq_v2", "fp8-channel",
                             "fp8-tensor", "fp8-block", "fp8-blocks"}));
  app.add_option("--block-size", blockSize,
                 "fp8-block(s): rows and columns a scale (default 128 128)")
      ->expected(2)
      ->check(CLI::PositiveNumber);
  app.add_option("--group-size", groupSize,
                 "int4 group size (default 128; gptq: -1 for one group per "
                 "row)");
  app.add_option("--out", out, "directory for the quantized checkpoint")
      ->required();
  app.add_option("--reference", reference,
                 "directory for the bf16 checkpoint solc --quant must "
                 "quantize to the same codes")
      ->required();
  app.add_option("--keep", keep,
                 "a linear (e.g. model.layers.0.self_attn.k_proj) to leave "
                 "in bf16, listed as not converted");
  app.add_flag("--act-order", actOrder,
               "gptq: quantize in a shuffled input order (desc_act true); "
               "the reference holds the dequantized weights");
  app.add_flag("--experts-only", expertsOnly,
               "quantize only the mixtures' experts, every other linear as "
               "with --keep");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(src, format, groupSize, {blockSize[0], blockSize[1]}, out,
               reference, keep, actOrder, expertsOnly);
  } catch (const std::exception &e) {
    std::cerr << "sol-make-quantized-checkpoint: error: " << e.what() << "\n";
    return 1;
  }
}
