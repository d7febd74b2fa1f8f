// The BenchmarkJob CRD (core/api/crd.cpp): the committed file is current, the object is a valid
// structural apiextensions.k8s.io/v1 CRD, and its schema agrees with core's parser on the examples,
// on every case of tests/data/malformed-specs.yaml and at every bound and enum it declares.
// The schema is checked with valijson (JSON Schema draft 4), which ignores the x-kubernetes-*
// extensions: CEL rules are checked for presence and for naming fields that exist.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/api/crd.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/spec_bounds.hpp"
#include "core/spec/yaml_json.hpp"
#include "tests/core/spec/spec_corpus.hpp"
#include "tests/crd/schema_validator.hpp"

namespace trainbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_schema::SchemaError;
using testing_schema::SchemaValidator;

const std::string kSourceDir = TRAINBENCH_SOURCE_DIR;

using testing_corpus::read_file;

/// Runs a command, returns its stdout and exit status.
std::pair<std::string, int> run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  return {out, status};
}

/// A JSON schema node for a value to be validated on its own (defaults).
std::vector<SchemaError> errors_against(const json& schema_node, const json& value) {
  return SchemaValidator(schema_node).errors(value);
}

const json& crd() {
  static const json c = benchmarkjob_crd();
  return c;
}

const json& schema() {
  static const json s = crd().at("spec").at("versions").at(0).at("schema").at("openAPIV3Schema");
  return s;
}

const SchemaValidator& validator() {
  static const SchemaValidator v(schema());
  return v;
}

bool path_within(const std::string& outer, const std::string& inner) {
  if (outer.empty()) return true;
  return inner == outer || inner.rfind(outer + ".", 0) == 0 || inner.rfind(outer + "[", 0) == 0;
}

/// Every x-kubernetes-validations rule in the schema, with the schema path it sits on.
void collect_rules(const json& node, const std::string& path, std::vector<std::pair<std::string, json>>& out) {
  if (!node.is_object()) return;
  if (node.contains("x-kubernetes-validations")) {
    for (const auto& r : node["x-kubernetes-validations"]) out.push_back({path, r});
  }
  if (node.contains("properties")) {
    for (const auto& [k, sub] : node["properties"].items()) collect_rules(sub, path.empty() ? k : path + "." + k, out);
  }
  if (node.contains("items")) collect_rules(node["items"], path + "[]", out);
  if (node.contains("additionalProperties") && node["additionalProperties"].is_object()) {
    collect_rules(node["additionalProperties"], path + ".*", out);
  }
}

std::vector<std::pair<std::string, json>> rules() {
  std::vector<std::pair<std::string, json>> out;
  collect_rules(schema(), "", out);
  return out;
}

// ---- the committed file and the CLI ----

TEST(CrdFile, IsUpToDate) {
  const std::string path = kSourceDir + "/" + kCrdFile;
  std::string committed;
  ASSERT_NO_THROW(committed = read_file(path)) << path << " is missing; generate it with: " << kCrdRegenerate;
  EXPECT_TRUE(committed == benchmarkjob_crd_yaml())
      << kCrdFile << " differs from what core/api/crd.cpp generates. If the change to the spec or the CRD is "
      << "intended, regenerate the file (after building) and commit it:\n  " << kCrdRegenerate;
}

TEST(CrdFile, ReadsBackAsTheCrd) {
  EXPECT_EQ(yaml_to_json(benchmarkjob_crd_yaml()), crd());
}

TEST(CrdCli, PrintsTheCommittedFile) {
  const auto [out, status] = run_command(std::string("'") + TRAINBENCH_EXE + "' crd");
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(out == benchmarkjob_crd_yaml()) << "trainbench crd printed:\n" << out.substr(0, 2000);
  const auto [json_out, json_status] = run_command(std::string("'") + TRAINBENCH_EXE + "' crd --output json");
  EXPECT_EQ(json_status, 0);
  EXPECT_EQ(json::parse(json_out), crd());
  const auto [bad_out, bad_status] = run_command(std::string("'") + TRAINBENCH_EXE + "' crd --output xml 2>&1");
  EXPECT_NE(bad_status, 0);
  EXPECT_NE(bad_out.find("--output must be yaml or json"), std::string::npos) << bad_out;
}

// ---- the CRD object ----

