// Retry classification: one table-driven test over objstore's rules (the
// only ones: the tier's TransferFailure takes its class from here), one over
// transport failures and one over strata error codes. The backend only
// classifies; callers choose delays from the class.
#include "objstore/retry_class.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace strata::objstore {
namespace {

constexpr Op kAllOps[] = {Op::put,    Op::get,         Op::get_range, Op::head,
                          Op::remove, Op::remove_many, Op::list,      Op::check};

bool reads_or_deletes_one_key(Op op) {
  return op == Op::get || op == Op::get_range || op == Op::head || op == Op::remove;
}

constexpr RetryClass T = RetryClass::transient;
constexpr RetryClass F = RetryClass::fatal;
constexpr RetryClass N = RetryClass::not_found;

// Every (status, S3 code) pair the rules distinguish, once: the class for an
// operation on one key (get, get_range, head, remove) and for the others
// (put, remove_many, list, check).
struct HttpCase {
  int status;
  std::string_view code;
  RetryClass one_key;
  RetryClass other;
};
constexpr HttpCase kHttpCases[] = {
    // Throttling, whatever the status it comes with.
    {503, "SlowDown", T, T},
    {400, "SlowDown", T, T},
    {400, "Throttling", T, T},
    {400, "ThrottlingException", T, T},
    {503, "RequestThrottled", T, T},
    {429, "", T, T},
    // Server trouble.
    {500, "InternalError", T, T},
    {200, "InternalError", T, T},  // a per-key error inside a DeleteObjects answer
    {503, "ServiceUnavailable", T, T},
    {400, "RequestTimeout", T, T},
    {408, "", T, T},
    {409, "OperationAborted", T, T},
    {500, "", T, T},
    {502, "", T, T},
    {503, "", T, T},  // HEAD answers have no body; throttling proxies often send none
    {504, "", T, T},
    {507, "", T, T},
    {599, "", T, T},
    // A request this server will never serve.
    {501, "NotImplemented", F, F},
    {501, "", F, F},
    // Checksum mismatches.
    {400, "BadDigest", F, F},
    {400, "InvalidDigest", F, F},
    {400, "XAmzContentSHA256Mismatch", F, F},
    {400, "InvalidChecksum", F, F},
    {400, "ChecksumMismatch", F, F},
    // Missing keys and buckets.
    {404, "NoSuchKey", N, F},
    {404, "", N, F},
    {200, "NoSuchKey", N, F},
    {404, "NoSuchBucket", F, F},
    // Refusals and everything else.
    {400, "", F, F},
    {400, "InvalidArgument", F, F},
    {403, "AccessDenied", F, F},
    {403, "", F, F},
    {409, "BucketNotEmpty", F, F},
    {409, "", F, F},
    {416, "InvalidRange", F, F},
    {301, "PermanentRedirect", F, F},
    {307, "", F, F},
};

TEST(RetryClass, HttpAnswersFollowTheOneTableOfRules) {
  std::set<std::pair<int, std::string_view>> seen;
  for (const HttpCase& c : kHttpCases) {
    SCOPED_TRACE(::testing::Message() << "HTTP " << c.status << " '" << c.code << "'");
    EXPECT_TRUE(seen.insert({c.status, c.code}).second) << "listed twice";
    for (Op op : kAllOps) {
      EXPECT_EQ(classify_http(op, c.status, c.code),
                reads_or_deletes_one_key(op) ? c.one_key : c.other)
          << op_name(op);
    }
  }
  // Every rule decides at least one case above, so a rule added without a
  // case here fails.
  for (const HttpRule& r : http_rules()) {
    bool covered = false;
    for (const HttpCase& c : kHttpCases) covered |= find_http_rule(c.status, c.code) == &r;
    EXPECT_TRUE(covered) << "no case for the rule '" << r.s3_code << "' " << r.status_min << ".."
                         << r.status_max;
  }
  EXPECT_TRUE(is_checksum_code("BadDigest"));
  EXPECT_FALSE(is_checksum_code("SlowDown"));
  EXPECT_FALSE(is_checksum_code(""));
}

TEST(RetryClass, TransportFailuresFollowTheTable) {
  constexpr std::pair<TransportFailure, RetryClass> kCases[] = {
      {TransportFailure::connect_refused, T},
      {TransportFailure::connect_timeout, T},
      {TransportFailure::timeout, T},
      {TransportFailure::reset, T},
      {TransportFailure::no_response, T},
      {TransportFailure::truncated, T},
      {TransportFailure::bad_response, T},
      {TransportFailure::resolve, T},
      {TransportFailure::tls_handshake, T},
      {TransportFailure::tls_verify, F},
      {TransportFailure::bad_request, F},
      {TransportFailure::other, F},
      {TransportFailure::none, F},
  };
  std::set<TransportFailure> seen;
  for (auto [f, want] : kCases) {
    EXPECT_TRUE(seen.insert(f).second) << transport_failure_name(f);
    EXPECT_EQ(classify_transport(f), want) << transport_failure_name(f);
  }
  EXPECT_EQ(seen.size(), size_t(TransportFailure::other) + 1);  // every enumerator
}

TEST(RetryClass, StrataErrorCodesFollowTheTable) {
  constexpr std::pair<Errc, RetryClass> kCases[] = {
      {Errc::transient, T},
      {Errc::timeout, T},
      {Errc::unavailable, T},
      {Errc::not_found, N},
      {Errc::fatal, F},
      {Errc::io, F},
      {Errc::already_exists, F},
      {Errc::corrupt, F},
      {Errc::invalid_argument, F},
      {Errc::unsupported_version, F},
      {Errc::unsupported, F},
      {Errc::schema_mismatch, F},
      {Errc::store_full, F},
      {Errc::string_table_full, F},
      {Errc::key_too_long, F},
      {Errc::unknown_field, F},
      {Errc::conflict, F},
      {Errc::cancelled, F},
      {Errc::closed, F},
      {Errc::out_of_range, F},
      {Errc::fail_stopped, F},
      {Errc::simulated_crash, F},
      {Errc::internal, F},
  };
  std::set<Errc> seen;
  for (auto [code, want] : kCases) {
    EXPECT_TRUE(seen.insert(code).second) << errc_name(code);
    EXPECT_EQ(classify_errc(code), want) << errc_name(code);
  }
  EXPECT_EQ(seen.size(), size_t(Errc::internal));  // every code but ok
  // An ObjectError converted to Error and back keeps its class.
  for (RetryClass c : {T, F, N}) {
    EXPECT_EQ(classify_errc(ObjectError{Op::get, "k", 0, "", "m", c}.to_error().code), c);
  }
}

TEST(ObjectError, ConvertsToStrataErrorWithTheRetryClassAsCode) {
  ObjectError e{
      Op::put, "a/b", 503, "SlowDown", "Please reduce your request rate.", RetryClass::transient};
  Error err = e;
  EXPECT_EQ(err.code, Errc::transient);
  EXPECT_EQ(err.message,
            "put 'a/b': HTTP 503 SlowDown: Please reduce your request rate. [transient]");
  e.retry = RetryClass::not_found;
  EXPECT_EQ(e.to_error().code, Errc::not_found);
  e.retry = RetryClass::fatal;
  Status st = e;
  EXPECT_EQ(st.code(), Errc::fatal);
}

TEST(ObjectError, TransportErrorMessageHasNoStatus) {
  ObjectError e{Op::get, "k", 0, "", "timeout: Operation timed out", RetryClass::transient};
  EXPECT_EQ(e.to_string(), "get 'k': timeout: Operation timed out [transient]");
}

TEST(ObjectError, StrataTryPropagatesAcrossTheModuleBoundary) {
  auto inner = []() -> ObjectStatus {
    return ObjectError{Op::head, "x", 404, "", "empty body", RetryClass::not_found};
  };
  auto outer = [&]() -> Status {
    STRATA_TRY(inner());
    return Status::OK();
  };
  EXPECT_EQ(outer().code(), Errc::not_found);
  auto outer_result = [&]() -> Result<int> {
    STRATA_TRY(inner());
    return 1;
  };
  EXPECT_EQ(outer_result().code(), Errc::not_found);
}

}  // namespace
}  // namespace strata::objstore
