//===- PlanEmitter.cpp - Writes a compiled model as a plan file -----------===//
#include "codegen/plan/PlanEmitter.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"

// Header-only xxHash: no shared library to carry to the GPU machines.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace sol {

namespace {

std::string readText(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    fail("cannot read ", p.string());
  return {std::istreambuf_iterator<char>(in), {}};
}

/// A progress line on stderr, rewritten in place; silent when stderr is not
/// a terminal (piped output stays clean).
class Progress {
public:
  Progress(bool enabled, uint64_t total)
      : enabled_(enabled && isatty(STDERR_FILENO)), total_(total) {}
  void advance(uint64_t n) {
    done_ += n;
    if (!enabled_)
      return;
    int percent = total_ ? static_cast<int>(100 * done_ / total_) : 100;
    if (percent != shown_) {
      shown_ = percent;
      std::fprintf(stderr, "\rsolc: writing weights %.2f / %.2f GB (%d%%)",
                   done_ / 1e9, total_ / 1e9, percent);
    }
  }
  ~Progress() {
    if (enabled_ && shown_ >= 0)
      std::fprintf(stderr, "\n");
  }

private:
  bool enabled_;
  uint64_t total_, done_ = 0;
  int shown_ = -1;
};

/// Converts `count` elements of `src` (dtype `from`) to bf16 into `dst`.
void toBf16(std::span<const std::byte> src, DType from,
            std::vector<uint16_t> &dst) {
  size_t count = src.size() / (dtypeBits(from) / 8);
  dst.resize(count);
  for (size_t i = 0; i < count; ++i) {
    float f;
    if (from == DType::F32) {
      std::memcpy(&f, src.data() + 4 * i, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, src.data() + 2 * i, 2);
      f = halfToFloat(h);
    }
    dst[i] = floatToBf16(f);
  }
}

} // namespace

