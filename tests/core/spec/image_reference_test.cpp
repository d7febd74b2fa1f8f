// core/spec/image_reference: the grammar's check names the part that is wrong, and agrees with the
// CRD's pattern (kImageReferencePattern) and digest rule on every case here.

#include "core/spec/image_reference.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "core/spec/spec_bounds.hpp"

namespace trainbench {
namespace {

const std::string kSha256(64, 'a');

const std::vector<std::string> kValid{
    "trainbench/worker",
    "trainbench/worker:0.1.0",
    "trainbench/worker:0.1.0-cuda",
    "busybox",
    "docker.io/library/busybox:1.36",
    "registry.example.com:5000/team/trainbench-worker:0.1.0",
    "localhost:5000/worker",
    "Registry.Example.COM/worker",  // a host may have capitals; a repository may not
    "[::1]:5000/worker:dev",
    "my_team/worker__nightly/x-y--z:TAG_1.a-b",
    "worker@sha256:" + kSha256,
    "registry.example.com/worker:0.1.0@sha256:" + kSha256,
    "worker@sha512:" + std::string(128, '0'),
    "worker@multihash+base58:" + std::string(32, 'F'),  // an unregistered algorithm: any hex of >= 32
    "a:" + std::string(128, 't'),
};

struct Invalid {
  std::string ref;
  std::string fragment;  ///< in image_reference_problem's answer
  bool cel_only;         ///< the pattern passes it; the CRD's digest rule refuses it
};

const std::vector<Invalid> kInvalid{
    {"trainbench/worker :0.1.0", "contains \" \"", false},
    {"trainbench/worker:0.1.0\n", "contains \"\\n\"", false},
    {"Trainbench/Worker:0.1.0", "the repository \"Trainbench/Worker\" must be lowercase", false},
    {"docker.io/Library/busybox", "must be lowercase", false},
    {"worker@sha256:abc", "the digest \"sha256:abc\" must be ALGORITHM:HEX with at least 32 hex digits", false},
    {"worker@sha256", "the digest \"sha256\" must be ALGORITHM:HEX", false},
    {"worker@" + kSha256, "must be ALGORITHM:HEX", false},
    {"worker@sha256:" + std::string(63, 'a'), "must be sha256: and 64 lowercase hex digits, got 63", true},
    {"worker@sha256:" + std::string(64, 'A'), "must be sha256: and 64 lowercase hex digits, got 64", true},
    {"worker@sha512:" + kSha256, "must be sha512: and 128 lowercase hex digits", true},
    {"worker:-1", "the tag \"-1\" must be 1 to 128 letters", false},
    {"worker:", "the tag \"\"", false},
    {"a:" + std::string(129, 't'), "the tag", false},
    {"registry.example.com:5000/", "has an empty path component", false},
    {"team//worker", "has an empty path component", false},
    {"/worker", "has an empty path component", false},
    {"", "the repository is empty", false},
    {":tag", "the repository is empty", false},
    {"worker-", "is not [HOST[:PORT]/]PATH", false},
    {"wor...ker", "is not [HOST[:PORT]/]PATH", false},
    {"host:port/worker", "is not [HOST[:PORT]/]PATH", false},
    {"-host.example.com/worker", "is not [HOST[:PORT]/]PATH", false},
    {"worker@sha256:" + kSha256 + "@sha256:" + kSha256, "must be ALGORITHM:HEX", false},
};

bool pattern_matches(const std::string& ref) {
  static const std::regex kPattern(kImageReferencePattern);
  return std::regex_search(ref, kPattern);
}

/// The CRD's CEL rule as the API server evaluates it: each registered algorithm's `@ALG:` is
/// followed by exactly its length of lowercase hex, to the end.
bool digest_rule_passes(const std::string& ref) {
  for (const RegisteredDigest& r : registered_digests()) {
    const std::string at = std::string("@") + r.algorithm + ":";
    const std::regex tail(at + "[a-f0-9]{" + std::to_string(r.hex_digits) + "}$");
    if (ref.find(at) != std::string::npos && !std::regex_search(ref, tail)) return false;
  }
  return true;
}

TEST(ImageReference, ValidReferencesPassCoreAndTheCrd) {
  for (const std::string& ref : kValid) {
    EXPECT_EQ(image_reference_problem(ref), "") << ref;
    EXPECT_EQ(image_reference_message(ref), "") << ref;
    EXPECT_TRUE(pattern_matches(ref)) << ref;
    EXPECT_TRUE(digest_rule_passes(ref)) << ref;
  }
}

TEST(ImageReference, EachInvalidReferenceIsRefusedNamingItsPart) {
  for (const Invalid& c : kInvalid) {
    const std::string problem = image_reference_problem(c.ref);
    EXPECT_NE(problem.find(c.fragment), std::string::npos) << c.ref << ": " << problem;
  }
}

TEST(ImageReference, TheCrdRefusesWhatCoreRefusesWithThePatternOrTheDigestRule) {
  for (const Invalid& c : kInvalid) {
    EXPECT_EQ(pattern_matches(c.ref), c.cel_only) << c.ref;
    if (c.cel_only) {
      EXPECT_FALSE(digest_rule_passes(c.ref)) << c.ref;
    }
  }
}

TEST(ImageReference, TheMessageStatesTheGrammarAndQuotesTheValue) {
  EXPECT_EQ(image_reference_message("trainbench/Worker:1"),
            "must be an image reference, [HOST[:PORT]/]PATH[:TAG][@DIGEST]: the repository \"trainbench/Worker\" "
            "must be lowercase, got \"trainbench/Worker:1\"");
}

TEST(ImageReference, TheDigestRuleNamesEachRegisteredAlgorithm) {
  const std::string rule = image_digest_cel_rule();
  for (const RegisteredDigest& r : registered_digests()) {
    EXPECT_NE(rule.find(std::string("'@") + r.algorithm + ":[a-f0-9]{" + std::to_string(r.hex_digits) + "}$'"),
              std::string::npos)
        << rule;
  }
}

}  // namespace
}  // namespace trainbench
