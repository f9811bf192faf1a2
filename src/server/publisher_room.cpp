#include "server/publisher_room.h"

#include <asio/post.hpp>

#include "common/assert.h"
#include "server/server_limits.h"

namespace strata::server {

using namespace proto;

PublisherRoom::PublisherRoom(Session& session, StreamDirectory& streams, OwnerAsker& owners,
                             ServerCounters& counters, std::function<void()> resume_reading)
    : session_(session),
      streams_(streams),
      owners_(owners),
      counters_(counters),
      resume_reading_(std::move(resume_reading)) {}

bool PublisherRoom::reading_allowed() const {
  return unconfirmed_bytes_ <= kUnconfirmedBudget;
}

void PublisherRoom::on(const DeclarePublisherRequest& r) {
  if (publishers_.count(r.publisher_id) || r.reference.size() > 255) {
    respond_code(session_, kDeclarePublisher, r.correlation_id, ResponseCode::precondition_failed);
    return;
  }
  // One publisher per reference and stream on a connection, as RabbitMQ:
  // two would interleave one deduplication sequence.
  if (!r.reference.empty()) {
    for (const auto& [id, p] : publishers_) {
      if (p.ref == r.reference && p.stream == r.stream) {
        respond_code(session_, kDeclarePublisher, r.correlation_id,
                     ResponseCode::precondition_failed);
        return;
      }
    }
  }
  if (!session_.allowed(Permission::write, r.stream, "declare publisher")) {
    respond_code(session_, kDeclarePublisher, r.correlation_id, ResponseCode::access_refused);
    return;
  }
  auto s = streams_.served(r.stream);
  if (!s.ok()) {
    respond_code(session_, kDeclarePublisher, r.correlation_id, streams_.missing_code(r.stream));
    return;
  }
  (*s)->watch(session_.watcher());
  publishers_[r.publisher_id] = Publisher{r.stream, r.reference, *s};
  counters_.publishers += 1;
  respond_code(session_, kDeclarePublisher, r.correlation_id, ResponseCode::ok);
}

void PublisherRoom::on(const PublishRequest& r) {
  counters_.messages_in += r.messages.size();
  auto it = publishers_.find(r.publisher_id);
  if (it == publishers_.end() || it->second.served->retired()) {
    PublishError e;
    e.publisher_id = r.publisher_id;
    ResponseCode code = it == publishers_.end() ? ResponseCode::publisher_does_not_exist
                                                : ResponseCode::stream_not_available;
    for (const auto& m : r.messages) e.errors.push_back({m.publishing_id, code});
    counters_.count_publish_errors(code, e.errors.size());
    send_message(session_, e);
    return;
  }
  if (r.messages.empty()) return;
  if (it->second.served->stream()->disk_alarm()) {
    // The disk alarm (node/disk_guard.h): nothing more is written until
    // there is space again; the client may publish these again then.
    PublishError e;
    e.publisher_id = r.publisher_id;
    for (const auto& m : r.messages) {
      e.errors.push_back({m.publishing_id, ResponseCode::stream_not_available});
    }
    counters_.count_publish_errors(ResponseCode::stream_not_available, e.errors.size());
    counters_.disk_alarm_refusals += e.errors.size();
    it->second.errored += e.errors.size();
    send_message(session_, e);
    return;
  }
  it->second.published += r.messages.size();
  uint64_t bytes = 0;
  for (const auto& m : r.messages) bytes += m.entry.size() + 8;
  unconfirmed_bytes_ += bytes;
  // The sink shares the connection's lifetime (an aliasing pointer): an
  // outcome after the connection is gone is dropped.
  std::shared_ptr<PublishSink> sink(session_.hold(), this);
  it->second.served->appender().submit(sink, r.publisher_id, it->second.ref, r.messages, bytes);
}

void PublisherRoom::on_appended(uint8_t publisher_id, std::vector<uint64_t> ids, ResponseCode code,
                                uint64_t bytes) {
  asio::post(session_.strand(), [hold = session_.hold(), this, publisher_id, ids = std::move(ids),
                                 code, bytes]() mutable {
    const bool was_paused = !reading_allowed();
    STRATA_ASSERT(bytes <= unconfirmed_bytes_,
                  "a publish outcome for more bytes than were handed to the appender");
    unconfirmed_bytes_ -= bytes;
    if (session_.closed()) return;
    if (auto p = publishers_.find(publisher_id); p != publishers_.end()) {
      (code == ResponseCode::ok ? p->second.confirmed : p->second.errored) += ids.size();
    }
    if (!ids.empty()) {
      Bytes f;
      if (code == ResponseCode::ok) {
        counters_.messages_confirmed += ids.size();
        encode(PublishConfirm{publisher_id, std::move(ids)}, &f);
      } else {
        PublishError e;
        e.publisher_id = publisher_id;
        for (uint64_t id : ids) e.errors.push_back({id, code});
        counters_.count_publish_errors(code, e.errors.size());
        encode(e, &f);
      }
      session_.send(std::move(f));
    }
    if (was_paused && reading_allowed()) resume_reading_();
  });
}

void PublisherRoom::on(const QueryPublisherSequenceRequest& r) {
  QueryPublisherSequenceResponse resp;
  resp.correlation_id = r.correlation_id;
  auto s = streams_.served(r.stream);
  if (!session_.allowed(Permission::read, r.stream, "query publisher sequence")) {
    resp.code = ResponseCode::access_refused;
  } else if (!s.ok()) {
    // Served by another node: its owner knows the sequence (owner_asker.h).
    auto answer = [this, resp](const QueryPublisherSequenceResponse* got) mutable {
      resp.code = got ? got->code : ResponseCode::stream_not_available;
      resp.sequence = got ? got->sequence : 0;
      if (!session_.closed()) send_message(session_, resp);
    };
    if (owners_.forward<QueryPublisherSequenceRequest, QueryPublisherSequenceResponse>(
            r.stream, r, std::move(answer))) {
      return;
    }
    resp.code = streams_.missing_code(r.stream);
  } else {
    resp.sequence = (*s)->appender().sequence(r.reference).value_or(0);
  }
  send_message(session_, resp);
}

void PublisherRoom::on(const DeletePublisherRequest& r) {
  if (publishers_.erase(r.publisher_id) == 0) {
    respond_code(session_, kDeletePublisher, r.correlation_id,
                 ResponseCode::publisher_does_not_exist);
    return;
  }
  counters_.publishers -= 1;
  respond_code(session_, kDeletePublisher, r.correlation_id, ResponseCode::ok);
}

bool PublisherRoom::drop_stream(const std::string& stream) {
  bool affected = false;
  for (auto it = publishers_.begin(); it != publishers_.end();) {
    if (it->second.stream == stream) {
      it = publishers_.erase(it);
      counters_.publishers -= 1;
      affected = true;
    } else {
      ++it;
    }
  }
  return affected;
}

void PublisherRoom::close() {
  counters_.publishers -= publishers_.size();
  publishers_.clear();
}

void PublisherRoom::tally(ClientTally* t) const {
  for (const auto& [id, p] : publishers_) t->publisher_streams.push_back(p.stream);
}

nlohmann::json PublisherRoom::describe() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [id, p] : publishers_) {
    out.push_back({{"publisher_id", id},
                   {"reference", p.ref},
                   {"stream", p.stream},
                   {"published", p.published},
                   {"confirmed", p.confirmed},
                   {"errored", p.errored}});
  }
  return out;
}

}  // namespace strata::server
