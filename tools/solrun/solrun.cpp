//===- solrun.cpp - Runs a Sol plan ---------------------------------------===//
//
//   solrun model.plan --prompt-ids 1,2,3 --max-tokens N [--device cpu]
//   solrun model.plan --prompt "text" | --chat "message" [--system "..."]
//   solrun model.plan --prompt-ids ... --max-tokens 0 --logits-out FILE
//   solrun model.plan --bench [--num-prompts N] [--input-len N]
//       [--output-len N] [--max-num-seqs N] [--enable-prefix-caching] ...
//   solrun model.plan --serve [--host H] [--port N] [--api-key KEY] ...
//   solrun model.plan --perplexity FILE | --perplexity-ids FILE
//       [--window W] [--stride S] [--limit-tokens N] [--logits-out FILE]
//   solrun --info model.plan
//   solrun --tokenizer DIR|PLAN --encode | --decode | --render-chat
//
//===----------------------------------------------------------------------===//
#include "runtime/engine/Generator.h"
#include "runtime/engine/TextModel.h"
#include "runtime/executor/ExecutorFactory.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/PlanOp.h"
#include "runtime/plan/RandomWeights.h"
#include "runtime/support/Error.h"
#include "runtime/tokenizer/IncrementalDetokenizer.h"
#include "tools/solrun/Bench.h"
#include "tools/solrun/DraftModel.h"
#include "tools/solrun/Perplexity.h"
#include "tools/solrun/Serve.h"
#include "tools/solrun/TokenizerTool.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <unistd.h>

namespace {

struct Options {
  std::string plan;
  bool info = false;
  bool infoOps = false;
  bool infoWeights = false;
  std::string promptIds;
  std::string prompt;
  std::string chat;
  std::string system;
  int32_t maxTokens = 16;
  std::string device = "auto";
  int32_t tensorParallelSize = 0; // 0: the plan's
  bool json = false;
  bool ignoreEos = false;
  std::string logitsOut;
  sol::ExecutorOptions executor;
  sol::TokenizerToolOptions tokenizerTool;
  bool bench = false;
  sol::BenchOptions benchOptions;
  std::string inputLen, outputLen, randomInputLen, randomOutputLen;
  /// Flags that only --bench uses, as given on the command line.
  std::vector<std::string> benchFlagsGiven;
  /// Engine flags (--bench and --serve), as given.
  std::vector<std::string> engineFlagsGiven;
  bool serve = false;
  sol::ServeOptions serveOptions;
  /// --async-scheduling on|off; empty: the mode's default (on for a prompt
  /// and --bench, off for --serve).
  std::string asyncScheduling;
  /// --speculative-config JSON, and what it says.
  std::string speculativeConfig;
  sol::SpeculativeConfig speculative;
  /// Flags that only --serve uses, and flags of the other modes, as given.
  std::vector<std::string> serveFlagsGiven;
  std::vector<std::string> nonServeFlagsGiven;
  sol::PerplexityOptions perplexity;
  /// Flags that only a perplexity pass uses, and flags that make no sense
  /// with one, as given.
  std::vector<std::string> perplexityFlagsGiven;
  std::vector<std::string> nonPerplexityFlagsGiven;
};

std::vector<int32_t> parseIds(const std::string &text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma - pos);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX)
      sol::fail("--prompt-ids: '", item,
                "' is not a token id (expected comma-separated integers, "
                "e.g. 1,2,3)");
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return ids;
}

std::string dtypeString(sol::fb::DType t) { return sol::fb::EnumNameDType(t); }

