//===- MappedFileTest.cpp - Read-only whole-file mappings -----------------===//

#include "runtime/support/MappedFile.h"

#include "test/unit/hf/ErrorMessage.h"
#include "test/unit/hf/SafetensorsWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sol {
namespace {

using hf::test::errorOf;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(MappedFileTest, MapsContentsAndMoves) {
  hf::test::TempDir dir;
  hf::test::writeFile(dir / "f", "hello");
  MappedFile file = MappedFile::open(dir / "f");
  ASSERT_EQ(file.size(), 5u);
  EXPECT_EQ(std::to_integer<char>(file.bytes()[1]), 'e');
  EXPECT_EQ(file.path(), dir / "f");

  const std::byte *data = file.bytes().data();
  MappedFile moved = std::move(file);
  EXPECT_EQ(moved.bytes().data(), data);
  EXPECT_EQ(file.size(), 0u); // NOLINT: moved-from is empty
  MappedFile other = MappedFile::open(dir / "f");
  other = std::move(moved);
  EXPECT_EQ(other.bytes().data(), data);
}

TEST(MappedFileTest, EmptyFileIsEmptySpan) {
  hf::test::TempDir dir;
  hf::test::writeFile(dir / "empty", "");
  MappedFile file = MappedFile::open(dir / "empty");
  EXPECT_EQ(file.size(), 0u);
  EXPECT_TRUE(file.bytes().empty());
}

TEST(MappedFileTest, ErrorsNamePathAndReason) {
  hf::test::TempDir dir;
  EXPECT_THAT(errorOf([&] { MappedFile::open(dir / "missing"); }),
              AllOf(HasSubstr((dir / "missing").string()),
                    HasSubstr("No such file or directory")));
  EXPECT_THAT(
      errorOf([&] { MappedFile::open(dir.path()); }),
      AllOf(HasSubstr(dir.path().string()), HasSubstr("not a regular file")));
}

} // namespace
} // namespace sol
