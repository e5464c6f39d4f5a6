//===- Serve.cpp - solrun --serve: the OpenAI-compatible server -----------===//
#include "tools/solrun/Serve.h"

#include "runtime/engine/Engine.h"
#include "runtime/engine/TextModel.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/server/EngineLoop.h"
#include "runtime/server/HttpServer.h"
#include "runtime/server/Metrics.h"
#include "runtime/server/OpenAiServer.h"
#include "runtime/support/Error.h"
#include "tools/solrun/DraftModel.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <poll.h>
#include <thread>
#include <unistd.h>

namespace sol {

namespace {

int gSignalPipe[2] = {-1, -1};

extern "C" void onSignal(int) {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(gSignalPipe[1], &byte, 1);
  errno = saved;
}

void installSignals() {
  if (::pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK) != 0)
    fail("cannot create a pipe: ", std::strerror(errno));
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  // A client that closes while we write is an error return, never a signal.
  std::signal(SIGPIPE, SIG_IGN);
}

/// Reads one pending signal byte; false when none is pending.
bool takeSignal() {
  char byte;
  return ::read(gSignalPipe[0], &byte, 1) == 1;
}

std::string urlHost(const std::string &host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

} // namespace

int runServe(const PlanFile &file, const std::string &device,
             ExecutorOptions executorOptions, const ServeOptions &opts) {
  if (opts.port < 0 || opts.port > 65535)
    fail("--port must be in [0, 65535], got ", opts.port);
  if (opts.maxRequestBytes < 1)
    fail("--max-request-bytes must be >= 1, got ", opts.maxRequestBytes);
  if (opts.maxWaitingRequests < 1)
    fail("--max-waiting-requests must be >= 1, got ", opts.maxWaitingRequests);
  const fb::Plan &plan = file.plan();
  const int64_t modelMax = plan.model()->max_position_embeddings();
  if (executorOptions.maxModelLen == 0)
    executorOptions.maxModelLen = modelMax;
  executorOptions.maxSeqs =
      opts.maxNumSeqs > 0 ? opts.maxNumSeqs : kDefaultMaxNumSeqs;

  std::optional<TextModel> text;
  if (plan.tokenizer_json() && plan.tokenizer_json()->size())
    text.emplace(TextModel::fromPlan(file));
  else
    std::fprintf(stderr, "solrun: warning: the plan has no tokenizer: "
                         "prompts must be token ids, outputs have no text, "
                         "and /v1/chat/completions is unavailable\n");

  // A draft model's executor first: the target's KV cache takes the rest.
  std::optional<DraftModel> draft = openDraftModel(
      opts.speculative, file, device, executorOptions, opts.maxNumSeqs);
  std::unique_ptr<Executor> executor =
      makeExecutor(file, device, executorOptions);
  std::fprintf(stderr, "solrun: %s\n", describeKvCache(*executor).c_str());

  EngineConfig config;
  config.vocabSize = plan.model()->vocab_size();
  config.maxModelLen = executorOptions.maxModelLen;
  config.maxNumSeqs = opts.maxNumSeqs;
  config.maxNumBatchedTokens = opts.maxNumBatchedTokens;
  config.enablePrefixCaching = opts.enablePrefixCaching;
  config.asyncScheduling = opts.asyncScheduling;
  config.speculative = opts.speculative;
  if (draft)
    draft->attach(config);
  if (const auto *g = plan.generation(); g && g->eos_token_ids())
    for (int64_t id : *g->eos_token_ids())
      config.eosTokenIds.push_back(static_cast<int32_t>(id));
  if (text) {
    if (auto eos = text->tokenizer.eosTokenId();
        eos && std::find(config.eosTokenIds.begin(), config.eosTokenIds.end(),
                         int32_t(*eos)) == config.eosTokenIds.end())
      config.eosTokenIds.push_back(static_cast<int32_t>(*eos));
    config.tokenizer = &text->tokenizer;
  }
  Engine engine(*executor, config);

  ServedModel model;
  model.name = opts.servedModelName.empty()
                   ? std::filesystem::path(file.path()).stem().string()
                   : opts.servedModelName;
  model.maxModelLen = config.maxModelLen;
  model.kvCapacityTokens =
      int64_t(executor->numKvBlocks()) * int64_t(executor->blockSize());
  model.vocabSize = config.vocabSize;
  model.text = text ? &*text : nullptr;
  // Sampling defaults from generation_config.json, as vLLM applies them.
  if (const auto *g = plan.generation()) {
    model.defaults.temperature = g->temperature();
    model.defaults.topP = g->top_p() > 0 && g->top_p() <= 1 ? g->top_p() : 1;
    model.defaults.topK = std::max(0, g->top_k());
    model.defaults.repetitionPenalty =
        g->repetition_penalty() > 0 ? g->repetition_penalty() : 1;
  } else {
    model.defaults.temperature = 1.0f;
  }

  Metrics metrics;
  EngineLoopOptions loopOptions;
  loopOptions.maxWaitingRequests = opts.maxWaitingRequests;
  EngineLoop loop(engine, metrics, loopOptions);
  OpenAiServer api(model, loop, metrics, opts.apiKey);

  HttpServerOptions http;
  http.host = opts.host;
  http.port = opts.port;
  http.limits.maxBodyBytes = static_cast<size_t>(opts.maxRequestBytes);
  http.readTimeoutS = opts.requestReadTimeoutS;
  http.keepAliveTimeoutS = opts.keepAliveTimeoutS;
  http.maxConnections = opts.maxConnections;
  HttpServer server(
      http, [&](const HttpRequest &r, HttpResponder &w) { api.handle(r, w); },
      [&](int status, const std::string &message) {
        return api.errorBody(status, message);
      });
  installSignals();
  server.listen();
  loop.start();
  std::fprintf(stderr,
               "solrun: serving %s on http://%s:%d (max model len %lld, "
               "%s)\n",
               model.name.c_str(), urlHost(opts.host).c_str(), server.port(),
               static_cast<long long>(model.maxModelLen),
               opts.apiKey.empty() ? "no API key" : "API key required");
  std::fflush(stderr);

  server.run(gSignalPipe[0]);
  takeSignal();

  // Graceful shutdown: no new connections or requests; running ones get
  // the grace period; a second signal cuts it short.
  api.setShuttingDown();
  server.beginShutdown();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(
                            static_cast<int64_t>(opts.shutdownTimeoutS * 1000));
  std::fprintf(stderr,
               "solrun: shutting down: %d requests running, waiting up to "
               "%g s for them (signal again to stop now)\n",
               server.activeRequests(), opts.shutdownTimeoutS);
  bool cut = false;
  while (server.activeRequests() > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p{gSignalPipe[0], POLLIN, 0};
    if (::poll(&p, 1, 50) > 0 && takeSignal()) {
      cut = true;
      break;
    }
  }
  if (server.activeRequests() > 0) {
    std::fprintf(stderr, "solrun: aborting %d requests still running%s\n",
                 server.activeRequests(), cut ? "" : " after the grace period");
    loop.abortAll();
  }
  if (!server.join(std::chrono::seconds(10))) {
    // A connection thread is stuck in a send to a client that does not read
    // (bounded by the write timeout); do not wait for it.
    std::fprintf(stderr, "solrun: %d connections did not close; exiting\n",
                 server.openConnections());
    std::fflush(stderr);
    std::_Exit(0);
  }
  loop.stop();
  std::fprintf(stderr, "solrun: stopped\n");
  return 0;
}

} // namespace sol
