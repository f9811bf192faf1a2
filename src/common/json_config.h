// Reading a JSON configuration document: the file, and one object of it at
// a time. The node's reader (node/node_config.cpp) and the object store's
// (objstore/config.cpp) both read through this, so how a file is read, how
// a setting is named (its JSON path, "tiering.fragment_target_bytes") and
// which keys are unknown (present, never read: a typo must not silently
// fall back to a default) are decided once.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/result.h"

namespace strata {

// Reads and parses a JSON configuration file. An empty path means "no
// file": a null document. Errors: the read's, in the context "reading
// config file PATH", and "config file PATH: not valid JSON at line L,
// column C: WHAT" (the byte the parser stopped at, and why).
Result<nlohmann::json> read_json_config_file(const std::string& path);

// The full paths of the settings a reader asked for, whether present or
// not: what it accepts (docs/CONFIGURATION.md is checked against it).
using SettingsRead = std::set<std::string>;

// One object of a configuration document (a copy: configuration documents
// are small), read key by key. Every key read is remembered, so that the
// rest can be reported as unknown. Errors of the typed readers name the
// setting by its path and value: "setting log.segment_bytes = -5: must not
// be negative".
class JsonSection {
 public:
  // `path`: where the object sits ("" for the document itself). A null
  // document is an absent section: every key reads as absent. `read`, if
  // set, collects the path of every key read (also by sections below).
  JsonSection(nlohmann::json doc, std::string path, SettingsRead* read = nullptr);
  JsonSection(const JsonSection&) = delete;
  JsonSection(JsonSection&& o) noexcept;

  // "setting <path> = <json>: <why>", Errc::invalid_argument.
  static Error bad(const std::string& path, const nlohmann::json& v, std::string_view why);

  // The section must be an object (or absent).
  Status check_object() const;
  // The full path of key `k`.
  std::string key(std::string_view k) const;
  // Marks `k` read; its value, or nullptr when absent or null.
  const nlohmann::json* get(std::string_view k);
  // Marks `k` read; its value as given (a null too), or nullptr when absent.
  const nlohmann::json* find(std::string_view k);
  // The object at `k` as a section (absent if `k` is absent or null).
  JsonSection sub(std::string_view k);

  // Typed readers: absent leaves *out unchanged. A positive integer (>= 0
  // when allow_zero) that fits T.
  template <class T>
  Status integer(std::string_view k, T* out, bool allow_zero = false) {
    const nlohmann::json* v = get(k);
    if (!v) return Status::OK();
    if (!v->is_number_integer()) return bad(key(k), *v, "must be an integer");
    if (v->is_number_unsigned()) {
      uint64_t u = v->get<uint64_t>();
      if (u == 0 && !allow_zero) return bad(key(k), *v, "must be greater than 0");
      if (u > uint64_t(std::numeric_limits<T>::max())) return bad(key(k), *v, "is too large");
      *out = T(u);
      return Status::OK();
    }
    int64_t i = v->get<int64_t>();
    if (i < 0) return bad(key(k), *v, "must not be negative");
    if (i == 0 && !allow_zero) return bad(key(k), *v, "must be greater than 0");
    *out = T(i);
    return Status::OK();
  }
  // An integer in [lo, hi] (bounds that fit T).
  template <class T>
  Status integer_in(std::string_view k, T* out, uint64_t lo, uint64_t hi) {
    const nlohmann::json* v = get(k);
    if (!v) return Status::OK();
    const bool fits = v->is_number_integer() &&
                      (v->is_number_unsigned() || v->get<int64_t>() >= 0) &&
                      v->get<uint64_t>() >= lo && v->get<uint64_t>() <= hi;
    if (!fits) return bad(key(k), *v, "must be an integer in " + range_text(lo, hi));
    *out = T(v->get<uint64_t>());
    return Status::OK();
  }
  template <class T>
  Status optional_integer(std::string_view k, std::optional<T>* out) {
    T x{};
    if (!get(k)) return Status::OK();
    STRATA_TRY(integer(k, &x));
    *out = x;
    return Status::OK();
  }
  Status boolean(std::string_view k, bool* out);
  // "lo..hi"
  static std::string range_text(uint64_t lo, uint64_t hi);
  Status string(std::string_view k, std::string* out);

  // The full path of the first key of the object (in key order) that was
  // never read; nullopt when every key was read or the section is absent.
  std::optional<std::string> first_unknown() const;
  // Every key of the object must have been read: "unknown setting <path>".
  Status no_unknown() const;

 private:
  std::string path_;
  nlohmann::json doc_;
  const nlohmann::json* obj_ = nullptr;
  std::set<std::string> seen_;
  SettingsRead* read_ = nullptr;
};

}  // namespace strata
