#include "node/stream_settings.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::node {

using json = nlohmann::json;

namespace {

Error bad(std::string_view name, std::string_view why) {
  return Error(Errc::invalid_argument, fmt::format("stream setting {}: {}", name, why));
}

template <class T>
std::optional<T> min_opt(std::optional<T> a, std::optional<T> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

template <class T>
json opt_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

Error corrupt_field(std::string_view name, const json& v, std::string_view why) {
  return Error(Errc::corrupt, fmt::format("field {} = {}: {}", name, v.dump(), why));
}

template <class T>
Status read_int(const json& j, std::string_view name, std::optional<T>* out) {
  if (!j.is_number_integer()) return corrupt_field(name, j, "not an integer");
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u == 0 || u > uint64_t(std::numeric_limits<T>::max())) {
      return corrupt_field(name, j, "out of range");
    }
    *out = T(u);
    return Status::OK();
  }
  int64_t i = j.get<int64_t>();
  if (i <= 0) return corrupt_field(name, j, "out of range");
  *out = T(i);
  return Status::OK();
}

// One field of the settings file and how it is read: settings_from_json
// reads by this table, stream_settings_fields() lists it.
struct SettingsField {
  const char* name;
  Status (*read)(const json& v, std::string_view name, StreamSettings& s);
};

// An integer > 0 into one field of the settings.
template <auto field>
Status int_field(const json& v, std::string_view k, StreamSettings& s) {
  return read_int(v, k, &(s.*field));
}

constexpr SettingsField kFields[] = {
    {"max_bytes", int_field<&StreamSettings::max_bytes>},
    {"max_age_ms", int_field<&StreamSettings::max_age_ms>},
    {"segment_bytes", int_field<&StreamSettings::segment_bytes>},
    {"tiering",
     [](const json& v, std::string_view k, StreamSettings& s) -> Status {
       if (!v.is_boolean()) return corrupt_field(k, v, "not true or false");
       s.tiering = v.get<bool>();
       return Status::OK();
     }},
    {"fragment_target_bytes", int_field<&StreamSettings::fragment_target_bytes>},
    {"fragment_max_age_ms", int_field<&StreamSettings::fragment_max_age_ms>},
    {"local_max_bytes", int_field<&StreamSettings::local_max_bytes>},
    {"confirm",
     [](const json& v, std::string_view k, StreamSettings& s) -> Status {
       auto m = v.is_string() ? parse_confirm_mode(v.get<std::string>()) : std::nullopt;
       if (!m) return corrupt_field(k, v, "not \"local\", \"remote\" or \"replicated\"");
       s.confirm = *m;
       return Status::OK();
     }},
    {"filter_size_bytes", int_field<&StreamSettings::filter_size_bytes>},
    {"initial_cluster_size", int_field<&StreamSettings::initial_cluster_size>},
};

const SettingsField* find_field(std::string_view name) {
  for (const auto& f : kFields) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

}  // namespace