/// "int8", "fp8", "int4": as solc's --quant spells them.
std::string quantName(sol::fb::WeightQuant q) {
  std::string name = sol::fb::EnumNameWeightQuant(q);
  for (char &c : name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

void printInfo(const sol::PlanFile &file) {
  const sol::fb::Plan &p = file.plan();
  const auto *m = p.model();
  auto str = [](const flatbuffers::String *s) {
    return s ? s->str() : std::string("?");
  };
  std::printf("plan:          %s (format version %u, %.2f GB)\n",
              file.path().c_str(), file.header().formatVersion,
              file.header().fileSize / 1e9);
  std::printf("compiler:      %s\n", str(p.compiler_version()).c_str());
  std::printf("command line:  %s\n", str(p.command_line()).c_str());
  std::printf("target:        %s\n", str(p.target()).c_str());
  if (m) {
    std::printf("model:         %s from %s\n", str(m->architecture()).c_str(),
                str(m->source()).c_str());
    std::printf("content hash:  %s\n", str(m->content_hash()).c_str());
    std::printf("shape:         %d layers, hidden %lld, vocab %lld, max "
                "positions %lld\n",
                m->num_layers(), static_cast<long long>(m->hidden_size()),
                static_cast<long long>(m->vocab_size()),
                static_cast<long long>(m->max_position_embeddings()));
    if (m->position_limit() > 0)
      std::printf("position limit: %lld (dynamic NTK rope: longer sequences "
                  "are refused)\n",
                  static_cast<long long>(m->position_limit()));
  }
  uint64_t weightBytes = 0, shardedBytes = 0;
  int sharded = 0;
  // Sizes by shape: a plan with random weights stores no bytes.
  if (p.weights())
    for (const auto *w : *p.weights()) {
      const uint64_t bytes = sol::weightStorageBytes(*w);
      if (w->rank_data()) {
        ++sharded;
        shardedBytes += bytes * static_cast<uint64_t>(p.tensor_parallel_size());
      } else {
        weightBytes += bytes;
      }
    }
  std::printf("weights:       %u tensors, %.3f GB\n",
              p.weights() ? p.weights()->size() : 0,
              (weightBytes + shardedBytes) / 1e9);
  if (p.random_weights())
    std::printf("               random (solc --load-format dummy): seeded "
                "values made at load, for speed measurements only\n");
  if (p.tensor_parallel_size() > 1)
    std::printf("tensor parallel: %d GPUs; %d tensors split (%.3f GB in "
                "all), the rest (%.3f GB) on every GPU\n",
                p.tensor_parallel_size(), sharded, shardedBytes / 1e9,
                weightBytes / 1e9);
  std::printf("step:          %u ops over %u buffers in %u arena slots, up to "
              "%lld tokens\n",
              p.ops() ? p.ops()->size() : 0,
              p.buffers() ? p.buffers()->size() : 0,
              p.arena_slots() ? p.arena_slots()->size() : 0,
              static_cast<long long>(p.max_tokens_per_step()));
  // Modules of architecture-specific kernels (wgmma: sm_90a) run on that
  // architecture only.
  std::string specific;
  for (unsigned m = 0; p.modules() && m < p.modules()->size(); ++m)
    if (const auto *arch = p.modules()->Get(m)->arch();
        arch && arch->string_view().ends_with('a')) {
      specific = arch->str();
      break;
    }
  std::printf("kernels:       %u in %u modules%s\n",
              p.kernels() ? p.kernels()->size() : 0,
              p.modules() ? p.modules()->size() : 0,
              specific.empty() ? ""
                               : sol::cat(" (some for ", specific,
                                          ": this GPU architecture only)")
                                     .c_str());
  if (const auto *c = p.cuda()) {
    // solc's per-plan choices for the CUDA executor (Plan.cuda).
    int fused = 0, gathers = 0;
    if (c->attention_rope_kv_write())
      for (int32_t op : *c->attention_rope_kv_write())
        fused += op >= 0;
    if (p.ops())
      for (const auto *op : *p.ops())
        gathers += op->params_type() == sol::fb::OpParams::GatherRowsOp;
    int norms = 0;
    if (c->attention_head_norm())
      for (int32_t op : *c->attention_head_norm())
        norms += op >= 0;
    const std::string rope =
        fused ? "absorbs rope_kv_write" +
                    std::string(norms ? " and the q/k head norm" : "") + " (" +
                    std::to_string(fused) + " layers)"
              : std::string("after rope_kv_write");
    const std::string skipped =
        std::to_string(c->skippable_gathers() ? c->skippable_gathers()->size()
                                              : 0) +
        " of " + std::to_string(gathers);
    int addNorms = 0;
    if (c->linear_add_norm())
      for (int32_t op : *c->linear_add_norm())
        addNorms += op >= 0;
    std::printf("CUDA lowering: decode attention %s; logits gathers skipped in "
                "decode steps: %s; greedy LM head %s; prompt chunks through "
                "%s; residual norms in the next linear's prologue in one-row "
                "steps: %d\n",
                rope.c_str(), skipped.c_str(),
                c->argmax_lm_head() ? "keeps the argmax" : "then argmax",
                c->chunk_attention() ? "chunk_attention" : "paged_attention",
                addNorms);
  }
  if (const auto *kv = p.kv_cache()) {
    std::printf("KV cache:      %d layers x %d KV heads x head dim %d, blocks "
                "of %d tokens, %s\n",
                kv->num_layers(), kv->num_kv_heads(), kv->head_dim(),
                kv->block_size(), dtypeString(kv->dtype()).c_str());
    // Bytes one token takes in every layer's K and V (and their scales).
    const bool scaled = kv->scales() == sol::fb::KvScales::PerTokenHead;
    const long long perToken =
        2LL * kv->num_layers() * kv->num_kv_heads() *
        (static_cast<long long>(kv->head_dim()) *
             (kv->dtype() == sol::fb::DType::F8E4M3 ? 1 : 2) +
         (scaled ? 4 : 0));
    std::printf("KV layout:     K and V [blocks, %d, %d, %d] per layer, "
                "%d-byte aligned; scales %s; %lld bytes per token\n",
                kv->block_size(), kv->num_kv_heads(), kv->head_dim(),
                kv->alignment(),
                scaled ? "f32 per token and KV head, K and V [blocks, "
                         "block_size, kv_heads] per layer"
                       : "none",
                perToken);
  }
  if (const auto *g = p.generation()) {
    std::string eos;
    if (g->eos_token_ids())
      for (int64_t id : *g->eos_token_ids())
        eos += (eos.empty() ? "" : ",") + std::to_string(id);
    std::printf("generation:    eos [%s], temperature %g, top_p %g, top_k %d\n",
                eos.c_str(), g->temperature(), g->top_p(), g->top_k());
  }
  if (const auto *packed = p.draft_plan(); packed && packed->size() > 0) {
    const sol::PlanFile draft =
        file.embedded(*packed, file.path().string() + " (its draft plan)", {});
    const auto *dm = draft.plan().model();
    std::printf("draft model:   %s, %d layers, %.3f GB (solc --draft; "
                "--speculative-config '{\"method\": \"draft_model\", "
                "\"num_speculative_tokens\": N}' uses it)\n",
                dm ? str(dm->architecture()).c_str() : "?",
                dm ? dm->num_layers() : 0, packed->size() / 1e9);
  }
  std::printf("tokenizer:     %s\n",
              p.tokenizer_json() && p.tokenizer_json()->size()
                  ? "embedded"
                  : "none (use --prompt-ids)");
  // Quantization: linears per scheme, and what stayed as it was (the
  // weights' notes say why).
  const std::vector<sol::PlanOp> ops =
      sol::decodePlanOps(p, file.path().string());
  std::map<std::string, int> schemes;
  int linears = 0;
  for (const sol::PlanOp &op : ops)
    if (op.kind == sol::OpKind::Linear || op.kind == sol::OpKind::NormLinear) {
      ++linears;
      if (op.quant != sol::fb::WeightQuant::None)
        ++schemes[quantName(op.quant)];
    }
  if (!schemes.empty()) {
    std::string line;
    for (const auto &[scheme, count] : schemes)
      line += (line.empty() ? "" : ", ") + scheme + " on " +
              std::to_string(count) + " of " + std::to_string(linears) +
              " linears";
    std::string kept;
    if (p.weights())
      for (const auto *w : *p.weights())
        if (w->note() && w->note()->string_view().starts_with("kept"))
          kept += (kept.empty() ? "" : "; ") + w->name()->str() + " " +
                  w->note()->str();
    std::printf("quantization:  %s%s%s (solrun --info --weights lists every "
                "tensor)\n",
                line.c_str(), kept.empty() ? "" : "; ", kept.c_str());
  }
  // Mixtures of experts: how many layers, experts and experts per token.
  int mixtures = 0, sharedExperts = 0;
  const sol::PlanOp *moe = nullptr;
  bool sinks = false;
  for (const sol::PlanOp &op : ops) {
    if (op.kind == sol::OpKind::Moe) {
      ++mixtures;
      moe = &op;
    }
    sharedExperts += op.kind == sol::OpKind::SigmoidGate;
    sinks = sinks || op.hasSinks();
  }
  if (moe && p.weights() && moe->weights.at(0) >= 0 &&
      static_cast<unsigned>(moe->weights.at(0)) < p.weights()->size()) {
    const auto *router = p.weights()->Get(moe->weights.at(0))->shape();
    std::string extras;
    if (moe->normalizeTopK)
      extras += ", their weights renormalised";
    switch (moe->expertFormat) {
    case sol::fb::ExpertFormat::Float:
      break;
    case sol::fb::ExpertFormat::Int4:
      extras += sol::cat(", int4 experts (groups of ", moe->groupSize, ")");
      break;
    case sol::fb::ExpertFormat::Mxfp4:
      extras += ", MXFP4 experts";
      break;
    case sol::fb::ExpertFormat::Int8:
      extras += ", int8 experts";
      break;
    case sol::fb::ExpertFormat::Fp8:
      extras += ", fp8 experts";
      break;
    }
    if (moe->hasMoeBiases())
      extras += ", biases on the router and experts";
    if (moe->activation == sol::fb::GateActivation::ClampedSilu)
      extras += sol::cat(", clamped SwiGLU (limit ", moe->activationLimit, ")");
    if (sharedExperts)
      extras += ", a gated shared expert beside them";
    std::printf("experts:       %d mixture-of-experts layers of %lld experts, "
                "%lld per token%s\n",
                mixtures,
                router && router->size() == 2
                    ? static_cast<long long>(router->Get(0))
                    : 0LL,
                static_cast<long long>(moe->topK), extras.c_str());
  }
  if (sinks)
    std::printf("attention:     a learned sink logit per head (gpt-oss)\n");
}

/// One line per weight: name, dtype, shape, bytes and what the compiler did.
void printWeights(const sol::PlanFile &file) {
  const sol::fb::Plan &p = file.plan();
  std::printf("weights:\n");
  if (!p.weights())
    return;
  for (unsigned i = 0; i < p.weights()->size(); ++i) {
    const sol::fb::Weight *w = p.weights()->Get(i);
    std::string shape;
    if (w->shape())
      for (int64_t d : *w->shape())
        shape += (shape.empty() ? "" : "x") + std::to_string(d);
    // A split weight: its shape and bytes are one GPU's.
    const bool split = w->rank_data() != nullptr;
    const uint64_t bytes = sol::weightStorageBytes(*w);
    std::printf("  %4u %-60s %-7s %-16s %12llu%s%s%s\n", i,
                w->name() ? w->name()->c_str() : "?",
                dtypeString(w->dtype()).c_str(), shape.c_str(),
                static_cast<unsigned long long>(bytes),
                split ? "  per GPU" : "", w->note() ? "  " : "",
                w->note() ? w->note()->c_str() : "");
  }
}

/// One line per op of the step: kind, epilogue, name and buffers.
void printOps(const sol::PlanFile &file) {
  const sol::fb::Plan &p = file.plan();
  const std::vector<sol::PlanOp> ops =
      sol::decodePlanOps(p, file.path().string());
  static const char *const kEpilogues[] = {"", " +residual", " +swiglu",
                                           " +geglu"};
  std::printf("ops:\n");
  for (size_t i = 0; i < ops.size(); ++i) {
    const sol::PlanOp &op = ops[i];
    const auto e = static_cast<unsigned>(op.epilogue);
    std::string buffers;
    if (p.buffers())
      for (int32_t b : op.buffers)
        if (b >= 0 && static_cast<unsigned>(b) < p.buffers()->size())
          buffers += (buffers.empty() ? "" : ", ") +
                     p.buffers()->Get(b)->name()->str();
    std::string quant;
    // Norms that take a second weight: the input's own norm (RmsNorm) or
    // the k heads after the q heads (HeadRmsNorm).
    if (op.kind == sol::OpKind::RmsNorm && op.hasSecondNormWeight())
      quant = " +input_norm";
    if (op.kind == sol::OpKind::HeadRmsNorm && op.hasSecondNormWeight())
      quant = " +second_heads";
    if (op.quant != sol::fb::WeightQuant::None)
      quant = " [" + quantName(op.quant) +
              (op.groupSize ? " g" + std::to_string(op.groupSize) : "") + "]";
    std::printf("  %3zu %s%s%s %s (%s)\n", i,
                std::string(sol::opKindName(op.kind)).c_str(),
                e <= 3 ? kEpilogues[e] : " +?", quant.c_str(), op.name.c_str(),
                buffers.c_str());
  }
}

/// Checks the flags of a perplexity pass and fills opts.perplexity.
void preparePerplexity(Options &opts) {
  sol::PerplexityOptions &p = opts.perplexity;
  const bool text = !p.textFile.empty(), ids = !p.idsFile.empty();
  if (!text && !ids) {
    if (!opts.perplexityFlagsGiven.empty())
      sol::fail(opts.perplexityFlagsGiven.front(),
                " goes with --perplexity FILE or --perplexity-ids FILE");
    return;
  }
  if (text && ids)
    sol::fail("give --perplexity FILE (text) or --perplexity-ids FILE (token "
              "ids), not both");
  if (!opts.nonPerplexityFlagsGiven.empty())
    sol::fail(opts.nonPerplexityFlagsGiven.front(), " does not go with ",
              text ? "--perplexity" : "--perplexity-ids",
              " (a perplexity pass scores the ids of its file, teacher-forced, "
              "and generates nothing)");
  p.json = opts.json;
  p.logitsOut = opts.logitsOut;
  p.maxNumSeqs = opts.benchOptions.maxNumSeqs;
  p.maxNumBatchedTokens = opts.benchOptions.maxNumBatchedTokens;
}

/// Checks the --serve flags and fills opts.serveOptions.
void prepareServe(Options &opts) {
  if (!opts.serve) {
    if (!opts.serveFlagsGiven.empty())
      sol::fail(opts.serveFlagsGiven.front(),
                " goes with --serve (the OpenAI-compatible server)");
    return;
  }
  if (!opts.nonServeFlagsGiven.empty())
    sol::fail(opts.nonServeFlagsGiven.front(),
              " does not go with --serve (requests bring their own prompts "
              "and parameters)");
  sol::ServeOptions &s = opts.serveOptions;
  s.maxNumSeqs = opts.benchOptions.maxNumSeqs;
  s.maxNumBatchedTokens = opts.benchOptions.maxNumBatchedTokens;
  s.enablePrefixCaching = opts.benchOptions.enablePrefixCaching;
  if (!opts.asyncScheduling.empty())
    s.asyncScheduling = opts.asyncScheduling == "on";
  if (s.apiKey.empty())
    if (const char *key = std::getenv("SOL_API_KEY"))
      s.apiKey = key;
}

/// Checks the --bench flags and fills opts.benchOptions.
void prepareBench(Options &opts) {
  // A single prompt may run in smaller steps (--max-num-batched-tokens), a
  // perplexity pass also batches windows (--max-num-seqs); the other engine
  // flags only mean something with many requests.
  const bool perplexity =
      !opts.perplexity.textFile.empty() || !opts.perplexity.idsFile.empty();
  if (!opts.bench && !opts.serve)
    for (const std::string &flag : opts.engineFlagsGiven)
      if (flag != "--max-num-batched-tokens" &&
          !(perplexity && flag == "--max-num-seqs"))
        sol::fail(flag, " goes with --bench (the offline benchmark) or --serve "
                        "(the server)");
  if (!opts.bench) {
    if (!opts.benchFlagsGiven.empty())
      sol::fail(opts.benchFlagsGiven.front(),
                " goes with --bench (the offline benchmark)");
    return;
  }
  if (!opts.promptIds.empty() || !opts.prompt.empty() || !opts.chat.empty() ||
      !opts.logitsOut.empty())
    sol::fail("--bench makes its own random prompts; drop --prompt, "
              "--prompt-ids, --chat and --logits-out");
  if (!opts.inputLen.empty() && !opts.randomInputLen.empty())
    sol::fail("give --input-len or --random-input-len, not both");
  if (!opts.outputLen.empty() && !opts.randomOutputLen.empty())
    sol::fail("give --output-len or --random-output-len, not both");
  auto fixed = [](const std::string &flag, const std::string &text) {
    if (text.find(':') != std::string::npos)
      sol::fail(flag, " takes one length; use --random-", flag.substr(2),
                " A:B for a range");
    return sol::parseLengthRange(flag, text);
  };
  sol::BenchOptions &b = opts.benchOptions;
  if (!opts.inputLen.empty())
    b.inputLen = fixed("--input-len", opts.inputLen);
  if (!opts.randomInputLen.empty())
    b.inputLen =
        sol::parseLengthRange("--random-input-len", opts.randomInputLen);
  if (!opts.outputLen.empty())
    b.outputLen = fixed("--output-len", opts.outputLen);
  if (!opts.randomOutputLen.empty())
    b.outputLen =
        sol::parseLengthRange("--random-output-len", opts.randomOutputLen);
  b.json = opts.json;
}

int run(Options &opts) {
  if (!opts.asyncScheduling.empty())
    opts.benchOptions.asyncScheduling = opts.asyncScheduling == "on";
  prepareBench(opts);
  sol::PlanFile file = sol::PlanFile::open(opts.plan);
  const int32_t ranks = file.plan().tensor_parallel_size();
  if (opts.tensorParallelSize > 0 && opts.tensorParallelSize != ranks)
    sol::fail("--tensor-parallel-size ", opts.tensorParallelSize, ": ",
              opts.plan, " is split over ", ranks, " GPU",
              ranks == 1 ? "" : "s",
              " (a plan's split is chosen when it is compiled); compile it "
              "again with solc --tensor-parallel-size ",
              opts.tensorParallelSize);
  if (opts.info) {
    printInfo(file);
    if (opts.infoOps)
      printOps(file);
    if (opts.infoWeights)
      printWeights(file);
    return 0;
  }
  if (opts.bench)
    return sol::runBench(file, opts.device, opts.executor, opts.benchOptions);
  if (opts.serve)
    return sol::runServe(file, opts.device, opts.executor, opts.serveOptions);
  if (!opts.perplexity.textFile.empty() || !opts.perplexity.idsFile.empty())
    return sol::runPerplexity(file, opts.device, opts.executor,
                              opts.perplexity);
  const int prompts = int(!opts.promptIds.empty()) + int(!opts.prompt.empty()) +
                      int(!opts.chat.empty());
  if (prompts != 1)
    sol::fail(prompts ? "give only one of --prompt-ids, --prompt and --chat"
                      : "no prompt: give --prompt \"text\", --chat "
                        "\"message\" or --prompt-ids 1,2,3");
  if (!opts.system.empty() && opts.chat.empty())
    sol::fail("--system goes with --chat");
  std::optional<sol::TextModel> text;
  std::vector<int32_t> prompt;
  if (!opts.promptIds.empty()) {
    prompt = parseIds(opts.promptIds);
  } else {
    text.emplace(sol::TextModel::fromPlan(file));
    if (!opts.prompt.empty()) {
      // As tokenizer(text) in Transformers: special tokens (BOS) added.
      auto ids = text->tokenizer.encode(opts.prompt, true);
      prompt.assign(ids.begin(), ids.end());
    } else {
      if (!text->chatTemplate)
        sol::fail(opts.plan, ": the model has no chat template "
                             "(no chat_template in tokenizer_config.json, no "
                             "chat_template.jinja beside it); "
                             "use --prompt");
      nlohmann::ordered_json request;
      request["messages"] = nlohmann::ordered_json::array();
      if (!opts.system.empty())
        request["messages"].push_back(
            {{"role", "system"}, {"content", opts.system}});
      request["messages"].push_back({{"role", "user"}, {"content", opts.chat}});
      request["add_generation_prompt"] = true;
      // As apply_chat_template(tokenize=True): the template writes the
      // special tokens itself.
      auto ids =
          text->tokenizer.encode(text->chatTemplate->render(request), false);
      prompt.assign(ids.begin(), ids.end());
    }
  }
  // A draft model's executor first: the target's KV cache takes the rest.
  std::optional<sol::DraftModel> draft = sol::openDraftModel(
      opts.speculative, file, opts.device, opts.executor, /*maxNumSeqs=*/1);
  std::unique_ptr<sol::Executor> executor =
      sol::makeExecutor(file, opts.device, opts.executor);
  if (isatty(STDERR_FILENO))
    std::fprintf(stderr, "solrun: %s\n",
                 sol::describeKvCache(*executor).c_str());
  const sol::fb::Plan &p = file.plan();
  int64_t maxModelLen = opts.executor.maxModelLen > 0
                            ? opts.executor.maxModelLen
                            : p.model()->max_position_embeddings();
  sol::Generator generator(*executor, p.model()->vocab_size(), maxModelLen,
                           opts.benchOptions.maxNumBatchedTokens,
                           opts.benchOptions.asyncScheduling, opts.speculative,
                           draft ? draft->executor.get() : nullptr,
                           draft ? draft->maxModelLen : 0);

  if (!opts.logitsOut.empty()) {
    std::vector<float> logits = generator.promptLogits(prompt);
    std::FILE *f = std::fopen(opts.logitsOut.c_str(), "wb");
    if (!f || std::fwrite(logits.data(), sizeof(float), logits.size(), f) !=
                  logits.size())
      sol::fail("cannot write ", opts.logitsOut);
    std::fclose(f);
    if (opts.maxTokens == 0)
      return 0;
  }

  sol::GenerationRequest request;
  request.promptIds = prompt;
  request.maxTokens = opts.maxTokens;
  request.ignoreEos = opts.ignoreEos;
  if (p.generation() && p.generation()->eos_token_ids())
    request.eosTokenIds.assign(p.generation()->eos_token_ids()->begin(),
                               p.generation()->eos_token_ids()->end());
  std::optional<sol::IncrementalDetokenizer> stream;
  std::string completion;
  if (text) {
    if (auto eos = text->tokenizer.eosTokenId();
        eos && std::find(request.eosTokenIds.begin(), request.eosTokenIds.end(),
                         int64_t(*eos)) == request.eosTokenIds.end())
      request.eosTokenIds.push_back(*eos);
    stream.emplace(text->tokenizer, /*skipSpecialTokens=*/true);
    request.onToken = [&](int32_t id) {
      std::string chunk = stream->push(id);
      completion += chunk;
      if (!opts.json) {
        std::cout << chunk;
        std::cout.flush();
      }
    };
  }
  sol::GenerationResult result = generator.generate(request);
  if (stream) {
    std::string rest = stream->finish();
    completion += rest;
    if (!opts.json)
      std::cout << rest << "\n";
  }
  if (opts.json) {
    nlohmann::json j;
    j["prompt_ids"] = prompt;
    j["ids"] = result.ids;
    j["finish_reason"] = result.finishReason;
    if (text)
      j["text"] = completion;
    j["device"] = executor->name();
    j["timing"] = {{"ttft_ms", result.ttftMs},
                   {"tpot_ms", result.tpotMs},
                   {"decode_tokens_per_s", result.decodeTokensPerS}};
    if (opts.speculative.enabled()) {
      const sol::EngineStats s = generator.engine().stats();
      j["speculative"] = {{"num_drafts", s.specDrafts},
                          {"proposed_tokens", s.specProposedTokens},
                          {"accepted_tokens", s.specAcceptedTokens}};
      if (draft)
        j["speculative"]["draft_model_steps"] = s.specDraftModelSteps;
    }
    std::cout << j.dump(-1, ' ', false,
                        nlohmann::json::error_handler_t::replace)
              << "\n";
  } else if (!text) {
    for (size_t i = 0; i < result.ids.size(); ++i)
      std::cout << (i ? " " : "") << result.ids[i];
    std::cout << "\n";
  }
  if (!opts.json) {
    std::cerr << "solrun: " << result.ids.size() << " tokens ("
              << result.finishReason << ") on " << executor->name() << ", TTFT "
              << result.ttftMs << " ms, TPOT " << result.tpotMs << " ms\n";
    if (opts.speculative.enabled()) {
      const sol::EngineStats s = generator.engine().stats();
      std::cerr << "solrun: speculative decoding: " << s.specAcceptedTokens
                << " of " << s.specProposedTokens
                << " proposed tokens accepted over " << s.specDrafts
                << " steps\n";
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"solrun: run a Sol plan"};
  Options opts;
  // Flags of the other modes, which --serve rejects.
  std::vector<CLI::Option *> nonServeFlags;
  app.add_option("plan", opts.plan, "the .plan file made by solc");
  nonServeFlags.push_back(
      app.add_flag("--info", opts.info, "print what the plan holds and exit"));
  nonServeFlags.push_back(app.add_flag(
      "--ops", opts.infoOps,
      "with --info: also list the step's ops (fusions show here)"));
  nonServeFlags.push_back(app.add_flag(
      "--weights", opts.infoWeights,
      "with --info: also list every weight (dtype, shape, bytes, and what "
      "quantization did to it)"));
  nonServeFlags.push_back(
      app.add_option("--prompt-ids", opts.promptIds,
                     "prompt as comma-separated token ids, e.g. 1,2,3"));
  nonServeFlags.push_back(app.add_option(
      "--prompt", opts.prompt,
      "text prompt, tokenized with the plan's tokenizer (BOS added "
      "as Transformers does); the reply is streamed"));
  nonServeFlags.push_back(
      app.add_option("--chat", opts.chat,
                     "a user message, rendered with the model's chat template "
                     "and a generation prompt; the reply is streamed"));
  nonServeFlags.push_back(
      app.add_option("--system", opts.system, "system message for --chat"));
  sol::TokenizerToolOptions &tt = opts.tokenizerTool;
  nonServeFlags.push_back(
      app.add_option("--tokenizer", tt.source,
                     "debug prompts with the tokenizer of a model directory or "
                     "plan: reads standard input (see --encode, --decode, "
                     "--render-chat)"));
  nonServeFlags.push_back(app.add_flag("--encode", tt.encode,
                                       "with --tokenizer: text -> JSON ids"));
  nonServeFlags.push_back(app.add_flag("--decode", tt.decode,
                                       "with --tokenizer: JSON ids -> text"));
  nonServeFlags.push_back(
      app.add_flag("--render-chat", tt.renderChat,
                   "with --tokenizer: {\"messages\": [...], \"tools\": [...], "
                   "\"add_generation_prompt\": true} -> prompt text"));
  nonServeFlags.push_back(app.add_flag(
      "--jsonl", tt.jsonl,
      "with --tokenizer: one JSON value per input line, one result "
      "per output line"));
  nonServeFlags.push_back(
      app.add_flag("--add-special-tokens", tt.addSpecialTokens,
                   "with --encode: add BOS etc. as Transformers' flag does"));
  nonServeFlags.push_back(
      app.add_flag("--skip-special-tokens", tt.skipSpecialTokens,
                   "with --decode: leave special tokens out"));
  nonServeFlags.push_back(app.add_option("--max-tokens", opts.maxTokens,
                                         "tokens to generate (default 16)"));
  app.add_option("--device", opts.device,
                 "cuda, cpu (the float32 reference executor) or auto "
                 "(cuda when a GPU is usable, else cpu with a warning)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--tensor-parallel-size,--tp", opts.tensorParallelSize,
                 "GPUs the plan runs on: the plan says (solc "
                 "--tensor-parallel-size); given, it must agree")
      ->check(CLI::Range(1, 64));
  nonServeFlags.push_back(app.add_flag(
      "--json", opts.json,
      "print one JSON object: prompt_ids, ids, finish_reason, timing"));
  nonServeFlags.push_back(
      app.add_flag("--ignore-eos", opts.ignoreEos,
                   "keep generating past end-of-sequence tokens"));
  nonServeFlags.push_back(
      app.add_option("--logits-out", opts.logitsOut,
                     "write the teacher-forced float32 logits of every prompt "
                     "position (prompt x vocab) to this file; with "
                     "--perplexity, those of every scored position (scored x "
                     "vocab, in order)"));
  app.add_option("--max-model-len", opts.executor.maxModelLen,
                 "longest sequence (prompt + output) to support; default: "
                 "the model's max_position_embeddings");
  app.add_option("--gpu-memory-utilization", opts.executor.gpuMemoryUtilization,
                 "fraction of GPU memory Sol may use: weights, activations "
                 "and the KV cache (default 0.9)")
      ->check(CLI::Range(0.05, 1.0));
  app.add_flag("--no-cuda-graph", opts.executor.disableCudaGraphs,
               "launch decode steps kernel by kernel (debugging)");
  app.add_flag("--profile-ops", opts.executor.profileOps,
               "time every op of each step (decode, verification, prompt "
               "chunk) with CUDA events and print a "
               "per-op table to stderr at exit (slower; CUDA only)");
  app.add_flag("--profile-steps", opts.executor.profileSteps,
               "time every step (GPU time, step wall time, host time between "
               "steps) and print a table by step size to stderr at exit "
               "(CUDA only)");

  // The offline benchmark (as `vllm bench throughput`, random dataset).
  sol::BenchOptions &b = opts.benchOptions;
  app.add_flag("--bench", opts.bench,
               "offline throughput benchmark: random prompts, all submitted "
               "at once, ignore_eos; prints a table (or JSON with --json)");
  std::vector<CLI::Option *> benchFlags = {
      app.add_option("--num-prompts", b.numPrompts,
                     "with --bench: requests (default 256)")
          ->check(CLI::Range(1, INT32_MAX)),
      app.add_option("--input-len", opts.inputLen,
                     "with --bench: prompt tokens (default 1024)"),
      app.add_option("--output-len", opts.outputLen,
                     "with --bench: tokens generated per request (default "
                     "128)"),
      app.add_option("--random-input-len", opts.randomInputLen,
                     "with --bench: prompt tokens uniform in A:B"),
      app.add_option("--random-output-len", opts.randomOutputLen,
                     "with --bench: output tokens uniform in A:B"),
      app.add_option("--prefix-len", b.prefixLen,
                     "with --bench: random ids shared by every prompt, before "
                     "its own (default 0)")
          ->check(CLI::Range(0, INT32_MAX)),
      app.add_option("--max-concurrency", b.maxConcurrency,
                     "with --bench: requests in flight at most; the next is "
                     "submitted when one finishes (default: all at once)")
          ->check(CLI::Range(1, INT32_MAX)),
      app.add_option("--seed", b.seed,
                     "with --bench: seed of the random prompts (default 0)")};
  // Engine flags, shared by --bench and --serve.
  std::vector<CLI::Option *> engineFlags = {
      app.add_option("--max-num-seqs", b.maxNumSeqs,
                     "with --bench or --serve: sequences batched together at "
                     "most (default min(256, max-num-batched-tokens))")
          ->check(CLI::Range(1, INT32_MAX)),
      app.add_option("--max-num-batched-tokens", b.maxNumBatchedTokens,
                     "tokens per step at most (default: the plan's limit); "
                     "with a single prompt, its prefill runs in steps of this "
                     "many tokens")
          ->check(CLI::Range(1, INT32_MAX)),
      app.add_flag("--enable-prefix-caching", b.enablePrefixCaching,
                   "with --bench or --serve: reuse the KV cache of shared "
                   "prompt prefixes")};
  app.add_option("--speculative-config", opts.speculativeConfig,
                 "speculative decoding, as vLLM's JSON: '{\"method\": "
                 "\"ngram\", \"num_speculative_tokens\": 4, "
                 "\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}' "
                 "proposes the continuation of the latest earlier match of "
                 "the sequence's last tokens; '{\"model\": \"draft.plan\", "
                 "\"num_speculative_tokens\": 4}' lets a smaller plan with "
                 "the same tokenizer propose; the target checks them in one "
                 "pass and outputs are those of plain decoding "
                 "(docs/engine.md)");
  app.add_option("--async-scheduling", opts.asyncScheduling,
                 "on: queue the next decode step while one runs on the GPU "
                 "(more tokens/s, lower TPOT; requests arriving under load "
                 "wait longer for their first token); off: build each step "
                 "once the previous one's tokens are back. Default on for a "
                 "prompt and --bench, off for --serve (docs/engine.md)")
      ->check(CLI::IsMember({"on", "off"}));

  // The OpenAI-compatible server (flags named as in `vllm serve`).
  sol::ServeOptions &sv = opts.serveOptions;
  nonServeFlags.push_back(app.get_option("--bench"));
  app.add_flag("--serve", opts.serve,
               "serve the OpenAI API (/v1/completions, /v1/chat/completions, "
               "/v1/models, /health, /metrics) over HTTP until SIGINT/SIGTERM; "
               "see docs/server.md");
  std::vector<CLI::Option *> serveFlags = {
      app.add_option("--host", sv.host,
                     "with --serve: address to listen on (default 127.0.0.1; "
                     "0.0.0.0 for every interface)"),
      app.add_option("--port", sv.port,
                     "with --serve: TCP port (default 8000; 0 picks a free "
                     "one, printed at startup)")
          ->check(CLI::Range(0, 65535)),
      app.add_option("--served-model-name", sv.servedModelName,
                     "with --serve: the model name clients send (default: the "
                     "plan file's name without .plan)"),
      app.add_option("--api-key", sv.apiKey,
                     "with --serve: require 'Authorization: Bearer KEY' on "
                     "/v1 requests (default: $SOL_API_KEY, else none)"),
      app.add_option("--max-request-bytes", sv.maxRequestBytes,
                     "with --serve: largest request body; larger ones get 413 "
                     "(default 8 MiB)")
          ->check(CLI::Range(int64_t(1), int64_t(1) << 40)),
      app.add_option("--max-waiting-requests", sv.maxWaitingRequests,
                     "with --serve: requests queued before running at most; "
                     "more get 429 with Retry-After (default 1024)")
          ->check(CLI::Range(1, INT32_MAX)),
      app.add_option("--max-connections", sv.maxConnections,
                     "with --serve: open connections at most; more get 503 "
                     "(default 1024)")
          ->check(CLI::Range(1, 1 << 20)),
      app.add_option("--shutdown-timeout", sv.shutdownTimeoutS,
                     "with --serve: seconds running requests get to finish "
                     "after SIGINT/SIGTERM before they are aborted (default "
                     "30)")
          ->check(CLI::Range(0.0, 86400.0)),
      app.add_option("--request-read-timeout", sv.requestReadTimeoutS,
                     "with --serve: seconds a client has to send a whole "
                     "request, else 408 (default 30)")
          ->check(CLI::Range(0.1, 86400.0)),
      app.add_option("--keep-alive-timeout", sv.keepAliveTimeoutS,
                     "with --serve: seconds an idle connection stays open "
                     "(default 5)")
          ->check(CLI::Range(0.1, 86400.0))};
  // Perplexity (Transformers' strided recipe; docs/engine.md).
  sol::PerplexityOptions &px = opts.perplexity;
  std::vector<CLI::Option *> perplexityModes = {
      app.add_option("--perplexity", px.textFile,
                     "print the perplexity of the model on this text file "
                     "(encoded whole, special tokens added as Transformers' "
                     "tokenizer(text) does): strided windows, batched"),
      app.add_option("--perplexity-ids", px.idsFile,
                     "as --perplexity, on token ids: a JSON array, or "
                     "integers separated by whitespace or commas")};
  std::vector<CLI::Option *> perplexityFlags = {
      app.add_option("--window", px.window,
                     "with --perplexity: ids per window (default 1024, at "
                     "most the maximum model length)")
          ->check(CLI::Range(int64_t(1), int64_t(INT32_MAX))),
      app.add_option("--stride", px.stride,
                     "with --perplexity: ids between window starts, 1..window "
                     "(default window / 2)")
          ->check(CLI::Range(int64_t(1), int64_t(INT32_MAX))),
      app.add_option("--limit-tokens", px.limitTokens,
                     "with --perplexity: score only the first N ids")
          ->check(CLI::Range(int64_t(1), INT64_MAX)),
      app.add_option("--argmax-out", px.argmaxOut,
                     "with --perplexity: write the argmax token id of every "
                     "scored position (int32, in order) to this file, to "
                     "compare two plans' top-1 choices")};
  for (CLI::Option *o : perplexityModes)
    nonServeFlags.push_back(o);
  for (CLI::Option *o : perplexityFlags)
    nonServeFlags.push_back(o);
  // Everything else that a perplexity pass cannot use.
  const std::vector<std::string> perplexityAllows = {"--json",
                                                     "--logits-out",
                                                     "--device",
                                                     "--max-num-batched-tokens",
                                                     "--max-num-seqs",
                                                     "--max-model-len",
                                                     "--gpu-memory-utilization",
                                                     "--no-cuda-graph",
                                                     "--profile-ops",
                                                     "--profile-steps"};
  std::vector<CLI::Option *> nonPerplexityFlags;
  for (CLI::Option *o : app.get_options()) {
    const std::string name = o->get_name();
    if (name.rfind("--", 0) == 0 && name != "--help" &&
        std::find(perplexityModes.begin(), perplexityModes.end(), o) ==
            perplexityModes.end() &&
        std::find(perplexityFlags.begin(), perplexityFlags.end(), o) ==
            perplexityFlags.end() &&
        std::find(perplexityAllows.begin(), perplexityAllows.end(), name) ==
            perplexityAllows.end())
      nonPerplexityFlags.push_back(o);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  auto given = [](const std::vector<CLI::Option *> &flags,
                  std::vector<std::string> &out) {
    for (CLI::Option *o : flags)
      if (o->count() > 0)
        out.push_back(o->get_name());
  };
  given(benchFlags, opts.benchFlagsGiven);
  given(engineFlags, opts.engineFlagsGiven);
  given(serveFlags, opts.serveFlagsGiven);
  given(nonServeFlags, opts.nonServeFlagsGiven);
  given(perplexityFlags, opts.perplexityFlagsGiven);
  given(nonPerplexityFlags, opts.nonPerplexityFlagsGiven);
  if (opts.serve)
    given(benchFlags, opts.nonServeFlagsGiven);
  try {
    if (!opts.speculativeConfig.empty()) {
      opts.speculative = sol::parseSpeculativeConfig(opts.speculativeConfig);
      if (!opts.perplexity.textFile.empty() || !opts.perplexity.idsFile.empty())
        sol::fail("--speculative-config does not go with a perplexity pass "
                  "(it generates nothing)");
    }
    opts.benchOptions.speculative = opts.speculative;
    opts.serveOptions.speculative = opts.speculative;
    preparePerplexity(opts);
    prepareServe(opts);
    if (!opts.tokenizerTool.source.empty())
      return sol::runTokenizerTool(opts.tokenizerTool);
    if (opts.tokenizerTool.encode || opts.tokenizerTool.decode ||
        opts.tokenizerTool.renderChat || opts.tokenizerTool.jsonl)
      sol::fail("--encode, --decode, --render-chat and --jsonl need "
                "--tokenizer DIR|PLAN");
    if (opts.plan.empty())
      sol::fail("no plan: solrun model.plan ... (see --help)");
    return run(opts);
  } catch (const sol::Error &e) {
    std::cerr << "solrun: error: " << e.what() << "\n";
    return 1;
  }
}
