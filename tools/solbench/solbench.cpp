//===- solbench.cpp - Load generator for OpenAI-compatible servers --------===//
//
//   solbench --url http://127.0.0.1:8000/v1 --concurrency 1,4,16,64
//       [--model M] [--endpoint completions|chat] [--num-prompts N]
//       [--input-len N --output-len N | --random-input-len A:B ... |
//        --dataset FILE.jsonl] [--json FILE] [--html FILE]
//   solbench --url ... --request-rate 2,4,inf [--max-concurrency C]
//
// Flag names follow vLLM's benchmark_serving.py where they exist. See
// docs/solbench.md.
//
//===----------------------------------------------------------------------===//
#include "runtime/engine/TextModel.h"
#include "runtime/support/Error.h"
#include "tools/solbench/HtmlReport.h"
#include "tools/solbench/LoadRunner.h"
#include "tools/solbench/Report.h"
#include "tools/solbench/Url.h"
#include "tools/solbench/Workload.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sys/resource.h>
#include <unistd.h>

namespace {

using namespace sol::bench;

struct Options {
  std::string url = "http://127.0.0.1:8000/v1";
  std::string model;
  std::string apiKey;
  std::string endpoint = "completions";
  std::string concurrency;
  std::string requestRate;
  int32_t maxConcurrency = 0;
  int32_t numPrompts = 0;
  int32_t warmup = 0;
  std::string inputLen, outputLen, randomInputLen, randomOutputLen;
  std::string dataset;
  uint64_t seed = 0;
  bool ignoreEos = true;
  bool ignoreEosGiven = false;
  int64_t vocabSize = 0;
  std::string tokenizer;
  double temperature = 0;
  std::string jsonPath, htmlPath;
  bool saveDetailed = false;
  double timeoutS = 600;
  bool failOnError = false;
};

/// "1,4,16" -> {1, 4, 16}.
std::vector<int32_t> parseConcurrency(const std::string &text) {
  std::vector<int32_t> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma - pos);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > 100000)
      sol::fail("--concurrency: '", item,
                "' is not a number of requests from 1 to 100000 (expected a "
                "comma-separated list such as 1,4,16,64)");
    out.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos)
      return out;
    pos = comma + 1;
  }
}

/// "2,4.5,inf" -> {2, 4.5, inf}.
std::vector<double> parseRates(const std::string &text) {
  std::vector<double> out;
  size_t pos = 0;
  while (true) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma - pos);
    double v = 0;
    if (item == "inf") {
      v = INFINITY;
    } else {
      size_t used = 0;
      try {
        v = std::stod(item, &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0 || used != item.size() || !(v > 0) || std::isinf(v))
        sol::fail("--request-rate: '", item,
                  "' is not a positive number of requests per second or "
                  "'inf' (expected e.g. 4 or 1,2,4,inf)");
    }
    out.push_back(v);
    if (comma == std::string::npos)
      return out;
    pos = comma + 1;
  }
}

/// Fails now, not after the run, when `path` cannot be written.
void checkWritable(const char *flag, const std::string &path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty())
    dir = ".";
  if (!fs::is_directory(dir))
    sol::fail(flag, ": the directory '", dir.string(), "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0 ||
      (fs::exists(path) && ::access(path.c_str(), W_OK) != 0))
    sol::fail(flag, ": cannot write '", path, "'");
}

void writeFile(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    sol::fail("cannot write '", path, "'");
}

std::string utcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string rangeText(LengthRange r) {
  return r.lo == r.hi ? std::to_string(r.lo) : sol::cat(r.lo, ":", r.hi);
}

/// Many requests at once need many sockets: raise the soft limit on open
/// files to the hard one.
void raiseFileLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

