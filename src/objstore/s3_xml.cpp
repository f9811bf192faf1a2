#include "objstore/s3_xml.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <ctime>
#include <pugixml.hpp>
#include <sstream>

namespace strata::objstore::s3xml {

namespace {

// Local name of an element ("s3:Key" -> "Key").
std::string_view local_name(const pugi::xml_node& n) {
  std::string_view name = n.name();
  auto colon = name.find(':');
  return colon == std::string_view::npos ? name : name.substr(colon + 1);
}

pugi::xml_node child(const pugi::xml_node& n, std::string_view name) {
  for (auto c : n.children()) {
    if (c.type() == pugi::node_element && local_name(c) == name) return c;
  }
  return {};
}

std::string text_of(const pugi::xml_node& n) {
  return n ? std::string(n.text().get()) : "";
}

Result<pugi::xml_node> load(pugi::xml_document& doc, std::string_view body, std::string_view what,
                            std::string_view root_name) {
  // Keep a whitespace-only text node when it is the only child: a key may
  // be " " (one space).
  auto res =
      doc.load_buffer(body.data(), body.size(), pugi::parse_default | pugi::parse_ws_pcdata_single,
                      pugi::encoding_utf8);
  if (!res) {
    return Error(Errc::corrupt, fmt::format("malformed {} XML at byte {}: {}", what, res.offset,
                                            res.description()));
  }
  pugi::xml_node root = doc.document_element();
  if (!root || local_name(root) != root_name) {
    return Error(Errc::corrupt, fmt::format("{} XML: root element is <{}>, expected <{}>", what,
                                            root ? root.name() : "", root_name));
  }
  return root;
}

bool parse_u64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

// "2009-10-12T17:50:30.000Z" (ISO 8601 in UTC, as ListObjectsV2 gives
// LastModified; the fraction is optional and may have any number of digits)
// -> ms since the Unix epoch.
std::optional<int64_t> parse_iso8601_ms(const std::string& s) {
  std::tm tm{};
  const char* rest = ::strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  int64_t ms = 0;
  if (*rest == '.') {
    int digits = 0;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, ++digits) {
      if (digits < 3) ms = ms * 10 + (*rest - '0');
    }
    if (digits == 0) return std::nullopt;
    for (; digits < 3; ++digits) ms *= 10;
  }
  if (std::strcmp(rest, "Z") != 0) return std::nullopt;
  time_t secs = ::timegm(&tm);
  if (secs == time_t(-1)) return std::nullopt;
  return int64_t(secs) * 1000 + ms;
}

std::string strip_quotes(std::string s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

std::optional<S3ErrorBody> parse_error(std::string_view body) {
  if (body.empty()) return std::nullopt;
  pugi::xml_document doc;
  auto root = load(doc, body, "Error", "Error");
  if (!root.ok()) return std::nullopt;
  S3ErrorBody e{text_of(child(*root, "Code")), text_of(child(*root, "Message"))};
  if (e.code.empty()) return std::nullopt;
  return e;
}

Result<ListResult> parse_list(std::string_view body) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(auto root, load(doc, body, "ListObjectsV2", "ListBucketResult"));
  ListResult out;
  std::string trunc = text_of(child(root, "IsTruncated"));
  if (trunc == "true") {
    out.truncated = true;
  } else if (trunc != "false") {
    return Error(Errc::corrupt,
                 fmt::format("ListObjectsV2 XML: IsTruncated is '{}', expected true/false", trunc));
  }
  out.next_token = text_of(child(root, "NextContinuationToken"));
  if (out.truncated && out.next_token.empty()) {
    return Error(Errc::corrupt,
                 "ListObjectsV2 XML: IsTruncated is true but NextContinuationToken is missing");
  }
  size_t index = 0;
  for (auto c : root.children()) {
    if (c.type() != pugi::node_element || local_name(c) != "Contents") continue;
    ObjectInfo info;
    auto key = child(c, "Key");
    if (!key) {
      return Error(Errc::corrupt, fmt::format("ListObjectsV2 XML: Contents #{} has no Key", index));
    }
    info.key = text_of(key);
    std::string size = text_of(child(c, "Size"));
    if (!parse_u64(size, &info.size)) {
      return Error(Errc::corrupt, fmt::format("ListObjectsV2 XML: Contents #{} (key '{}') has "
                                              "Size '{}', expected an unsigned integer",
                                              index, info.key, size));
    }
    info.etag = strip_quotes(text_of(child(c, "ETag")));
    if (auto lm = child(c, "LastModified")) {
      info.last_modified_ms = parse_iso8601_ms(text_of(lm));
      if (!info.last_modified_ms) {
        return Error(Errc::corrupt,
                     fmt::format("ListObjectsV2 XML: Contents #{} (key '{}') has LastModified "
                                 "'{}', expected an ISO 8601 UTC time",
                                 index, info.key, text_of(lm)));
      }
    }
    out.objects.push_back(std::move(info));
    ++index;
  }
  return out;
}

Result<DeleteResult> parse_delete_result(std::string_view body) {
  pugi::xml_document doc;
  STRATA_ASSIGN_OR_RETURN(auto root, load(doc, body, "DeleteObjects", "DeleteResult"));
  DeleteResult out;
  for (auto c : root.children()) {
    if (c.type() != pugi::node_element) continue;
    auto name = local_name(c);
    if (name == "Deleted") {
      auto key = child(c, "Key");
      if (!key) return Error(Errc::corrupt, "DeleteObjects XML: <Deleted> without <Key>");
      out.deleted.push_back(text_of(key));
    } else if (name == "Error") {
      auto key = child(c, "Key");
      if (!key) return Error(Errc::corrupt, "DeleteObjects XML: <Error> without <Key>");
      out.errors.push_back({text_of(key), text_of(child(c, "Code")), text_of(child(c, "Message"))});
    }
  }
  return out;
}

std::string build_delete_request(std::span<const std::string> keys) {
  pugi::xml_document doc;
  auto decl = doc.append_child(pugi::node_declaration);
  decl.append_attribute("version") = "1.0";
  decl.append_attribute("encoding") = "UTF-8";
  auto del = doc.append_child("Delete");
  del.append_attribute("xmlns") = "http://s3.amazonaws.com/doc/2006-03-01/";
  del.append_child("Quiet").text().set("false");
  for (const auto& k : keys) {
    del.append_child("Object").append_child("Key").text().set(k.c_str());
  }
  std::ostringstream os;
  doc.save(os, "", pugi::format_raw, pugi::encoding_utf8);
  return os.str();
}

}  // namespace strata::objstore::s3xml