TEST(Crd, IsAnApiextensionsV1Crd) {
  const json& c = crd();
  EXPECT_EQ(c.at("apiVersion"), "apiextensions.k8s.io/v1");
  EXPECT_EQ(c.at("kind"), "CustomResourceDefinition");
  const json& spec = c.at("spec");
  EXPECT_EQ(c.at("metadata").at("name"), spec.at("names").at("plural").get<std::string>() + "." +
                                              spec.at("group").get<std::string>());
  EXPECT_EQ(spec.at("group"), "trainbench.dev");
  EXPECT_EQ(spec.at("scope"), "Namespaced");
  const json& names = spec.at("names");
  EXPECT_EQ(names.at("kind"), "BenchmarkJob");
  EXPECT_EQ(names.at("listKind"), "BenchmarkJobList");
  EXPECT_EQ(names.at("plural"), "benchmarkjobs");
  EXPECT_EQ(names.at("singular"), "benchmarkjob");
  EXPECT_EQ(names.at("shortNames"), json::array({"bj"}));
  EXPECT_EQ(names.at("categories"), json::array({"trainbench"}));
  EXPECT_EQ(std::string(kApiVersion), spec.at("group").get<std::string>() + "/" + kCrdVersion);
  ASSERT_EQ(spec.at("versions").size(), 1u);
  const json& v = spec.at("versions").at(0);
  EXPECT_EQ(v.at("name"), "v1alpha1");
  EXPECT_EQ(v.at("served"), true);
  EXPECT_EQ(v.at("storage"), true);
  EXPECT_EQ(v.at("subresources"), json({{"status", json::object()}}));
  const std::set<std::string> spec_keys{"group", "names", "scope", "versions"};
  for (const auto& [k, _] : spec.items()) EXPECT_TRUE(spec_keys.count(k)) << "unexpected spec." << k;
  const std::set<std::string> version_keys{"name", "served", "storage", "schema", "subresources",
                                           "additionalPrinterColumns"};
  for (const auto& [k, _] : v.items()) EXPECT_TRUE(version_keys.count(k)) << "unexpected version field " << k;
}

/// The rules of structural schemas (Kubernetes' "Specifying a structural schema") and the
/// JSONSchemaProps fields a v1 CRD accepts.
void check_structural(const json& s, const std::string& path, bool in_junctor, std::vector<std::string>& problems) {
  static const std::set<std::string> kAllowed{
      "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum", "minimum",
      "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf",
      "enum", "maxProperties", "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
      "additionalProperties", "nullable", "externalDocs", "example", "x-kubernetes-preserve-unknown-fields",
      "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys",
      "x-kubernetes-list-type", "x-kubernetes-map-type", "x-kubernetes-validations"};
  static const std::set<std::string> kTypes{"object", "array", "string", "integer", "number", "boolean"};
  const std::string where = path.empty() ? "<root>" : path;
  auto problem = [&](const std::string& what) { problems.push_back(where + ": " + what); };
  if (!s.is_object()) {
    problem("a schema must be an object");
    return;
  }
  for (const auto& [k, _] : s.items()) {
    if (!kAllowed.count(k)) problem("field " + k + " is not allowed in a v1 CRD schema");
  }
  const bool int_or_string = s.value("x-kubernetes-int-or-string", false);
  const bool preserve = s.value("x-kubernetes-preserve-unknown-fields", false);
  if (in_junctor) {
    for (const char* k : {"description", "default", "additionalProperties", "nullable"}) {
      if (s.contains(k)) problem(std::string(k) + " inside anyOf/allOf/oneOf/not");
    }
  } else if (!s.contains("type") && !int_or_string && !preserve) {
    problem("no type (and not int-or-string or preserve-unknown-fields)");
  }
  if (s.contains("type")) {
    if (!s["type"].is_string() || !kTypes.count(s["type"].get<std::string>())) problem("bad type " + s["type"].dump());
    if (in_junctor) problem("type inside anyOf/allOf/oneOf/not (allowed only for int-or-string)");
  }
  if (int_or_string) {
    if (s.contains("type")) problem("int-or-string with a type");
    if (s.contains("anyOf") && s["anyOf"] != json::array({{{"type", "integer"}}, {{"type", "string"}}})) {
      problem("int-or-string anyOf must be [{type: integer}, {type: string}]");
    }
  }
  if (s.contains("properties") && s.contains("additionalProperties")) problem("both properties and additionalProperties");
  if (s.value("uniqueItems", false)) problem("uniqueItems: true is not allowed");
  if (s.contains("additionalProperties") && !s["additionalProperties"].is_object()) {
    problem("additionalProperties must be a schema");
  }
  if (s.value("type", "") == "array" && !s.contains("items")) problem("array without items");
  if (s.contains("items") && !s["items"].is_object()) problem("items must be one schema");
  if (s.contains("enum")) {
    for (const auto& v : s["enum"]) {
      if (s.value("type", "") == "string" && !v.is_string()) problem("enum value " + v.dump() + " is not a string");
    }
  }
  if (s.contains("x-kubernetes-list-type") && s["x-kubernetes-list-type"] == "map") {
    const json& item = s.at("items");
    for (const auto& key : s.value("x-kubernetes-list-map-keys", json::array())) {
      const auto req = item.value("required", json::array());
      if (std::find(req.begin(), req.end(), key) == req.end()) problem("list-map key " + key.dump() + " not required");
    }
  }
  if (s.contains("x-kubernetes-validations")) {
    for (const auto& r : s["x-kubernetes-validations"]) {
      // rule and message only: fieldPath, reason, messageExpression need newer API servers.
      for (const auto& [k, _] : r.items()) {
        if (k != "rule" && k != "message") problem("x-kubernetes-validations field " + k);
      }
      if (!r.contains("rule") || !r["rule"].is_string() || r["rule"].get<std::string>().empty()) problem("empty rule");
      if (!r.contains("message") || !r["message"].is_string()) problem("rule without a message");
    }
  }
  if (s.contains("properties")) {
    for (const auto& [k, sub] : s["properties"].items()) {
      check_structural(sub, path.empty() ? k : path + "." + k, in_junctor, problems);
    }
  }
  if (s.contains("items")) check_structural(s["items"], path + "[]", in_junctor, problems);
  if (s.contains("additionalProperties") && s["additionalProperties"].is_object()) {
    check_structural(s["additionalProperties"], path + ".*", in_junctor, problems);
  }
  for (const char* junctor : {"anyOf", "allOf", "oneOf"}) {
    if (s.contains(junctor)) {
      for (const auto& sub : s[junctor]) {
        if (int_or_string) continue;  // [{type: integer}, {type: string}], checked above
        check_structural(sub, path + "(" + junctor + ")", true, problems);
      }
    }
  }
  if (s.contains("not")) check_structural(s["not"], path + "(not)", true, problems);
}

