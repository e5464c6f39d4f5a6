//===- MappedFile.cpp - Read-only memory map of a whole file --------------===//

#include "runtime/support/MappedFile.h"

#include "runtime/support/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sol {
namespace {

/// Closes the descriptor on every path out of open(); the mapping stays
/// valid after close.
class FileDescriptor {
public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }

private:
  int fd_;
};

} // namespace

MappedFile MappedFile::open(const std::filesystem::path &path) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    fail("cannot open '", path.string(), "': ", std::strerror(errno));
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    fail("cannot stat '", path.string(), "': ", std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    fail("cannot map '", path.string(), "': not a regular file");
  auto size = static_cast<size_t>(info.st_size);
  if (size == 0) // mmap rejects length 0; an empty file is an empty span
    return MappedFile(path, nullptr, 0);
  void *data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED)
    fail("cannot map '", path.string(), "' (", size,
         " bytes): ", std::strerror(errno));
  return MappedFile(path, static_cast<const std::byte *>(data), size);
}

MappedFile MappedFile::zeros(size_t size, std::filesystem::path label) {
  if (size == 0)
    return MappedFile(std::move(label), nullptr, 0);
  void *data = ::mmap(nullptr, size, PROT_READ,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED)
    fail("cannot map ", size, " zero bytes for ", label.string(), ": ",
         std::strerror(errno));
  return MappedFile(std::move(label), static_cast<const std::byte *>(data),
                    size);
}

MappedFile::MappedFile(MappedFile &&other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(); }

void MappedFile::unmap() noexcept {
  if (data_)
    ::munmap(const_cast<std::byte *>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

} // namespace sol
