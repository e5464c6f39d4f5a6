//===- Perplexity.cpp - solrun --perplexity: strided perplexity -----------===//
#include "tools/solrun/Perplexity.h"

#include "runtime/engine/Engine.h"
#include "runtime/engine/PerplexityWindows.h"
#include "runtime/engine/TextModel.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <span>
#include <unistd.h>
#include <utility>

namespace sol {

namespace {

std::string readWholeFile(const std::string &flag, const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(flag, ": cannot read ", path, ": ", std::strerror(errno));
  return {std::istreambuf_iterator<char>(in), {}};
}

/// One id of a --perplexity-ids file, or a sol::Error naming it.
int32_t tokenId(const std::string &item, const std::string &source) {
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(item, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX)
    fail(source, ": '", item,
         "' is not a token id (expected a JSON array of integers, or "
         "integers separated by whitespace or commas)");
  return static_cast<int32_t>(v);
}

/// Writes the logits rows of scored positions at their place in the file
/// (rows arrive per window, windows possibly interleaved).
class LogitsFile {
public:
  LogitsFile(const std::string &path, size_t vocab) : path_(path) {
    static_assert(std::endian::native == std::endian::little,
                  "--logits-out writes the host's floats as little-endian");
    rowBytes_ = vocab * sizeof(float);
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_)
      fail("--logits-out: cannot write ", path, ": ", std::strerror(errno));
  }
  ~LogitsFile() {
    if (file_)
      std::fclose(file_);
  }
  LogitsFile(const LogitsFile &) = delete;
  LogitsFile &operator=(const LogitsFile &) = delete;

  void write(int64_t index, std::span<const float> row) {
    if (index != next_ &&
        fseeko(file_, static_cast<off_t>(index) * off_t(rowBytes_), SEEK_SET))
      fail("--logits-out: cannot seek in ", path_, ": ", std::strerror(errno));
    if (std::fwrite(row.data(), sizeof(float), row.size(), file_) != row.size())
      fail("--logits-out: cannot write ", path_, ": ", std::strerror(errno));
    next_ = index + 1;
  }
  void close() {
    const int rc = std::fclose(std::exchange(file_, nullptr));
    if (rc != 0)
      fail("--logits-out: cannot write ", path_, ": ", std::strerror(errno));
  }

private:
  std::string path_;
  size_t rowBytes_ = 0;
  std::FILE *file_ = nullptr;
  int64_t next_ = 0;
};

} // namespace

std::vector<int32_t> parseTokenIdList(std::string_view text,
                                      const std::string &source) {
  std::vector<int32_t> ids;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array())
      fail(source, ": not a JSON array of token ids");
    for (const nlohmann::json &v : j) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() > INT32_MAX)
        fail(source, ": ", v.dump(),
             " is not a token id (expected a JSON array of integers)");
      ids.push_back(v.get<int32_t>());
    }
  } else {
    std::string item;
    auto flush = [&] {
      if (!item.empty())
        ids.push_back(tokenId(item, source));
      item.clear();
    };
    for (char c : text) {
      if (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n')
        flush();
      else
        item += c;
    }
    flush();
  }
  if (ids.empty())
    fail(source, " holds no token ids");
  return ids;
}

