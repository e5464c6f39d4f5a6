//===- WeightStoreTest.cpp - The weight store's views and producers -------===//
#include "ir/WeightStore.h"

#include "runtime/support/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace sol {
namespace {

using ::testing::HasSubstr;

std::vector<std::byte> bytesOf(std::initializer_list<uint8_t> values) {
  std::vector<std::byte> out;
  for (uint8_t v : values)
    out.push_back(std::byte{v});
  return out;
}

std::vector<std::byte> readAll(const WeightStore &store,
                               std::string_view name) {
  std::vector<std::byte> out;
  store.read(name, [&](std::span<const std::byte> piece) {
    out.insert(out.end(), piece.begin(), piece.end());
  });
  return out;
}

template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

TEST(WeightStoreTest, ViewsAreReadAsTheyAre) {
  std::vector<std::byte> data = bytesOf({1, 2, 3, 4, 5, 6, 7, 8});
  WeightStore store;
  store.addView("w", DType::BF16, {2, 2}, data);
  EXPECT_TRUE(store.contains("w"));
  EXPECT_FALSE(store.contains("v"));
  EXPECT_EQ(store.get("w").byteSize(), 8u);
  EXPECT_EQ(readAll(store, "w"), data);
  std::vector<std::byte> scratch;
  auto whole = store.contiguous("w", scratch);
  EXPECT_EQ(whole.data(), data.data()); // a view needs no copy
}

TEST(WeightStoreTest, ProducersRunWhenRead) {
  std::vector<std::byte> data = bytesOf({1, 2, 3, 4});
  WeightStore store;
  store.addView("a", DType::I8, {4}, data);
  int runs = 0;
  store.addProduced("twice", DType::I8, {8},
                    [&](const WeightStore &s, const ByteSink &sink, int) {
                      ++runs;
                      s.read("a", sink);
                      s.read("a", sink);
                    });
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(readAll(store, "twice"), bytesOf({1, 2, 3, 4, 1, 2, 3, 4}));
  EXPECT_EQ(runs, 1);
  std::vector<std::byte> scratch;
  EXPECT_EQ(store.contiguous("twice", scratch).size(), 8u);
  EXPECT_EQ(store.names(), (std::vector<std::string>{"a", "twice"}));
}

TEST(WeightStoreTest, ShardedTensorsAreReadPerRank) {
  std::vector<std::byte> data = bytesOf({1, 2, 3, 4});
  WeightStore store;
  store.addView("a", DType::I8, {4}, data);
  // Rank r's half of `a`; a tensor derived from it passes the rank on.
  store.addProduced(
      "half", DType::I8, {2},
      [](const WeightStore &s, const ByteSink &sink, int rank) {
        std::vector<std::byte> scratch;
        sink(s.contiguous("a", scratch, rank).subspan(2 * rank, 2));
      },
      /*sharded=*/true);
  store.addProduced(
      "twice", DType::I8, {4},
      [](const WeightStore &s, const ByteSink &sink, int rank) {
        s.read("half", sink, rank);
        s.read("half", sink, rank);
      },
      /*sharded=*/true);
  EXPECT_TRUE(store.get("half").sharded);
  EXPECT_FALSE(store.get("a").sharded);
  std::vector<std::byte> scratch;
  auto at = [&](const char *name, int rank) {
    auto span = store.contiguous(name, scratch, rank);
    return std::vector<std::byte>(span.begin(), span.end());
  };
  EXPECT_EQ(at("twice", 0), bytesOf({1, 2, 1, 2}));
  EXPECT_EQ(at("twice", 1), bytesOf({3, 4, 3, 4}));
  EXPECT_EQ(at("a", 1), data); // views ignore the rank
}

TEST(WeightStoreTest, RejectsWhatDoesNotAddUp) {
  std::vector<std::byte> data = bytesOf({1, 2, 3});
  WeightStore store;
  EXPECT_THAT(errorOf([&] { store.addView("w", DType::BF16, {2}, data); }),
              HasSubstr("weight w has 3 bytes, but BF16 of its shape needs 4"));
  store.addView("w", DType::I8, {3}, data);
  EXPECT_THAT(errorOf([&] { store.addView("w", DType::I8, {3}, data); }),
              HasSubstr("already holds a tensor called w"));
  EXPECT_THAT(errorOf([&] { store.get("missing"); }),
              HasSubstr("no tensor called missing"));
  store.addProduced("short", DType::I8, {4},
                    [](const WeightStore &s, const ByteSink &sink, int) {
                      s.read("w", sink); // 3 bytes of 4
                    });
  EXPECT_THAT(errorOf([&] { readAll(store, "short"); }),
              HasSubstr("the producer of weight short wrote 3 bytes, "
                        "expected 4"));
}

// readFloat assembles a tensor from all of its pieces, converting bf16 and
// f16 (a produced tensor here, written in uneven pieces).
TEST(WeightStoreTest, ReadFloatJoinsPiecesAndConverts) {
  std::vector<uint16_t> bits;
  for (int i = 0; i < 1000; ++i)
    bits.push_back(floatToBf16(static_cast<float>(i) - 500.5f));
  WeightStore store;
  store.addProduced(
      "w", DType::BF16, {10, 100},
      [&](const WeightStore &, const ByteSink &sink, int) {
        const auto all = std::as_bytes(std::span(bits));
        for (size_t at = 0; at < all.size(); at += 394)
          sink(all.subspan(at, std::min<size_t>(394, all.size() - at)));
      });
  const std::vector<float> values = store.readFloat("w");
  ASSERT_EQ(values.size(), 1000u);
  for (int i = 0; i < 1000; ++i)
    EXPECT_EQ(values[i], bf16ToFloat(bits[i])) << i;
  const std::vector<float> f32 = {1.5f, -2.25f, 3.0f};
  store.addView("f", DType::F32, {3}, std::as_bytes(std::span(f32)));
  EXPECT_EQ(store.readFloat("f"), f32);
  EXPECT_THAT(errorOf([&] { (void)store.readFloat("missing"); }),
              HasSubstr("missing"));
}

} // namespace
} // namespace sol
