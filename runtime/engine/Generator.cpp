//===- Generator.cpp - Generates tokens for one prompt --------------------===//
#include "runtime/engine/Generator.h"

#include "runtime/support/Error.h"

namespace sol {

namespace {

EngineConfig singleSequence(int64_t vocabSize, int64_t maxModelLen,
                            int32_t maxNumBatchedTokens, bool asyncScheduling,
                            const SpeculativeConfig &speculative,
                            Executor *draftExecutor, int64_t draftMaxModelLen) {
  EngineConfig c;
  c.speculative = speculative;
  c.draftExecutor = draftExecutor;
  c.draftMaxModelLen = draftMaxModelLen;
  c.asyncScheduling = asyncScheduling;
  c.vocabSize = vocabSize;
  c.maxModelLen = maxModelLen;
  c.maxNumSeqs = 1;
  c.maxNumBatchedTokens = maxNumBatchedTokens;
  return c;
}

} // namespace

Generator::Generator(Executor &executor, int64_t vocabSize, int64_t maxModelLen,
                     int32_t maxNumBatchedTokens, bool asyncScheduling,
                     const SpeculativeConfig &speculative,
                     Executor *draftExecutor, int64_t draftMaxModelLen)
    : engine_(executor,
              singleSequence(vocabSize, maxModelLen, maxNumBatchedTokens,
                             asyncScheduling, speculative, draftExecutor,
                             draftMaxModelLen)) {}

GenerationResult Generator::generate(const GenerationRequest &request) {
  if (request.maxTokens < 0)
    fail("--max-tokens must be >= 0, got ", request.maxTokens);
  GenerationResult result;
  result.finishReason = "length";
  if (request.maxTokens == 0) {
    engine_.checkPrompt(request.promptIds, 0);
    return result;
  }
  Request r;
  r.promptIds = request.promptIds;
  r.maxTokens = request.maxTokens;
  r.ignoreEos = request.ignoreEos;
  std::vector<int32_t> eos;
  for (int64_t id : request.eosTokenIds)
    if (id >= 0 && id <= INT32_MAX)
      eos.push_back(static_cast<int32_t>(id));
  r.eosTokenIds = std::move(eos);
  const int64_t id = engine_.submit(std::move(r));
  for (bool done = false; !done;) {
    for (const RequestOutput &o : engine_.step()) {
      if (o.id != id)
        continue;
      for (int32_t t : o.newTokenIds) {
        result.ids.push_back(t);
        if (request.onToken)
          request.onToken(t);
      }
      if (!o.finished)
        continue;
      done = true;
      result.finishReason = std::string(finishReasonName(o.finishReason));
      result.ttftMs = o.ttftMs();
      result.tpotMs = o.tpotMs();
      if (result.tpotMs > 0)
        result.decodeTokensPerS = 1000.0 / result.tpotMs;
    }
  }
  return result;
}

std::vector<float>
Generator::promptLogits(const std::vector<int32_t> &promptIds) {
  return engine_.promptLogits(promptIds);
}

} // namespace sol
