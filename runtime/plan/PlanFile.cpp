//===- PlanFile.cpp - Reading and writing Sol plan files ------------------===//
#include "runtime/plan/PlanFile.h"

#include "runtime/support/Error.h"

// Header-only xxHash: no shared library to carry to the GPU machines.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace sol {

namespace {

uint64_t alignUp(uint64_t n) {
  return (n + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

std::string versionHint(uint32_t version) {
  return version > kPlanFormatVersion
             ? "it was written by a newer solc; upgrade solrun"
             : "it was written by an older solc; compile the model again "
               "with this version's solc";
}

} // namespace

//===----------------------------------------------------------------------===//
// PlanFile
//===----------------------------------------------------------------------===//

PlanFile PlanFile::open(const std::filesystem::path &path, Options options) {
  auto file = std::make_shared<const MappedFile>(MappedFile::open(path));
  std::span<const std::byte> bytes = file->bytes();
  PlanFile plan(std::move(file), bytes, path);
  plan.validate(options);
  return plan;
}

PlanFile PlanFile::embedded(const fb::Section &s, const std::string &label,
                            Options options) const {
  PlanFile plan(file_, section(s), label);
  plan.validate(options);
  return plan;
}

void PlanFile::validate(Options options) {
  std::span<const std::byte> bytes = bytes_;
  const std::string where = path_.string();
  PlanFile &plan = *this;
  if (bytes.size() < sizeof(kPlanMagic) ||
      std::memcmp(bytes.data(), kPlanMagic, sizeof(kPlanMagic)) != 0)
    fail(where, ": not a Sol plan (no SOLPLAN magic); plans are made by solc");
  if (bytes.size() < sizeof(PlanHeader))
    fail(where, ": truncated plan: ", bytes.size(),
         " bytes, shorter than the 256-byte header");
  PlanHeader &h = plan.header_;
  std::memcpy(&h, bytes.data(), sizeof(PlanHeader));
  if (h.formatVersion != kPlanFormatVersion)
    fail(where, ": plan format version ", h.formatVersion,
         " but this solrun reads version ", kPlanFormatVersion, "; ",
         versionHint(h.formatVersion));
  if (h.headerSize != sizeof(PlanHeader))
    fail(where, ": corrupted plan header (header size ", h.headerSize, ")");
  if (h.fileSize != bytes.size())
    fail(where, ": ",
         bytes.size() < h.fileSize ? "truncated plan" : "plan has extra bytes",
         ": the header says ", h.fileSize, " bytes but the file has ",
         bytes.size(), " (incomplete copy or download?)");
  auto inside = [&](uint64_t offset, uint64_t size) {
    return offset >= sizeof(PlanHeader) && offset <= h.fileSize &&
           size <= h.fileSize - offset;
  };
  if (!inside(h.metadataOffset, h.metadataSize) ||
      !inside(h.sectionsOffset, h.sectionsSize) ||
      h.sectionsOffset % kPlanAlignment != 0 ||
      h.metadataOffset != h.sectionsOffset + h.sectionsSize ||
      h.metadataOffset + h.metadataSize != h.fileSize)
    fail(where, ": corrupted plan header (metadata or sections outside the "
                "file)");
  if (options.verifyChecksum) {
    uint64_t sum = XXH64(bytes.data() + sizeof(PlanHeader),
                         bytes.size() - sizeof(PlanHeader), 0);
    if (sum != h.checksum)
      fail(where, ": plan checksum mismatch (the file is corrupted); compile "
                  "the model again with solc");
  }
  const auto *meta =
      reinterpret_cast<const uint8_t *>(bytes.data() + h.metadataOffset);
  flatbuffers::Verifier verifier(meta, h.metadataSize);
  if (!fb::VerifyPlanBuffer(verifier))
    fail(where, ": corrupted plan metadata (flatbuffer does not verify)");
  plan.plan_ = fb::GetPlan(meta);

  // Every section the metadata names must lie inside the sections region,
  // so that later accessors cannot read outside the mapping.
  auto checkSection = [&](const fb::Section *s, const std::string &what) {
    if (s && (s->offset() > h.sectionsSize ||
              s->size() > h.sectionsSize - s->offset()))
      fail(where, ": corrupted plan: section of ", what,
           " lies outside the file");
  };
  const fb::Plan &p = *plan.plan_;
  if (p.tensor_parallel_size() < 1)
    fail(where, ": corrupted plan: tensor_parallel_size is ",
         p.tensor_parallel_size());
  if (p.weights())
    for (const fb::Weight *w : *p.weights()) {
      std::string name = w->name() ? w->name()->str() : "?";
      if (!w->data())
        fail(where, ": corrupted plan: weight ", name, " has no data");
      checkSection(w->data(), "weight " + name);
      if (const auto *ranks = w->rank_data()) {
        if (ranks->size() != static_cast<uint32_t>(p.tensor_parallel_size()))
          fail(where, ": corrupted plan: weight ", name, " has ", ranks->size(),
               " rank shards but the plan has ", p.tensor_parallel_size(),
               " tensor-parallel ranks");
        for (const fb::Section *s : *ranks)
          checkSection(s, "weight " + name);
      }
    }
  if (p.modules())
    for (const fb::Module *m : *p.modules()) {
      checkSection(m->cubin(), "a kernel cubin");
      checkSection(m->ptx(), "a kernel PTX");
    }
  checkSection(p.tokenizer_json(), "tokenizer.json");
  checkSection(p.tokenizer_config_json(), "tokenizer_config.json");
  checkSection(p.draft_plan(), "the draft plan");
}

std::span<const std::byte> PlanFile::section(const fb::Section &s) const {
  return bytes_.subspan(header_.sectionsOffset + s.offset(), s.size());
}

std::span<const std::byte> PlanFile::section(const fb::Section *s) const {
  if (!s)
    return {};
  return section(*s);
}

std::span<const std::byte> PlanFile::weightBytes(int index, int rank) const {
  const auto *weights = plan_->weights();
  if (!weights || index < 0 || static_cast<unsigned>(index) >= weights->size())
    fail(path().string(), ": weight index ", index, " out of range");
  if (rank < 0 || rank >= plan_->tensor_parallel_size())
    fail(path().string(), ": rank ", rank, " out of range (the plan has ",
         plan_->tensor_parallel_size(), " tensor-parallel ranks)");
  const fb::Weight *w = weights->Get(index);
  if (const auto *ranks = w->rank_data())
    return section(ranks->Get(static_cast<uint32_t>(rank)));
  return section(w->data());
}

//===----------------------------------------------------------------------===//
// PlanWriter
//===----------------------------------------------------------------------===//

struct PlanWriter::Impl {
  std::filesystem::path path, tmpPath;
  std::FILE *file = nullptr;
  uint64_t sectionsSize = 0; // bytes written after the sections' start
  XXH64_state_t *hash = XXH64_createState();
  bool finished = false;

  void write(const void *data, size_t size) {
    if (size && std::fwrite(data, 1, size, file) != size)
      fail("cannot write ", tmpPath.string(), ": ", std::strerror(errno),
           " (disk full?)");
    XXH64_update(hash, data, size);
  }
  void pad(uint64_t to) {
    static const std::byte zeros[kPlanAlignment] = {};
    while (sectionsSize < to) {
      uint64_t n = std::min<uint64_t>(to - sectionsSize, kPlanAlignment);
      write(zeros, n);
      sectionsSize += n;
    }
  }
};

PlanWriter::PlanWriter(std::filesystem::path path)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(path);
  impl_->tmpPath = impl_->path;
  impl_->tmpPath += ".partial";
  impl_->file = std::fopen(impl_->tmpPath.c_str(), "wb");
  if (!impl_->file)
    fail("cannot create ", impl_->tmpPath.string(), ": ", std::strerror(errno));
  XXH64_reset(impl_->hash, 0);
  PlanHeader placeholder{};
  if (std::fwrite(&placeholder, sizeof placeholder, 1, impl_->file) != 1)
    fail("cannot write ", impl_->tmpPath.string(), ": ", std::strerror(errno));
}

PlanWriter::~PlanWriter() {
  if (impl_->file)
    std::fclose(impl_->file);
  if (!impl_->finished) {
    std::error_code ec;
    std::filesystem::remove(impl_->tmpPath, ec);
  }
  XXH64_freeState(impl_->hash);
}

fb::Section
PlanWriter::addSection(uint64_t size,
                       const std::function<void(const WriteFn &)> &fill) {
  impl_->pad(alignUp(impl_->sectionsSize));
  uint64_t offset = impl_->sectionsSize, written = 0;
  fill([&](std::span<const std::byte> chunk) {
    if (written + chunk.size() > size)
      fail("internal error: section writes more than its ", size, " bytes");
    impl_->write(chunk.data(), chunk.size());
    written += chunk.size();
  });
  if (written != size)
    fail("internal error: section wrote ", written, " of its ", size, " bytes");
  impl_->sectionsSize += size;
  return fb::Section(offset, size);
}

fb::Section PlanWriter::addSection(std::span<const std::byte> bytes) {
  return addSection(bytes.size(), [&](const WriteFn &write) { write(bytes); });
}

void PlanWriter::finish(std::span<const uint8_t> metadata) {
  Impl &w = *impl_;
  w.pad(alignUp(w.sectionsSize));
  PlanHeader h{};
  std::memcpy(h.magic, kPlanMagic, sizeof kPlanMagic);
  h.formatVersion = kPlanFormatVersion;
  h.headerSize = sizeof(PlanHeader);
  h.sectionsOffset = sizeof(PlanHeader);
  h.sectionsSize = w.sectionsSize;
  h.metadataOffset = h.sectionsOffset + w.sectionsSize;
  h.metadataSize = metadata.size();
  w.write(metadata.data(), metadata.size());
  h.fileSize = h.metadataOffset + h.metadataSize;
  h.checksum = XXH64_digest(w.hash);
  if (std::fseek(w.file, 0, SEEK_SET) != 0 ||
      std::fwrite(&h, sizeof h, 1, w.file) != 1 || std::fflush(w.file) != 0)
    fail("cannot write ", w.tmpPath.string(), ": ", std::strerror(errno));
  std::fclose(w.file);
  w.file = nullptr;
  std::error_code ec;
  std::filesystem::rename(w.tmpPath, w.path, ec);
  if (ec)
    fail("cannot rename ", w.tmpPath.string(), " to ", w.path.string(), ": ",
         ec.message());
  w.finished = true;
}

} // namespace sol