int run(Options &o) {
  // --- Check every flag before contacting the server.
  if (!o.concurrency.empty() && !o.requestRate.empty())
    sol::fail("give --concurrency (a sweep of fixed concurrency) or "
              "--request-rate (Poisson arrivals), not both");
  if (o.maxConcurrency > 0 && o.requestRate.empty())
    sol::fail("--max-concurrency goes with --request-rate (with "
              "--concurrency, each level is its own limit)");
  const bool rateMode = !o.requestRate.empty();
  std::vector<int32_t> concurrencies;
  std::vector<double> rates;
  if (rateMode)
    rates = parseRates(o.requestRate);
  else
    concurrencies =
        parseConcurrency(o.concurrency.empty() ? "1,4,16,64" : o.concurrency);
  if (o.timeoutS <= 0)
    sol::fail("--timeout must be > 0 seconds, got ", o.timeoutS);
  if (o.temperature < 0)
    sol::fail("--temperature must be >= 0, got ", o.temperature);
  const Endpoint endpoint =
      o.endpoint == "chat" ? Endpoint::Chat : Endpoint::Completions;
  const bool useDataset = !o.dataset.empty();
  if (!o.inputLen.empty() && !o.randomInputLen.empty())
    sol::fail("give --input-len or --random-input-len, not both");
  if (!o.outputLen.empty() && !o.randomOutputLen.empty())
    sol::fail("give --output-len or --random-output-len, not both");
  if (useDataset && (!o.inputLen.empty() || !o.randomInputLen.empty()))
    sol::fail("--input-len and --random-input-len make synthetic prompts; "
              "the prompts of --dataset have their own lengths");
  if (useDataset && o.vocabSize)
    sol::fail("--vocab-size goes with synthetic prompts, not --dataset");
  if (endpoint == Endpoint::Chat && o.vocabSize && o.tokenizer.empty())
    sol::fail("--vocab-size has no effect with --endpoint chat without "
              "--tokenizer (the prompts are made of words)");
  auto fixed = [](const std::string &flag, const std::string &text) {
    if (text.find(':') != std::string::npos)
      sol::fail(flag, " takes one length; use --random-", flag.substr(2),
                " A:B for a range");
    return parseLengthRange(flag, text);
  };
  LengthRange inputLen{1024, 1024}, outputLen{128, 128};
  bool outputGiven = true;
  if (!o.inputLen.empty())
    inputLen = fixed("--input-len", o.inputLen);
  else if (!o.randomInputLen.empty())
    inputLen = parseLengthRange("--random-input-len", o.randomInputLen);
  if (!o.outputLen.empty())
    outputLen = fixed("--output-len", o.outputLen);
  else if (!o.randomOutputLen.empty())
    outputLen = parseLengthRange("--random-output-len", o.randomOutputLen);
  else
    outputGiven = false;
  if (!o.jsonPath.empty())
    checkWritable("--json", o.jsonPath);
  if (!o.htmlPath.empty())
    checkWritable("--html", o.htmlPath);
  const HttpUrl url = [&] {
    try {
      return parseHttpUrl(o.url);
    } catch (const sol::Error &e) {
      sol::fail("--url ", e.what());
    }
  }();
  // Synthetic prompts should produce exactly their output length.
  const bool ignoreEos = o.ignoreEosGiven ? o.ignoreEos : !useDataset;

  // --- The workload.
  std::optional<sol::TextModel> text;
  if (!o.tokenizer.empty())
    text.emplace(sol::TextModel::load(o.tokenizer));
  const sol::Tokenizer *tokenizer = text ? &text->tokenizer : nullptr;
  IdRange ids;
  if (o.vocabSize)
    ids = idRangeForVocab(o.vocabSize);
  else if (tokenizer && static_cast<int64_t>(tokenizer->size()) < ids.hi)
    ids = idRangeForVocab(static_cast<int64_t>(tokenizer->size()));
  const Workload workload =
      useDataset ? Workload::dataset(o.dataset, endpoint,
                                     outputGiven ? std::optional(outputLen)
                                                 : std::nullopt,
                                     tokenizer, o.seed)
                 : Workload::synthetic(endpoint, inputLen, outputLen, ids,
                                       tokenizer, o.seed);

  // --- The levels.
  std::vector<LevelSpec> levels;
  auto numPrompts = [&](const LevelSpec &s) -> int32_t {
    if (o.numPrompts > 0)
      return o.numPrompts;
    if (useDataset)
      return static_cast<int32_t>(workload.datasetSize());
    return s.kind == LevelSpec::Kind::Concurrency
               ? std::max(16, 4 * s.concurrency)
               : 200;
  };
  for (int32_t c : concurrencies) {
    LevelSpec s;
    s.kind = LevelSpec::Kind::Concurrency;
    s.concurrency = c;
    levels.push_back(s);
  }
  for (double r : rates) {
    LevelSpec s;
    s.kind = LevelSpec::Kind::Rate;
    s.rate = r;
    s.maxConcurrency = o.maxConcurrency;
    levels.push_back(s);
  }
  for (LevelSpec &s : levels) {
    s.numPrompts = numPrompts(s);
    s.warmup = o.warmup;
  }

  // --- The server.
  ClientOptions client;
  client.endpoint = endpoint;
  client.model = o.model;
  client.apiKey = o.apiKey;
  client.ignoreEos = ignoreEos;
  client.temperature = o.temperature;
  client.timeoutS = o.timeoutS;
  OpenAiClient openai(url, client);
  // One request up front: is the server there, is the key right, which model?
  const ModelList models = openai.listModels();
  if (models.status == 401 || models.status == 403)
    sol::fail("GET ", url.str(), "/models: ", models.error,
              o.apiKey.empty() ? " (no API key given: use --api-key or "
                                 "OPENAI_API_KEY)"
                               : " (check --api-key or OPENAI_API_KEY)");
  if (o.model.empty()) {
    if (!models.error.empty())
      sol::fail("GET ", url.str(), "/models: ", models.error,
                "; give --model to skip this lookup");
    if (models.ids.empty())
      sol::fail("GET ", url.str(), "/models: the server lists no model");
    openai.setModel(models.ids[0]);
  } else if (models.error.empty() &&
             std::find(models.ids.begin(), models.ids.end(), o.model) ==
                 models.ids.end()) {
    std::string served;
    for (const std::string &id : models.ids)
      served += (served.empty() ? "" : ", ") + id;
    std::cerr << "solbench: warning: the server lists no model '" << o.model
              << "' (it serves: " << served << ")\n";
  }
  const std::string model = openai.options().model;

  // --- The configuration, as the reports record it.
  const std::string workloadText =
      useDataset ? sol::cat("dataset ", o.dataset)
                 : sol::cat("input ", rangeText(inputLen), " tokens",
                            endpoint == Endpoint::Chat && !tokenizer
                                ? " (about: words)"
                                : "",
                            ", output ", rangeText(outputLen), " tokens");
  nlohmann::ordered_json config;
  config["url"] = url.str();
  config["model"] = model;
  config["endpoint"] = o.endpoint;
  config["mode"] = rateMode ? "request_rate" : "concurrency";
  if (rateMode) {
    nlohmann::ordered_json r = nlohmann::ordered_json::array();
    for (double v : rates)
      r.push_back(std::isinf(v) ? nlohmann::ordered_json("inf")
                                : nlohmann::ordered_json(v));
    config["request_rates"] = r;
    config["max_concurrency"] = o.maxConcurrency > 0
                                    ? nlohmann::ordered_json(o.maxConcurrency)
                                    : nlohmann::ordered_json(nullptr);
  } else {
    config["concurrency"] = concurrencies;
  }
  config["num_prompts"] = o.numPrompts > 0
                              ? nlohmann::ordered_json(o.numPrompts)
                              : nlohmann::ordered_json("auto");
  config["warmup"] = o.warmup;
  config["workload"] = workloadText;
  if (useDataset) {
    config["dataset"] = o.dataset;
    config["dataset_requests"] = workload.datasetSize();
  } else {
    config["input_len"] = {inputLen.lo, inputLen.hi};
    if (endpoint == Endpoint::Completions || tokenizer)
      config["token_id_range"] = {ids.lo, ids.hi};
  }
  if (outputGiven || !useDataset)
    config["output_len"] = {outputLen.lo, outputLen.hi};
  config["tokenizer"] = o.tokenizer.empty()
                            ? nlohmann::ordered_json(nullptr)
                            : nlohmann::ordered_json(o.tokenizer);
  config["ignore_eos"] = ignoreEos;
  config["temperature"] = o.temperature;
  config["seed"] = o.seed;
  config["timeout_s"] = o.timeoutS;
  config["date"] = utcNow();

  std::cout << "solbench: " << model << " at " << url.str() << " ("
            << o.endpoint << "), " << workloadText << "\n";
  std::cout.flush();

  // --- The sweep.
  raiseFileLimit();
  Progress progress(isatty(STDERR_FILENO));
  std::vector<LevelReport> reports;
  nlohmann::ordered_json levelsJson = nlohmann::ordered_json::array();
  std::string fatal;
  for (size_t i = 0; i < levels.size(); ++i) {
    const LevelSpec &s = levels[i];
    std::vector<Prompt> prompts =
        workload.prompts(i, static_cast<size_t>(s.warmup + s.numPrompts));
    std::vector<Prompt> warmup(prompts.begin(), prompts.begin() + s.warmup);
    prompts.erase(prompts.begin(), prompts.begin() + s.warmup);
    std::vector<int32_t> asked;
    for (const Prompt &p : prompts)
      asked.push_back(p.maxTokens);
    const LevelRun run =
        runLevel(openai, s, warmup, prompts, o.seed, i, progress);
    reports.push_back(summarizeLevel(run, asked));
    nlohmann::ordered_json j = levelJson(reports.back());
    if (o.saveDetailed)
      j["requests"] = requestsJson(run);
    levelsJson.push_back(std::move(j));
    if (reports.back().completed == 0) {
      fatal = sol::cat("every request of ", s.label(), " failed (",
                       reports.back().failures.begin()->first, ")",
                       i + 1 < levels.size() ? "; the sweep stops here" : "");
      break;
    }
  }

  printTable(std::cout, reports);
  std::cout.flush();
  printNotes(std::cerr, reports);
  if (!o.jsonPath.empty()) {
    nlohmann::ordered_json out;
    out["config"] = config;
    out["levels"] = levelsJson;
    writeFile(o.jsonPath, out.dump(2, ' ', false,
                                   nlohmann::json::error_handler_t::replace) +
                              "\n");
  }
  if (!o.htmlPath.empty())
    writeFile(o.htmlPath, htmlReport(config, reports));
  if (!fatal.empty())
    sol::fail(fatal);
  size_t failed = 0;
  for (const LevelReport &r : reports)
    failed += r.failed;
  if (failed && o.failOnError)
    sol::fail(failed, " requests failed (--fail-on-error)");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"solbench: load generator for OpenAI-compatible servers "
               "(see docs/solbench.md)"};
  Options o;
  if (const char *key = std::getenv("OPENAI_API_KEY"))
    o.apiKey = key;
  app.add_option("--url", o.url,
                 "base URL of the API (default http://127.0.0.1:8000/v1; "
                 "/v1 is assumed when the URL has no path)");
  app.add_option("--model", o.model,
                 "model name to send (default: the first id of GET "
                 "/v1/models)");
  app.add_option("--api-key", o.apiKey,
                 "Bearer token (default: $OPENAI_API_KEY)");
  app.add_option("--endpoint", o.endpoint,
                 "completions (/v1/completions, prompts of token ids) or chat "
                 "(/v1/chat/completions)")
      ->check(CLI::IsMember({"completions", "chat"}));
  app.add_option("--concurrency", o.concurrency,
                 "requests in flight, one level after another: e.g. "
                 "1,4,16,64 (the default)");
  app.add_option("--request-rate", o.requestRate,
                 "Poisson arrivals at R requests/s instead ('inf': all at "
                 "once); a list such as 1,2,4 sweeps");
  app.add_option("--max-concurrency", o.maxConcurrency,
                 "with --request-rate: requests in flight at most")
      ->check(CLI::Range(1, 100000));
  app.add_option("--num-prompts", o.numPrompts,
                 "measured requests per level (default: 4 x the concurrency, "
                 "at least 16; 200 with --request-rate; the dataset's lines "
                 "with --dataset)")
      ->check(CLI::Range(1, 10000000));
  app.add_option("--warmup", o.warmup,
                 "requests sent before each level and not counted (default "
                 "0)")
      ->check(CLI::Range(0, 10000000));
  app.add_option("--input-len", o.inputLen,
                 "prompt tokens of synthetic requests (default 1024)");
  app.add_option("--output-len", o.outputLen,
                 "tokens to generate per request (default 128; with "
                 "--dataset it replaces the lines' max_tokens)");
  app.add_option("--random-input-len", o.randomInputLen,
                 "prompt tokens uniform in A:B");
  app.add_option("--random-output-len", o.randomOutputLen,
                 "output tokens uniform in A:B");
  app.add_option("--dataset", o.dataset,
                 "JSONL file, a request per line: {\"prompt\": \"...\", "
                 "\"max_tokens\": N} or {\"messages\": [...], \"max_tokens\": "
                 "N}");
  app.add_option("--seed", o.seed, "seed of prompts and arrivals (default 0)");
  app.add_flag("--ignore-eos,!--no-ignore-eos", o.ignoreEos,
               "send ignore_eos: true so every request generates its whole "
               "output length (default: on for synthetic prompts, off for "
               "--dataset)");
  app.add_option("--vocab-size", o.vocabSize,
                 "synthetic prompt ids are drawn from [m, N-m), m = "
                 "min(1000, N/4) (default: ids 1000..19999)");
  app.add_option("--tokenizer", o.tokenizer,
                 "model directory or plan whose tokenizer makes synthetic "
                 "chat text of exact token length");
  app.add_option("--temperature", o.temperature,
                 "sampling temperature sent (default 0: greedy)");
  app.add_option("--json", o.jsonPath,
                 "write every level's figures and the configuration here");
  app.add_option("--html", o.htmlPath,
                 "write a self-contained HTML report with charts here");
  app.add_flag("--save-detailed", o.saveDetailed,
               "with --json: also each request's timings");
  app.add_option("--timeout", o.timeoutS,
                 "seconds a request may take, connecting included (default "
                 "600)");
  app.add_flag("--fail-on-error", o.failOnError,
               "exit non-zero when any request fails (default: only when "
               "every request of a level fails)");
  CLI::Option *ignoreEosFlag = app.get_option("--ignore-eos");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  o.ignoreEosGiven = ignoreEosFlag->count() > 0;
  try {
    return run(o);
  } catch (const sol::Error &e) {
    std::cerr << "solbench: error: " << e.what() << "\n";
    return 1;
  }
}
