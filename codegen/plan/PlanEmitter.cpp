//===- PlanEmitter.cpp - Writes a compiled model as a plan file -----------===//
#include "codegen/plan/PlanEmitter.h"

#include "runtime/plan/PlanDType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/DType.h"
#include "runtime/support/Error.h"
#include "runtime/support/MappedFile.h"

// Header-only xxHash: no shared library to carry to the GPU machines.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace sol {

namespace {

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

} // namespace

void emitPlan(const std::filesystem::path &path, const StepProgram &program,
              const WeightStore &weights, const ModelAssets &assets,
              const PlanOptions &options,
              const std::vector<CompiledModule> &modules) {
  PlanWriter writer(path);
  XXH64_state_t *hash = XXH64_createState();
  XXH64_reset(hash, 0);
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> hashOwner(
      hash, XXH64_freeState);
  XXH64_update(hash, assets.sourceConfig.data(), assets.sourceConfig.size());

  // Weights, as the store holds them: rank 0's, then each further rank's
  // shards (every rank's weights are then one range of the file).
  const int ranks = static_cast<int>(program.model.tensorParallelSize);
  uint64_t totalBytes = 0;
  for (const ProgramWeight &w : program.weights) {
    const WeightStore::Tensor &t = weights.get(w.name);
    if (!options.randomWeights)
      totalBytes += t.byteSize() * (t.sharded ? ranks : 1);
  }
  Progress progress(options.progress, totalBytes);
  std::vector<fb::Section> weightSections(program.weights.size());
  std::vector<std::vector<fb::Section>> rankSections(program.weights.size());
  for (int rank = 0; rank < ranks; ++rank) {
    for (size_t i = 0; i < program.weights.size(); ++i) {
      const ProgramWeight &w = program.weights[i];
      const WeightStore::Tensor &t = weights.get(w.name);
      if (toDType(w.dtype) != t.dtype || w.shape != t.shape)
        fail("internal error: weight ", w.name, " is ", dtypeName(t.dtype),
             " in the store but ", dtypeName(toDType(w.dtype)),
             " in the step, or of another shape");
      if (rank > 0 && !t.sharded)
        continue;
      if (options.randomWeights) { // sections without bytes
        if (t.sharded)
          rankSections[i].emplace_back(0, 0);
        continue;
      }
      const fb::Section section = writer.addSection(
          t.byteSize(), [&](const PlanWriter::WriteFn &write) {
            weights.read(
                w.name,
                [&](std::span<const std::byte> piece) {
                  XXH64_update(hash, piece.data(), piece.size());
                  write(piece);
                  progress.advance(piece.size());
                },
                rank);
          });
      if (t.sharded)
        rankSections[i].push_back(section);
      else
        weightSections[i] = section;
    }
  }

  // Kernel modules.
  std::vector<std::pair<fb::Section, fb::Section>> moduleSections;
  for (const CompiledModule &m : modules)
    moduleSections.emplace_back(
        writer.addSection(m.cubin),
        writer.addSection(std::as_bytes(std::span(m.ptx))));

  // Tokenizer files, carried as they are.
  auto textSection = [&](const std::optional<std::string> &text) {
    if (!text)
      return fb::Section(0, 0);
    return writer.addSection(std::as_bytes(std::span(*text)));
  };
  fb::Section tokenizerJson = textSection(assets.tokenizerJson);
  fb::Section draftPlan;
  if (!options.draftPlan.empty()) {
    const MappedFile draft = MappedFile::open(options.draftPlan);
    draftPlan = writer.addSection(draft.bytes());
  }
  fb::Section tokenizerConfig = textSection(assets.tokenizerConfigJson);

  // Metadata.
  flatbuffers::FlatBufferBuilder b(1 << 16);
  char hashText[17];
  std::snprintf(hashText, sizeof hashText, "%016llx",
                static_cast<unsigned long long>(XXH64_digest(hash)));
  const ProgramModel &m = program.model;
  auto modelInfo = fb::CreateModelInfoDirect(
      b, m.architecture.c_str(), assets.source.c_str(), hashText,
      assets.sourceConfig.c_str(), m.vocabSize, m.hiddenSize,
      static_cast<int32_t>(m.numLayers), m.maxPositionEmbeddings,
      fb::DType::BF16, m.positionLimit);

  const GenerationDefaults &g = assets.generation;
  fb::GenerationDefaultsT gen;
  gen.eos_token_ids = g.eosTokenIds;
  gen.bos_token_id = g.bosTokenId.value_or(-1);
  gen.pad_token_id = g.padTokenId.value_or(-1);
  gen.do_sample = g.doSample;
  gen.temperature = g.temperature;
  gen.top_k = g.topK;
  gen.top_p = g.topP;
  gen.repetition_penalty = g.repetitionPenalty;
  gen.max_new_tokens = g.maxNewTokens;
  auto generation = fb::GenerationDefaults::Pack(b, &gen);
  const KvCachePlan &k = options.kvCache;
  if (k.blockSize <= 0 || k.numLayers <= 0)
    fail("internal error: no KV-cache layout to write (run "
         "sol-plan-kv-cache and pass its layout in PlanOptions)");
  auto kv = fb::CreateKvCacheLayout(b, k.numLayers, k.numKvHeads, k.headDim,
                                    k.blockSize, k.dtype, k.arrangement,
                                    k.alignment, k.scales);

  std::vector<flatbuffers::Offset<fb::RopeTable>> ropes;
  for (const ProgramRope &r : program.ropes)
    ropes.push_back(fb::CreateRopeTableDirect(
        b, &r.invFreq, r.attentionScaling,
        r.longInvFreq.empty() ? nullptr : &r.longInvFreq, r.longFrom));
  std::vector<flatbuffers::Offset<fb::Weight>> weightTables;
  for (size_t i = 0; i < program.weights.size(); ++i) {
    const ProgramWeight &w = program.weights[i];
    weightTables.push_back(fb::CreateWeightDirect(
        b, w.name.c_str(), w.dtype, &w.shape, &weightSections[i],
        w.note.empty() ? nullptr : w.note.c_str(),
        rankSections[i].empty() ? nullptr : &rankSections[i]));
  }
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (const ProgramBuffer &buf : program.buffers)
    buffers.push_back(fb::CreateBufferDirect(b, buf.name.c_str(), buf.dtype,
                                             buf.width, buf.rows, buf.slot));
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (const PlanOp &op : program.ops)
    ops.push_back(encodePlanOp(b, op));
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
  flatbuffers::Offset<fb::CudaLowering> cuda;
  if (options.cudaLowering) {
    const cuda::StaticLowering &l = *options.cudaLowering;
    cuda = fb::CreateCudaLoweringDirect(
        b, &l.attentionRopeKvWrite, &l.skippableGathers, l.argmaxLmHead,
        l.chunkAttention, &l.attentionHeadNorm, &l.linearAddNorm);
  }
  auto plan = fb::CreatePlanDirect(
      b, options.compilerVersion.c_str(), options.commandLine.c_str(),
      options.target.c_str(), modelInfo, generation, kv, &ropes, &weightTables,
      &buffers, &program.arenaSlots, &ops, &kernels, &mods, &tokenizerJson,
      &tokenizerConfig, options.maxTokensPerStep, cuda, &draftPlan,
      static_cast<int32_t>(ranks), options.randomWeights);
  fb::FinishPlanBuffer(b, plan);
  writer.finish({b.GetBufferPointer(), b.GetSize()});
}

} // namespace sol
