// Retry classification, one rule per test (issue 3's list): the backend
// only classifies; callers choose delays from the class.
#include "objstore/retry_class.h"

#include <gtest/gtest.h>

namespace strata::objstore {
namespace {

constexpr Op kAllOps[] = {Op::put,    Op::get,         Op::get_range, Op::head,
                          Op::remove, Op::remove_many, Op::list,      Op::check};

TEST(RetryClass, ConnectTimeoutIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::connect_timeout), RetryClass::transient);
}
TEST(RetryClass, ReadTimeoutIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::timeout), RetryClass::transient);
}
TEST(RetryClass, ConnectionRefusedIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::connect_refused), RetryClass::transient);
}
TEST(RetryClass, ConnectionResetIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::reset), RetryClass::transient);
}
TEST(RetryClass, NoResponseIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::no_response), RetryClass::transient);
}
TEST(RetryClass, TruncatedBodyIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::truncated), RetryClass::transient);
}
TEST(RetryClass, GarbledResponseIsTransient) {
  EXPECT_EQ(classify_transport(TransportFailure::bad_response), RetryClass::transient);
}
TEST(RetryClass, TlsVerificationFailureIsFatal) {
  EXPECT_EQ(classify_transport(TransportFailure::tls_verify), RetryClass::fatal);
}
TEST(RetryClass, MalformedRequestIsFatal) {
  EXPECT_EQ(classify_transport(TransportFailure::bad_request), RetryClass::fatal);
}

TEST(RetryClass, Http408IsTransient) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 408, ""), RetryClass::transient);
}
TEST(RetryClass, Http429IsTransient) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 429, ""), RetryClass::transient);
}
TEST(RetryClass, Http500IsTransient) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 500, ""), RetryClass::transient);
}
TEST(RetryClass, Http502IsTransient) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 502, ""), RetryClass::transient);
}
TEST(RetryClass, Http503IsTransient) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 503, ""), RetryClass::transient);
}
TEST(RetryClass, Http504IsTransient) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 504, ""), RetryClass::transient);
}
TEST(RetryClass, Http501NotImplementedIsFatal) {
  EXPECT_EQ(classify_http(Op::put, 501, "NotImplemented"), RetryClass::fatal);
}
TEST(RetryClass, SlowDownIsTransientWithAnyStatus) {
  EXPECT_EQ(classify_http(Op::put, 503, "SlowDown"), RetryClass::transient);
  EXPECT_EQ(classify_http(Op::put, 400, "SlowDown"), RetryClass::transient);
}
TEST(RetryClass, InternalErrorIsTransient) {
  EXPECT_EQ(classify_http(Op::get, 500, "InternalError"), RetryClass::transient);
  EXPECT_EQ(classify_http(Op::get, 200, "InternalError"), RetryClass::transient);
}
TEST(RetryClass, RequestTimeoutCodeIsTransientDespite400) {
  EXPECT_EQ(classify_http(Op::put, 400, "RequestTimeout"), RetryClass::transient);
}
TEST(RetryClass, EmptyBody503IsTransient) {
  // HEAD answers have no body, and throttling proxies often send none.
  EXPECT_EQ(classify_http(Op::head, 503, ""), RetryClass::transient);
}
TEST(RetryClass, Http403IsFatal) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 403, "AccessDenied"), RetryClass::fatal);
  EXPECT_EQ(classify_http(Op::head, 403, ""), RetryClass::fatal);
}
TEST(RetryClass, Http400IsFatal) {
  EXPECT_EQ(classify_http(Op::put, 400, "InvalidArgument"), RetryClass::fatal);
  EXPECT_EQ(classify_http(Op::put, 400, ""), RetryClass::fatal);
}
TEST(RetryClass, Http404OnPutIsFatal) {
  EXPECT_EQ(classify_http(Op::put, 404, ""), RetryClass::fatal);
}
TEST(RetryClass, Http404OnListAndBatchDeleteIsFatal) {
  EXPECT_EQ(classify_http(Op::list, 404, ""), RetryClass::fatal);
  EXPECT_EQ(classify_http(Op::remove_many, 404, ""), RetryClass::fatal);
}
TEST(RetryClass, Http404OnReadIsNotFound) {
  EXPECT_EQ(classify_http(Op::get, 404, "NoSuchKey"), RetryClass::not_found);
  EXPECT_EQ(classify_http(Op::get_range, 404, "NoSuchKey"), RetryClass::not_found);
  EXPECT_EQ(classify_http(Op::head, 404, ""), RetryClass::not_found);
  EXPECT_EQ(classify_http(Op::remove, 404, "NoSuchKey"), RetryClass::not_found);
}
TEST(RetryClass, NoSuchBucketIsFatalEvenOnRead) {
  for (Op op : kAllOps) EXPECT_EQ(classify_http(op, 404, "NoSuchBucket"), RetryClass::fatal);
}
TEST(RetryClass, ChecksumMismatchIsFatal) {
  EXPECT_EQ(classify_http(Op::put, 400, "BadDigest"), RetryClass::fatal);
  EXPECT_EQ(classify_http(Op::put, 400, "InvalidDigest"), RetryClass::fatal);
  EXPECT_EQ(classify_http(Op::put, 400, "XAmzContentSHA256Mismatch"), RetryClass::fatal);
  EXPECT_TRUE(is_checksum_code("BadDigest"));
  EXPECT_FALSE(is_checksum_code("SlowDown"));
}
TEST(RetryClass, RangeNotSatisfiableIsFatal) {
  EXPECT_EQ(classify_http(Op::get_range, 416, "InvalidRange"), RetryClass::fatal);
}
TEST(RetryClass, RedirectIsFatal) {
  EXPECT_EQ(classify_http(Op::get, 301, "PermanentRedirect"), RetryClass::fatal);
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
