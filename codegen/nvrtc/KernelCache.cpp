//===- KernelCache.cpp - On-disk cache of compiled kernels ----------------===//

#include "codegen/nvrtc/KernelCache.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unistd.h>

// Header-only xxHash: no shared library to ship with the static tools.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace sol::nvrtc {
namespace {

constexpr char kMagic[8] = {'S', 'O', 'L', 'K', 'C', 'C', '0', '1'};

// Length-prefixed fields, so ("ab", "c") and ("a", "bc") hash differently.
class Serializer {
public:
  void add(std::string_view bytes) {
    addSize(bytes.size());
    data_.append(bytes);
  }
  void addSize(std::uint64_t n) {
    char raw[8];
    std::memcpy(raw, &n, sizeof raw);
    data_.append(raw, sizeof raw);
  }
  const std::string &data() const { return data_; }

private:
  std::string data_;
};

class Reader {
public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool readSize(std::uint64_t &n) {
    if (data_.size() - pos_ < sizeof n)
      return false;
    std::memcpy(&n, data_.data() + pos_, sizeof n);
    pos_ += sizeof n;
    return true;
  }
  bool read(std::string &out) {
    std::uint64_t n = 0;
    if (!readSize(n) || data_.size() - pos_ < n)
      return false;
    out.assign(data_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  bool atEnd() const { return pos_ == data_.size(); }

private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

std::string hex(const unsigned char *bytes, std::size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(digits[bytes[i] >> 4]);
    out.push_back(digits[bytes[i] & 15]);
  }
  return out;
}

std::uint64_t checksum(std::string_view data) {
  return XXH3_64bits(data.data(), data.size());
}

} // namespace

std::string kernelCacheKey(const KernelSource &source,
                           const std::vector<std::string> &baseOptions,
                           const std::string &nvrtcVersion) {
  Serializer s;
  s.add("sol kernel cache key v1");
  s.add(nvrtcVersion);
  s.add(source.code);
  s.addSize(source.headers.size());
  for (const HeaderFile &header : source.headers) {
    s.add(header.name);
    s.add(header.text);
  }
  s.addSize(source.nameExpressions.size());
  for (const std::string &expr : source.nameExpressions)
    s.add(expr);
  s.addSize(baseOptions.size() + source.options.size());
  for (const std::string &option : baseOptions)
    s.add(option);
  for (const std::string &option : source.options)
    s.add(option);
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical,
                           XXH3_128bits(s.data().data(), s.data().size()));
  return hex(canonical.digest, sizeof canonical.digest);
}

std::filesystem::path defaultKernelCacheDir() {
  if (const char *dir = std::getenv("SOL_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "sol" / "kernels";
  return {};
}

std::filesystem::path KernelCache::entryPath(const std::string &key) const {
  return dir_ / (key + ".solk");
}

std::optional<CompiledKernels>
KernelCache::load(const std::string &key, const KernelSource &source) const {
  std::ifstream in(entryPath(key), std::ios::binary);
  if (!in)
    return std::nullopt;
  std::string file((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (file.size() < sizeof kMagic + sizeof(std::uint64_t) ||
      std::memcmp(file.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  std::string_view body(file.data() + sizeof kMagic,
                        file.size() - sizeof kMagic - sizeof(std::uint64_t));
  std::uint64_t stored = 0;
  std::memcpy(&stored, file.data() + file.size() - sizeof stored,
              sizeof stored);
  if (stored != checksum(body))
    return std::nullopt;

  Reader reader(body);
  CompiledKernels kernels;
  std::string cubin;
  std::uint64_t names = 0;
  if (!reader.read(cubin) || !reader.read(kernels.ptx) ||
      !reader.read(kernels.log) || !reader.readSize(names))
    return std::nullopt;
  for (std::uint64_t i = 0; i < names; ++i) {
    std::string expr, lowered;
    if (!reader.read(expr) || !reader.read(lowered))
      return std::nullopt;
    kernels.loweredNames.emplace(std::move(expr), std::move(lowered));
  }
  if (!reader.atEnd())
    return std::nullopt;
  for (const std::string &expr : source.nameExpressions)
    if (!kernels.loweredNames.count(expr))
      return std::nullopt;
  kernels.cubin.assign(cubin.begin(), cubin.end());
  kernels.fromCache = true;
  return kernels;
}

void KernelCache::store(const std::string &key,
                        const CompiledKernels &kernels) const {
  Serializer s;
  s.add(std::string_view(reinterpret_cast<const char *>(kernels.cubin.data()),
                         kernels.cubin.size()));
  s.add(kernels.ptx);
  s.add(kernels.log);
  s.addSize(kernels.loweredNames.size());
  for (const auto &[expr, lowered] : kernels.loweredNames) {
    s.add(expr);
    s.add(lowered);
  }
  const std::uint64_t sum = checksum(s.data());

  // A name unique to this process and call, renamed into place at the end:
  // readers see either no entry or a complete one.
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target = entryPath(key);
  std::filesystem::path temp = target;
  temp += ".tmp." + std::to_string(::getpid()) + "." +
          std::to_string(counter.fetch_add(1));
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      return;
    out.write(kMagic, sizeof kMagic);
    out.write(s.data().data(), static_cast<std::streamsize>(s.data().size()));
    out.write(reinterpret_cast<const char *>(&sum), sizeof sum);
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, target, ec);
  if (ec)
    std::filesystem::remove(temp, ec);
}

} // namespace sol::nvrtc
