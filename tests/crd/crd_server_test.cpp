// The BenchmarkJob CRD on the real kube-apiserver (ctest label controlplane): the chart's CRD was
// installed by the real helm (tests/controlplane/chart_fixture.sh), so the server compiled its
// structural schema and CEL rules. Every case of tests/data/malformed-specs.yaml is POSTed with
// dryRun=All and fieldValidation=Strict (what kubectl apply sends), and the real server must do
// what the table says:
//   schema: rejects             refused, naming the case's field or a field above it;
//   semantic-only with `cel`    refused with that CEL rule's own message;
//   semantic-only, `server: refuses`  refused: the API server enforces it itself (routing, ObjectMeta);
//   semantic-only otherwise     accepted: only core refuses it (the operator sets condition Invalid).
// Every valid spec (tests/data/valid-specs.yaml, examples/) must be accepted.
// Needs KUBECONFIG: an admin kubeconfig of the control plane (the ctest fixture sets it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/spec/yaml_json.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"
#include "tests/core/spec/spec_corpus.hpp"

namespace {

using json = nlohmann::json;
using trainbench::testing_corpus::SpecCase;

const std::string kSourceDir = TRAINBENCH_SOURCE_DIR;
const std::string kNamespace = "crd-server-test";

std::shared_ptr<trainbench::kube::Client> client() {
  static std::shared_ptr<trainbench::kube::Client> c = [] {
    const char* kc = std::getenv("KUBECONFIG");
    if (kc == nullptr || *kc == '\0') throw std::runtime_error("KUBECONFIG is not set (the controlplane fixture sets it)");
    auto cl = std::make_shared<trainbench::kube::Client>(trainbench::kube::load_kubeconfig(kc));
    const json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}};
    try {
      cl->request("POST", "/api/v1/namespaces", "", &ns);
    } catch (const trainbench::kube::ApiError& e) {
      if (!e.is_already_exists()) throw;
    }
    return cl;
  }();
  return c;
}

struct Answer {
  int code = 0;  ///< 201 when accepted
  std::string message;
  std::vector<std::string> fields;  ///< the Status causes' fields
};

/// POSTs the document as `kubectl apply --server-side --dry-run=server` would validate it.
Answer dry_run_create(const json& doc) {
  Answer a;
  try {
    client()->request("POST", "/apis/trainbench.dev/v1alpha1/namespaces/" + kNamespace + "/benchmarkjobs",
                      "dryRun=All&fieldValidation=Strict", &doc);
    a.code = 201;
  } catch (const trainbench::kube::ApiError& e) {
    a.code = e.code();
    a.message = e.status_message();
    for (const auto& c : e.details().causes) a.fields.push_back(c.field);
  }
  return a;
}

bool path_within(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return true;
  return inner == outer || inner.rfind(outer + ".", 0) == 0 || inner.rfind(outer + "[", 0) == 0;
}

json crd() {
  static const json c =
      trainbench::yaml_to_json(trainbench::testing_corpus::read_file(kSourceDir + "/crds/trainbench.dev_benchmarkjobs.yaml"));
  return c;
}

/// The message of the CRD's CEL rule whose text contains `fragment` ("" when none does).
std::string cel_message(const json& node, const std::string& fragment) {
  if (!node.is_object() && !node.is_array()) return "";
  if (node.is_object() && node.contains("x-kubernetes-validations")) {
    for (const auto& r : node["x-kubernetes-validations"]) {
      if (r.value("rule", "").find(fragment) != std::string::npos) return r.value("message", "");
    }
  }
  for (const auto& sub : node) {
    std::string m = cel_message(sub, fragment);
    if (!m.empty()) return m;
  }
  return "";
}

std::vector<SpecCase> documents() {
  std::vector<SpecCase> out;
  for (auto& m : trainbench::testing_corpus::malformed_cases(kSourceDir + "/tests/data")) {
    if (m.schema != "not-a-document") out.push_back(std::move(m));  // never reaches a server
  }
  return out;
}

std::string describe(const Answer& a) {
  std::string s = std::to_string(a.code) + " " + a.message;
  for (const auto& f : a.fields) s += "\n  cause field: " + f;
  return s;
}

class RealServer : public ::testing::TestWithParam<SpecCase> {};

TEST_P(RealServer, RefusesOrAcceptsAsTheTableSays) {
  const SpecCase& m = GetParam();
  ASSERT_TRUE(m.problem.empty()) << m.problem;
  const Answer a = dry_run_create(trainbench::yaml_to_json(m.yaml));
  const std::string field = m.field == "<document>" ? "" : m.field;
  if (m.schema == "rejects") {
    ASSERT_TRUE(a.code == 422 || a.code == 400) << "the real API server accepted it: " << describe(a);
    bool named = a.message.find(field) != std::string::npos;
    for (const auto& f : a.fields) named = named || path_within(f, field);
    EXPECT_TRUE(named) << "no cause at or above " << field << ": " << describe(a);
  } else if (!m.cel.empty()) {
    const std::string message = cel_message(crd(), m.cel);
    ASSERT_FALSE(message.empty()) << "no CEL rule contains " << m.cel;
    ASSERT_EQ(a.code, 422) << describe(a);
    EXPECT_NE(a.message.find(message), std::string::npos) << "not the rule's message \"" << message << "\": " << describe(a);
  } else if (m.server == "refuses") {
    EXPECT_TRUE(a.code >= 400 && a.code < 500) << "the table says the API server refuses it (" << m.reason
                                               << "): " << describe(a);
  } else {
    ASSERT_EQ(m.server, "") << "server: refuses, or nothing";
    EXPECT_EQ(a.code, 201) << "the table says only core refuses it (" << m.rule << "): " << describe(a);
  }
}

INSTANTIATE_TEST_SUITE_P(Crd, RealServer, ::testing::ValuesIn(documents()),
                         [](const ::testing::TestParamInfo<SpecCase>& p) { return p.param.name; });

std::vector<std::string> valid_documents() {
  std::vector<std::string> out;
  for (const auto& v : trainbench::testing_corpus::valid_cases(kSourceDir + "/tests/data")) out.push_back(v.yaml);
  for (const auto& e : std::filesystem::directory_iterator(kSourceDir + "/examples")) {
    if (e.path().extension() == ".yaml") out.push_back(trainbench::testing_corpus::read_file(e.path().string()));
  }
  return out;
}

TEST(CrdOnRealServer, AcceptsEveryValidSpecAndExample) {
  const auto docs = valid_documents();
  ASSERT_GE(docs.size(), 5u);
  for (const auto& y : docs) {
    json doc = trainbench::yaml_to_json(y);
    doc["metadata"].erase("namespace");  // examples name theirs; the test's namespace is another
    const Answer a = dry_run_create(doc);
    EXPECT_EQ(a.code, 201) << doc["metadata"].value("name", "?") << ": " << describe(a);
  }
}

TEST(CrdOnRealServer, IsEstablishedWithTheChartsSchema) {
  const json got = client()->request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/benchmarkjobs.trainbench.dev");
  bool established = false;
  for (const auto& c : got["status"].value("conditions", json::array())) {
    established = established || (c.value("type", "") == "Established" && c.value("status", "") == "True");
  }
  EXPECT_TRUE(established) << got["status"].dump();
  // What the server stored is the committed schema (pruned of nothing, defaults valid).
  EXPECT_EQ(got["spec"]["versions"][0]["schema"], crd()["spec"]["versions"][0]["schema"]);
}

}  // namespace
