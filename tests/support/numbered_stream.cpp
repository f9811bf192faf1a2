#include "support/numbered_stream.h"

#include <gtest/gtest.h>

#include "support/http_get.h"

namespace strata::test {

using namespace proto;
using namespace std::chrono_literals;

std::string numbered_body(uint64_t id) {
  return "m-" + std::to_string(id);
}

bool declare_publisher(StreamClient& c, const std::string& stream, uint8_t id) {
  return eventually(20s, [&] {
    if (!c.send(DeclarePublisherRequest{c.corr(), id, "", stream}).ok()) return false;
    auto r = c.expect<DeclarePublisherResponse>();
    return r.ok() && r->code == ResponseCode::ok;
  });
}

bool publish_numbered(StreamClient& c, uint64_t* next, uint64_t count,
                      std::set<uint64_t>* confirmed) {
  Bytes storage;
  const uint64_t end = *next + count;
  uint64_t sent_upto = *next;
  int in_flight = 0;
  while (sent_upto < end || in_flight > 0) {
    while (in_flight < 4 && sent_upto < end) {
      std::vector<std::string> bodies;
      for (uint64_t id = sent_upto; id < sent_upto + 10; ++id) bodies.push_back(numbered_body(id));
      if (!c.send(make_publish(1, sent_upto, bodies, &storage)).ok()) return false;
      sent_upto += 10;
      *next = sent_upto;
      in_flight += 1;
    }
    auto f = c.read(20s);
    if (!f.ok()) return false;
    if (auto* conf = std::get_if<PublishConfirm>(&*f)) {
      for (uint64_t id : conf->publishing_ids) confirmed->insert(id);
      in_flight -= int((conf->publishing_ids.size() + 9) / 10);
    } else if (std::holds_alternative<PublishError>(*f) ||
               std::holds_alternative<MetadataUpdate>(*f)) {
      return false;
    }
  }
  return true;
}

bool publish_on_leader(ServeCluster& cluster, int ask, const std::string& stream, uint64_t* next,
                       uint64_t count, std::set<uint64_t>* confirmed) {
  const int l = cluster.leader(ask, stream);
  if (l < 0) return false;
  auto c = cluster.client(l);
  if (!c.ok()) return false;
  return declare_publisher(*c, stream) && publish_numbered(*c, next, count, confirmed);
}

StreamClient subscribe_numbered(ServeCluster& cluster, int i, const std::string& stream,
                                OffsetSpec spec, uint8_t sub) {
  auto c = cluster.client(i);
  EXPECT_TRUE(c.ok()) << c.error().to_string();
  if (!c.ok()) return {};
  EXPECT_TRUE(c->send(SubscribeRequest{c->corr(), sub, stream, spec, 10, {}}).ok());
  auto r = c->expect<SubscribeResponse>(10s);
  EXPECT_TRUE(r.ok() && r->code == ResponseCode::ok)
      << (r.ok() ? std::string(response_code_name(r->code)) : r.error().to_string());
  return std::move(*c);
}

void read_numbered_until(StreamClient& c, uint8_t sub, Received* got,
                         std::chrono::milliseconds timeout,
                         const std::function<bool(const Received&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done(*got) && std::chrono::steady_clock::now() < deadline) {
    auto f = c.read(5s);
    if (!f.ok()) {
      if (f.error().code == Errc::timeout) continue;
      ADD_FAILURE() << f.error().to_string();
      return;
    }
    if (std::holds_alternative<MetadataUpdate>(*f)) {
      got->metadata_update = true;
      return;
    }
    auto* d = std::get_if<DeliverFrame>(&*f);
    if (!d) continue;
    auto recs = chunk_records(*d);
    ASSERT_TRUE(recs.ok()) << recs.error().to_string();
    auto h = decode_osiris_header(d->chunk);
    ASSERT_TRUE(h.ok());
    if (!got->first_chunk) got->first_chunk = h->chunk_id;
    got->delivers += 1;
    for (size_t k = 0; k < recs->size(); ++k) {
      const uint64_t offset = h->chunk_id + k;
      const uint64_t id = std::stoull((*recs)[k].substr(2));
      EXPECT_EQ(id, offset + 1) << "message at offset " << offset;
      if (!got->records.empty()) {
        EXPECT_GT(offset, got->records.back().first) << "offsets must only grow";
      }
      got->records.emplace_back(offset, id);
      got->count[id] += 1;
    }
    ASSERT_TRUE(c.send(CreditRequest{sub, 1}).ok());
  }
}

bool has_all(const Received& got, const std::set<uint64_t>& want) {
  for (uint64_t id : want) {
    if (!got.count.count(id)) return false;
  }
  return true;
}

void expect_exactly_once(const Received& got, const std::set<uint64_t>& confirmed) {
  size_t missing = 0;
  for (uint64_t id : confirmed) missing += got.count.count(id) ? 0 : 1;
  EXPECT_EQ(missing, 0u) << "of " << confirmed.size() << " confirmed messages";
  for (const auto& [id, n] : got.count) {
    EXPECT_EQ(n, 1) << "message " << id << " delivered " << n << "x";
  }
}

nlohmann::json node_status(ServeCluster& cluster, int i) {
  const std::string out = cluster.node(i).process().stdout_text();
  const std::string mark = "strata serve: http on ";
  auto at = out.find(mark);
  if (at == std::string::npos) return nullptr;
  const std::string addr = out.substr(at + mark.size(), out.find('\n', at) - at - mark.size());
  auto j = nlohmann::json::parse(http_get("http://" + addr + "/status", 2000ms), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return nullptr;
  return j;
}

}  // namespace strata::test
