#include "etcd/etcd_json.h"

#include <fmt/format.h>

#include <charconv>

#include "etcd/etcd_limits.h"
#include "net/base64.h"

namespace strata::etcd {

using nlohmann::json;

std::string b64(std::string_view bytes) {
  return net::base64_encode(bytes);
}

std::optional<std::string> unb64(std::string_view text) {
  if (text.empty()) return std::string();
  return net::base64_decode(text);
}

std::string printable_key(std::string_view key) {
  std::string out;
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = char(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  // Every key: etcd reads range_end "\0" as "to the end".
  return std::string(1, '\0');
}

json range_json(std::string_view key, std::string_view range_end, int64_t limit) {
  json j = {{"key", b64(key)}};
  if (!range_end.empty()) j["range_end"] = b64(range_end);
  if (limit > 0) j["limit"] = std::to_string(limit);
  return j;
}

namespace {

const char* target_name(CompareTarget t) {
  switch (t) {
    case CompareTarget::version:
      return "VERSION";
    case CompareTarget::create_revision:
      return "CREATE";
    case CompareTarget::mod_revision:
      return "MOD";
    case CompareTarget::value:
      return "VALUE";
    case CompareTarget::lease:
      return "LEASE";
  }
  return "MOD";
}

const char* op_name(CompareOp o) {
  switch (o) {
    case CompareOp::equal:
      return "EQUAL";
    case CompareOp::greater:
      return "GREATER";
    case CompareOp::less:
      return "LESS";
    case CompareOp::not_equal:
      return "NOT_EQUAL";
  }
  return "EQUAL";
}

json compare_json(const Compare& c) {
  json j = {{"key", b64(c.key)}, {"target", target_name(c.target)}, {"result", op_name(c.op)}};
  switch (c.target) {
    case CompareTarget::version:
      j["version"] = std::to_string(c.number);
      break;
    case CompareTarget::create_revision:
      j["create_revision"] = std::to_string(c.number);
      break;
    case CompareTarget::mod_revision:
      j["mod_revision"] = std::to_string(c.number);
      break;
    case CompareTarget::value:
      j["value"] = b64(c.value);
      break;
    case CompareTarget::lease:
      j["lease"] = std::to_string(c.number);
      break;
  }
  return j;
}

json op_json(const TxnOp& op) {
  if (const auto* r = std::get_if<RangeOp>(&op)) {
    return {{"request_range", range_json(r->key, r->range_end, 0)}};
  }
  if (const auto* p = std::get_if<PutOp>(&op)) {
    json put = {{"key", b64(p->key)}, {"value", b64(p->value)}};
    if (p->lease != 0) put["lease"] = std::to_string(p->lease);
    return {{"request_put", put}};
  }
  const auto& d = std::get<DeleteOp>(op);
  json del = {{"key", b64(d.key)}};
  if (!d.range_end.empty()) del["range_end"] = b64(d.range_end);
  return {{"request_delete_range", del}};
}

Error bad(std::string_view what) {
  return Error(Errc::corrupt, fmt::format("unexpected reply: {}", what));
}

}  // namespace

json txn_json(const TxnRequest& t) {
  json j = json::object();
  json cmp = json::array(), ok = json::array(), no = json::array();
  for (const auto& c : t.compare) cmp.push_back(compare_json(c));
  for (const auto& o : t.success) ok.push_back(op_json(o));
  for (const auto& o : t.failure) no.push_back(op_json(o));
  j["compare"] = cmp;
  j["success"] = ok;
  j["failure"] = no;
  return j;
}

json watch_create_json(const WatchRequest& w) {
  json c = {{"key", b64(w.key)}};
  if (!w.range_end.empty()) c["range_end"] = b64(w.range_end);
  if (w.start_revision > 0) c["start_revision"] = std::to_string(w.start_revision);
  return {{"create_request", c}};
}

Result<int64_t> int64_field(const json& obj, std::string_view name) {
  if (!obj.is_object()) return bad(fmt::format("expected an object holding \"{}\"", name));
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return int64_t{0};
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return bad(fmt::format("\"{}\" is not an int64 string", name));
  const auto& s = it->get_ref<const std::string&>();
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return bad(
        fmt::format("\"{}\" is \"{}\", not an int64", name, s.substr(0, kFieldSnippetBytes)));
  }
  return v;
}

namespace {

Result<std::string> bytes_field(const json& obj, std::string_view name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) return bad(fmt::format("\"{}\" is not a base64 string", name));
  auto v = unb64(it->get_ref<const std::string&>());
  if (!v) return bad(fmt::format("\"{}\" is not valid base64", name));
  return *v;
}

}  // namespace

Result<KeyValue> decode_kv(const json& kv) {
  if (!kv.is_object()) return bad("a key-value is not an object");
  KeyValue out;
  STRATA_ASSIGN_OR_RETURN(out.key, bytes_field(kv, "key"));
  STRATA_ASSIGN_OR_RETURN(out.value, bytes_field(kv, "value"));
  STRATA_ASSIGN_OR_RETURN(out.create_revision, int64_field(kv, "create_revision"));
  STRATA_ASSIGN_OR_RETURN(out.mod_revision, int64_field(kv, "mod_revision"));
  STRATA_ASSIGN_OR_RETURN(out.version, int64_field(kv, "version"));
  STRATA_ASSIGN_OR_RETURN(out.lease, int64_field(kv, "lease"));
  return out;
}

