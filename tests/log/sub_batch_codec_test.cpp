// Compressed sub-batches read as records (log/sub_batch_codec.h): bodies
// compressed by independent tools — the gzip, zstd and lz4 command-line
// programs — and Snappy blocks from libsnappy in the framing format, each
// decompressed and walked as the records a client batched; every way a body
// can disagree with its header is an `unsupported` error naming the codec.
// Also a stream: a chunk holding compressed sub-batches read back through
// log::Reader::next_records.
#include "log/sub_batch_codec.h"

#include <gtest/gtest.h>
#include <snappy.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/crc32c.h"
#include "common/endian.h"
#include "log/chunk.h"
#include "log/entries.h"
#include "log/reader.h"
#include "log/stream_log.h"
#include "log_entries_util.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace strata::log {
namespace {

using test::simple_entry;
using test::sub_batch;

Bytes read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `plain` compressed by a command-line program ("gzip -c", ...).
Bytes compress_with(const std::string& program, const Bytes& plain) {
  strata::test::TempDir dir;
  std::filesystem::path in = dir.path() + "/in";
  std::filesystem::path out = dir.path() + "/out";
  std::ofstream(in, std::ios::binary) << plain;
  auto r = strata::test::run(std::vector<std::string>{
      "sh", "-c", program + " <'" + in.string() + "' >'" + out.string() + "'"});
  EXPECT_EQ(r.status, 0) << program << ": " << r.output;
  return read_file(out);
}

uint32_t masked(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

Bytes frame_chunk(uint8_t type, const Bytes& body) {
  Bytes out(4, '\0');
  put_le32(u8(out.data()), uint32_t(body.size()) << 8 | type);
  return out + body;
}

// The Snappy framing format: the stream identifier, then one data chunk per
// piece (compressed with libsnappy, or stored when `stored`).
Bytes snappy_framed(const std::vector<Bytes>& pieces, bool stored = false) {
  Bytes out = frame_chunk(0xff, "sNaPpY");
  for (const Bytes& piece : pieces) {
    Bytes body(4, '\0');
    put_le32(u8(body.data()), masked(crc32c::value(piece)));
    if (stored) {
      body += piece;
    } else {
      std::string c;
      snappy::Compress(piece.data(), piece.size(), &c);
      body += c;
    }
    out += frame_chunk(stored ? 0x01 : 0x00, body);
  }
  return out;
}

std::vector<std::string> records_of(const Bytes& data) {
  std::deque<std::string> decoded;
  std::vector<std::string> out;
  auto problem = for_each_record(
      data, [&](BytesView r) { out.emplace_back(r); }, nullptr, &decoded);
  EXPECT_FALSE(problem) << problem->reason;
  return out;
}

const std::vector<std::string> kRecords = {"first", "", std::string(3000, 'x'), "last one"};

Bytes inner() {
  Bytes body;
  for (const auto& r : kRecords) body += simple_entry(r);
  return body;
}

TEST(SubBatchCodec, EveryCodecOfTheProtocolExpandsToTheBatchedRecords) {
  const Bytes plain = inner();
  struct Case {
    uint8_t code;
    Bytes body;
  };
  std::vector<Case> cases = {{1, compress_with("gzip -c", plain)},
                             {2, snappy_framed({plain.substr(0, 100), plain.substr(100)})},
                             {2, snappy_framed({plain}, true)},
                             {3, compress_with("lz4 -c", plain)},
                             {4, compress_with("zstd -c -q", plain)}};
  for (const auto& c : cases) {
    SCOPED_TRACE(compression_name(c.code));
    ASSERT_FALSE(c.body.empty());
    auto out = decompress_sub_batch(c.code, c.body, uint32_t(plain.size()));
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_EQ(*out, plain);
    const Bytes data =
        simple_entry("before") +
        sub_batch(c.code, c.body, uint16_t(kRecords.size()), uint32_t(plain.size())) +
        simple_entry("after");
    std::vector<std::string> want = {"before"};
    want.insert(want.end(), kRecords.begin(), kRecords.end());
    want.push_back("after");
    EXPECT_EQ(records_of(data), want);
  }
}

void expect_unsupported(uint8_t code, const Bytes& body, uint32_t len, const std::string& why) {
  auto out = decompress_sub_batch(code, body, len);
  ASSERT_FALSE(out.ok()) << compression_name(code) << " " << why;
  EXPECT_EQ(out.error().code, Errc::unsupported);
  EXPECT_NE(out.error().message.find(compression_name(code)), std::string::npos)
      << out.error().message;
  EXPECT_NE(out.error().message.find(why), std::string::npos) << out.error().message;
}

TEST(SubBatchCodec, BodiesThatDisagreeWithTheirHeaderAreNamed) {
  const Bytes plain = inner();
  const uint32_t n = uint32_t(plain.size());
  const Bytes gz = compress_with("gzip -c", plain);
  const Bytes zs = compress_with("zstd -c -q", plain);
  const Bytes lz = compress_with("lz4 -c", plain);
  const Bytes sn = snappy_framed({plain});
  // Declared length too small and too large.
  expect_unsupported(1, gz, n - 1, "beyond the declared");
  expect_unsupported(1, gz, n + 1, "header declares");
  expect_unsupported(3, lz, n - 1, "beyond the declared");
  expect_unsupported(3, lz, n + 1, "header declares");
  expect_unsupported(4, zs, n + 1, "header declares");
  expect_unsupported(2, sn, n - 1, "beyond the declared");
  expect_unsupported(2, sn, n + 1, "header declares");
  // Truncated bodies.
  expect_unsupported(1, gz.substr(0, gz.size() / 2), n, "zlib error");
  expect_unsupported(3, lz.substr(0, lz.size() / 2), n, "truncated");
  expect_unsupported(2, sn.substr(0, sn.size() - 3), n, "overruns");
  // Another codec's bytes; trailing garbage.
  expect_unsupported(1, zs, n, "zlib error");
  expect_unsupported(2, gz, n, "no stream identifier");
  expect_unsupported(1, gz + "junk", n, "follow the gzip member");
  // A Snappy chunk whose CRC does not match its bytes.
  Bytes bad_crc = sn;
  bad_crc[10 + 4] ^= 0x01;
  expect_unsupported(2, bad_crc, n, "CRC32C");
  // No codec; a hostile length.
  expect_unsupported(7, gz, n, "no codec");
  expect_unsupported(1, gz, kMaxUncompressedSubBatch + 1, "above the");
}

// The decompressed bytes must be exactly nrec simple entries: a client's
// malformed batch is `unsupported` (its stored bytes are intact), not corrupt.
TEST(SubBatchCodec, DecompressedBatchMustHoldItsRecordCount) {
  const Bytes plain = inner();
  const Bytes gz = compress_with("gzip -c", plain);
  const Bytes data = sub_batch(1, gz, uint16_t(kRecords.size() + 1), uint32_t(plain.size()));
  std::deque<std::string> decoded;
  auto problem = for_each_record(
      data, [](BytesView) {}, nullptr, &decoded);
  ASSERT_TRUE(problem);
  EXPECT_EQ(problem->code, Errc::unsupported);
  EXPECT_NE(problem->reason.find("decompressed gzip"), std::string::npos) << problem->reason;
  // Without a buffer the walk stops at the compressed entry, as before.
  auto plain_walk = for_each_record(data, [](BytesView) {});
  ASSERT_TRUE(plain_walk);
  EXPECT_EQ(plain_walk->code, Errc::unsupported);
}

// Through a stream: a chunk of a simple entry, a gzip sub-batch and a zstd
// one is appended as the server stores it (entries unchanged), and
// next_records yields every record with consecutive offsets.
TEST(SubBatchCodec, ReaderYieldsTheRecordsOfCompressedSubBatches) {
  strata::test::TempDir dir;
  LogOptions opts;
  opts.create_if_missing = true;
  auto log = StreamLog::open(dir.path() + "/s", opts);
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  const Bytes plain = inner();
  const uint16_t nrec = uint16_t(kRecords.size());
  const Bytes entries =
      simple_entry("head") +
      sub_batch(1, compress_with("gzip -c", plain), nrec, uint32_t(plain.size())) +
      sub_batch(4, compress_with("zstd -c -q", plain), nrec, uint32_t(plain.size()));
  EntryBatch batch;
  batch.entries = entries;
  batch.num_entries = 3;
  batch.num_records = 1 + 2 * nrec;
  auto appended = (*log)->append_entries(batch);
  ASSERT_TRUE(appended.ok()) << appended.error().to_string();
  auto reader = (*log)->open_reader(OffsetSpec::first());
  ASSERT_TRUE(reader.ok()) << reader.error().to_string();
  // Views last until the next call: keep copies.
  std::vector<std::pair<uint64_t, std::string>> got;
  while (true) {
    std::vector<Record> batch;
    auto n = (*reader)->next_records(&batch);
    ASSERT_TRUE(n.ok()) << n.error().to_string();
    if (*n == 0) break;
    for (const auto& r : batch) got.emplace_back(r.offset, std::string(r.value));
  }
  std::vector<std::string> want = {"head"};
  for (int i = 0; i < 2; ++i) want.insert(want.end(), kRecords.begin(), kRecords.end());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, i);
    EXPECT_EQ(got[i].second, want[i]) << i;
  }
}

}  // namespace
}  // namespace strata::log
