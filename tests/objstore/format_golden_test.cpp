// The fs backend's object file pinned by bytes (docs/formats/objstore.md "`fs`
// backend: files"): the key's path under the root, and the body followed by
// the 12-byte trailer. The vector is tests/objstore/golden/fs-object.hex;
// fields are also read through its annotations, at the document's offsets.
#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/fs.h"
#include "objstore/fs_store.h"
#include "support/golden.h"
#include "support/temp_dir.h"

namespace strata::objstore {
namespace {

namespace golden = ::strata::test::golden;

TEST(ObjstoreFormatGolden, FsObjectFileBytesArePinned) {
  ::strata::test::TempDir dir;
  auto store = FsObjectStore::open(posix_fs(), dir.sub("root"), true);
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  const Bytes body = "hello, golden";
  auto put = (*store)->put("strata/s-1/obj", body);
  ASSERT_TRUE(put.ok()) << put.error().to_string();

  // Key a/b/c is the file R/d_a/d_b/f_c.
  auto file = read_file(posix_fs(), dir.sub("root/d_strata/d_s-1/f_obj"));
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  const golden::Vector v = golden::load("objstore/golden/fs-object.hex");
  ASSERT_TRUE(golden::matches(v, *file));
  EXPECT_EQ(golden::field_bytes(v, "body", "body"), body);
  golden::expect_fields(v, "trailer",
                        {{"magic", 0x534F424A}, {"version", 1}, {"crc32c", crc32c::value(body)}});
  // The etag is the CRC32C as 8 lowercase hex digits.
  EXPECT_EQ(put->etag, to_hex(golden::field_bytes(v, "trailer", "crc32c")));

  // A file with the vector's bytes reads back as the object.
  ASSERT_TRUE(write_file_atomic(posix_fs(), dir.sub("root/d_strata/d_s-1/f_copy"), v.bytes).ok());
  auto back = (*store)->get("strata/s-1/copy");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, body);
}

}  // namespace
}  // namespace strata::objstore
