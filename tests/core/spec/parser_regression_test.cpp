// Regression cases of issue 11: inputs that crashed, hung or were silently accepted by core's
// parsers (the BenchmarkJob reader, yaml_to_json, the RunResult and report readers). Each one
// must now be refused with an error naming the field, quickly, without echoing raw bytes.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/report/report.hpp"
#include "core/report/report_format.hpp"
#include "core/spec/json_fields.hpp"
#include "core/spec/model_sizes.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/yaml_json.hpp"

namespace trainbench {
namespace {

using nlohmann::json;

std::string job_with(const std::string& benchmark, const std::string& sweep = "[{nodes: 1, devicesPerNode: 1}]",
                     const std::string& metadata = "{name: regression}") {
  return "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata: " + metadata +
         "\nspec:\n  benchmark: " + benchmark + "\n  sweep: " + sweep + "\n";
}

/// The SpecError's messages for `yaml`, or "" when it parses.
std::string errors_of(const std::string& yaml) {
  try {
    parse_benchmark_job(yaml);
  } catch (const SpecError& e) {
    EXPECT_FALSE(invalid_utf8_offset(e.what()).has_value()) << "raw invalid bytes in: " << e.what();
    return e.what();
  }
  return "";
}

void expect_refused(const std::string& yaml, const std::string& field, const std::string& fragment) {
  const std::string errors = errors_of(yaml);
  EXPECT_NE(errors.find(field + ": "), std::string::npos) << "expected " << field << ", got:\n" << errors;
  EXPECT_NE(errors.find(fragment), std::string::npos) << "expected '" << fragment << "', got:\n" << errors;
}

// ---- the breaking inputs ----

TEST(ParserRegression, HundredThousandDigitIntegerIsOutOfRange) {
  // std::regex_match recursed once per digit and overflowed the stack (SIGSEGV).
  const std::string digits(100000, '1');
  expect_refused(job_with("{model: mlp, repeats: " + digits + "}"), "spec.benchmark.repeats", "integer out of range");
  expect_refused(job_with("{model: mlp}", "[{nodes: " + digits + ", devicesPerNode: 1}]"), "spec.sweep[0].nodes",
                 "integer out of range");
  expect_refused(job_with("{model: mlp, learningRate: " + digits + "}"), "spec.benchmark.learningRate",
                 "must be a finite number");
}

TEST(ParserRegression, HundredKilobyteStringsAreBoundedBeforeAnyPattern) {
  const std::string big(100000, '1');
  const std::string base = job_with("{model: mlp}");
  expect_refused(base + "  template: {resources: {limits: {cpu: \"" + big + "\"}}}\n",
                 "spec.template.resources.limits.cpu", "at most 64 characters");
  expect_refused(base + "  template: {resources: {limits: {cpu: " + std::string(100000, 'x') + "}}}\n",
                 "spec.template.resources.limits.cpu", "at most 64 characters");
  expect_refused(base + "  template: {labels: {team: " + std::string(100000, 'a') + "}}\n", "spec.template.labels.team",
                 "at most 63 characters");
  // YAML limits implicit keys to 1024 characters: 1000 is past kMaxEnvNameLength all the same
  expect_refused(base + "  nccl: {extraEnv: {" + std::string(1000, 'A') + ": x}}\n",
                 "spec.nccl.extraEnv." + std::string(80, 'A') + "... (1000 bytes)",
                 "must be an environment variable name");
  expect_refused(job_with("{model: " + std::string(100000, 'm') + "}"), "spec.benchmark.model", "bytes)");
  // the message quotes at most a few dozen bytes of the value
  EXPECT_LT(errors_of(job_with("{model: " + std::string(100000, 'm') + "}")).size(), 1000u);
  EXPECT_NO_THROW(yaml_to_json("a: " + std::string(100000, 'x') + "\n"));
}

TEST(ParserRegression, CommaNewlineIsRefusedInsteadOfLoopingForever) {
  // yaml-cpp 0.7.0's LoadAll hands out null documents forever on these two bytes (its #1040).
  expect_refused(",\n", "<yaml>", "makes no progress");
  EXPECT_THROW(yaml_to_json(",\n"), std::runtime_error);
  expect_refused(job_with("{model: mlp}") + ",\n", "<yaml>", "not valid YAML");
  expect_refused("", "<yaml>", "expected exactly one document, got 0");
  expect_refused("a: 1\n---\nb: 2\n", "<yaml>", "expected exactly one document, got 2");
}

TEST(ParserRegression, YamlToJsonRefusesNumbersJsonCannotHold) {
  // std::stod threw std::out_of_range (a logic_error) out of yaml_to_json.
  for (const std::string& text :
       std::vector<std::string>{"a: 1e999\n", "a: -1e999\n", "a: " + std::string(400, '9') + "\n", "a: .inf\n",
                                "a: .nan\n", "a: 0x" + std::string(40, 'F') + "\n"}) {
    EXPECT_THROW(yaml_to_json(text), std::runtime_error) << text.substr(0, 20);
  }
  EXPECT_EQ(yaml_to_json("a: 1e-999\n").at("a"), 0.0);                 // underflow: 0, as JSON decoders make it
  EXPECT_EQ(yaml_to_json("a: 99999999999999999999\n").at("a"), 1e20);  // past 64 bits: a float
  EXPECT_EQ(yaml_to_json("a: 0x1F\nb: 0o17\nc: +5\n"), json({{"a", 31}, {"b", 15}, {"c", 5}}));
}

TEST(ParserRegression, AliasBombIsRefused) {
  std::string yaml = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    const char prev = static_cast<char>(c - 1);
    yaml += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  EXPECT_THROW(yaml_to_json(yaml), std::runtime_error);
  expect_refused(job_with("{model: mlp}") + "  template:\n    tolerations:\n      - " +
                     "x: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" +
                     "        y: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
                     "        z: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
                     "        w: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
                     "        v: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n" +
                     "        u: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n" +
                     "        t: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
                 "<yaml>", "more than 100000 nodes");
}

TEST(ParserRegression, DocumentsPastTheSizeBoundAreRefused) {
  expect_refused(job_with("{model: mlp}") + "# " + std::string(kMaxDocumentBytes, 'x') + "\n", "<yaml>", "bytes");
}

// ---- what was silently accepted ----

TEST(ParserRegression, QuotedNumbersAndStringTagsAreStrings) {
  expect_refused(job_with("{model: mlp, repeats: \"5\"}"), "spec.benchmark.repeats", "must be an integer, got \"5\"");
  expect_refused(job_with("{model: mlp}", "[{nodes: !!str 2, devicesPerNode: 1}]"), "spec.sweep[0].nodes",
                 "write it without quotes or tag");
  expect_refused(job_with("{model: mlp, learningRate: \"0.5\"}"), "spec.benchmark.learningRate", "must be a number");
  expect_refused(job_with("{model: mlp, ddp: {broadcastBuffers: \"true\"}}"), "spec.benchmark.ddp.broadcastBuffers",
                 "must be true or false");
  // plain scalars in every spelling JSON would give are fine
  EXPECT_EQ(errors_of(job_with("{model: mlp, repeats: +5, learningRate: 5e-1, ddp: {broadcastBuffers: True}}")), "");
}

TEST(ParserRegression, MetadataLabelsMustBeStringLabelValues) {
  expect_refused(job_with("{model: mlp}", "[{}]", "{name: a, labels: {tier: 1}}"), "metadata.labels.tier", "quote it");
  expect_refused(job_with("{model: mlp}", "[{}]", "{name: a, labels: {tier: \"a b\"}}"), "metadata.labels.tier",
                 "must be a label value");
  expect_refused(job_with("{model: mlp}", "[{}]", "{name: a, annotations: {note: 1.5}}"), "metadata.annotations.note",
                 "quote it");
}

TEST(ParserRegression, DuplicateKeysNameTheKeyAndBothLines) {
  expect_refused(
      "apiVersion: trainbench.dev/v1alpha1\napiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\n"
      "metadata: {name: a}\nspec: {benchmark: {model: mlp}, sweep: [{}]}\n",
      "apiVersion", "duplicate key \"apiVersion\" (lines 1 and 2)");
  expect_refused(job_with("\n    model: mlp\n    repeats: 2\n    model: resnet18"), "spec.benchmark.model",
                 "duplicate key \"model\" (lines 6 and 8)");
  expect_refused(job_with("{model: mlp}", "[{nodes: 1, nodes: 2}]"), "spec.sweep[0].nodes", "duplicate key");
  EXPECT_THROW(yaml_to_json("a: 1\na: 2\n"), std::runtime_error);
}

TEST(ParserRegression, PipelineBoundariesMustBeBlocksTheModelHas) {
  const std::string pipe2 = "[{nodes: 1, devicesPerNode: 2, paradigm: pipeline}]";
  expect_refused(job_with("{model: mlp, pipeline: {boundaries: [7]}}", pipe2), "spec.benchmark.pipeline.boundaries[0]",
                 "must be a block index below 3");
  expect_refused(job_with("{model: resnet50, pipeline: {boundaries: [18]}}", pipe2),
                 "spec.benchmark.pipeline.boundaries[0]", "below 18");
  EXPECT_EQ(errors_of(job_with("{model: resnet50, pipeline: {boundaries: [17]}}", pipe2)), "");
  expect_refused(job_with("{model: mlp}", "[{nodes: 1, devicesPerNode: 4, paradigm: model-parallel}]"), "spec.sweep[0]",
                 "model mlp has 3 blocks, but nodes x devicesPerNode is 4");
}

TEST(ParserRegression, ModelBlockCountsMatchTheWorkersBlocks) {
  BenchmarkSpec b;
  const auto count = [&b](const std::string& model) {
    b.model = model;
    return model_block_count(b);
  };
  EXPECT_EQ(count("mlp"), 3);
  EXPECT_EQ(count("resnet18"), 10);
  EXPECT_EQ(count("resnet50"), 18);
  EXPECT_EQ(count("resnext50_32x4d"), 18);
  EXPECT_EQ(count("resnet101"), 35);
  EXPECT_EQ(count("bert-base"), 14);
  EXPECT_EQ(count("gpt2-small"), 14);
  EXPECT_EQ(count("mlstm"), 3);
  EXPECT_EQ(count("hybrid-embedding"), 6);
  EXPECT_EQ(count("vgg16"), 0);
}

TEST(ParserRegression, InvalidUtf8IsRefusedAndEscaped) {
  const std::string bad = "\xff\xfe";
  expect_refused(job_with("{model: mlp}", "[{}]", "{name: a, labels: {team: \"x" + bad + "\"}}"),
                 "metadata.labels.team", "must be valid UTF-8, got byte \\xFF");
  expect_refused(job_with("{model: mlp}") + "  template: {image: \"img" + bad + "\"}\n", "spec.template.image",
                 "valid UTF-8");
  expect_refused(job_with("{model: mlp, mod" + bad + "el: x}"), "spec.benchmark.mod\\xFF\\xFEel", "unknown field");
  expect_refused(job_with("{model: mlp}") + "# comment " + bad + "\n", "<yaml>", "invalid UTF-8: byte \\xFF at line 7");
  EXPECT_THROW(yaml_to_json("a: \"" + bad + "\"\n"), std::runtime_error);
  EXPECT_EQ(escape_invalid_utf8("ok \xc3\xa9 \xed\xa0\x80 \x01"), "ok \xc3\xa9 \\xED\\xA0\\x80 \\x01");
  EXPECT_EQ(printable(std::string(200, 'a'), 10), "aaaaaaaaaa... (200 bytes)");
}

// ---- numbers read back from JSON: range-checked before they are narrowed ----

json pipeline_run_report() {
  return {
      {"index", 0},
      {"label", "1M/2G"},
      {"devices", "2 CPUs"},
      {"nodes", 1},
      {"devicesPerNode", 2},
      {"worldSize", 2},
      {"paradigm", "pipeline"},
      {"bucketCapMB", 25},
      {"phase", "Succeeded"},
      {"secPerIter", {{"p50", 1}, {"p75", 1}, {"p90", 1}, {"p95", 1}}},
      {"examplesPerSec", {{"p50", 1}, {"p75", 1}, {"p90", 1}, {"p95", 1}}},
      {"repeats", json::array()},
      {"parameterCount", 10},
      {"ddpBucketCount", 0},
      {"maxPeakMemoryBytes", 0},
      {"pipeline",
       {{"stages", 2}, {"microBatches", 4}, {"blockCount", 3}, {"stageStarts", {0, 2}}, {"theoreticalBubble", 0.2}}},
      {"ranks", json::array()}};
}

TEST(ParserRegression, StageStartsPastAnIntAreRefused) {
  json run = pipeline_run_report();
  EXPECT_NO_THROW(run_report_from_json(run, "runs[0]"));
  run["pipeline"]["stageStarts"] = {0, 4294967296LL};
  try {
    run_report_from_json(run, "runs[0]");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("runs[0].pipeline.stageStarts[1]: must be a 32-bit integer"),
              std::string::npos)
        << e.what();
  }
  run["pipeline"]["stageStarts"] = {0, 1.5};
  EXPECT_THROW(run_report_from_json(run, "runs[0]"), std::runtime_error);
  run = pipeline_run_report();
  run["nodes"] = json(std::numeric_limits<std::uint64_t>::max());
  EXPECT_THROW(run_report_from_json(run, "runs[0]"), std::runtime_error);
}

TEST(ParserRegression, HugeMicroBatchesDoNotOverflowTheBubble) {
  const BenchmarkJob job =
      parse_benchmark_job(job_with("{model: mlp, batchSizePerDevice: 8, measureSteps: 1, repeats: 1}",
                                   "[{nodes: 1, devicesPerNode: 2, paradigm: pipeline}]"));
  RunResult r;
  r.world_size = 2;
  r.micro_batches = std::numeric_limits<int>::max();
  r.block_count = 3;
  r.stage_starts = {0, 2};
  for (int k = 0; k < 2; ++k) {
    RankResult rk;
    rk.rank = k;
    rk.step_seconds = {{0.5}};
    r.ranks.push_back(rk);
  }
  const RunReport run = summarize_run(plan_runs(job, 2).at(0), r);
  ASSERT_TRUE(run.pipeline);
  EXPECT_GT(run.pipeline->theoretical_bubble, 0.0);
  EXPECT_LT(run.pipeline->theoretical_bubble, 1e-9);
  json j = to_json(r);
  j["microBatches"] = 0;
  EXPECT_THROW(run_result_from_json(j), std::runtime_error);
  j["microBatches"] = 4294967296LL;
  EXPECT_THROW(run_result_from_json(j), std::runtime_error);
}

TEST(ParserRegression, BaselineRunPastTheRunsIsRefused) {
  const BenchmarkJob job = parse_benchmark_job(job_with("{model: mlp}"));
  Report rep = assemble_report(job, {}, EnvironmentInfo{});
  json j = to_json(rep);
  j["baselineRun"] = 3;
  try {
    report_from_json(j);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("baselineRun: must index runs"), std::string::npos) << e.what();
  }
  rep.baseline_run = 3;  // built in memory: format_report does not read past the runs either
  EXPECT_NE(format_report(rep).find("no single-device run succeeded"), std::string::npos);
}

