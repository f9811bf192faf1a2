#include "raftmeta/meta_schema.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::raftmeta {

using slotstore::ElementKind;
using slotstore::FieldSpec;
using slotstore::FieldType;
using slotstore::Frequency;
using slotstore::Value;

namespace {

const char* const kNames[] = {"current_term", "voted_name", "voted_node", "last_applied"};

}  // namespace

Status validate(const Bounds& b) {
  if (b.max_id_bytes < 1 || b.max_id_bytes > slotstore::kMaxKeyLen) {
    return Error(Errc::invalid_argument, fmt::format("raftmeta: max_id_bytes {} is outside 1..{}",
                                                     b.max_id_bytes, slotstore::kMaxKeyLen));
  }
  if (b.max_name_bytes < 1 || b.max_name_bytes > slotstore::kMaxBytesLen) {
    return Error(Errc::invalid_argument, fmt::format("raftmeta: max_name_bytes {} is outside 1..{}",
                                                     b.max_name_bytes, slotstore::kMaxBytesLen));
  }
  if (b.max_node_bytes < 1 || b.max_node_bytes > slotstore::kMaxInternedLen) {
    return Error(Errc::invalid_argument, fmt::format("raftmeta: max_node_bytes {} is outside 1..{}",
                                                     b.max_node_bytes, slotstore::kMaxInternedLen));
  }
  return Status::OK();
}

slotstore::Schema make_schema(const Bounds& b) {
  slotstore::Schema s;
  s.max_key_len = uint8_t(b.max_id_bytes);
  s.fields = {
      {kNames[kTermField], FieldType::u64(), Frequency::low},
      {kNames[kVoteNameField], FieldType::bytes(uint16_t(b.max_name_bytes)), Frequency::low},
      {kNames[kVoteNodeField], FieldType::interned(uint16_t(b.max_node_bytes)), Frequency::low},
      {kNames[kAppliedField], FieldType::u64(), Frequency::high},
  };
  return s;
}

Result<Bounds> bounds_of(const slotstore::Schema& schema, const std::string& path) {
  Bounds b;
  b.max_id_bytes = schema.max_key_len;
  auto mismatch = [&](const std::string& why) {
    return Error(Errc::schema_mismatch,
                 fmt::format("{}: not a raftmeta store ({}); its schema is [{}]", path, why,
                             schema.to_string()));
  };
  if (schema.fields.size() != 4) {
    return mismatch(fmt::format("{} fields, raftmeta has 4", schema.fields.size()));
  }
  const ElementKind kinds[] = {ElementKind::u64, ElementKind::bytes, ElementKind::interned,
                               ElementKind::u64};
  const Frequency freqs[] = {Frequency::low, Frequency::low, Frequency::low, Frequency::high};
  for (size_t i = 0; i < 4; ++i) {
    const FieldSpec& f = schema.fields[i];
    if (f.name != kNames[i]) {
      return mismatch(fmt::format("field {} is '{}', expected '{}'", i, f.name, kNames[i]));
    }
    if (f.type.tuple || f.type.elements.size() != 1 || f.type.elements[0].kind != kinds[i] ||
        f.frequency != freqs[i]) {
      return mismatch(fmt::format("field '{}' has another type or frequency", f.name));
    }
  }
  b.max_name_bytes = schema.fields[kVoteNameField].type.elements[0].max_len;
  b.max_node_bytes = schema.fields[kVoteNodeField].type.elements[0].max_len;
  STRATA_TRY(validate(b));
  return b;
}

Result<ServerMeta> decode_record(const slotstore::Record& rec, BytesView id,
                                 const std::string& path) {
  ServerMeta m;
  if (rec.fields.size() != 4) {
    return Error(Errc::corrupt, fmt::format("{}: server {}: record has {} fields, expected 4", path,
                                            describe_id(id), rec.fields.size()));
  }
  if (rec[kTermField]) m.current_term = rec[kTermField]->as_u64();
  if (rec[kAppliedField]) m.last_applied = rec[kAppliedField]->as_u64();
  const auto& name = rec[kVoteNameField];
  const auto& node = rec[kVoteNodeField];
  if (node && !name) {
    return Error(Errc::corrupt, fmt::format("{}: server {}: voted_for has a node ({}) but no name",
                                            path, describe_id(id), node->as_str()));
  }
  if (name && node) {
    m.voted_for = VotedFor::server(name->as_str(), node->as_str());
  } else if (name) {
    m.voted_for = VotedFor::bare(name->as_str());
  }
  return m;
}

