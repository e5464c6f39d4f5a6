//===- TokenizerBench.cpp - Throughput of sol::Tokenizer ------------------===//
//
// tokenizer_bench [--tokenizers DIR] [--families qwen3,llama3.1] [--mb N]
//                 [--inputs prose,code,spaces,digits,one-word]
//                 [--write-inputs DIR]
//
// --write-inputs writes the generated texts to DIR/<input>.txt and exits, so
// that hf-tokenizer-baseline.py can time Hugging Face on the same bytes.
//
// For each family: load time of tokenizer.json, then encode and decode
// throughput (MB of UTF-8 text per second, one thread) on N MB (default 1)
// of generated English prose, generated code, and three adversarial inputs
// (one long run of spaces, of digits, of one letter) that would expose
// quadratic behaviour. The texts are generated deterministically here, so
// runs are comparable. Prints a JSON object, then a table.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/Error.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// CPU time of this process: on a shared machine it varies less than the
/// wall clock.
double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// xorshift64*: a fixed, portable sequence (std distributions are not).
class Random {
public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }
  std::size_t below(std::size_t n) { return next() % n; }
  template <typename T, std::size_t N> const T &pick(const T (&items)[N]) {
    return items[below(N)];
  }

private:
  std::uint64_t state_;
};

std::string makeProse(std::size_t bytes) {
  static const char *words[] = {"the",
                                "of",
                                "and",
                                "to",
                                "in",
                                "a",
                                "is",
                                "that",
                                "for",
                                "it",
                                "as",
                                "was",
                                "with",
                                "be",
                                "by",
                                "on",
                                "not",
                                "he",
                                "I",
                                "this",
                                "are",
                                "or",
                                "his",
                                "from",
                                "at",
                                "which",
                                "but",
                                "have",
                                "an",
                                "had",
                                "they",
                                "you",
                                "were",
                                "their",
                                "one",
                                "all",
                                "we",
                                "can",
                                "her",
                                "has",
                                "there",
                                "been",
                                "if",
                                "more",
                                "when",
                                "will",
                                "would",
                                "who",
                                "so",
                                "no",
                                "model",
                                "memory",
                                "compiler",
                                "throughput",
                                "government",
                                "history",
                                "language",
                                "understanding",
                                "particularly",
                                "nevertheless",
                                "extraordinary",
                                "responsibility",
                                "don't",
                                "it's",
                                "we'll",
                                "they're",
                                "Transformers",
                                "London",
                                "September",
                                "1987",
                                "3.5",
                                "42",
                                "2,000"};
  static const char *ends[] = {".", ".", ".", "?", "!", ",", ";", ":"};
  Random random(42);
  std::string text;
  text.reserve(bytes + 64);
  bool capitalize = true;
  while (text.size() < bytes) {
    std::string word = random.pick(words);
    if (capitalize && word[0] >= 'a' && word[0] <= 'z')
      word[0] = static_cast<char>(word[0] - 'a' + 'A');
    text += word;
    capitalize = false;
    if (random.below(9) == 0) {
      const std::string end = random.pick(ends);
      text += end;
      capitalize = end == "." || end == "?" || end == "!";
      if (capitalize && random.below(6) == 0) {
        text += "\n\n";
        continue;
      }
    }
    text += ' ';
  }
  text.resize(bytes);
  return text;
}

std::string makeCode(std::size_t bytes) {
  static const char *names[] = {"count",  "buffer", "index", "result",
                                "tokens", "offset", "size",  "value",
                                "node",   "ctx",    "i",     "j"};
  static const char *types[] = {"int",  "std::size_t", "float",
                                "auto", "std::string", "std::vector<int>"};
  Random random(7);
  std::string text;
  text.reserve(bytes + 256);
  int function = 0;
  while (text.size() < bytes) {
    if (random.below(2) == 0) {
      const std::string a = random.pick(names), b = random.pick(names);
      text += "def fn_" + std::to_string(function++) + "(" + a + ", " + b +
              "=None):\n    \"\"\"Return the " + a + " of " + b + ".\"\"\"\n";
      text += "    if " + b + " is None:\n        " + b + " = []\n";
      text += "    for k in range(len(" + a + ")):\n        " + b + ".append(" +
              a + "[k] * " + std::to_string(random.below(100)) +
              ")\n    return {'" + a + "': " + b +
              ", \"n\": " + std::to_string(random.below(100000)) + "}\n\n";
    } else {
      const std::string t = random.pick(types), a = random.pick(names),
                        b = random.pick(names);
      text += "static " + t + " compute_" + std::to_string(function++) +
              "(const " + t + " &" + a + ", int " + b + ") {\n  " + t +
              " out{};\n  for (int i = 0; i < " + b +
              "; ++i) {\n    out += " + a +
              "[i] << 2; // shift\n  }\n  return out;\n}\n\n";
    }
  }
  text.resize(bytes);
  return text;
}

struct Result {
  std::string family, input;
  double megabytes, encodeSeconds, encodeWarmSeconds, decodeSeconds;
  std::size_t tokens;
};