Status validate_settings(const NodeConfig& cfg, const StreamSettings& s) {
  auto positive = [](std::string_view name, auto v) -> Status {
    if (v && *v <= 0) return bad(name, "must be greater than 0");
    return Status::OK();
  };
  STRATA_TRY(positive("max_bytes", s.max_bytes));
  STRATA_TRY(positive("max_age_ms", s.max_age_ms));
  STRATA_TRY(positive("fragment_target_bytes", s.fragment_target_bytes));
  STRATA_TRY(positive("fragment_max_age_ms", s.fragment_max_age_ms));
  STRATA_TRY(positive("local_max_bytes", s.local_max_bytes));
  STRATA_TRY(positive("initial_cluster_size", s.initial_cluster_size));
  // The log's own bounds (node_config.cpp and the protocol's argument):
  // below 4 KiB a segment would be a file per chunk.
  if (s.segment_bytes && (*s.segment_bytes < 4096 || *s.segment_bytes > 3'000'000'000ull)) {
    return bad("segment_bytes", fmt::format("{} is not in 4096..3000000000", *s.segment_bytes));
  }
  if (s.filter_size_bytes &&
      (*s.filter_size_bytes < kMinFilterSizeBytes || *s.filter_size_bytes > kMaxFilterSizeBytes)) {
    return bad("filter_size_bytes", fmt::format("{} is not in {}..{}", *s.filter_size_bytes,
                                                kMinFilterSizeBytes, kMaxFilterSizeBytes));
  }
  if (s.tiering.value_or(false) && !cfg.tiering.enabled) {
    return bad("tiering", "tiering is disabled on this node");
  }
  const bool tiered = cfg.tiering.enabled && s.tiering.value_or(true);
  if (!tiered) {
    const char* why = cfg.tiering.enabled ? "the stream is not tiered (tiering = false)"
                                          : "tiering is disabled on this node";
    if (s.fragment_target_bytes) return bad("fragment_target_bytes", why);
    if (s.fragment_max_age_ms) return bad("fragment_max_age_ms", why);
    if (s.local_max_bytes) {
      return bad("local_max_bytes", fmt::format("{}; max_bytes bounds a local stream", why));
    }
    if (s.confirm.value_or(cfg.tiering.confirm) != ConfirmMode::local) {
      return bad(
          "confirm",
          fmt::format("remote confirms need the remote tier and {}{}", why,
                      s.confirm ? "" : " (the node's default is remote: set confirm = local)"));
    }
  }
  return Status::OK();
}

EffectiveSettings effective_settings(const NodeConfig& cfg, const StreamSettings& s) {
  EffectiveSettings e;
  e.segment_bytes = s.segment_bytes.value_or(cfg.segment_bytes);
  e.tiering = cfg.tiering.enabled && s.tiering.value_or(true);
  if (!e.tiering) {
    // The local log is the whole stream: its retention is the stream's.
    e.local_retention.max_bytes = s.max_bytes ? s.max_bytes : cfg.local_retention.max_bytes;
    e.local_retention.max_age_ms = s.max_age_ms ? s.max_age_ms : cfg.local_retention.max_age_ms;
    return e;
  }
  e.confirm = s.confirm.value_or(cfg.tiering.confirm);
  e.cluster_size = s.initial_cluster_size.value_or(0);
  e.filter_size_bytes = uint32_t(s.filter_size_bytes.value_or(kDefaultFilterSizeBytes));
  e.fragment_target_bytes = s.fragment_target_bytes.value_or(cfg.tiering.fragment_target_bytes);
  e.fragment_max_age_ms = s.fragment_max_age_ms.value_or(cfg.tiering.fragment_max_age_ms);
  e.remote_retention = cfg.tiering.retention;
  if (s.max_bytes) e.remote_retention.max_bytes = s.max_bytes;
  if (s.max_age_ms) e.remote_retention.max_age_ms = s.max_age_ms;
  // The local log is the newest part of the stream: a stream limited to N
  // bytes never keeps more than N locally either (the tiering hook still
  // vetoes dropping what is not persisted remotely).
  std::optional<uint64_t> local_bytes =
      s.local_max_bytes ? s.local_max_bytes : cfg.local_retention.max_bytes;
  if (!local_bytes && !cfg.local_retention.max_age_ms) {
    local_bytes = kDefaultLocalSegments * e.segment_bytes;
  }
  e.local_retention.max_bytes = min_opt(local_bytes, s.max_bytes);
  e.local_retention.max_age_ms = min_opt(cfg.local_retention.max_age_ms, s.max_age_ms);
  return e;
}

json settings_to_json(const StreamSettings& s) {
  json j = json::object();
  if (s.max_bytes) j["max_bytes"] = *s.max_bytes;
  if (s.max_age_ms) j["max_age_ms"] = *s.max_age_ms;
  if (s.segment_bytes) j["segment_bytes"] = *s.segment_bytes;
  if (s.tiering) j["tiering"] = *s.tiering;
  if (s.fragment_target_bytes) j["fragment_target_bytes"] = *s.fragment_target_bytes;
  if (s.fragment_max_age_ms) j["fragment_max_age_ms"] = *s.fragment_max_age_ms;
  if (s.local_max_bytes) j["local_max_bytes"] = *s.local_max_bytes;
  if (s.confirm) j["confirm"] = confirm_mode_name(*s.confirm);
  if (s.filter_size_bytes) j["filter_size_bytes"] = *s.filter_size_bytes;
  if (s.initial_cluster_size) j["initial_cluster_size"] = *s.initial_cluster_size;
  return j;
}

Result<StreamSettings> settings_from_json(const json& j) {
  if (!j.is_object()) return Error(Errc::corrupt, "settings: not a JSON object");
  StreamSettings s;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const SettingsField* f = find_field(it.key());
    // A setting this version does not know would be silently ignored.
    if (!f) return corrupt_field(it.key(), it.value(), "unknown setting");
    STRATA_TRY(f->read(it.value(), it.key(), s));
  }
  return s;
}

Status check_alteration(const StreamSettings& from, const StreamSettings& to) {
  json a = settings_to_json(from), b = settings_to_json(to);
  for (const char* k : kAlterableSettings) {
    a.erase(k);
    b.erase(k);
  }
  if (a == b) return Status::OK();
  for (const auto& f : kFields) {
    if (a.value(f.name, json()) != b.value(f.name, json())) {
      return bad(f.name,
                 "is fixed when the stream is created; only the retention (max_bytes, "
                 "max_age_ms, local_max_bytes) changes while it runs");
    }
  }
  return Status::OK();
}

std::vector<std::string> stream_settings_fields() {
  std::vector<std::string> out;
  for (const auto& f : kFields) out.emplace_back(f.name);
  return out;
}

json effective_to_json(const EffectiveSettings& e) {
  json j = {{"segment_bytes", e.segment_bytes},
            {"local_retention",
             {{"max_bytes", opt_json(e.local_retention.max_bytes)},
              {"max_age_ms", opt_json(e.local_retention.max_age_ms)}}},
            {"tiering", e.tiering},
            {"confirm", confirm_mode_name(e.confirm)},
            {"filter_size_bytes", e.filter_size_bytes}};
  // null: every node registered in the cluster.
  if (e.confirm == ConfirmMode::replicated) {
    j["cluster_size"] = e.cluster_size ? json(e.cluster_size) : json();
  }
  if (e.tiering) {
    j["fragment_target_bytes"] = e.fragment_target_bytes;
    j["fragment_max_age_ms"] = e.fragment_max_age_ms;
    j["remote_retention"] = {{"max_bytes", opt_json(e.remote_retention.max_bytes)},
                             {"max_age_ms", opt_json(e.remote_retention.max_age_ms)}};
  }
  return j;
}

}  // namespace strata::node
