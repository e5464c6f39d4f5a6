//===- SseParserTest.cpp - Server-sent events, however the reads cut them -===//
#include "tools/solbench/SseParser.h"

#include <gtest/gtest.h>

using sol::bench::SseParser;

namespace {

std::vector<std::string> events(const std::vector<std::string> &pieces,
                                bool finish = true) {
  std::vector<std::string> out;
  SseParser p([&](std::string_view d) { out.emplace_back(d); });
  for (const std::string &piece : pieces)
    p.feed(piece);
  if (finish)
    p.finish();
  return out;
}

} // namespace

TEST(SseParser, SplitAnywhere) {
  // LF, CRLF and CR line ends, a comment, other fields, multi-line data.
  const std::string stream = ": keep-alive\n"
                             "data: {\"a\":1}\n\n"
                             "event: message\r\nid: 7\r\n"
                             "data: {\"b\":2}\r\n\r\n"
                             "data:no-space\r\r"
                             "data: line one\ndata: line two\n\n"
                             "data: [DONE]\r\n\r\n";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "no-space",
                                         "line one\nline two", "[DONE]"};
  EXPECT_EQ(events({stream}), want);
  for (size_t i = 0; i <= stream.size(); ++i)
    EXPECT_EQ(events({stream.substr(0, i), stream.substr(i)}), want)
        << "split at " << i;
  for (size_t i = 0; i <= stream.size(); ++i)
    for (size_t j = i; j <= stream.size(); j += 7)
      EXPECT_EQ(events({stream.substr(0, i), stream.substr(i, j - i),
                        stream.substr(j)}),
                want);
  std::vector<std::string> bytes;
  for (char c : stream)
    bytes.emplace_back(1, c);
  EXPECT_EQ(events(bytes), want);
}

TEST(SseParser, CrLfSplitBetweenReadsIsOneLineEnd) {
  // "\r" ends one read and "\n" starts the next: one line end, not two (two
  // would dispatch the event early).
  EXPECT_EQ(events({"data: a\r", "\ndata: b\r", "\n\r", "\n"}),
            std::vector<std::string>{"a\nb"});
}

TEST(SseParser, EventWithoutBlankLineAtTheEnd) {
  EXPECT_EQ(events({"data: last"}, /*finish=*/false),
            std::vector<std::string>{});
  EXPECT_EQ(events({"data: last"}), std::vector<std::string>{"last"});
  EXPECT_EQ(events({"data: last\n"}), std::vector<std::string>{"last"});
}

TEST(SseParser, BlankLinesAloneDispatchNothing) {
  EXPECT_EQ(events({"\n\n\r\n: comment\n\n"}), std::vector<std::string>{});
  // "data" without a colon is an empty data line.
  EXPECT_EQ(events({"data\n\n"}), std::vector<std::string>{""});
}

TEST(SseParser, LongLinesAreRejected) {
  SseParser p([](std::string_view) {});
  EXPECT_THROW(p.feed(std::string(SseParser::kMaxLineBytes + 1, 'x')),
               std::runtime_error);
}
