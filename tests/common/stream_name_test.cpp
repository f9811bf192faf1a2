// The stream name rule (common/stream_name.h) and the UTF-8 check under it
// (common/utf8.h): what RabbitMQ allows is allowed, what strata cannot
// store is refused with the name, what is wrong and where.
#include "common/stream_name.h"

#include <gtest/gtest.h>

#include "common/utf8.h"

namespace strata {
namespace {

TEST(StreamName, RabbitMQNamesAreAllowed) {
  for (const std::string& ok :
       {std::string("orders 2026/Q1 \xe2\x82\xac"), std::string("."), std::string(".."),
        std::string("a/b"), std::string("../etc/passwd"), std::string("x.tmp"), std::string("%41%"),
        std::string("amq"), std::string("AMQ.x"), std::string("am.q"), std::string(" "),
        std::string("tab\there"), std::string(255, 'n'), std::string("\xf0\x9f\x98\x80")}) {
    EXPECT_TRUE(validate_stream_name(ok).ok()) << printable_name(ok);
  }
  // 255 bytes of 4-byte characters (63 of them) and three more bytes.
  std::string emoji;
  for (int i = 0; i < 63; ++i) emoji += "\xf0\x9f\x98\x80";
  emoji += "abc";
  ASSERT_EQ(emoji.size(), 255u);
  EXPECT_TRUE(validate_stream_name(emoji).ok());
}

TEST(StreamName, RefusalsNameTheStreamWhatIsWrongAndWhere) {
  struct Case {
    std::string name;
    std::string expect;  // in the message
  };
  const Case cases[] = {
      {"", "stream name is empty"},
      {std::string(256, 'a'), "is 256 bytes; the limit is 255 bytes"},
      {"amq.x", "stream name \"amq.x\" starts with \"amq.\""},
      {"amq.", "starts with \"amq.\""},
      {"caf\xc3", "\"caf\\xc3\" is not valid UTF-8: byte 0xc3 at position 3"},
      {"a\xff", "byte 0xff at position 1"},
      {"\xc0\xaf", "byte 0xc0 at position 0"},          // overlong '/'
      {"x\xed\xa0\x80", "byte 0xed at position 1"},     // a surrogate
      {"\xf4\x90\x80\x80", "byte 0xf4 at position 0"},  // above U+10FFFF
      {"ab\x80", "byte 0x80 at position 2"},            // a lone continuation byte
      {std::string("x\0y", 3), "\"x\\x00y\" has a NUL byte (0x00) at position 1"},
      {"\na\nb", "has a line feed (0x0a) at position 1"},  // a client's "a\nb"
      {"v\nb\nc", "\"b\\x0ac\" has a line feed (0x0a) at position 1"},
      {"ab\r", "has a carriage return (0x0d) at position 2"},
  };
  for (const auto& k : cases) {
    Status st = validate_stream_name(k.name);
    ASSERT_FALSE(st.ok()) << k.expect;
    EXPECT_EQ(st.code(), Errc::invalid_argument);
    EXPECT_NE(st.error().message.find(k.expect), std::string::npos) << st.error().message;
  }
}

// A stream of a vhost other than "/" is stored under "vhost\nname".
TEST(StreamName, QualifiedNamesJoinAVhostAndAName) {
  EXPECT_EQ(qualified_stream_name("/", "orders"), "orders");
  EXPECT_EQ(qualified_stream_name("prod", "orders"), "prod\norders");
  EXPECT_EQ(qualified_stream_name("a/b", "x/y"), "a/b\nx/y");
  for (const std::string& ok :
       {std::string("prod\norders"), std::string("a/b\nx/y"), std::string(" \n "),
        std::string(127, 'v') + "\n" + std::string(127, 'n')}) {
    EXPECT_TRUE(validate_stream_name(ok).ok()) << printable_name(ok);
    const StreamPlace p = split_stream_name(ok);
    EXPECT_EQ(qualified_stream_name(p.vhost, p.name), ok);
    EXPECT_NE(p.vhost, "/");
  }
  EXPECT_EQ(split_stream_name("orders").vhost, "/");
  EXPECT_EQ(split_stream_name("orders").name, "orders");
  EXPECT_EQ(printable_stream("prod\norders"), "orders in vhost \"prod\"");
  EXPECT_EQ(printable_stream("orders"), "orders");

  struct Case {
    std::string name;
    std::string expect;
  };
  const Case bad[] = {
      {"\nab", "has an empty vhost"},
      {"/\nab", "qualifies a name with the vhost \"/\""},
      {"v\n", "stream name is empty"},
      {"v\namq.x", "starts with \"amq.\""},
      {"v\xff\nx", "vhost name \"v\\xff\" is not valid UTF-8"},
      {"v\rw\nx", "vhost name \"v\\x0dw\" has a carriage return"},
      {std::string(200, 'v') + "\n" + std::string(60, 'n'),
       "is 261 bytes with the vhost's name; the limit for both is 255 bytes"},
  };
  for (const auto& k : bad) {
    Status st = validate_stream_name(k.name);
    ASSERT_FALSE(st.ok()) << k.expect;
    EXPECT_NE(st.error().message.find(k.expect), std::string::npos) << st.error().message;
  }
  EXPECT_TRUE(validate_vhost_name("/").ok());
  EXPECT_TRUE(validate_vhost_name("prod eu/1").ok());
  EXPECT_FALSE(validate_vhost_name("").ok());
  EXPECT_FALSE(validate_vhost_name("a\nb").ok());
  EXPECT_FALSE(validate_vhost_name(std::string(256, 'v')).ok());
}

TEST(StreamName, PrintableNameEscapesWhatWouldMisleadAReader) {
  EXPECT_EQ(printable_name("orders 2026/Q1 \xe2\x82\xac"), "orders 2026/Q1 \xe2\x82\xac");
  EXPECT_EQ(printable_name("a\"b\\c"), "a\\x22b\\x5cc");
  EXPECT_EQ(printable_name(std::string("\0\x1b\x7f", 3)), "\\x00\\x1b\\x7f");
  EXPECT_EQ(printable_name("\xff"
                           "a\xc3"),
            "\\xffa\\xc3");
  // Right-to-left override (U+202E) and a C1 control (U+0085): escaped.
  EXPECT_EQ(printable_name("a\xe2\x80\xae"
                           "b"),
            "a\\xe2\\x80\\xaeb");
  EXPECT_EQ(printable_name("\xc2\x85"), "\\xc2\\x85");
}

TEST(Utf8, WellFormedSequencesOnly) {
  EXPECT_FALSE(utf8_error_at(""));
  EXPECT_FALSE(utf8_error_at("plain ascii"));
  EXPECT_FALSE(utf8_error_at("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"));
  EXPECT_EQ(utf8_error_at("ab\xc3"), 2u);                // cut short
  EXPECT_EQ(utf8_error_at("\xc3(x"), 0u);                // bad continuation
  EXPECT_EQ(utf8_error_at("a\xe0\x80\xaf"), 1u);         // overlong 3-byte
  EXPECT_EQ(utf8_error_at("\xf0\x80\x80\xaf"), 0u);      // overlong 4-byte
  EXPECT_EQ(utf8_error_at("\xed\xbf\xbf"), 0u);          // surrogate U+DFFF
  EXPECT_EQ(utf8_error_at("\xf8\x88\x80\x80\x80"), 0u);  // 5-byte form
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xe2\x82\xac", 1), 0u);  // inside a character
  EXPECT_EQ(utf8_sequence_length("a", 1), 0u);             // past the end
}

}  // namespace
}  // namespace strata
