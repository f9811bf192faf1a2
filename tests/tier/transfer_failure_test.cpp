// TransferFailure has no retry rules of its own: its class is objstore's
// (the rules themselves are tested once, in tests/objstore/retry_class_test.cpp).
#include "tier/transfer_failure.h"

#include <gtest/gtest.h>

#include "objstore/retry_class.h"

namespace strata::tier {
namespace {

using objstore::RetryClass;

// A status that makes `r` the deciding rule.
int status_for(const objstore::HttpRule& r) {
  return r.s3_code.empty() ? r.status_min : 400;
}

TEST(TierTransferFailure, AnHttpAnswerGetsObjstoresClassForAPut) {
  for (const objstore::HttpRule& r : objstore::http_rules()) {
    const int status = status_for(r);
    TransferFailure f = TransferFailure::http(status, std::string(r.s3_code), "put data/x");
    EXPECT_EQ(f.retry, objstore::classify_http(objstore::Op::put, status, r.s3_code))
        << status << " " << r.s3_code;
    EXPECT_EQ(f.http_status, status);
    EXPECT_EQ(f.s3_code, r.s3_code);
  }
  // The cases the original got wrong or the two tables disagreed on.
  EXPECT_TRUE(is_transient(TransferFailure::http(429, "", "put")));
  EXPECT_TRUE(is_transient(TransferFailure::http(400, "Throttling", "put")));
  EXPECT_TRUE(is_transient(TransferFailure::http(503, "RequestThrottled", "put")));
  EXPECT_TRUE(is_transient(TransferFailure::http(409, "OperationAborted", "put")));
  EXPECT_FALSE(is_transient(TransferFailure::http(501, "NotImplemented", "put")));
  EXPECT_FALSE(is_transient(TransferFailure::http(404, "", "put")));
}

TEST(TierTransferFailure, AnObjectErrorKeepsTheClassItsBackendGaveIt) {
  // The class is carried, not recomputed from the status: a backend knows
  // things the status does not say (a 200 whose body failed its CRC).
  objstore::ObjectError e{objstore::Op::put,   "data/x",         200, "",
                          "body CRC mismatch", RetryClass::fatal};
  TransferFailure f = TransferFailure::from(e);
  EXPECT_EQ(f.retry, RetryClass::fatal);
  EXPECT_EQ(f.http_status, 200);
  EXPECT_NE(f.message.find("data/x"), std::string::npos);
  e.retry = RetryClass::transient;
  e.http_status = 0;
  EXPECT_TRUE(is_transient(TransferFailure::from(e)));
}

TEST(TierTransferFailure, OtherErrorsAndDeadlinesAreClassifiedByObjstore) {
  for (Errc c : {Errc::transient, Errc::timeout, Errc::unavailable, Errc::fatal, Errc::io,
                 Errc::corrupt, Errc::not_found}) {
    EXPECT_EQ(TransferFailure::from(Error(c, "segment read")).retry, objstore::classify_errc(c))
        << errc_name(c);
  }
  EXPECT_FALSE(is_transient(TransferFailure::from(Error(Errc::corrupt, "chunk CRC mismatch"))));
  EXPECT_TRUE(is_transient(TransferFailure::deadline("transfer deadline")));
  EXPECT_EQ(TransferFailure::http(503, "SlowDown", "put data/x").to_string(),
            "transient http 503 SlowDown: put data/x");
}

}  // namespace
}  // namespace strata::tier
