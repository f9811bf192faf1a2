#include "raftmeta/server_meta.h"

namespace strata::raftmeta {

std::string VotedFor::to_string() const {
  switch (form) {
    case Form::none:
      return "none";
    case Form::bare_name:
      return name;
    case Form::server_id:
      return "{" + name + ", " + node + "}";
  }
  return "?";
}

std::string_view field_name(Field f) {
  switch (f) {
    case Field::current_term:
      return "current_term";
    case Field::voted_for:
      return "voted_for";
    case Field::last_applied:
      return "last_applied";
  }
  return "?";
}

std::string to_string(const FieldValue& v) {
  if (const uint64_t* n = std::get_if<uint64_t>(&v)) return std::to_string(*n);
  return std::get<VotedFor>(v).to_string();
}

std::optional<FieldValue> ServerMeta::get(Field f) const {
  switch (f) {
    case Field::current_term:
      if (current_term) return FieldValue(*current_term);
      return std::nullopt;
    case Field::voted_for:
      if (voted_for.has_vote()) return FieldValue(voted_for);
      return std::nullopt;
    case Field::last_applied:
      if (last_applied) return FieldValue(*last_applied);
      return std::nullopt;
  }
  return std::nullopt;
}

std::string ServerMeta::to_string() const {
  auto opt = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("-");
  };
  return "term=" + opt(current_term) + " voted_for=" + voted_for.to_string() +
         " last_applied=" + opt(last_applied);
}

}  // namespace strata::raftmeta