TEST(Crd, SchemaIsStructural) {
  std::vector<std::string> problems;
  check_structural(schema(), "", false, problems);
  std::string all;
  for (const auto& p : problems) all += "  " + p + "\n";
  EXPECT_TRUE(problems.empty()) << all;
  EXPECT_EQ(schema().at("type"), "object");
  // metadata: only name (and generateName) may be restricted.
  const json& metadata = schema().at("properties").at("metadata");
  EXPECT_EQ(metadata.at("type"), "object");
  for (const auto& [k, _] : metadata.items()) EXPECT_TRUE(k == "type" || k == "properties") << "metadata." << k;
  for (const auto& [k, _] : metadata.at("properties").items()) {
    EXPECT_TRUE(k == "name" || k == "generateName") << "metadata.properties." << k;
  }
}

TEST(Crd, ValijsonAcceptsTheSchema) {
  EXPECT_NO_THROW(SchemaValidator{schema()});
}

TEST(Crd, EnumsAndLimitsComeFromCore) {
  const json& spec = schema().at("properties").at("spec").at("properties");
  const json& b = spec.at("benchmark").at("properties");
  EXPECT_EQ(b.at("model").at("enum"), json(known_models()));
  EXPECT_EQ(b.at("paradigm").at("enum"), json(known_paradigms()));
  EXPECT_EQ(b.at("precision").at("enum"), json(known_precisions()));
  EXPECT_EQ(b.at("ddp").at("properties").at("gradientCompression").at("enum"), json(known_compressions()));
  EXPECT_EQ(b.at("ddp").at("properties").at("implementation").at("enum"), json({"pytorch", "trainbench"}));
  EXPECT_EQ(b.at("ddp").at("properties").at("implementation").at("default"), "pytorch");
  EXPECT_EQ(spec.at("sweep").at("items").at("properties").at("paradigm").at("enum"), json(known_paradigms()));
  EXPECT_EQ(spec.at("device").at("enum"), json(known_devices()));
  EXPECT_EQ(spec.at("backend").at("enum"), json(known_backends()));
  EXPECT_EQ(spec.at("template").at("properties").at("imagePullPolicy").at("enum"), json(known_pull_policies()));
  EXPECT_EQ(spec.at("runPolicy").at("properties").at("cleanPodPolicy").at("enum"), json(known_clean_pod_policies()));
  EXPECT_EQ(spec.at("nccl").at("properties").at("debug").at("enum"), json(known_nccl_debug_levels()));
  EXPECT_EQ(spec.at("sweep").at("maxItems"), kMaxSweepEntries);
  EXPECT_EQ(spec.at("masterPort").at("minimum"), kMinMasterPort);
  EXPECT_EQ(spec.at("masterPort").at("maximum"), kMaxMasterPort);
  const json& status = schema().at("properties").at("status").at("properties");
  EXPECT_EQ(status.at("phase").at("enum"), json(known_job_phases()));
  EXPECT_EQ(status.at("runs").at("items").at("properties").at("phase").at("enum"), json(known_run_phases()));
  EXPECT_EQ(schema().at("required"), json::array({"spec"}));
  EXPECT_EQ(schema().at("properties").at("spec").at("required"), json::array({"benchmark", "sweep"}));
  // model: not required by the schema (paradigm allreduce needs none); a CEL rule on spec asks
  // for it unless every run is allreduce.
  EXPECT_FALSE(spec.at("benchmark").contains("required"));
  EXPECT_EQ(b.at("allreduce").at("properties").at("dtype").at("enum"), json(known_allreduce_dtypes()));
  EXPECT_EQ(b.at("allreduce").at("properties").at("maxBytes").at("enum"), json(allreduce_size_values()));
}