Result measure(const sol::Tokenizer &tokenizer, const std::string &family,
               const std::string &input, const std::string &text) {
  Result r{family, input, text.size() / 1e6, 0, 0, 0, 0};
  auto start = Clock::now();
  std::vector<sol::TokenId> ids = tokenizer.encode(text);
  r.encodeSeconds = secondsSince(start);
  start = Clock::now();
  ids = tokenizer.encode(text); // the word cache is now warm
  r.encodeWarmSeconds = secondsSince(start);
  r.tokens = ids.size();
  start = Clock::now();
  const std::string decoded = tokenizer.decode(ids);
  r.decodeSeconds = secondsSince(start);
  if (decoded.size() != text.size())
    std::cerr << "warning: " << family << "/" << input
              << ": decode changed the length (normalization?)\n";
  return r;
}

} // namespace

int main(int argc, char **argv) {
  try {
    // The test tokenizers that scripts/setup fetches; run from the root.
    std::string dir = "third_party/tokenizers";
    if (const char *root = std::getenv("SOL_SOURCE_DIR"))
      dir = std::string(root) + "/" + dir;
    std::vector<std::string> families = {"qwen3", "llama3.1"};
    std::vector<std::string> inputNames = {"prose", "code", "spaces", "digits",
                                           "one-word"};
    auto splitList = [](const std::string &list) {
      std::vector<std::string> items;
      for (std::size_t pos = 0; pos <= list.size();) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        if (comma > pos)
          items.push_back(list.substr(pos, comma - pos));
        pos = comma + 1;
      }
      return items;
    };
    double megabytes = 1.0;
    std::string writeInputsTo;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--tokenizers" && i + 1 < argc) {
        dir = argv[++i];
      } else if (arg == "--families" && i + 1 < argc) {
        families = splitList(argv[++i]);
      } else if (arg == "--inputs" && i + 1 < argc) {
        inputNames = splitList(argv[++i]);
      } else if (arg == "--write-inputs" && i + 1 < argc) {
        writeInputsTo = argv[++i];
      } else if (arg == "--mb" && i + 1 < argc) {
        megabytes = std::atof(argv[++i]);
        if (megabytes <= 0)
          sol::fail("--mb needs a positive number of megabytes");
      } else {
        std::cerr << "usage: tokenizer_bench [--tokenizers DIR] "
                     "[--families qwen3,llama3.1] [--mb N] "
                     "[--inputs prose,code,spaces,digits,one-word] "
                     "[--write-inputs DIR]\n";
        return 2;
      }
    }
    const auto bytes = static_cast<std::size_t>(megabytes * 1e6);
    std::vector<std::pair<std::string, std::string>> inputs;
    for (const std::string &name : inputNames) {
      if (name == "prose")
        inputs.emplace_back(name, makeProse(bytes));
      else if (name == "code")
        inputs.emplace_back(name, makeCode(bytes));
      else if (name == "spaces")
        inputs.emplace_back(name, std::string(bytes, ' '));
      else if (name == "digits")
        inputs.emplace_back(name, std::string(bytes, '7'));
      else if (name == "one-word")
        inputs.emplace_back(name, std::string(bytes, 'a'));
      else
        sol::fail("unknown input \"", name,
                  "\" (expected prose, code, spaces, digits, one-word)");
    }

    if (!writeInputsTo.empty()) {
      for (const auto &[name, text] : inputs) {
        const std::string path = writeInputsTo + "/" + name + ".txt";
        std::ofstream out(path, std::ios::binary);
        out << text;
        if (!out)
          sol::fail("cannot write ", path);
      }
      return 0;
    }

    nlohmann::json report = {{"bench", "tokenizer"}, {"megabytes", megabytes}};
    std::vector<Result> results;
    for (const std::string &family : families) {
      const auto start = Clock::now();
      const double cpuStart = cpuSeconds();
      const sol::Tokenizer tokenizer =
          sol::Tokenizer::fromDirectory(dir + "/" + family);
      report["load_seconds"][family] = secondsSince(start);
      report["load_cpu_seconds"][family] = cpuSeconds() - cpuStart;
      for (const auto &[name, text] : inputs) {
        const Result r = measure(tokenizer, family, name, text);
        results.push_back(r);
        report["results"].push_back(
            {{"family", family},
             {"input", name},
             {"tokens", r.tokens},
             {"encode_mb_per_s", r.megabytes / r.encodeSeconds},
             {"encode_warm_mb_per_s", r.megabytes / r.encodeWarmSeconds},
             {"decode_mb_per_s", r.megabytes / r.decodeSeconds}});
      }
    }
    std::cout << report.dump(2) << "\n\n";
    for (const auto &[family, seconds] : report["load_seconds"].items())
      std::printf("load %-9s %7.3f s (CPU %.3f s)\n", family.c_str(),
                  seconds.get<double>(),
                  report["load_cpu_seconds"][family].get<double>());
    std::printf("\n%-9s %-9s %9s %12s %12s %12s\n", "family", "input", "tokens",
                "encode MB/s", "warm MB/s", "decode MB/s");
    for (const Result &r : results)
      std::printf("%-9s %-9s %9zu %12.2f %12.2f %12.1f\n", r.family.c_str(),
                  r.input.c_str(), r.tokens, r.megabytes / r.encodeSeconds,
                  r.megabytes / r.encodeWarmSeconds,
                  r.megabytes / r.decodeSeconds);
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "tokenizer_bench: " << e.what() << "\n";
    return 1;
  }
}