void emitPlan(const std::filesystem::path &path, const Schedule &schedule,
              const HfModel &model, const PlanOptions &options,
              const std::vector<CompiledModule> &modules) {
  PlanWriter writer(path);
  XXH64_state_t *hash = XXH64_createState();
  XXH64_reset(hash, 0);
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> hashOwner(
      hash, XXH64_freeState);
  const std::string configText = readText(model.directory / "config.json");
  XXH64_update(hash, configText.data(), configText.size());

  // Weights, in bf16, sources stacked along dimension 0.
  uint64_t totalBytes = 0;
  for (const ScheduleWeight &w : schedule.weights) {
    uint64_t n = 1;
    for (int64_t d : w.shape)
      n *= static_cast<uint64_t>(d);
    totalBytes += 2 * n;
  }
  Progress progress(options.progress, totalBytes);
  std::vector<fb::Section> weightSections;
  std::vector<uint16_t> converted;
  for (const ScheduleWeight &w : schedule.weights) {
    uint64_t bytes = 0;
    for (const std::string &src : w.sources) {
      const hf::TensorView &t = model.checkpoint.get(src);
      bytes += 2 * static_cast<uint64_t>(t.numElements());
    }
    uint64_t expected = 2;
    for (int64_t d : w.shape)
      expected *= static_cast<uint64_t>(d);
    if (bytes != expected)
      fail("internal error: weight ", w.name, " has ", bytes,
           " bytes from its sources, expected ", expected);
    // Writes `bytes` of tensor `src` in bf16.
    auto writeBf16 = [&](const PlanWriter::WriteFn &write,
                         const std::string &src, const hf::TensorView &t,
                         std::span<const std::byte> bytes) {
      if (t.dtype == DType::BF16) {
        write(bytes);
      } else if (t.dtype == DType::F32 || t.dtype == DType::F16) {
        toBf16(bytes, t.dtype, converted);
        write(std::as_bytes(std::span(converted)));
      } else {
        fail("weight ", src, " has dtype ", dtypeName(t.dtype),
             "; expected BF16, F16 or F32");
      }
      progress.advance(t.dtype == DType::F32 ? bytes.size() / 2 : bytes.size());
    };
    if (w.interleaveHalves) {
      // Gate/up pairs: row i of the first source, then row i of the second.
      if (w.sources.size() != 2 || w.shape.empty() || w.shape[0] % 2 != 0)
        fail("internal error: weight ", w.name,
             " interleaves rows but is not two stacked halves");
      const hf::TensorView &a = model.checkpoint.get(w.sources[0]);
      const hf::TensorView &b = model.checkpoint.get(w.sources[1]);
      if (a.dtype != b.dtype || a.bytes.size() != b.bytes.size())
        fail("weight ", w.name, ": ", w.sources[0], " and ", w.sources[1],
             " differ in dtype or size, so their rows cannot be paired");
      const size_t rows = static_cast<size_t>(w.shape[0] / 2);
      const size_t rowBytes = a.bytes.size() / rows;
      weightSections.push_back(
          writer.addSection(bytes, [&](const PlanWriter::WriteFn &write) {
            XXH64_update(hash, a.bytes.data(), a.bytes.size());
            XXH64_update(hash, b.bytes.data(), b.bytes.size());
            for (size_t r = 0; r < rows; ++r) {
              writeBf16(write, w.sources[0], a,
                        a.bytes.subspan(r * rowBytes, rowBytes));
              writeBf16(write, w.sources[1], b,
                        b.bytes.subspan(r * rowBytes, rowBytes));
            }
          }));
      continue;
    }
    weightSections.push_back(
        writer.addSection(bytes, [&](const PlanWriter::WriteFn &write) {
          for (const std::string &src : w.sources) {
            const hf::TensorView &t = model.checkpoint.get(src);
            XXH64_update(hash, t.bytes.data(), t.bytes.size());
            // Chunks of 64 MB keep the progress line moving.
            constexpr size_t kChunk = 64u << 20;
            for (size_t off = 0; off < t.bytes.size(); off += kChunk) {
              writeBf16(
                  write, src, t,
                  t.bytes.subspan(off, std::min(kChunk, t.bytes.size() - off)));
            }
          }
        }));
  }

  // Kernel modules.
  std::vector<std::pair<fb::Section, fb::Section>> moduleSections;
  for (const CompiledModule &m : modules)
    moduleSections.emplace_back(
        writer.addSection(m.cubin),
        writer.addSection(std::as_bytes(std::span(m.ptx))));

  // Tokenizer files, carried as they are.
  auto fileSection = [&](const std::optional<std::filesystem::path> &p) {
    if (!p)
      return fb::Section(0, 0);
    std::string text = readText(*p);
    return writer.addSection(std::as_bytes(std::span(text)));
  };
  fb::Section tokenizerJson = fileSection(model.tokenizerJson);
  fb::Section tokenizerConfig = fileSection(model.tokenizerConfigJson);

  // Metadata.
  flatbuffers::FlatBufferBuilder b(1 << 16);
  char hashText[17];
  std::snprintf(hashText, sizeof hashText, "%016llx",
                static_cast<unsigned long long>(XXH64_digest(hash)));
  const hf::ModelConfig &c = model.config;
  auto modelInfo = fb::CreateModelInfoDirect(
      b, std::string(hf::architectureName(c.architecture)).c_str(),
      model.directory.string().c_str(), hashText, configText.c_str(),
      c.vocabSize, c.hiddenSize, static_cast<int32_t>(c.numHiddenLayers),
      c.maxPositionEmbeddings, fb::DType::BF16);

  fb::GenerationDefaultsT gen;
  gen.eos_token_ids = c.eosTokenIds;
  if (c.bosTokenId)
    gen.bos_token_id = *c.bosTokenId;
  if (const auto &g = model.generation) {
    if (!g->eosTokenIds.empty())
      gen.eos_token_ids = g->eosTokenIds;
    if (g->bosTokenId)
      gen.bos_token_id = *g->bosTokenId;
    if (g->padTokenId)
      gen.pad_token_id = *g->padTokenId;
    gen.do_sample = g->doSample.value_or(false);
    gen.temperature = static_cast<float>(g->temperature.value_or(1.0));
    gen.top_k = static_cast<int32_t>(g->topK.value_or(0));
    gen.top_p = static_cast<float>(g->topP.value_or(1.0));
    gen.repetition_penalty =
        static_cast<float>(g->repetitionPenalty.value_or(1.0));
    gen.max_new_tokens = g->maxNewTokens.value_or(-1);
  }
  auto generation = fb::GenerationDefaults::Pack(b, &gen);
  const KvCachePlan &k = options.kvCache;
  if (k.blockSize <= 0 || k.numLayers <= 0)
    fail("internal error: no KV-cache layout to write (run "
         "sol-plan-kv-cache and pass its layout in PlanOptions)");
  auto kv = fb::CreateKvCacheLayout(b, k.numLayers, k.numKvHeads, k.headDim,
                                    k.blockSize, k.dtype, k.arrangement,
                                    k.alignment, k.scales);

  std::vector<flatbuffers::Offset<fb::RopeTable>> ropes;
  for (const ScheduleRope &r : schedule.ropes)
    ropes.push_back(
        fb::CreateRopeTableDirect(b, &r.invFreq, r.attentionScaling));
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  for (size_t i = 0; i < schedule.weights.size(); ++i) {
    const ScheduleWeight &w = schedule.weights[i];
    weights.push_back(fb::CreateWeightDirect(
        b, w.name.c_str(), fb::DType::BF16, &w.shape, &weightSections[i],
        static_cast<int8_t>(w.interleaveHalves ? 1 : 0)));
  }
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const ScheduleBuffer &buf : schedule.buffers)
    buffers.push_back(fb::CreateBufferDirect(b, buf.name.c_str(), buf.dtype,
                                             buf.width, buf.rows, buf.slot));
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (const ScheduleOp &op : schedule.ops)
    ops.push_back(fb::CreateOpDirect(b, op.kind, op.name.c_str(), &op.buffers,
                                     &op.weights, &op.ints, &op.floats));
  std::vector<flatbuffers::Offset<fb::Kernel>> kernels;
  std::vector<flatbuffers::Offset<fb::Module>> mods;
  for (size_t m = 0; m < modules.size(); ++m) {
    for (const CompiledModule::Kernel &k : modules[m].kernels)
      kernels.push_back(fb::CreateKernelDirect(b, k.expression.c_str(),
                                               k.loweredName.c_str(),
                                               static_cast<int32_t>(m)));
    mods.push_back(fb::CreateModuleDirect(b, modules[m].arch.c_str(),
                                          &moduleSections[m].first,
                                          &moduleSections[m].second));
  }
  auto plan = fb::CreatePlanDirect(
      b, options.compilerVersion.c_str(), options.commandLine.c_str(),
      options.target.c_str(), modelInfo, generation, kv, &ropes, &weights,
      &buffers, &schedule.arenaSlots, &ops, &kernels, &mods, &tokenizerJson,
      &tokenizerConfig, options.maxTokensPerStep);
  fb::FinishPlanBuffer(b, plan);
  writer.finish({b.GetBufferPointer(), b.GetSize()});
}

} // namespace sol