/// Calls f(json pointer, schema node) for each node under `node`, array items at index 0 and
/// map values under the key "cpu".
void walk(const json& node, const json::json_pointer& ptr, const std::function<void(const json::json_pointer&, const json&)>& f) {
  f(ptr, node);
  if (node.contains("properties")) {
    for (const auto& [k, sub] : node["properties"].items()) walk(sub, ptr / k, f);
  }
  if (node.contains("items")) walk(node["items"], ptr / 0, f);
  if (node.contains("additionalProperties") && node["additionalProperties"].is_object()) {
    walk(node["additionalProperties"], ptr / "cpu", f);
  }
}

const char* kMinimalJob = "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: minimal}\n"
                          "spec:\n  benchmark: {model: mlp}\n  sweep: [{}]\n";

TEST(Crd, DefaultsAreCoresDefaults) {
  const json core = to_json(parse_benchmark_job(kMinimalJob));
  int defaults = 0;
  walk(schema().at("properties").at("spec"), json::json_pointer("/spec"), [&](const json::json_pointer& p, const json& node) {
    if (!node.contains("default")) return;
    ++defaults;
    ASSERT_TRUE(core.contains(p)) << p.to_string() << " has a schema default but core's job has no value there";
    EXPECT_EQ(core.at(p), node.at("default")) << p.to_string();
    const auto errors = errors_against(node, node.at("default"));
    EXPECT_TRUE(errors.empty()) << p.to_string() << ": the default fails its own schema:\n" << SchemaValidator::str(errors);
  });
  EXPECT_GE(defaults, 25);
}

TEST(Crd, PrinterColumnsPointIntoTheSchema) {
  const json& columns = crd().at("spec").at("versions").at(0).at("additionalPrinterColumns");
  std::vector<std::string> names;
  for (const auto& c : columns) {
    const std::string name = c.at("name");
    names.push_back(name);
    const std::string path = c.at("jsonPath");
    const std::string type = c.at("type");
    EXPECT_TRUE(type == "string" || type == "number" || type == "integer" || type == "boolean" || type == "date")
        << name;
    if (path == ".metadata.creationTimestamp") {
      EXPECT_EQ(type, "date");
      continue;
    }
    ASSERT_EQ(path[0], '.') << name;
    const json* node = &schema();
    std::stringstream parts(path.substr(1));
    std::string part;
    while (std::getline(parts, part, '.')) {
      ASSERT_TRUE(node->contains("properties") && node->at("properties").contains(part)) << name << ": " << path;
      node = &node->at("properties").at(part);
    }
    // An integer column over a number: the API server prints it truncated (ex/s without decimals).
    EXPECT_EQ(node->at("type"), type == "integer" && node->at("type") == "number" ? "number" : type)
        << name << ": " << path;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Phase", "Runs", "Progress", "Best ex/s", "Speedup", "Lowest eff.",
                                             "Noisy", "Model", "Age"}));
  EXPECT_EQ(columns.at(3).at("type"), "integer");    // Best ex/s: whole examples
  EXPECT_EQ(columns.at(6).value("priority", 0), 1);  // Noisy: kubectl get -o wide
}

TEST(Crd, StatusHasTheOperatorsFields) {
  const json& status = schema().at("properties").at("status");
  for (const char* f :
       {"phase", "conditions", "observedGeneration", "runsTotal", "runsDone", "progress", "percentComplete",
        "progressDetail", "runs", "report", "bestExamplesPerSec", "bestSpeedup", "lowestEfficiency", "noisyRuns"}) {
    EXPECT_TRUE(status.at("properties").contains(f)) << f;
  }
  EXPECT_EQ(status.at("properties").at("report").at("x-kubernetes-preserve-unknown-fields"), true);
  const json condition = {{"type", "Running"}, {"status", "True"}, {"reason", "RunStarted"}, {"message", "run 1 of 3"},
                          {"lastTransitionTime", "2026-11-22T10:00:00Z"}, {"observedGeneration", 1}};
  const json object = {{"apiVersion", kApiVersion},
                       {"kind", kKind},
                       {"metadata", {{"name", "j"}}},
                       {"spec", yaml_to_json(kMinimalJob).at("spec")},
                       {"status",
                        {{"phase", "Running"},
                         {"conditions", json::array({condition})},
                         {"observedGeneration", 1},
                         {"runsTotal", 3},
                         {"runsDone", 1},
                         {"progress", "1/3"},
                         {"percentComplete", "42%"},
                         {"progressDetail",
                          {{"percent", 42},
                           {"estimatedRemainingSeconds", 130},
                           {"lastUpdateTime", "2026-11-22T10:00:10Z"},
                           {"currentRun",
                            {{"index", 1},
                             {"label", "4 CPUs -- 2M/4G"},
                             {"attempt", 0},
                             {"stage", "Measure"},
                             {"step", 17},
                             {"steps", 100},
                             {"repeat", 2},
                             {"repeats", 5},
                             {"secondsPerStep", 0.012},
                             {"estimatedRemainingSeconds", 4}}}}},
                         {"runs", json::array({{{"index", 0},
                                                {"label", "no ddp"},
                                                {"phase", "Succeeded"},
                                                {"attempt", 0},
                                                {"summary", {{"examplesPerSec", 100.5}}}}})},
                         {"report", {{"anything", {1, 2}}}},
                         {"bestExamplesPerSec", 100.5},
                         {"bestSpeedup", 1.0},
                         {"lowestEfficiency", 0.43},
                         {"noisyRuns", 1}}}};
  const auto errors = validator().errors(object);
  EXPECT_TRUE(errors.empty()) << SchemaValidator::str(errors);
  json bad = object;
  bad["status"]["phase"] = "Done";
  bad["status"]["conditions"][0]["status"] = "Yes";
  bad["status"]["noisyRuns"] = -1;
  bad["status"]["progressDetail"]["percent"] = 101;
  bad["status"]["progressDetail"]["currentRun"]["stage"] = "Cooldown";
  EXPECT_GE(validator().errors(bad).size(), 5u);
}

