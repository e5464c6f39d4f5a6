//===- MappedFile.h - Read-only memory map of a whole file ------*- C++ -*-===//
//
// Weights are read through mmap so that opening a 16 GB checkpoint costs page
// tables, not a copy; the kernel pages tensors in only when they are touched.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace sol {

class MappedFile {
public:
  /// Maps the whole file read-only. Throws sol::Error naming the path and the
  /// system's reason (errno text) when it cannot be opened, is not a regular
  /// file, or cannot be mapped. A zero-length file gives an empty span.
  static MappedFile open(const std::filesystem::path &path);
  /// `size` zero bytes that cost no memory until read (an anonymous
  /// read-only mapping), called `label` in messages: the stand-in bytes of
  /// a checkpoint compiled without its weights. Throws sol::Error.
  static MappedFile zeros(size_t size, std::filesystem::path label);

  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;
  ~MappedFile();

  /// The file's bytes; valid while this object (or the one it was moved into)
  /// lives. The address does not change when the object is moved.
  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::filesystem::path &path() const { return path_; }

private:
  MappedFile(std::filesystem::path path, const std::byte *data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  void unmap() noexcept;

  std::filesystem::path path_;
  const std::byte *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace sol
