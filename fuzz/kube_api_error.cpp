// The kube client's decoding of error answers (kube::make_api_error: status code, body - a
// Status, other JSON or anything - and the Retry-After header) and of Status objects
// (make_api_error_from_status, parse_status_details), plus base64 (Secret data, kubeconfig
// certificates). The typed error must match the code; messages stay short; base64 decodes
// what it encodes.

#include <fuzzer/FuzzedDataProvider.h>

#include <exception>
#include <string>

#include "fuzz/fuzz_util.hpp"
#include "kube/base64.hpp"
#include "kube/errors.hpp"

namespace {

using namespace trainbench;

void check_typed(const kube::ApiError& e, int code) {
  FUZZ_CHECK(e.code() == code, "make_api_error changed the code");
  FUZZ_CHECK(e.retry_after().count() >= 0, "a negative Retry-After");
  const bool typed_right = (code == 404) == (dynamic_cast<const kube::NotFoundError*>(&e) != nullptr) &&
                           (code == 409) == (dynamic_cast<const kube::ConflictError*>(&e) != nullptr) &&
                           (code == 410) == (dynamic_cast<const kube::GoneError*>(&e) != nullptr) &&
                           (code == 429) == (dynamic_cast<const kube::TooManyRequestsError*>(&e) != nullptr) &&
                           (code >= 500 && code <= 599) == (dynamic_cast<const kube::ServerError*>(&e) != nullptr);
  FUZZ_CHECK(typed_right, "the ApiError subclass does not match code " + std::to_string(code));
}

void decode_answer(int code, const std::string& body, const std::string& retry_after, const std::string& request) {
  try {
    std::rethrow_exception(kube::make_api_error(code, body, retry_after, request));
  } catch (const kube::ApiError& e) {
    check_typed(e, code);
  }
  const nlohmann::json status = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded()) return;
  if (status.is_object() && status.contains("details")) (void)kube::parse_status_details(status["details"]);
  (void)kube::parse_status_details(status);
  try {
    std::rethrow_exception(kube::make_api_error_from_status(status, request));
  } catch (const kube::ApiError& e) {
    FUZZ_CHECK(e.code() >= 400 && e.code() <= 599, "a Status code outside 400..599");
  }
}

void base64_round_trip(const std::string& text) {
  FUZZ_CHECK(kube::base64_decode(kube::base64_encode(text)) == text, "base64 decode(encode(x)) != x");
  std::string error;
  const auto decoded = kube::base64_decode(text, &error);
  if (decoded) FUZZ_CHECK(kube::base64_decode(kube::base64_encode(*decoded)) == *decoded, "base64 round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int code = in.PickValueInArray({400, 401, 403, 404, 409, 410, 422, 429, 500, 503, 504, 418, 0, -1, 999});
  const std::string retry_after = in.ConsumeRandomLengthString(24);
  const std::string request = in.ConsumeRandomLengthString(64);
  const std::string body = in.ConsumeRemainingBytesAsString();
  decode_answer(code, body, retry_after, request);
  base64_round_trip(body);
  return 0;
}