/// Every `self.a.b` / `e.a` a rule names exists in the schema (e bound by `.all(e, ...)`).
TEST(Crd, CelRulesNameFieldsThatExist) {
  const auto all = rules();
  ASSERT_GE(all.size(), 3u);
  static const std::regex kAll(R"((self(?:\.[A-Za-z]+)+)\.all\((\w+),)");
  static const std::regex kRef(R"(\b([a-z]+)((?:\.[A-Za-z]+)+))");
  for (const auto& [path, r] : all) {
    const std::string rule = r.at("rule");
    // the schema node the rule sits on
    const json* node = &schema();
    if (!path.empty()) {
      std::stringstream parts(path);
      std::string part;
      while (std::getline(parts, part, '.')) {
        const bool items = part.size() > 2 && part.compare(part.size() - 2, 2, "[]") == 0;
        node = &node->at("properties").at(items ? part.substr(0, part.size() - 2) : part);
        if (items) node = &node->at("items");
      }
    }
    std::map<std::string, const json*> vars{{"self", node}};
    for (std::sregex_iterator it(rule.begin(), rule.end(), kAll), end; it != end; ++it) {
      const json* list = node;
      std::stringstream parts((*it)[1].str().substr(5));
      std::string part;
      while (std::getline(parts, part, '.')) list = &list->at("properties").at(part);
      vars[(*it)[2].str()] = &list->at("items");
    }
    for (std::sregex_iterator it(rule.begin(), rule.end(), kRef), end; it != end; ++it) {
      auto var = vars.find((*it)[1].str());
      if (var == vars.end()) continue;  // a function or literal, e.g. 'nccl'
      const json* at = var->second;
      std::stringstream parts((*it)[2].str().substr(1));
      std::string part;
      while (std::getline(parts, part, '.')) {
        if (part == "all" || part == "exists" || part == "exists_one" || part == "filter") break;  // macros
        if (at->value("type", "") == "string") break;  // a string's method: .startsWith(...)
        ASSERT_TRUE(at->contains("properties") && at->at("properties").contains(part))
            << path << ": rule names " << (*it)[0] << ", not in the schema: " << rule;
        at = &at->at("properties").at(part);
      }
    }
    EXPECT_EQ(std::count(rule.begin(), rule.end(), '('), std::count(rule.begin(), rule.end(), ')')) << rule;
    EXPECT_EQ(std::count(rule.begin(), rule.end(), '\'') % 2, 0) << rule;
  }
}

// ---- the examples ----

/// The API server's structural defaulting: absent fields with a default get it, recursively.
json apply_defaults(const json& node, json value) {
  if (value.is_object() && node.contains("properties")) {
    for (const auto& [k, sub] : node["properties"].items()) {
      if (!value.contains(k) && sub.contains("default")) value[k] = sub["default"];
      if (value.contains(k)) value[k] = apply_defaults(sub, value[k]);
    }
  }
  if (value.is_object() && node.contains("additionalProperties") && node["additionalProperties"].is_object()) {
    for (auto& [k, v] : value.items()) v = apply_defaults(node["additionalProperties"], v);
  }
  if (value.is_array() && node.contains("items")) {
    for (auto& v : value) v = apply_defaults(node["items"], v);
  }
  return value;
}

