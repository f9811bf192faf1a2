#include "server/vhost_names.h"

#include "common/stream_name.h"

namespace strata::server {

std::string VhostNames::stored(std::string_view client) const {
  if (raw_) return std::string(client);
  if (client.find(kVhostSeparator) != client.npos) {
    std::string poisoned(1, kVhostSeparator);
    poisoned.append(client);
    return poisoned;
  }
  return qualified_stream_name(vhost_, client);
}

void VhostNames::qualify(proto::ClientFrame* frame) const {
  std::visit(
      [this](auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (requires { m.stream; }) m.stream = stored(m.stream);
        if constexpr (std::is_same_v<M, proto::MetadataRequest>) {
          for (auto& s : m.streams) s = stored(s);
        }
        if constexpr (requires { m.super_stream; }) m.super_stream = stored(m.super_stream);
        if constexpr (std::is_same_v<M, proto::CreateSuperStreamRequest>) {
          m.name = stored(m.name);
          for (auto& p : m.partitions) p = stored(p);
        }
        if constexpr (std::is_same_v<M, proto::DeleteSuperStreamRequest>) m.name = stored(m.name);
      },
      *frame);
}

std::optional<std::string> VhostNames::client_name(std::string_view stored_name) const {
  if (!stored_name.empty() && stored_name.front() == kVhostSeparator) {
    return std::string(stored_name.substr(1));
  }
  const StreamPlace p = split_stream_name(stored_name);
  if (p.vhost != vhost_) return std::nullopt;
  return std::string(p.name);
}

std::string VhostNames::shown(std::string_view stored_name) const {
  if (raw_) return std::string(stored_name);
  auto c = client_name(stored_name);
  return c ? *c : std::string(stored_name);
}

}  // namespace strata::server
