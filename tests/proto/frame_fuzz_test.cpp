// A bounded random fuzzer for the frame decoders: valid frames of every
// command, mutated (bit flips, byte sets, insertions, deletions, length
// fields set to extremes) and truncated, plus random bytes. It asserts that
// decoding never crashes (ASan run included), that failures are clean
// (corrupt or unsupported_version with a message), and that whatever decodes
// re-encodes to a frame that decodes to the same thing.
#include <gtest/gtest.h>

#include <random>

#include "proto/dispatch.h"
#include "support/temp_dir.h"

namespace strata::proto {
namespace {

std::vector<Bytes> corpus() {
  std::vector<Bytes> c;
  auto add = [&](const auto& m) {
    Bytes f;
    encode(m, &f);
    c.push_back(f.substr(kFrameSizeBytes));
  };
  Bytes entries;
  append_simple_entry(&entries, "hello");
  Bytes sub;
  append_sub_batch_record(&sub, "a");
  append_sub_batch_entry(&entries, Compression::none, 1, uint32_t(sub.size()), sub);
  BytesView ev(entries);
  add(PublishRequest{.version = 1,
                     .publisher_id = 1,
                     .messages = {{1, {}, ev.substr(0, 9)}, {2, {}, ev.substr(9)}}});
  add(PublishRequest{
      .version = 2, .publisher_id = 1, .messages = {{1, BytesView("f"), ev.substr(0, 9)}}});
  add(DeclarePublisherRequest{
      .correlation_id = 1, .publisher_id = 1, .reference = "r", .stream = "s"});
  add(SubscribeRequest{.correlation_id = 1,
                       .subscription_id = 1,
                       .stream = "s",
                       .offset = {OffsetType::timestamp, 5},
                       .credit = 1,
                       .properties = {{"k", "v"}}});
  add(PeerPropertiesRequest{.correlation_id = 1, .properties = {{"a", "b"}, {"c", "d"}}});
  add(SaslAuthenticateRequest{.correlation_id = 1, .mechanism = "PLAIN", .data = "xuserxpass"});
  add(MetadataRequest{.correlation_id = 1, .streams = {"a", "b"}});
  add(CreateSuperStreamRequest{.correlation_id = 1,
                               .name = "n",
                               .partitions = {"p"},
                               .binding_keys = {"b"},
                               .arguments = {{"x", "y"}}});
  add(ExchangeCommandVersionsRequest{.correlation_id = 1, .versions = {{1, 1, 1}}});
  add(ConsumerUpdateResponse{.correlation_id = 1, .offset = OffsetSpec{OffsetType::offset, 3}});
  add(ConsumerUpdateResponse{.correlation_id = 2, .offset = std::nullopt});
  add(ResolveOffsetSpecRequest{.correlation_id = 3,
                               .stream = "s",
                               .offset = {OffsetType::timestamp, 5},
                               .properties = {{"filter.0", "a"}}});
  add(ResolveOffsetSpecResponse{.correlation_id = 3, .offset = 7});
  add(CreditRequest{.subscription_id = 1, .credit = 2});
  add(StoreOffsetRequest{.reference = "r", .stream = "s", .offset = 1});
  add(TuneFrame{.frame_max = 1, .heartbeat = 2});
  add(CloseRequest{.correlation_id = 1, .code = ResponseCode::ok, .reason = "r"});
  add(MetadataResponse{.correlation_id = 1,
                       .brokers = {{0, "h", 1}},
                       .streams = {{"s", ResponseCode::ok, 0, {0, 1}}}});
  add(PublishConfirm{.publisher_id = 1, .publishing_ids = {1, 2}});
  add(PublishError{.publisher_id = 1, .errors = {{1, ResponseCode::internal_error}}});
  add(StreamStatsResponse{.correlation_id = 1, .stats = {{"a", 1}}});
  add(OpenResponse{.correlation_id = 1, .properties = {{"a", "b"}}});
  Bytes chunk;
  OsirisChunkHeader h;
  h.num_entries = 1;
  h.num_records = 1;
  h.data_len = 9;
  encode_osiris_header(h, &chunk);
  chunk += ev.substr(0, 9);
  add(DeliverFrame{.version = 2, .subscription_id = 1, .committed_chunk_id = 1, .chunk = chunk});
  return c;
}

template <typename Result, typename Redecode>
void check(const Result& r, Redecode redecode, const Bytes& input) {
  if (!r.ok()) {
    Errc c = r.code();
    EXPECT_TRUE(c == Errc::corrupt || c == Errc::unsupported_version)
        << errc_name(c) << " for " << to_hex(input);
    EXPECT_FALSE(r.error().message.empty());
    return;
  }
  std::visit(
      [&](const auto& m) {
        Bytes again;
        encode(m, &again);
        redecode(BytesView(again).substr(kFrameSizeBytes), m);
      },
      *r);
}

void decode_both(const Bytes& input) {
  check(
      decode_client_frame(input),
      [](BytesView b, const auto& m) {
        auto again = decode_client_frame(b);
        ASSERT_TRUE(again.ok()) << again.error().to_string();
        EXPECT_TRUE(std::get<std::decay_t<decltype(m)>>(*again) == m)
            << command_name(std::decay_t<decltype(m)>::kKey) << " " << to_hex(b);
      },
      input);
  check(
      decode_server_frame(input),
      [](BytesView b, const auto& m) {
        auto again = decode_server_frame(b);
        ASSERT_TRUE(again.ok()) << again.error().to_string();
        EXPECT_TRUE(std::get<std::decay_t<decltype(m)>>(*again) == m)
            << command_name(std::decay_t<decltype(m)>::kKey) << " " << to_hex(b);
      },
      input);
  (void)peek_correlation_id(input);
}

TEST(ProtoFuzz, MutatedTruncatedAndRandomFramesFailCleanly) {
  uint64_t seed = test::test_seed(std::random_device{}());
  SCOPED_TRACE("STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  std::vector<Bytes> base = corpus();
  for (const Bytes& b : base) decode_both(b);

  int iterations = test::scaled(200000);
  for (int i = 0; i < iterations && !HasFatalFailure(); ++i) {
    Bytes f = base[pick(base.size())];
    int mutations = 1 + int(pick(4));
    for (int m = 0; m < mutations; ++m) {
      switch (pick(7)) {
        case 0:  // flip a bit
          if (!f.empty()) f[pick(f.size())] ^= char(1 << pick(8));
          break;
        case 1:  // set a byte to an extreme
          if (!f.empty()) f[pick(f.size())] = char(pick(2) ? 0xff : 0x80);
          break;
        case 2:  // truncate
          f.resize(pick(f.size() + 1));
          break;
        case 3:  // insert random bytes
          f.insert(pick(f.size() + 1), Bytes(1 + pick(8), char(rng())));
          break;
        case 4:  // delete a range
          if (!f.empty()) {
            size_t at = pick(f.size());
            f.erase(at, 1 + pick(f.size() - at));
          }
          break;
        case 5:  // a 4-byte length/count field set to an extreme
          if (f.size() >= 4) {
            size_t at = pick(f.size() - 3);
            uint32_t v = pick(2) ? 0x7fffffffu : 0x80000000u;
            for (int k = 0; k < 4; ++k) f[at + k] = char(v >> (24 - 8 * k));
          }
          break;
        case 6:  // a 2-byte string length set to -1, -2 or 0x7fff
          if (f.size() >= 2) {
            size_t at = pick(f.size() - 1);
            uint16_t v = std::array<uint16_t, 3>{0xffff, 0xfffe, 0x7fff}[pick(3)];
            f[at] = char(v >> 8);
            f[at + 1] = char(v);
          }
          break;
      }
    }
    decode_both(f);
  }
  for (int i = 0; i < iterations / 10 && !HasFatalFailure(); ++i) {
    Bytes f(pick(64), '\0');
    for (char& c : f) c = char(rng());
    // Keep a known key half of the time so the fields get exercised.
    if (f.size() >= 2 && pick(2)) {
      f[0] = char(pick(2) ? 0x80 : 0);
      f[1] = char(1 + pick(0x1e));
    }
    decode_both(f);
  }
}

}  // namespace
}  // namespace strata::proto