std::vector<std::string> example_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kSourceDir + "/examples", ec)) {
    if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class Example : public ::testing::TestWithParam<std::string> {};

TEST_P(Example, ValidatesAgainstTheCrdAndParsesWithCore) {
  const std::string text = read_file(kSourceDir + "/examples/" + GetParam());
  const json doc = yaml_to_json(text);
  const auto errors = validator().errors(doc);
  EXPECT_TRUE(errors.empty()) << GetParam() << " fails the CRD schema:\n" << SchemaValidator::str(errors);
  BenchmarkJob job;
  ASSERT_NO_THROW(job = parse_benchmark_job(text)) << GetParam();
  // What the operator reads back from the API server: the object with the schema's defaults.
  const json defaulted = apply_defaults(schema(), doc);
  EXPECT_TRUE(validator().errors(defaulted).empty()) << SchemaValidator::str(validator().errors(defaulted));
  BenchmarkJob from_server;
  ASSERT_NO_THROW(from_server = parse_benchmark_job(defaulted.dump())) << defaulted.dump(2);
  EXPECT_EQ(to_json(from_server), to_json(job));
}

INSTANTIATE_TEST_SUITE_P(Crd, Example, ::testing::ValuesIn(example_files()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param.substr(0, p.param.rfind('.'));
                           std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return n;
                         });

TEST(Crd, ExamplesIncludeTheOperatorJob) {
  const auto files = example_files();
  EXPECT_NE(std::find(files.begin(), files.end(), "operator-mlp.yaml"), files.end());
  const BenchmarkJob job = load_benchmark_job(kSourceDir + "/examples/operator-mlp.yaml");
  EXPECT_EQ(job.benchmark.model, "mlp");
  EXPECT_EQ(job.backend, Backend::kGloo);
  bool two_by_two = false;
  for (const auto& e : job.sweep) two_by_two = two_by_two || (e.nodes == 2 && e.devices_per_node == 2);
  EXPECT_TRUE(two_by_two);
}

// ---- the shared malformed-spec table ----

using Malformed = testing_corpus::SpecCase;

std::vector<Malformed> load_malformed() { return testing_corpus::malformed_cases(kSourceDir + "/tests/data"); }

class MalformedSpec : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedSpec, SchemaAgreesWithTheTable) {
  const Malformed& m = GetParam();
  ASSERT_TRUE(m.problem.empty()) << m.problem;
  if (m.schema == "not-a-document") {
    EXPECT_THROW(yaml_to_json(m.yaml), std::runtime_error);
    EXPECT_FALSE(m.reason.empty()) << "say who refuses it";
    return;
  }
  json doc;
  ASSERT_NO_THROW(doc = yaml_to_json(m.yaml));
  const auto errors = validator().errors(doc);
  if (m.schema == "rejects") {
    ASSERT_FALSE(errors.empty()) << "the CRD schema accepts it; core says " << m.field << ": " << m.fragment
                                 << "\n(mark it semantic-only with a reason if no schema can express it)";
    std::string deepest;
    for (const auto& e : errors) {
      if (e.path.size() > deepest.size()) deepest = e.path;
    }
    const std::string field = m.field == "<document>" ? "" : m.field;
    EXPECT_TRUE(path_within(deepest, field))
        << "the schema's deepest error is at " << deepest << ", not at or above " << field << ":\n"
        << SchemaValidator::str(errors);
  } else {
    ASSERT_EQ(m.schema, "semantic-only") << "schema must be rejects, semantic-only or not-a-document";
    EXPECT_TRUE(errors.empty()) << "the schema rejects it: mark it `schema: rejects`\n" << SchemaValidator::str(errors);
    EXPECT_FALSE(m.reason.empty()) << "say who refuses it (a CEL rule, the API server, or core only)";
    if (!m.cel.empty()) {
      bool found = false;
      for (const auto& [path, r] : rules()) found = found || r.at("rule").get<std::string>().find(m.cel) != std::string::npos;
      EXPECT_TRUE(found) << "no x-kubernetes-validations rule contains \"" << m.cel << "\"";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Crd, MalformedSpec, ::testing::ValuesIn(load_malformed()),
                         [](const ::testing::TestParamInfo<Malformed>& p) { return p.param.name; });

TEST(Crd, EveryCelRuleHasACase) {
  std::set<std::string> covered;
  for (const auto& m : load_malformed()) {
    if (m.cel.empty()) continue;
    for (const auto& [path, r] : rules()) {
      if (r.at("rule").get<std::string>().find(m.cel) != std::string::npos) covered.insert(r.at("rule"));
    }
  }
  for (const auto& [path, r] : rules()) {
    EXPECT_TRUE(covered.count(r.at("rule"))) << "no malformed-specs.yaml case exercises the rule at " << path << ": "
                                             << r.at("rule");
  }
}

// ---- bounds and enums: the schema and core agree on both sides of each ----

struct Probe {
  json::json_pointer at;
  json value;
};

std::vector<Probe> probes() {
  std::vector<Probe> out;
  walk(schema().at("properties").at("spec"), json::json_pointer("/spec"), [&](const json::json_pointer& p, const json& node) {
    const std::string type = node.value("type", node.value("x-kubernetes-int-or-string", false) ? "integer" : "");
    if (type == "integer" || type == "number") {
      if (node.contains("minimum")) {
        const double min = node["minimum"].get<double>();
        if (node.value("exclusiveMinimum", false)) {
          out.push_back({p, min});
          out.push_back({p, min + 0.5});
        } else {
          out.push_back({p, node["minimum"].get<long long>() - 1});
          out.push_back({p, node["minimum"]});
        }
      }
      if (node.contains("maximum")) {
        out.push_back({p, node["maximum"]});
        out.push_back({p, node["maximum"].get<long long>() + 1});
      }
      if (type == "integer") out.push_back({p, 1.5});
    }
    if (node.contains("enum")) {
      for (const auto& v : node["enum"]) out.push_back({p, v});
      out.push_back({p, "not-a-value"});
    }
  });
  return out;
}

/// The field a rule on `ptr` or above it mentions, e.g. "nodes" in the sweep entry's rule.
bool cel_covers(const json::json_pointer& ptr) {
  const std::string field = ptr.back();
  const std::string path = ptr.to_string();
  for (const auto& [rule_path, r] : rules()) {
    std::string p = "/" + rule_path;
    std::replace(p.begin(), p.end(), '.', '/');
    p = std::regex_replace(p, std::regex(R"(\[\])"), "/0");
    if (path.rfind(p, 0) == 0 && r.at("rule").get<std::string>().find(field) != std::string::npos) return true;
  }
  return false;
}

TEST(Crd, BoundsAndEnumsAgreeWithCore) {
  const json base = yaml_to_json(
      "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: bounds}\n"
      "spec:\n  benchmark: {model: mlp, mlp: {hiddenSizes: [64]}}\n  sweep: [{nodes: 1, devicesPerNode: 1}]\n"
      "  baseline: {benchmarkJob: earlier}\n");  // an optional object is present, so its fields' bounds are probed
  ASSERT_TRUE(validator().errors(base).empty());
  ASSERT_NO_THROW(parse_benchmark_job(base.dump()));
  const auto all = probes();
  EXPECT_GE(all.size(), 80u);
  for (const auto& probe : all) {
    json doc = base;
    doc[probe.at] = probe.value;
    const bool schema_ok = validator().errors(doc).empty();
    bool core_ok = true;
    std::string core_says;
    try {
      parse_benchmark_job(doc.dump());
    } catch (const SpecError& e) {
      core_ok = false;
      core_says = e.what();
    }
    const std::string what = probe.at.to_string() + " = " + probe.value.dump();
    if (!schema_ok) {
      EXPECT_FALSE(core_ok) << what << ": the schema rejects it, core accepts it";
    } else if (!core_ok) {
      EXPECT_TRUE(cel_covers(probe.at)) << what << ": core rejects it (" << core_says
                                        << ") but the schema accepts it and no CEL rule above it names the field";
    }
  }
}

// ---- lengths and sizes: maxLength / maxItems / maxProperties are core's bounds ----

/// A value for `node` of `size` characters, items or entries that its own schema would take at
/// size 1 (nullopt when none of the fillers fits).
std::optional<json> sized_value(const json& node, std::size_t size) {
  const std::string type = node.value("type", node.value("x-kubernetes-int-or-string", false) ? "string" : "");
  if (type == "string") {
    for (const char* fill : {"a", "1"}) {
      if (errors_against(node, std::string(1, fill[0])).empty()) return json(std::string(size, fill[0]));
    }
    return std::nullopt;
  }
  if (type == "array") {
    const json& items = node.at("items");
    const std::string item_type = items.value("type", "");
    json item = item_type == "integer" ? json(1) : item_type == "string" ? json("a") : json::object();
    for (const auto& r : items.value("required", json::array())) {
      // a value the required field's own schema takes (a path, a name, an identifier)
      const json& field = items.at("properties").at(r.get<std::string>());
      for (const char* v : {"/x", "a", "A"}) {
        if (errors_against(field, v).empty()) {
          item[r.get<std::string>()] = v;
          break;
        }
      }
    }
    return json(std::vector<json>(size, item));
  }
  if (type == "object" && node.contains("additionalProperties")) {
    const json& values = node.at("additionalProperties");
    const json value = values.value("type", "") == "string" ? json("a") : json(1);
    json out = json::object();
    for (std::size_t i = 0; i < size; ++i) out["K" + std::to_string(i)] = value;
    return out;
  }
  return std::nullopt;
}

bool core_says_too_big(const json& doc, const std::string& field) {
  try {
    parse_benchmark_job(doc.dump());
  } catch (const SpecError& e) {
    for (const auto& fe : e.errors()) {
      if (fe.path == field && fe.message.find("at most") != std::string::npos) return true;
    }
  }
  return false;
}

/// "spec.benchmark.mlp.hiddenSizes" from "/spec/benchmark/mlp/hiddenSizes".
std::string field_of(const json::json_pointer& p) {
  std::string out = p.to_string().substr(1);
  std::replace(out.begin(), out.end(), '/', '.');
  return std::regex_replace(out, std::regex(R"(\.([0-9]+))"), "[$1]");
}

TEST(Crd, LengthAndSizeBoundsAreCores) {
  const json base = yaml_to_json(
      "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: {name: bounds}\n"
      "spec:\n  benchmark: {model: mlp}\n  sweep: [{nodes: 1, devicesPerNode: 1}]\n");
  int probed = 0;
  walk(schema().at("properties").at("spec"), json::json_pointer("/spec"),
       [&](const json::json_pointer& p, const json& node) {
         for (const char* bound : {"maxLength", "maxItems", "maxProperties"}) {
           if (!node.contains(bound) || node.contains("enum")) continue;  // an enum's maxLength is its longest value
           const auto max = node.at(bound).get<std::size_t>();
           const auto at_max = sized_value(node, max);
           const auto past = sized_value(node, max + 1);
           if (!at_max || !past) continue;
           ++probed;
           json doc = base;
           doc[p] = *past;
           EXPECT_FALSE(validator().errors(doc).empty()) << p.to_string() << ": the schema takes " << max + 1;
           EXPECT_TRUE(core_says_too_big(doc, field_of(p)))
               << p.to_string() << ": core does not refuse " << max + 1 << " with \"at most\"";
           doc[p] = *at_max;
           EXPECT_TRUE(errors_against(node, *at_max).empty()) << p.to_string() << ": the schema refuses " << max;
           EXPECT_FALSE(core_says_too_big(doc, field_of(p))) << p.to_string() << ": core refuses " << max;
         }
       });
  EXPECT_GE(probed, 12);
}

// ---- the bounds table: core/spec/spec_bounds.hpp states every bound once, the CRD repeats none ----

/// The schema node of a spec_field_bounds() path ("spec.sweep[].nodes", "spec.template.labels.*"),
/// or nullptr when the schema has no such field.
const json* schema_node_at(const std::string& path) {
  const json* node = &schema();
  std::stringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '.')) {
    const bool items = part.size() > 2 && part.compare(part.size() - 2, 2, "[]") == 0;
    if (items) part.resize(part.size() - 2);
    if (part == "*") {
      if (!node->contains("additionalProperties")) return nullptr;
      node = &node->at("additionalProperties");
    } else {
      if (!node->contains("properties") || !node->at("properties").contains(part)) return nullptr;
      node = &node->at("properties").at(part);
    }
    if (items) {
      if (!node->contains("items")) return nullptr;
      node = &node->at("items");
    }
  }
  return node;
}