int runPerplexity(const PlanFile &file, const std::string &device,
                  ExecutorOptions executorOptions,
                  const PerplexityOptions &opts) {
  const fb::Plan &plan = file.plan();
  const int64_t vocab = plan.model()->vocab_size();

  // The ids: a file of ids, or a text encoded whole as Transformers'
  // tokenizer(text)["input_ids"] (special tokens added).
  std::vector<int32_t> ids;
  std::string source;
  if (!opts.idsFile.empty()) {
    source = opts.idsFile;
    ids = parseTokenIdList(readWholeFile("--perplexity-ids", opts.idsFile),
                           opts.idsFile);
  } else {
    source = opts.textFile;
    if (!plan.tokenizer_json() || plan.tokenizer_json()->size() == 0)
      fail(file.path().string(),
           ": the plan has no tokenizer (its checkpoint had no "
           "tokenizer.json), so --perplexity cannot encode ",
           opts.textFile,
           "; encode it elsewhere and give the ids with --perplexity-ids "
           "FILE");
    const std::string text = readWholeFile("--perplexity", opts.textFile);
    const TextModel model = TextModel::fromPlan(file);
    const auto encoded =
        model.tokenizer.encode(text, /*addSpecialTokens=*/true);
    ids.assign(encoded.begin(), encoded.end());
  }
  if (opts.limitTokens > 0 && int64_t(ids.size()) > opts.limitTokens)
    ids.resize(static_cast<size_t>(opts.limitTokens));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= vocab)
      fail(source, ": token id ", ids[i], " (at index ", i,
           ") is outside the model's vocabulary [0, ", vocab, ")");

  // Windows: W at most the model length, S = W / 2 unless given.
  const int64_t modelMax = executorOptions.maxModelLen > 0
                               ? executorOptions.maxModelLen
                               : plan.model()->max_position_embeddings();
  const int64_t window =
      opts.window > 0 ? opts.window : std::min<int64_t>(1024, modelMax);
  if (window > modelMax)
    fail("--window ", window, " exceeds the maximum model length of ", modelMax,
         executorOptions.maxModelLen > 0 ? " (--max-model-len)"
                                         : " (max_position_embeddings)");
  const int64_t stride = opts.stride > 0 ? opts.stride : window / 2;
  const std::vector<PerplexityWindow> windows =
      perplexityWindows(static_cast<int64_t>(ids.size()), window, stride);

  // Size the executor for this pass unless told otherwise: windows of W
  // ids, as many at once as one step's budget can hold (plus one being
  // finished), which is what the CPU's KV cache is sized for.
  if (executorOptions.maxModelLen == 0)
    executorOptions.maxModelLen = window;
  const int64_t budget = opts.maxNumBatchedTokens > 0 ? opts.maxNumBatchedTokens
                         : plan.max_tokens_per_step() > 0
                             ? int64_t(plan.max_tokens_per_step())
                             : 512;
  const int64_t perStep = (budget + window - 2) / (window - 1) + 1;
  executorOptions.maxSeqs = static_cast<int32_t>(std::clamp<int64_t>(
      std::min<int64_t>(perStep, int64_t(windows.size())), 1,
      opts.maxNumSeqs > 0 ? opts.maxNumSeqs : kDefaultMaxNumSeqs));
  std::unique_ptr<Executor> executor =
      makeExecutor(file, device, executorOptions);
  const bool terminal = isatty(STDERR_FILENO);
  if (terminal)
    std::fprintf(stderr, "solrun: %s\n", describeKvCache(*executor).c_str());

  EngineConfig config;
  config.vocabSize = vocab;
  config.maxModelLen = executorOptions.maxModelLen;
  config.maxNumSeqs = opts.maxNumSeqs;
  config.maxNumBatchedTokens = opts.maxNumBatchedTokens;
  Engine engine(*executor, config);

  std::vector<ScoreWindow> scoreWindows;
  int64_t numScored = 0;
  for (const PerplexityWindow &w : windows) {
    scoreWindows.push_back({std::span<const int32_t>(ids).subspan(
                                static_cast<size_t>(w.begin),
                                static_cast<size_t>(w.end - w.begin)),
                            static_cast<int32_t>(w.scoreFrom - w.begin)});
    numScored += w.end - w.scoreFrom;
  }
  std::optional<LogitsFile> logitsFile;
  if (!opts.logitsOut.empty())
    logitsFile.emplace(opts.logitsOut, static_cast<size_t>(vocab));

  // Logprobs by rank, summed in order at the end: the same sum whatever
  // the batching.
  std::vector<double> logprobs(static_cast<size_t>(numScored));
  std::vector<int32_t> argmax(
      opts.argmaxOut.empty() ? 0 : static_cast<size_t>(numScored));
  int64_t done = 0;
  auto lastProgress = std::chrono::steady_clock::now();
  auto progress = [&](bool last) {
    if (!terminal)
      return;
    const auto now = std::chrono::steady_clock::now();
    if (!last && now - lastProgress < std::chrono::milliseconds(200))
      return;
    lastProgress = now;
    std::fprintf(stderr, "\rsolrun: perplexity: %lld / %lld tokens scored%s",
                 static_cast<long long>(done),
                 static_cast<long long>(numScored), last ? "\n" : "");
    std::fflush(stderr);
  };
  engine.scoreWindows(scoreWindows, [&](const ScoredToken &s) {
    logprobs.at(static_cast<size_t>(s.index)) = s.logprob;
    if (logitsFile)
      logitsFile->write(s.index, s.logits);
    if (!argmax.empty())
      argmax.at(static_cast<size_t>(s.index)) = static_cast<int32_t>(
          std::max_element(s.logits.begin(), s.logits.end()) -
          s.logits.begin());
    ++done;
    progress(false);
  });
  progress(true);
  if (done != numScored)
    fail("internal error: ", done, " of ", numScored, " positions scored");
  if (logitsFile)
    logitsFile->close();
  if (!argmax.empty()) {
    std::FILE *f = std::fopen(opts.argmaxOut.c_str(), "wb");
    const bool ok = f && std::fwrite(argmax.data(), sizeof(int32_t),
                                     argmax.size(), f) == argmax.size();
    if (!f || std::fclose(f) != 0 || !ok)
      fail("--argmax-out: cannot write ", opts.argmaxOut, ": ",
           std::strerror(errno));
  }

  double sum = 0;
  for (double lp : logprobs)
    sum += lp;
  const double nll = -sum / double(numScored);
  if (!std::isfinite(nll))
    fail("the NLL is not finite (", nll, "): the ", executor->name(),
         " executor returned non-finite logits");
  const double perplexity = std::exp(nll);
  if (opts.json) {
    nlohmann::ordered_json j;
    j["tokens"] = numScored;
    j["nll"] = nll;
    j["perplexity"] = perplexity;
    j["window"] = window;
    j["stride"] = stride;
    j["device"] = executor->name();
    std::cout << j.dump() << "\n";
  } else {
    std::printf("perplexity %.4f  nll %.6f  tokens %lld  window %lld  stride "
                "%lld  device %s\n",
                perplexity, nll, static_cast<long long>(numScored),
                static_cast<long long>(window), static_cast<long long>(stride),
                executor->name().c_str());
  }
  return 0;
}

} // namespace sol