std::vector<slotstore::FieldUpdate> field_updates(const ServerMeta& m, FieldMask mask) {
  std::vector<slotstore::FieldUpdate> ups;
  ups.reserve(size_t(__builtin_popcount(mask)));
  append_field_updates(m, mask, &ups);
  return ups;
}

void append_field_updates(const ServerMeta& m, FieldMask mask,
                          std::vector<slotstore::FieldUpdate>* out) {
  std::vector<slotstore::FieldUpdate>& ups = *out;
  auto u64 = [&](slotstore::FieldId f, const std::optional<uint64_t>& v) {
    ups.push_back(v ? slotstore::set(f, Value::u64(*v)) : slotstore::clear(f));
  };
  if (mask & kTermBit) u64(kTermField, m.current_term);
  if (mask & kVoteNameBit) {
    ups.push_back(m.voted_for.has_vote()
                      ? slotstore::set(kVoteNameField, Value::str(m.voted_for.name))
                      : slotstore::clear(kVoteNameField));
  }
  if (mask & kVoteNodeBit) {
    ups.push_back(m.voted_for.form == VotedFor::Form::server_id
                      ? slotstore::set(kVoteNodeField, Value::str(m.voted_for.node))
                      : slotstore::clear(kVoteNodeField));
  }
  if (mask & kAppliedBit) u64(kAppliedField, m.last_applied);
}

std::string describe_id(BytesView id) {
  bool printable =
      std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c < 0x7F && c != '"'; });
  if (printable && !id.empty()) return "\"" + std::string(id) + "\"";
  return "0x" + to_hex(id);
}

Status check_id(const Bounds& b, BytesView id) {
  if (id.empty()) return Error(Errc::invalid_argument, "raftmeta: empty server id");
  if (id.size() > b.max_id_bytes) {
    return Error(Errc::key_too_long,
                 fmt::format("raftmeta: server id {} is {} bytes, the store's bound is {}",
                             describe_id(id), id.size(), b.max_id_bytes));
  }
  return Status::OK();
}

Status check_value(const Bounds& b, BytesView id, Field f, const FieldValue& v) {
  const bool is_vote = std::holds_alternative<VotedFor>(v);
  if ((f == Field::voted_for) != is_vote) {
    return Error(Errc::invalid_argument,
                 fmt::format("raftmeta: server {}: {} takes {}", describe_id(id), field_name(f),
                             f == Field::voted_for ? "a VotedFor" : "an integer"));
  }
  if (!is_vote) return Status::OK();
  const VotedFor& vf = std::get<VotedFor>(v);
  if (vf.form == VotedFor::Form::none && (!vf.name.empty() || !vf.node.empty())) {
    return Error(
        Errc::invalid_argument,
        fmt::format("raftmeta: server {}: voted_for none with a name or node", describe_id(id)));
  }
  if (vf.form == VotedFor::Form::bare_name && !vf.node.empty()) {
    return Error(Errc::invalid_argument,
                 fmt::format("raftmeta: server {}: a bare-name vote has no node (got '{}')",
                             describe_id(id), vf.node));
  }
  if (vf.name.size() > b.max_name_bytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("raftmeta: server {}: voted_for name is {} bytes, the store's bound "
                             "is {}",
                             describe_id(id), vf.name.size(), b.max_name_bytes));
  }
  if (vf.node.size() > b.max_node_bytes) {
    return Error(Errc::invalid_argument,
                 fmt::format("raftmeta: server {}: voted_for node is {} bytes, the store's bound "
                             "is {}",
                             describe_id(id), vf.node.size(), b.max_node_bytes));
  }
  return Status::OK();
}

}  // namespace strata::raftmeta