/// `key` of `node` as the table states it: absent in both, or equal.
void expect_keyword(const json& node, const char* key, const std::optional<long long>& want, const std::string& path) {
  if (!want) {
    EXPECT_FALSE(node.contains(key)) << path << ": the CRD has " << key << " " << node.value(key, json()).dump()
                                     << " that core/spec/spec_bounds.hpp does not state";
    return;
  }
  ASSERT_TRUE(node.contains(key)) << path << ": the CRD has no " << key << " (core: " << *want << ")";
  EXPECT_EQ(node.at(key).get<long long>(), *want) << path << " " << key;
}

TEST(CrdBounds, EveryTableBoundIsTheCrds) {
  const auto& table = spec_field_bounds();
  EXPECT_GE(table.size(), 60u);
  std::set<std::string> paths;
  for (const FieldBound& f : table) {
    EXPECT_TRUE(paths.insert(f.path).second) << "two entries for " << f.path;
    const json* node = schema_node_at(f.path);
    ASSERT_NE(node, nullptr) << f.path << ": not in the CRD";
    expect_keyword(*node, "minimum", f.minimum, f.path);
    expect_keyword(*node, "maximum", f.maximum, f.path);
    EXPECT_EQ(node->value("exclusiveMinimum", false), f.exclusive_minimum) << f.path;
    expect_keyword(*node, "maxItems", f.max_items, f.path);
    expect_keyword(*node, "maxProperties", f.max_properties, f.path);
    if (f.allowed.empty()) {
      expect_keyword(*node, "maxLength", f.max_length, f.path);
      EXPECT_FALSE(node->contains("enum") && node->at("enum").at(0).is_string()) << f.path << ": an enum core lacks";
    } else {
      EXPECT_EQ(node->at("enum"), json(f.allowed)) << f.path;
    }
  }
}

