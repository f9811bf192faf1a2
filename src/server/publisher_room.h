// PublisherRoom: the commands of publishers — DeclarePublisher, Publish,
// QueryPublisherSequence, DeletePublisher — and their confirms. A Publish
// goes to the stream's appender (stream_appender.h); its outcome comes back
// here (PublishSink) as a confirm or an error per publishing id.
//
// Flow control: while a connection's bytes handed to appenders exceed
// kUnconfirmedBudget (server_limits.h) its socket is not read
// (reading_allowed), so a publisher faster than the log is held back
// instead of buffered; the confirms that bring it under the budget resume
// reading.
//
// Thread safety: the connection's strand (on_appended: any thread; it
// posts).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "server/client_tally.h"
#include "server/owner_asker.h"
#include "server/room_services.h"
#include "server/server_counters.h"
#include "server/session.h"
#include "server/stream_appender.h"

namespace strata::server {

class PublisherRoom : public PublishSink {
 public:
  // `resume_reading` is called when confirms bring the connection back
  // under its budget.
  PublisherRoom(Session& session, StreamDirectory& streams, OwnerAsker& owners,
                ServerCounters& counters, std::function<void()> resume_reading);

  bool reading_allowed() const;

  void on(const proto::DeclarePublisherRequest& r);
  void on(const proto::PublishRequest& r);
  void on(const proto::QueryPublisherSequenceRequest& r);
  void on(const proto::DeletePublisherRequest& r);
  void on_appended(uint8_t publisher_id, std::vector<uint64_t> ids, proto::ResponseCode code,
                   uint64_t bytes) override;

  // The stream is no longer served here: its publishers go. Whether there
  // were any.
  bool drop_stream(const std::string& stream);
  // The connection closed: every publisher goes.
  void close();
  // Each publisher: id, reference, stream, and the messages it published,
  // had confirmed and had refused (the management API's publisher list).
  nlohmann::json describe() const;
  void tally(ClientTally* t) const;

 private:
  struct Publisher {
    std::string stream;
    std::string ref;
    std::shared_ptr<ServedStream> served;
    uint64_t published = 0, confirmed = 0, errored = 0;
  };

  Session& session_;
  StreamDirectory& streams_;
  OwnerAsker& owners_;
  ServerCounters& counters_;
  const std::function<void()> resume_reading_;
  uint64_t unconfirmed_bytes_ = 0;
  std::map<uint8_t, Publisher> publishers_;
};

}  // namespace strata::server