Result<int64_t> header_revision(const json& body) {
  if (!body.is_object()) return bad("the reply is not a JSON object");
  auto h = body.find("header");
  if (h == body.end()) return int64_t{0};
  return int64_field(*h, "revision");
}

Result<RangeResult> decode_range(const json& body) {
  if (!body.is_object()) return bad("a range reply is not a JSON object");
  RangeResult r;
  STRATA_ASSIGN_OR_RETURN(r.revision, header_revision(body));
  auto kvs = body.find("kvs");
  if (kvs != body.end() && !kvs->is_null()) {
    if (!kvs->is_array()) return bad("\"kvs\" is not an array");
    for (const auto& kv : *kvs) {
      STRATA_ASSIGN_OR_RETURN(KeyValue v, decode_kv(kv));
      r.kvs.push_back(std::move(v));
    }
  }
  auto more = body.find("more");
  r.more = more != body.end() && more->is_boolean() && more->get<bool>();
  return r;
}

Result<TxnResponse> decode_txn(const json& body) {
  if (!body.is_object()) return bad("a txn reply is not a JSON object");
  TxnResponse t;
  STRATA_ASSIGN_OR_RETURN(t.revision, header_revision(body));
  // The gateway omits "succeeded" when it is false.
  auto s = body.find("succeeded");
  if (s != body.end() && !s->is_boolean()) return bad("\"succeeded\" is not a boolean");
  t.succeeded = s != body.end() && s->get<bool>();
  auto rs = body.find("responses");
  if (rs != body.end() && !rs->is_null()) {
    if (!rs->is_array()) return bad("\"responses\" is not an array");
    for (const auto& r : *rs) {
      if (!r.is_object()) return bad("a txn response is not an object");
      auto range = r.find("response_range");
      if (range != r.end()) {
        STRATA_ASSIGN_OR_RETURN(RangeResult rr, decode_range(*range));
        t.ranges.push_back(std::move(rr));
      } else {
        t.ranges.emplace_back();
      }
    }
  }
  return t;
}

Result<std::vector<WatchEvent>> decode_events(const json& result) {
  std::vector<WatchEvent> out;
  auto evs = result.find("events");
  if (evs == result.end() || evs->is_null()) return out;
  if (!evs->is_array()) return bad("\"events\" is not an array");
  for (const auto& e : *evs) {
    if (!e.is_object()) return bad("a watch event is not an object");
    WatchEvent w;
    auto type = e.find("type");
    if (type != e.end() && type->is_string() && type->get_ref<const std::string&>() == "DELETE") {
      w.type = WatchEvent::Type::remove;
    } else if (type != e.end() && !(type->is_string() && *type == "PUT") &&
               !(type->is_number() && type->get<int>() == 0)) {
      if (!(type->is_number() && type->get<int>() == 1)) return bad("unknown watch event type");
      w.type = WatchEvent::Type::remove;
    }
    auto kv = e.find("kv");
    if (kv == e.end()) return bad("a watch event has no \"kv\"");
    STRATA_ASSIGN_OR_RETURN(w.kv, decode_kv(*kv));
    out.push_back(std::move(w));
  }
  return out;
}

std::optional<GatewayError> decode_gateway_error(const json& body) {
  if (!body.is_object()) return std::nullopt;
  auto code = body.find("code");
  auto msg = body.find("message");
  if (msg == body.end()) msg = body.find("error");
  if (code == body.end() && msg == body.end()) return std::nullopt;
  GatewayError e;
  if (code != body.end() && code->is_number_integer()) e.grpc_code = code->get<int>();
  if (msg != body.end() && msg->is_string()) e.message = msg->get<std::string>();
  return e;
}

namespace {
// The gRPC status codes the gateway reports (grpc/status.h).
enum GrpcCode : int {
  kNoCode = -1,  // the reply carried none
  kUnknown = 2,  // e.g. "leader changed"
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,  // a compacted revision
  kUnavailable = 14,
};
}  // namespace

bool retry_elsewhere(int grpc_code) {
  switch (grpc_code) {
    case kUnavailable:
    case kDeadlineExceeded:
    case kUnknown:
    case kAborted:
    case kNoCode:
      return true;
    default:
      return false;
  }
}

Errc errc_for_grpc(int grpc_code) {
  switch (grpc_code) {
    case kNotFound:
      return Errc::not_found;
    case kInvalidArgument:
      return Errc::invalid_argument;
    case kOutOfRange:
      return Errc::out_of_range;
    case kFailedPrecondition:
      return Errc::fatal;
    default:
      return Errc::transient;
  }
}

bool invalid_auth_token(std::string_view message) {
  return message.find("invalid auth token") != std::string_view::npos;
}

}  // namespace strata::etcd
