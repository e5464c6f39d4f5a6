//===- PlanFile.h - Reading and writing Sol plan files ----------*- C++ -*-===//
//
// A plan file is
//
//   PlanHeader (256 bytes: magic "SOLPLAN\0", format version, sizes, xxh64)
//   metadata   (a flatbuffer, schema Plan.fbs)
//   sections   (raw bytes, each 256-byte aligned: weights, cubins, PTX,
//               tokenizer files)
//
// The checksum covers everything after the header. The reader maps the file
// and rejects a wrong magic or version, a truncated file, a checksum
// mismatch or malformed metadata with a sol::Error, never a crash. The plan
// format is the only contract between solc and solrun; codegen writes it
// through PlanWriter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/plan/Plan_generated.h"
#include "runtime/support/MappedFile.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace sol {

inline constexpr char kPlanMagic[8] = {'S', 'O', 'L', 'P', 'L', 'A', 'N', '\0'};
/// Bumped when plans of an older solc would not run: 2 changed the
/// paged-attention kernels' arguments (in-kernel split merge, fused rope),
/// 3 the embedding kernel's (chained ids of async scheduling), 4 made ops
/// typed tables (Plan.fbs OpParams) and kernels take one argument struct, 5
/// added quantized linear weights (an older solrun would read their codes
/// as bf16), 6 norms with a second weight (an older solrun would skip
/// Gemma's post-norms and Gemma 3's k norms) and the GeGLU epilogue.
inline constexpr uint32_t kPlanFormatVersion = 9;
inline constexpr uint64_t kPlanAlignment = 256;

/// The fixed-size header at the start of every plan file (little-endian).
struct PlanHeader {
  char magic[8];
  uint32_t formatVersion;
  uint32_t headerSize;     // sizeof(PlanHeader)
  uint64_t metadataOffset; // from the start of the file
  uint64_t metadataSize;
  uint64_t sectionsOffset; // 256-aligned
  uint64_t sectionsSize;
  uint64_t fileSize;
  uint64_t checksum; // xxh64 (seed 0) of bytes [headerSize, fileSize)
  uint8_t reserved[256 - 64];
};
static_assert(sizeof(PlanHeader) == 256);

/// A plan opened for reading: the file stays mapped while this lives.
class PlanFile {
public:
  struct Options {
    bool verifyChecksum = true;
  };
  /// Maps and validates `path`. Throws sol::Error naming the file and the
  /// problem (not a plan, other format version, truncated, corrupted).
  static PlanFile open(const std::filesystem::path &path, Options options);
  static PlanFile open(const std::filesystem::path &path) {
    return open(path, Options{});
  }

  /// The plan embedded in section `s` of this one (a draft model packed by
  /// solc --draft), validated as a file is; it shares this plan's mapping.
  /// `label` names it in messages. Throws sol::Error.
  PlanFile embedded(const fb::Section &s, const std::string &label,
                    Options options) const;

  const fb::Plan &plan() const { return *plan_; }
  const PlanHeader &header() const { return header_; }
  /// The file, or for an embedded plan its label.
  const std::filesystem::path &path() const { return path_; }

  /// The bytes of a section; validated against the file at open.
  std::span<const std::byte> section(const fb::Section &s) const;
  std::span<const std::byte> section(const fb::Section *s) const;
  /// The bytes of weight `index` (Plan.weights) that tensor-parallel rank
  /// `rank` holds (its shard, or the whole weight when it is not sharded).
  std::span<const std::byte> weightBytes(int index, int rank = 0) const;

private:
  PlanFile(std::shared_ptr<const MappedFile> file,
           std::span<const std::byte> bytes, std::filesystem::path path)
      : file_(std::move(file)), bytes_(bytes), path_(std::move(path)) {}
  /// Checks bytes_ as a plan and sets header_ and plan_.
  void validate(Options options);
  std::shared_ptr<const MappedFile> file_;
  std::span<const std::byte> bytes_; // the plan's bytes within file_
  std::filesystem::path path_;
  PlanHeader header_{};
  const fb::Plan *plan_ = nullptr;
};

/// Writes a plan: sections are streamed to the file as they are added (a
/// 16 GB model never sits in memory), the metadata last, then the header
/// with the checksum.
class PlanWriter {
public:
  /// Starts writing `path` (replaced atomically on finish()).
  explicit PlanWriter(std::filesystem::path path);
  ~PlanWriter();
  PlanWriter(const PlanWriter &) = delete;
  PlanWriter &operator=(const PlanWriter &) = delete;

  /// Appends a section of `size` bytes, 256-byte aligned. `fill` is called
  /// with consecutive chunks to write and must write exactly `size` bytes in
  /// all through the `write` callback it is given.
  using WriteFn = std::function<void(std::span<const std::byte>)>;
  fb::Section addSection(uint64_t size,
                         const std::function<void(const WriteFn &)> &fill);
  fb::Section addSection(std::span<const std::byte> bytes);

  /// Writes the metadata (a finished flatbuffer whose root is fb::Plan) and
  /// the header, and renames the temporary file to the final path.
  void finish(std::span<const uint8_t> metadata);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace sol
