// The metadata raftmeta keeps for one Raft server (what Ra's ra_log_meta
// keeps per server uid): current_term, voted_for and last_applied.
//
// Every field may be absent. Ra creates a row with all fields `undefined`
// and sets one at a time, so "never stored" is a real state; it is kept as
// absent (not as 0) so that a migrated row reads back exactly as it was.
// fetch() with a default gives Ra's readers' view (term/applied 0, no vote).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace strata::raftmeta {

// Who the server voted for in its current term.
struct VotedFor {
  enum class Form : uint8_t {
    none,       // no vote (Ra: undefined)
    bare_name,  // legacy form: the registered name only (Ra: a bare atom)
    server_id,  // {name, node} (Ra: ra_server_id())
  };
  Form form = Form::none;
  std::string name;  // empty for none
  std::string node;  // server_id only

  static VotedFor none() { return {}; }
  static VotedFor bare(std::string name) { return {Form::bare_name, std::move(name), {}}; }
  static VotedFor server(std::string name, std::string node) {
    return {Form::server_id, std::move(name), std::move(node)};
  }
  bool has_vote() const { return form != Form::none; }
  // "none", "name", "{name, node}" (for logs and the CLI).
  std::string to_string() const;
  bool operator==(const VotedFor&) const = default;
};

// A server's vote as a lock-free reader sees it without building strings
// (RaftMeta::fetch_vote): for a reader that caches what it makes of a vote,
// such as the Erlang binding's atoms.
struct VoteRead {
  VotedFor::Form form = VotedFor::Form::none;
  uint32_t node = 0;     // server_id: the node's id (RaftMeta::node_name)
  size_t name_len = 0;   // the name's length; its bytes are copied only if asked for
  uint64_t version = 0;  // changes whenever the server's vote does; never reused
  uint32_t entry = 0;    // the server's place in the table (< capacity; reused after an erase)
};

enum class Field : uint8_t { current_term, voted_for, last_applied };
// "current_term", "voted_for", "last_applied".
std::string_view field_name(Field f);

// A field's value: a u64 for current_term and last_applied, a VotedFor for
// voted_for (VotedFor::none() clears the vote).
using FieldValue = std::variant<uint64_t, VotedFor>;
std::string to_string(const FieldValue& v);

struct ServerMeta {
  std::optional<uint64_t> current_term;
  VotedFor voted_for;  // form none = absent
  std::optional<uint64_t> last_applied;

  // The field's value, or nullopt if absent.
  std::optional<FieldValue> get(Field f) const;
  std::string to_string() const;
  bool operator==(const ServerMeta&) const = default;
};

}  // namespace strata::raftmeta
