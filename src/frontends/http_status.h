// The HTTP status a Status becomes on the KServe v2 REST frontend (the table in
// serve/inference_service.h), and which statuses carry Retry-After.
#pragma once

#include "inferloop/status.h"

namespace inferloop::frontends {

// kInvalidArgument/kFailedPrecondition 400, kNotFound 404, kResourceExhausted 429,
// kUnavailable 503, kDeadlineExceeded 504, kCancelled 499, kUnimplemented 501, kInternal 500,
// kOk 200.
int HttpStatusFromCode(StatusCode code);

// 429 and 503: the client should retry later (the frontends send Retry-After).
inline bool HttpStatusWantsRetryAfter(int http_status) { return http_status == 429 || http_status == 503; }

}  // namespace inferloop::frontends
