// Parsing S3's XML answers by local name, and refusing malformed ones.
#include "objstore/s3_xml.h"

#include <gtest/gtest.h>

namespace strata::objstore::s3xml {
namespace {

TEST(S3Xml, ParsesS3rverListWithItsOddNamespace) {
  const char* body =
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      R"(<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01/"><Name>bkt</Name>)"
      R"(<Prefix>p/</Prefix><NextContinuationToken>1KKq/VB+w3T2=</NextContinuationToken>)"
      R"(<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>)"
      R"(<Contents><Key>p/k1</Key><ETag>&quot;6dbf9ac2&quot;</ETag><Size>2</Size></Contents>)"
      R"(<Contents><Key>p/a b &amp; &#x20AC;</Key><ETag>"x"</ETag><Size>12345678901</Size></Contents>)"
      R"(</ListBucketResult>)";
  auto r = parse_list(body);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->next_token, "1KKq/VB+w3T2=");
  ASSERT_EQ(r->objects.size(), 2u);
  EXPECT_EQ(r->objects[0].key, "p/k1");
  EXPECT_EQ(r->objects[0].etag, "6dbf9ac2");
  EXPECT_EQ(r->objects[0].size, 2u);
  EXPECT_EQ(r->objects[1].key, "p/a b & \xE2\x82\xAC");
  EXPECT_EQ(r->objects[1].size, 12345678901u);
}

TEST(S3Xml, ParsesPrefixedElementsByLocalName) {
  const char* body = R"(<s3:ListBucketResult xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/">)"
                     R"(<s3:IsTruncated>false</s3:IsTruncated><s3:Contents><s3:Key>k</s3:Key>)"
                     R"(<s3:Size>0</s3:Size></s3:Contents></s3:ListBucketResult>)";
  auto r = parse_list(body);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->truncated);
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].key, "k");
}

TEST(S3Xml, ParsesLastModifiedToMillisecondsSinceTheEpoch) {
  auto r = parse_list(
      "<ListBucketResult><IsTruncated>false</IsTruncated>"
      "<Contents><Key>a</Key><Size>1</Size><LastModified>2009-10-12T17:50:30.123Z</LastModified>"
      "</Contents>"
      "<Contents><Key>b</Key><Size>1</Size><LastModified>1970-01-01T00:00:01Z</LastModified>"
      "</Contents>"
      "<Contents><Key>c</Key><Size>1</Size><LastModified>2024-02-29T23:59:59.5Z</LastModified>"
      "</Contents>"
      "<Contents><Key>d</Key><Size>1</Size></Contents></ListBucketResult>");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->objects.size(), 4u);
  EXPECT_EQ(r->objects[0].last_modified_ms, int64_t(1255369830123));
  EXPECT_EQ(r->objects[1].last_modified_ms, int64_t(1000));
  EXPECT_EQ(r->objects[2].last_modified_ms, int64_t(1709251199500));
  EXPECT_FALSE(r->objects[3].last_modified_ms.has_value()) << "absent: the store did not say";
}

TEST(S3Xml, KeepsAKeyMadeOfSpaces) {
  auto r = parse_list(
      "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key> </Key><Size>1</Size>"
      "</Contents></ListBucketResult>");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].key, " ");
}

TEST(S3Xml, RejectsMalformedListDocuments) {
  struct Case {
    const char* body;
    const char* expect;
  } cases[] = {
      {"", "malformed ListObjectsV2 XML"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated>", "malformed ListObjectsV2 XML"},
      {"<Error><Code>x</Code></Error>", "root element is <Error>"},
      {"<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
       "IsTruncated is 'maybe'"},
      {"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
       "NextContinuationToken is missing"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Size>1</Size></Contents>"
       "</ListBucketResult>",
       "Contents #0 has no Key"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>-1</Size>"
       "</Contents></ListBucketResult>",
       "has Size '-1'"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents>"
       "</ListBucketResult>",
       "has Size ''"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>"
       "<LastModified>yesterday</LastModified></Contents></ListBucketResult>",
       "has LastModified 'yesterday'"},
      {"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>"
       "<LastModified>2024-01-02T03:04:05+01:00</LastModified></Contents></ListBucketResult>",
       "expected an ISO 8601 UTC time"},
  };
  for (const auto& c : cases) {
    auto r = parse_list(c.body);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.code(), Errc::corrupt);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos)
        << c.body << " -> " << r.error().message;
  }
}

TEST(S3Xml, ParsesErrorBodies) {
  auto e = parse_error(
      "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Reduce</Message></Error>");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "SlowDown");
  EXPECT_EQ(e->message, "Reduce");
  EXPECT_FALSE(parse_error("").has_value());
  EXPECT_FALSE(parse_error("<html>busy</html>").has_value());
  EXPECT_FALSE(parse_error("<Error><Code>Slow").has_value());
  EXPECT_FALSE(parse_error("<Error><Message>no code</Message></Error>").has_value());
}

TEST(S3Xml, DeleteRequestEscapesKeysAndRoundTripsThroughTheParser) {
  std::vector<std::string> keys = {"a", "b & <c>", "\xE2\x82\xAC/\"q\""};
  std::string body = build_delete_request(keys);
  EXPECT_NE(body.find("<Quiet>false</Quiet>"), std::string::npos);
  EXPECT_NE(body.find("<Key>b &amp; &lt;c&gt;</Key>"), std::string::npos);
  // Answer as S3 does and parse it back.
  std::string answer = "<DeleteResult>";
  answer += "<Deleted><Key>a</Key></Deleted>";
  answer += "<Deleted><Key>b &amp; &lt;c&gt;</Key></Deleted>";
  answer +=
      "<Error><Key>\xE2\x82\xAC/\"q\"</Key><Code>AccessDenied</Code><Message>no</Message></Error>";
  answer += "</DeleteResult>";
  auto r = parse_delete_result(answer);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->deleted, (std::vector<std::string>{"a", "b & <c>"}));
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].key, keys[2]);
  EXPECT_EQ(r->errors[0].code, "AccessDenied");
}

TEST(S3Xml, RejectsMalformedDeleteResults) {
  EXPECT_FALSE(parse_delete_result("<DeleteResult><Deleted>").ok());
  EXPECT_FALSE(parse_delete_result("<ListBucketResult/>").ok());
  EXPECT_FALSE(parse_delete_result("<DeleteResult><Deleted><Code/></Deleted></DeleteResult>").ok());
  EXPECT_FALSE(
      parse_delete_result("<DeleteResult><Error><Code>X</Code></Error></DeleteResult>").ok());
}

}  // namespace
}  // namespace strata::objstore::s3xml
