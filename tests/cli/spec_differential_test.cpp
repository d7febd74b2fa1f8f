// The differential test of issue 11: every spec of tests/data (malformed-specs.yaml, at least 150
// cases, and valid-specs.yaml) through the built `trainbench validate` binary and through the
// openAPIV3Schema of the CRD that `trainbench crd` generates (valijson, as the API server's
// schema check with kubectl's default --validate=strict). Where the schema can express a rule,
// both give the same verdict; the rules only core checks are marked semantic-only in the table
// and listed in docs/crd.md ("Rules only core checks").
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/spec/spec_error.hpp"
#include "core/spec/yaml_json.hpp"
#include "tests/core/spec/spec_corpus.hpp"
#include "tests/crd/schema_validator.hpp"
#include "tests/support/file_io.hpp"
#include "tests/support/temp_dir.hpp"

namespace trainbench {
namespace {

using nlohmann::json;
using testing_corpus::SpecCase;
using testing_schema::SchemaValidator;

const std::string kDataDir = std::string(TRAINBENCH_SOURCE_DIR) + "/tests/data";

struct Outcome {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr
};

Outcome run(const std::string& command) {
  Outcome o;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return o;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) o.output.append(buf, n);
  const int status = pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

/// The schema of the CRD the built binary prints, as the API server would check it.
const SchemaValidator& schema() {
  static const SchemaValidator v = [] {
    const Outcome crd = run(std::string("'") + TRAINBENCH_EXE + "' crd --output json");
    const json doc = json::parse(crd.output);
    return SchemaValidator(doc.at("spec").at("versions").at(0).at("schema").at("openAPIV3Schema"));
  }();
  return v;
}

/// `trainbench validate` on `yaml` (written to a file first).
Outcome validate(const std::string& yaml) {
  test::TempDir dir;
  const std::string file = dir.file("job.yaml");
  test::write_file(file, yaml);
  return run(std::string("'") + TRAINBENCH_EXE + "' validate '" + file + "'");
}

/// The schema's verdict: "" when it accepts, else why not; "not-a-document" when the text is
/// not one JSON-able YAML document (kubectl refuses it before any schema).
std::string schema_verdict(const std::string& yaml) {
  json doc;
  try {
    doc = yaml_to_json(yaml);
  } catch (const std::runtime_error& e) {
    return std::string("not-a-document: ") + e.what();
  }
  return SchemaValidator::str(schema().errors(doc));
}

/// The table "Rules only core checks" of docs/crd.md.
const std::string& core_only_rules() {
  static const std::string text = [] {
    const std::string doc = testing_corpus::read_file(std::string(TRAINBENCH_SOURCE_DIR) + "/docs/crd.md");
    const auto start = doc.find("## Rules only core checks");
    return start == std::string::npos ? std::string() : doc.substr(start);
  }();
  return text;
}

class Malformed : public ::testing::TestWithParam<SpecCase> {};

TEST_P(Malformed, CliAndSchemaAgree) {
  const SpecCase& c = GetParam();
  ASSERT_TRUE(c.problem.empty()) << c.problem;
  const Outcome cli = validate(c.yaml);
  EXPECT_EQ(cli.exit_code, 2) << cli.output.substr(0, 2000);
  EXPECT_NE(cli.output.find(c.field + ": "), std::string::npos) << "does not name " << c.field << ":\n"
                                                                << cli.output.substr(0, 2000);
  EXPECT_NE(cli.output.find(c.fragment), std::string::npos) << "no '" << c.fragment << "' in:\n"
                                                            << cli.output.substr(0, 2000);
  EXPECT_FALSE(invalid_utf8_offset(cli.output).has_value()) << "raw invalid bytes in the output";
  const std::string verdict = schema_verdict(c.yaml);
  if (c.schema == "rejects") {
    EXPECT_FALSE(verdict.empty()) << "trainbench validate refuses it (" << c.field << "), the CRD's schema accepts it";
    EXPECT_NE(verdict.rfind("not-a-document", 0), 0u) << verdict;
  } else if (c.schema == "not-a-document") {
    EXPECT_EQ(verdict.rfind("not-a-document", 0), 0u) << "kubectl could send it: " << verdict;
    EXPECT_FALSE(c.reason.empty());
  } else {
    ASSERT_EQ(c.schema, "semantic-only");
    EXPECT_TRUE(verdict.empty()) << "the schema refuses it too: mark it `schema: rejects`\n" << verdict;
    // A rule only core checks is listed in docs/crd.md; a CEL rule is checked by tests/crd.
    if (c.cel.empty()) {
      ASSERT_FALSE(c.rule.empty()) << "a semantic-only case without `cel` names its row of docs/crd.md in `rule`";
      EXPECT_NE(core_only_rules().find("| " + c.rule + " |"), std::string::npos)
          << "docs/crd.md's table of rules only core checks has no row \"" << c.rule << "\"";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Differential, Malformed, ::testing::ValuesIn(testing_corpus::malformed_cases(kDataDir)),
                         [](const ::testing::TestParamInfo<SpecCase>& p) { return p.param.name; });

class Valid : public ::testing::TestWithParam<SpecCase> {};

TEST_P(Valid, CliAndSchemaAccept) {
  const SpecCase& c = GetParam();
  ASSERT_TRUE(c.problem.empty()) << c.problem;
  const Outcome cli = validate(c.yaml);
  EXPECT_EQ(cli.exit_code, 0) << cli.output.substr(0, 2000);
  EXPECT_NE(cli.output.find("valid BenchmarkJob"), std::string::npos) << cli.output.substr(0, 2000);
  EXPECT_EQ(schema_verdict(c.yaml), "");
}

INSTANTIATE_TEST_SUITE_P(Differential, Valid, ::testing::ValuesIn(testing_corpus::valid_cases(kDataDir)),
                         [](const ::testing::TestParamInfo<SpecCase>& p) { return p.param.name; });

TEST(Differential, CorpusIsLargeEnough) {
  std::size_t malformed = 0;
  for (const auto& c : testing_corpus::malformed_cases(kDataDir)) malformed += c.problem.empty() ? 1 : 0;
  EXPECT_GE(malformed, 150u);
  EXPECT_GE(testing_corpus::valid_cases(kDataDir).size(), 10u);
}

}  // namespace
}  // namespace trainbench
