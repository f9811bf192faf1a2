// AccessPolicy: what an authenticated user may do with a named resource
// (a stream or a super stream) in a virtual host — RabbitMQ's three
// permissions, asked by the command rooms on every command as RabbitMQ's
// stream reader asks them:
//   configure  Create, Delete, CreateSuperStream, DeleteSuperStream
//   write      DeclarePublisher, Route (on the super stream), and, for a
//              super stream's creation, each partition
//   read       Subscribe, StoreOffset, QueryOffset, QueryPublisherSequence,
//              ResolveOffsetSpec, StreamStats, and, for a super stream's
//              creation, the super stream
//   read or write  Metadata (a stream neither allows is answered with 16
//              access refused), Partitions
// The rules (the users' hashes and regexes, auth::AccessControl) are one
// immutable value that a reload replaces whole: a command is checked
// against the rules current when it arrives.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "auth/access.h"

namespace strata::server {

// RabbitMQ's three permissions, as the auth layer names them.
using Permission = auth::Op;

class AccessPolicy {
 public:
  explicit AccessPolicy(std::shared_ptr<const auth::AccessControl> access)
      : access_(std::move(access)) {}

  // The rules now (never null).
  std::shared_ptr<const auth::AccessControl> current() const { return access_.load(); }
  void replace(std::shared_ptr<const auth::AccessControl> access) {
    access_.store(std::move(access));
  }

  bool permitted(const std::string& user, const std::string& vhost, Permission p,
                 const std::string& resource) const;

 private:
  std::atomic<std::shared_ptr<const auth::AccessControl>> access_;
};

}  // namespace strata::server
