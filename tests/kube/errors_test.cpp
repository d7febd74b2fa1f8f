// Mapping of error answers (Status bodies and others) to typed errors.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kube/errors.hpp"

namespace kube = trainbench::kube;
using nlohmann::json;

namespace {

// Rethrows and catches as T; fails the test when the type is different.
template <typename T>
T as(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const T& typed) {
    return typed;
  } catch (const std::exception& other) {
    ADD_FAILURE() << "unexpected exception type: " << other.what();
  }
  throw std::runtime_error("unreachable");
}

std::string status(int code, const std::string& reason, const std::string& message, json details = nullptr) {
  json s = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
            {"message", message}, {"reason", reason},     {"code", code}};
  if (!details.is_null()) s["details"] = details;
  return s.dump();
}

}  // namespace

TEST(ApiErrors, NotFoundFromStatus) {
  auto e = as<kube::NotFoundError>(kube::make_api_error(
      404, status(404, "NotFound", "configmaps \"x\" not found", {{"name", "x"}, {"kind", "configmaps"}}), "",
      "GET /api/v1/namespaces/default/configmaps/x"));
  EXPECT_EQ(e.code(), 404);
  EXPECT_EQ(e.reason(), "NotFound");
  EXPECT_EQ(e.status_message(), "configmaps \"x\" not found");
  EXPECT_EQ(e.details().name, "x");
  EXPECT_EQ(e.details().kind, "configmaps");
  EXPECT_TRUE(e.is_not_found());
  EXPECT_EQ(std::string(e.what()),
            "GET /api/v1/namespaces/default/configmaps/x: 404 NotFound: configmaps \"x\" not found");
}

TEST(ApiErrors, ConflictAndAlreadyExistsAreBoth409) {
  auto conflict = as<kube::ConflictError>(kube::make_api_error(
      409, status(409, "Conflict", "the object has been modified; please apply your changes to the latest version"),
      "", "PUT /x"));
  EXPECT_TRUE(conflict.is_conflict());
  EXPECT_FALSE(conflict.is_already_exists());
  auto exists = as<kube::ConflictError>(
      kube::make_api_error(409, status(409, "AlreadyExists", "configmaps \"x\" already exists"), "", "POST /x"));
  EXPECT_TRUE(exists.is_already_exists());
  EXPECT_FALSE(exists.is_conflict());
}

TEST(ApiErrors, InvalidCarriesFieldCauses) {
  json details = {{"name", "j"},
                  {"kind", "BenchmarkJob"},
                  {"causes",
                   {{{"reason", "FieldValueRequired"}, {"message", "Required value"}, {"field", "spec.sweep"}},
                    {{"reason", "FieldValueInvalid"}, {"message", "Invalid value: 0"}, {"field", "spec.repeats"}}}}};
  auto e = as<kube::InvalidError>(kube::make_api_error(422, status(422, "Invalid", "BenchmarkJob \"j\" is invalid", details), "", ""));
  ASSERT_EQ(e.details().causes.size(), 2u);
  EXPECT_EQ(e.details().causes[0].field, "spec.sweep");
  EXPECT_EQ(e.details().causes[1].reason, "FieldValueInvalid");
  const std::string what = e.what();
  EXPECT_NE(what.find("spec.sweep: Required value"), std::string::npos) << what;
  EXPECT_NE(what.find("spec.repeats: Invalid value: 0"), std::string::npos) << what;
}

TEST(ApiErrors, TooManyRequestsRetryAfter) {
  auto from_header = as<kube::TooManyRequestsError>(
      kube::make_api_error(429, status(429, "TooManyRequests", "slow down"), " 7 ", "GET /a"));
  EXPECT_EQ(from_header.retry_after(), std::chrono::seconds(7));
  auto from_details = as<kube::TooManyRequestsError>(kube::make_api_error(
      429, status(429, "TooManyRequests", "slow down", {{"retryAfterSeconds", 3}}), "", "GET /a"));
  EXPECT_EQ(from_details.retry_after(), std::chrono::seconds(3));
  auto http_date = as<kube::TooManyRequestsError>(
      kube::make_api_error(429, "", "Wed, 21 Oct 2015 07:28:00 GMT", "GET /a"));
  EXPECT_EQ(http_date.retry_after(), std::chrono::seconds(0));
}

TEST(ApiErrors, CodesToSubclasses) {
  EXPECT_NO_THROW(as<kube::UnauthorizedError>(kube::make_api_error(401, status(401, "Unauthorized", "Unauthorized"), "", "")));
  EXPECT_NO_THROW(as<kube::ForbiddenError>(kube::make_api_error(403, status(403, "Forbidden", "no"), "", "")));
  EXPECT_NO_THROW(as<kube::GoneError>(kube::make_api_error(410, status(410, "Expired", "too old resource version: 1"), "", "")));
  EXPECT_NO_THROW(as<kube::ServerError>(kube::make_api_error(503, "", "", "")));
  EXPECT_NO_THROW(as<kube::ServerError>(kube::make_api_error(500, status(500, "InternalError", "boom"), "", "")));
  auto plain = as<kube::ApiError>(kube::make_api_error(400, status(400, "BadRequest", "bad"), "", ""));
  EXPECT_EQ(plain.code(), 400);
  EXPECT_EQ(plain.reason(), "BadRequest");
}

TEST(ApiErrors, BodiesThatAreNotStatus) {
  auto html = as<kube::ServerError>(kube::make_api_error(502, "<html>\n<body>Bad Gateway</body></html>", "", "GET /x"));
  EXPECT_EQ(html.reason(), "InternalError");
  EXPECT_EQ(html.status_message(), "<html> <body>Bad Gateway</body></html>");
  auto truncated = as<kube::NotFoundError>(kube::make_api_error(404, "{\"kind\":\"Status\",\"mess", "", ""));
  EXPECT_EQ(truncated.reason(), "NotFound");
  auto array = as<kube::ForbiddenError>(kube::make_api_error(403, "[1,2,3]", "", ""));
  EXPECT_EQ(array.code(), 403);
  // Wrong types inside a Status must not throw while parsing.
  auto odd = as<kube::InvalidError>(kube::make_api_error(
      422, R"({"kind":"Status","message":7,"reason":["x"],"details":{"causes":"nope","retryAfterSeconds":"1"}})", "", ""));
  EXPECT_EQ(odd.reason(), "Invalid");
  EXPECT_TRUE(odd.details().causes.empty());
  const std::string binary("\x01\x02\xff\xfe", 4);
  EXPECT_NO_THROW(as<kube::ServerError>(kube::make_api_error(500, binary, "", "")));
  std::string long_body(10000, 'x');
  EXPECT_LT(as<kube::ServerError>(kube::make_api_error(500, long_body, "", "")).status_message().size(), 300u);
}

TEST(ApiErrors, FromWatchErrorStatus) {
  auto gone = as<kube::GoneError>(kube::make_api_error_from_status(
      json::parse(status(410, "Expired", "too old resource version: 5 (10)")), "watch configmaps"));
  EXPECT_TRUE(gone.is_gone());
  EXPECT_EQ(gone.reason(), "Expired");
  auto no_code = as<kube::ServerError>(kube::make_api_error_from_status(json{{"message", "?"}}));
  EXPECT_EQ(no_code.code(), 500);
  EXPECT_NO_THROW(as<kube::ServerError>(kube::make_api_error_from_status(json("not an object"))));
}