TEST(ParserRegression, JsonFieldsNarrowOnlyWhatFits) {
  const json j = {{"a", 2147483647}, {"b", 2147483648LL}, {"c", std::numeric_limits<std::uint64_t>::max()}};
  EXPECT_EQ(json_fields::get_int32(j, "a", "x"), 2147483647);
  EXPECT_THROW(json_fields::get_int32(j, "b", "x"), std::runtime_error);
  EXPECT_EQ(json_fields::get_int(j, "b", "x"), 2147483648LL);
  EXPECT_THROW(json_fields::get_int(j, "c", "x"), std::runtime_error);
}

// Found by fuzz/spec_fields: validate() on a job built in code accepted a 274-character
// socketIfname that the reader refuses, so the job's own JSON did not read back.
TEST(ParserRegression, ValidateHoldsTheReadersTextBounds) {
  BenchmarkJob job = parse_benchmark_job(job_with("{model: mlp}"));
  ASSERT_TRUE(validate(job).empty());
  job.nccl.socket_ifname = std::string(kMaxSocketIfnameLength + 18, 'e');
  job.nccl.extra_env["NCCL_X"] = std::string(kMaxEnvValueLength + 1, 'v');
  job.pod_template.image = std::string(kMaxImageLength + 1, 'i');
  job.metadata.annotations["note"] = std::string(kMaxAnnotationValueLength + 1, 'a');
  std::string all;
  for (const auto& e : validate(job)) all += e.path + ": " + e.message + "\n";
  EXPECT_NE(all.find("spec.nccl.socketIfname: must be at most 256 characters, got 274"), std::string::npos) << all;
  EXPECT_NE(all.find("spec.nccl.extraEnv.NCCL_X: must be at most"), std::string::npos) << all;
  EXPECT_NE(all.find("spec.template.image: must be at most"), std::string::npos) << all;
  EXPECT_NE(all.find("metadata.annotations.note: must be at most"), std::string::npos) << all;
  // And what validate() accepts reads back from its own JSON.
  job = parse_benchmark_job(job_with("{model: mlp}"));
  job.nccl.socket_ifname = std::string(kMaxSocketIfnameLength, 'e');
  ASSERT_TRUE(validate(job).empty());
  EXPECT_NO_THROW(parse_benchmark_job(to_json(job).dump()));
}

}  // namespace
}  // namespace trainbench
