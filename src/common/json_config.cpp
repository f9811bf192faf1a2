#include "common/json_config.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/fs.h"

namespace strata {

using json = nlohmann::json;

Result<json> read_json_config_file(const std::string& path) {
  if (path.empty()) return json();
  auto text = read_file(posix_fs(), path);
  if (!text.ok()) return std::move(text).error().with_context("reading config file " + path);
  try {
    return json::parse(*text);
  } catch (const json::parse_error& e) {
    // Where: line and column of the byte the parser stopped at (its
    // message names the token).
    const size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text->size());
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at; ++i) {
      if ((*text)[i] == '\n') {
        line += 1;
        column = 1;
      } else {
        column += 1;
      }
    }
    std::string why = e.what();
    if (auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
    return Error(Errc::invalid_argument,
                 fmt::format("config file {}: not valid JSON at line {}, column {}: {}", path,
                             line, column, why));
  }
}

JsonSection::JsonSection(json doc, std::string path, SettingsRead* read)
    : path_(std::move(path)), doc_(std::move(doc)), read_(read) {
  if (!doc_.is_null()) obj_ = &doc_;
}

// obj_ points into doc_, so it is taken again rather than moved.
JsonSection::JsonSection(JsonSection&& o) noexcept
    : path_(std::move(o.path_)),
      doc_(std::move(o.doc_)),
      seen_(std::move(o.seen_)),
      read_(o.read_) {
  if (!doc_.is_null()) obj_ = &doc_;
}

Error JsonSection::bad(const std::string& path, const json& v, std::string_view why) {
  return Error(Errc::invalid_argument, fmt::format("setting {} = {}: {}", path, v.dump(), why));
}

Status JsonSection::check_object() const {
  if (obj_ && !obj_->is_object()) return bad(path_, *obj_, "must be a JSON object");
  return Status::OK();
}

std::string JsonSection::key(std::string_view k) const {
  return path_.empty() ? std::string(k) : path_ + "." + std::string(k);
}

const json* JsonSection::find(std::string_view k) {
  seen_.insert(std::string(k));
  if (read_) read_->insert(key(k));
  if (!obj_ || !obj_->is_object()) return nullptr;
  auto it = obj_->find(std::string(k));
  return it == obj_->end() ? nullptr : &*it;
}

const json* JsonSection::get(std::string_view k) {
  const json* v = find(k);
  return v && !v->is_null() ? v : nullptr;
}

JsonSection JsonSection::sub(std::string_view k) {
  const json* v = get(k);
  return JsonSection(v ? *v : json(nullptr), key(k), read_);
}

std::string JsonSection::range_text(uint64_t lo, uint64_t hi) {
  return fmt::format("{}..{}", lo, hi);
}

Status JsonSection::boolean(std::string_view k, bool* out) {
  const json* v = get(k);
  if (!v) return Status::OK();
  if (!v->is_boolean()) return bad(key(k), *v, "must be true or false");
  *out = v->get<bool>();
  return Status::OK();
}

Status JsonSection::string(std::string_view k, std::string* out) {
  const json* v = get(k);
  if (!v) return Status::OK();
  if (!v->is_string()) return bad(key(k), *v, "must be a string");
  *out = v->get<std::string>();
  return Status::OK();
}

std::optional<std::string> JsonSection::first_unknown() const {
  if (!obj_ || !obj_->is_object()) return std::nullopt;
  for (auto it = obj_->begin(); it != obj_->end(); ++it) {
    if (!seen_.count(it.key())) return key(it.key());
  }
  return std::nullopt;
}

Status JsonSection::no_unknown() const {
  if (auto k = first_unknown()) {
    return Error(Errc::invalid_argument, fmt::format("unknown setting {}", *k));
  }
  return Status::OK();
}

}  // namespace strata
