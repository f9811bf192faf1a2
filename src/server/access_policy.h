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
// The rules themselves (the users' regexes) live behind this interface; the
// server asks, the rooms answer 16 "access refused".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "auth/access.h"

namespace strata::server {

enum class Permission : uint8_t { configure, write, read };
std::string_view permission_name(Permission p);

class AccessPolicy {
 public:
  virtual ~AccessPolicy() = default;
  virtual bool permitted(const std::string& user, const std::string& vhost, Permission p,
                         const std::string& resource) const = 0;
};

// The users' permissions as configured (auth::AccessControl): RabbitMQ's
// regexes, matched against the resource's name.
class AccessControlPolicy final : public AccessPolicy {
 public:
  explicit AccessControlPolicy(std::shared_ptr<const auth::AccessControl> access)
      : access_(std::move(access)) {}
  bool permitted(const std::string& user, const std::string& vhost, Permission p,
                 const std::string& resource) const override;

 private:
  std::shared_ptr<const auth::AccessControl> access_;
};

}  // namespace strata::server
