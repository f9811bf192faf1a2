#include "common/bytes.h"

#include <gtest/gtest.h>

namespace strata {

TEST(Bytes, WriterReaderRoundTripBigEndian) {
  Bytes b;
  ByteWriter w(&b);
  w.u8(0xAB);
  w.be16(0x1234);
  w.be32(0xDEADBEEF);
  w.be64(0x0102030405060708ull);
  w.bytes("xyz");
  ASSERT_EQ(b.size(), 1u + 2 + 4 + 8 + 3);
  EXPECT_EQ(uint8_t(b[1]), 0x12);  // big-endian on the wire
  EXPECT_EQ(uint8_t(b[3]), 0xDE);

  ByteReader r(b, "sample");
  uint8_t a;
  uint16_t c;
  uint32_t d;
  uint64_t e;
  BytesView f;
  ASSERT_TRUE(r.u8(&a, "a") && r.be16(&c, "c") && r.be32(&d, "d") && r.be64(&e, "e") &&
              r.bytes(3, &f, "f"));
  EXPECT_EQ(a, 0xAB);
  EXPECT_EQ(c, 0x1234);
  EXPECT_EQ(d, 0xDEADBEEFu);
  EXPECT_EQ(e, 0x0102030405060708ull);
  EXPECT_EQ(f, "xyz");
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Bytes, ReaderOverrunNamesInputFieldAndPosition) {
  Bytes b("\x00\x01\x02", 3);
  ByteReader r(b, "manifest root");
  uint16_t x;
  uint32_t y;
  ASSERT_TRUE(r.be16(&x, "version"));
  EXPECT_FALSE(r.be32(&y, "entry count"));
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(r.error().code, Errc::corrupt);
  EXPECT_NE(r.error().message.find("manifest root"), std::string::npos);
  EXPECT_NE(r.error().message.find("entry count"), std::string::npos);
  EXPECT_NE(r.error().message.find("byte 2"), std::string::npos);
  // Sticky: later reads fail too, even if they would fit.
  uint8_t z;
  EXPECT_FALSE(r.u8(&z, "later"));
}

TEST(Bytes, LittleEndianHelpers) {
  uint8_t buf[8];
  put_le32(buf, 0x11223344);
  EXPECT_EQ(buf[0], 0x44);
  EXPECT_EQ(get_le32(buf), 0x11223344u);
  put_le64(buf, 0x8877665544332211ull);
  EXPECT_EQ(get_le64(buf), 0x8877665544332211ull);
  put_le16(buf, 0xBEEF);
  EXPECT_EQ(get_le16(buf), 0xBEEF);
}

TEST(Bytes, Hex) {
  EXPECT_EQ(to_hex(BytesView("\x00\xff\x10", 3)), "00ff10");
}

}  // namespace strata
