#pragma once

// Container image references (spec.template.image, spec.workloads[].program.image), in the grammar
// the distribution project defines and container runtimes parse (github.com/distribution/reference):
//
//   reference  := name [":" tag] ["@" digest]
//   name       := [domain "/"] path-component ("/" path-component)*
//   domain     := host [":" port]; host := domain-component ("." domain-component)* | "[" IPv6 "]"
//   path-component := [a-z0-9]+ (("." | "_" | "__" | "-"+) [a-z0-9]+)*
//   tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
//   digest     := algorithm ":" hex; algorithm := [A-Za-z][A-Za-z0-9]* ([-_+.] [A-Za-z][A-Za-z0-9]*)*;
//                 hex := [0-9a-fA-F]{32,}, and for the OCI image spec's registered algorithms
//                 (sha256, sha384, sha512) lowercase hex of exactly their length.
//
// The CRD states the same: kImageReferencePattern (core/spec/spec_bounds.hpp) for the grammar and
// a CEL rule (image_digest_cel_rule()) for the registered digests' lengths; core's check below
// says which part is wrong. tests/core/spec/image_reference_test.cpp holds the two together.

#include <string>
#include <vector>

namespace trainbench {

/// "" when `ref` is a valid image reference, else which part is not and why (one clause).
std::string image_reference_problem(const std::string& ref);
/// "" when `ref` is valid, else a field error's message: the grammar, the problem and `ref`.
std::string image_reference_message(const std::string& ref);

/// A digest algorithm of the OCI image spec: its encoded part is lowercase hex of `hex_digits`.
struct RegisteredDigest {
  const char* algorithm;
  int hex_digits;
};
const std::vector<RegisteredDigest>& registered_digests();

/// The CRD's CEL rule on an image field that the pattern already passed: each registered
/// algorithm's digest has its exact length in lowercase hex.
std::string image_digest_cel_rule();
/// The message of that rule.
std::string image_digest_rule_message();

}  // namespace trainbench
