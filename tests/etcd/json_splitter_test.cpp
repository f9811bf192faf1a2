#include "etcd/json_splitter.h"

#include <gtest/gtest.h>

namespace strata::etcd {
namespace {

TEST(JsonSplitter, CutsObjectsAcrossArbitraryChunkBoundaries) {
  const std::string stream =
      "{\"result\":{\"a\":\"}{\\\"\"}}\n{\"result\":{\"events\":[{\"kv\":{}}]}}  {\"x\":1}";
  for (size_t step = 1; step <= stream.size(); ++step) {
    JsonSplitter s;
    std::vector<std::string> docs;
    for (size_t i = 0; i < stream.size(); i += step) {
      s.append(std::string_view(stream).substr(i, step));
      while (auto d = s.next()) {
        ASSERT_TRUE(d->ok()) << d->error().to_string();
        docs.push_back(d->value());
      }
    }
    ASSERT_EQ(docs.size(), 3u) << step;
    EXPECT_EQ(docs[0], "{\"result\":{\"a\":\"}{\\\"\"}}");
    EXPECT_EQ(docs[2], "{\"x\":1}");
  }
}

TEST(JsonSplitter, SomethingOtherThanAnObjectIsCorrupt) {
  JsonSplitter s;
  s.append("{\"a\":1} oops");
  ASSERT_TRUE(s.next()->ok());
  auto bad = s.next();
  ASSERT_TRUE(bad.has_value());
  ASSERT_FALSE(bad->ok());
  EXPECT_EQ(bad->code(), Errc::corrupt);
  EXPECT_NE(bad->error().message.find("0x6f"), std::string::npos) << bad->error().message;
}

}  // namespace
}  // namespace strata::etcd