/// The other way round: every bound the CRD states under spec (and metadata.name) is in the table.
TEST(CrdBounds, EveryCrdBoundIsInTheTable) {
  std::set<std::string> paths;
  for (const FieldBound& f : spec_field_bounds()) paths.insert(f.path);
  int checked = 0;
  for (const char* root : {"spec", "metadata"}) {
    walk(schema().at("properties").at(root), json::json_pointer("/" + std::string(root)),
         [&](const json::json_pointer& p, const json& node) {
           const bool string_enum = node.contains("enum") && node.at("enum").at(0).is_string();
           const bool bounded = node.contains("minimum") || node.contains("maximum") || node.contains("maxItems") ||
                                node.contains("maxProperties") || string_enum ||
                                (node.contains("maxLength") && !node.contains("enum"));
           if (!bounded) return;
           // "/spec/sweep/0/nodes" -> "spec.sweep[].nodes"; map values walk() names "cpu" -> "*"
           std::string path = field_of(p);
           path = std::regex_replace(path, std::regex(R"(\[0\])"), "[]");
           path = std::regex_replace(path, std::regex(R"(\.cpu$)"), ".*");
           ++checked;
           EXPECT_TRUE(paths.count(path) > 0) << path << ": a bound in the CRD that core/spec/spec_bounds.hpp does not list";
         });
  }
  EXPECT_GE(checked, 60);
}

}  // namespace
}  // namespace trainbench
