// ServerTable: the latest metadata of every Raft server on the node, in
// memory, readable from any thread without taking a lock.
//
// Readers (read, for_each) never block: they take no mutex and do no I/O.
// Each entry is guarded by a sequence lock and the id -> entry index by
// another; a reader copies what it needs and retries only if an in-memory
// update of that entry (a few word stores) or a removal from the index ran
// at the same moment. Entries live in a fixed pool that is never freed while
// the table exists, and every word a reader touches is a std::atomic, so a
// racing reader can see a stale copy (which it discards) but never freed
// memory or a torn value.
//
// Writers (find, insert, remove, set, intern_node) must be serialized by the
// caller (RaftMeta holds its mutex). They also keep a plain copy of each
// entry for themselves, so writers never decode the reader words.
//
// Capacity is fixed: `capacity` servers and `node_capacity` distinct node
// names (node names are interned and never forgotten, as in slotstore).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/bytes.h"
#include "raftmeta/meta_schema.h"
#include "raftmeta/server_meta.h"

namespace strata::raftmeta {

class ServerTable {
 public:
  ServerTable(uint32_t capacity, const Bounds& bounds, uint32_t node_capacity);
  ServerTable(const ServerTable&) = delete;
  ServerTable& operator=(const ServerTable&) = delete;

  // ---- readers: any thread, lock-free ----

  // The metadata of `id`, or nullopt if there is no such server. The vote is
  // copied only if `with_vote` (otherwise voted_for is none).
  std::optional<ServerMeta> read(BytesView id, bool with_vote = true) const;
  // Calls fn for every server present during the whole call (servers added
  // or removed meanwhile may or may not be visited); each server's metadata
  // is consistent, the set as a whole is not a snapshot.
  void for_each(const std::function<void(BytesView id, const ServerMeta&)>& fn) const;

  // The vote of a server without building strings (VoteRead). nullopt if there is no such server.
  // The name goes to `name_buf` (room for max_name_bytes) unless it is null.
  std::optional<VoteRead> read_vote(BytesView id, char* name_buf) const;
  // The node of a VoteRead (ids are never reassigned; the view stays valid
  // while the table exists).
  std::string_view node_name(uint32_t node) const;

  // ---- writers: serialized by the caller ----

  std::optional<uint32_t> find(BytesView id) const;
  // Adds `id` (not present, within the bounds) with every field absent and
  // returns its entry; nullopt if `capacity` servers exist.
  std::optional<uint32_t> insert(BytesView id);
  // Removes the server of entry `e`; the entry is reused by a later insert.
  void remove(uint32_t e);
  // Publishes `m` for entry `e`. A server_id vote's node must be interned.
  void set(uint32_t e, const ServerMeta& m);
  // Publishes a new last_applied only (the hot path: no vote copied).
  void set_last_applied(uint32_t e, uint64_t applied);
  const ServerMeta& meta(uint32_t e) const { return shadow_[e].meta; }
  BytesView id(uint32_t e) const { return shadow_[e].id; }
  bool live(uint32_t e) const { return shadow_[e].live; }
  uint32_t size() const { return live_; }
  uint32_t capacity() const { return capacity_; }

  bool has_node(std::string_view node) const { return node_ids_.count(std::string(node)) != 0; }
  // Interns `node` if new; false if the node table is full.
  bool intern_node(std::string_view node);
  uint32_t nodes() const { return uint32_t(node_storage_.size()); }
  uint32_t node_capacity() const { return node_capacity_; }

 private:
  struct Shadow {
    bool live = false;
    Bytes id;
    ServerMeta meta;
    uint64_t hash = 0;
    uint32_t bucket = 0;
  };
  // Word 0: sequence (odd while being written); word 1: flags and lengths;
  // 2: current_term; 3: last_applied; 4: the vote's version; then the id,
  // then the vote name.
  static constexpr size_t kSeqWord = 0, kMetaWord = 1, kTermWord = 2, kAppliedWord = 3,
                          kVoteVersionWord = 4, kIdWord = 5;
  // Words of the longest id / vote name any schema allows (stack buffers).
  static constexpr size_t kMaxIdWords = (slotstore::kMaxKeyLen + 7) / 8;
  static constexpr size_t kMaxBytesWords = (slotstore::kMaxBytesLen + 7) / 8;

  std::atomic<uint64_t>* entry(uint32_t e) const { return &words_[size_t(e) * stride_]; }
  // Entry e's words as one consistent copy (under its sequence lock), if
  // it holds `id`; the vote name's words only `with_name`.
  struct EntrySnapshot {
    uint64_t meta = 0, term = 0, applied = 0, version = 0;
    size_t name_len = 0;
    uint64_t name[kMaxBytesWords];
  };
  bool snapshot_entry(uint32_t e, BytesView id, const uint64_t* id_words, bool with_name,
                      EntrySnapshot* out) const;
  // Copies entry e if it holds `id`; false if it does not.
  bool read_entry(uint32_t e, BytesView id, const uint64_t* id_words, bool with_vote,
                  ServerMeta* out) const;
  bool read_vote_entry(uint32_t e, BytesView id, const uint64_t* id_words, char* name_buf,
                       VoteRead* out) const;
  // Finds `id` in the index and calls try_entry(e, id_words) on each
  // candidate entry until one returns true (retrying over a concurrent
  // removal); false if none did.
  template <class TryEntry>
  bool lookup(BytesView id, const TryEntry& try_entry) const;
  void begin_write(uint32_t e);
  void end_write(uint32_t e);
  static uint64_t hash(BytesView id);

  const uint32_t capacity_;
  const Bounds bounds_;
  const size_t id_words_;
  const size_t name_words_;
  const size_t stride_;
  std::unique_ptr<std::atomic<uint64_t>[]> words_;
  const uint64_t bucket_mask_;
  std::unique_ptr<std::atomic<uint32_t>[]> buckets_;  // 0 = empty, else entry + 1
  std::atomic<uint64_t> index_seq_{0};                // odd while a removal shifts buckets
  uint64_t vote_version_ = 0;                         // the last version handed out (writers)

  const uint32_t node_capacity_;
  std::unique_ptr<std::atomic<const std::string*>[]> nodes_;  // by node id; set once
  std::vector<std::unique_ptr<std::string>> node_storage_;
  std::unordered_map<std::string, uint32_t> node_ids_;

  std::vector<Shadow> shadow_;
  std::vector<uint32_t> free_;  // stack of free entries
  uint32_t live_ = 0;
};

}  // namespace strata::raftmeta
