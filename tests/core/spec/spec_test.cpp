#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/spec/spec.hpp"
#include "core/spec/yaml_json.hpp"
#include "tests/core/spec/spec_corpus.hpp"

namespace trainbench {
namespace {

const char* kValid = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata:
  name: resnet50-scaling
spec:
  benchmark:
    model: resnet50
    batchSizePerDevice: 32
    ddp: {bucketCapMB: 25}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 1}
    - {nodes: 2, devicesPerNode: 8, bucketCapMB: 1}
)";

TEST(Spec, ParsesValidJobAndAppliesDefaults) {
  BenchmarkJob job = parse_benchmark_job(kValid);
  EXPECT_EQ(job.metadata.name, "resnet50-scaling");
  EXPECT_EQ(job.metadata.namespace_, "default");
  EXPECT_EQ(job.benchmark.model, "resnet50");
  EXPECT_EQ(job.benchmark.paradigm, Paradigm::kDdp);
  EXPECT_EQ(job.benchmark.precision, Precision::kFp32);
  EXPECT_EQ(job.benchmark.warmup_steps, 20);
  EXPECT_EQ(job.benchmark.measure_steps, 100);
  EXPECT_EQ(job.benchmark.repeats, 5);
  EXPECT_EQ(job.device, Device::kCpu);
  EXPECT_EQ(job.backend, Backend::kGloo);
  ASSERT_EQ(job.sweep.size(), 3u);
  EXPECT_EQ(job.sweep[0].paradigm, Paradigm::kNone);
  EXPECT_FALSE(job.sweep[1].paradigm.has_value());
  EXPECT_EQ(job.sweep[2].nodes, 2);
  EXPECT_EQ(job.sweep[2].devices_per_node, 8);
  EXPECT_DOUBLE_EQ(job.sweep[2].bucket_cap_mb.value_or(0), 1.0);
}

TEST(Spec, CudaDefaultsToNccl) {
  std::string y = kValid;
  y += "  device: cuda\n";
  EXPECT_EQ(parse_benchmark_job(y).backend, Backend::kNccl);
}

TEST(Spec, AcceptsServerPopulatedMetadataAndStatus) {
  std::string y = kValid;
  y.replace(y.find("  name: resnet50-scaling\n"), 25,
            "  name: resnet50-scaling\n  uid: abc\n  resourceVersion: \"12\"\n  generation: 3\n");
  y += "status: {phase: Running}\n";
  EXPECT_NO_THROW(parse_benchmark_job(y));
}

// ---- malformed specs: the table in tests/data/malformed-specs.yaml, shared with tests/crd ----

using Malformed = testing_corpus::SpecCase;

const std::vector<Malformed>& malformed_cases() {
  static const std::vector<Malformed> cases = testing_corpus::malformed_cases(TRAINBENCH_TEST_DATA);
  return cases;
}

class MalformedSpec : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedSpec, NamesTheField) {
  const Malformed& m = GetParam();
  ASSERT_TRUE(m.problem.empty()) << m.problem;
  try {
    parse_benchmark_job(m.yaml);
    FAIL() << "accepted: " << m.yaml;
  } catch (const SpecError& e) {
    bool found = false;
    for (const auto& fe : e.errors()) {
      if (fe.path == m.field && fe.message.find(m.fragment) != std::string::npos) found = true;
    }
    EXPECT_TRUE(found) << "expected '" << m.field << ": ..." << m.fragment << "...', got:\n" << e.what();
    EXPECT_NE(std::string(e.what()).find(m.field + ": "), std::string::npos);
    EXPECT_FALSE(invalid_utf8_offset(e.what()).has_value()) << "the message echoes invalid UTF-8";
  }
}

class ValidSpec : public ::testing::TestWithParam<Malformed> {};

TEST_P(ValidSpec, Parses) {
  const Malformed& v = GetParam();
  ASSERT_TRUE(v.problem.empty()) << v.problem;
  EXPECT_NO_THROW(parse_benchmark_job(v.yaml)) << v.yaml;
}

INSTANTIATE_TEST_SUITE_P(Spec, ValidSpec, ::testing::ValuesIn(testing_corpus::valid_cases(TRAINBENCH_TEST_DATA)),
                         [](const ::testing::TestParamInfo<Malformed>& p) { return p.param.name; });

INSTANTIATE_TEST_SUITE_P(Spec, MalformedSpec, ::testing::ValuesIn(malformed_cases()),
                         [](const ::testing::TestParamInfo<Malformed>& p) { return p.param.name; });

TEST(Spec, MalformedTableIsWellFormed) {
  const auto& cases = malformed_cases();
  // 47 cases were inline here before the table was shared; it only grows.
  EXPECT_GE(cases.size(), 150u);
  std::set<std::string> names;
  for (const auto& c : cases) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
    EXPECT_FALSE(c.field.empty()) << c.name;
    EXPECT_TRUE(c.schema == "rejects" || c.schema == "semantic-only" || c.schema == "not-a-document")
        << c.name << ": schema " << c.schema;
  }
}

// ---- the operator's fields ----

const char* kOperatorJob = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: gpu-scaling}
spec:
  benchmark: {model: resnet50}
  sweep: [{nodes: 2, devicesPerNode: 8}]
  device: cuda
  masterPort: 29600
  template:
    image: registry.example/trainbench/worker:0.1.0-cuda
    imagePullPolicy: IfNotPresent
    serviceAccountName: bench-runner
    resources:
      limits: {nvidia.com/gpu: 8, memory: 64Gi, cpu: "7.5"}
      requests: {cpu: 7500m}
    nodeSelector: {node.kubernetes.io/instance-type: p4d.24xlarge}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    volumes: [{name: shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}]
    volumeMounts: [{name: shm, mountPath: /dev/shm}]
    env:
      - {name: TORCH_SHOW_CPP_STACKTRACES, value: "1"}
      - name: NODE_NAME
        valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    annotations: {example.com/owner: ml-infra}
    labels: {team: ml-infra}
  nccl:
    socketIfname: eth0
    ibDisable: true
    debug: WARN
    extraEnv: {NCCL_P2P_DISABLE: "1"}
  runPolicy: {backoffLimit: 0, schedulingTimeoutSeconds: 60, cleanPodPolicy: Running}
)";

TEST(Spec, ParsesTheOperatorFields) {
  const BenchmarkJob job = parse_benchmark_job(kOperatorJob);
  EXPECT_EQ(job.master_port, 29600);
  const PodTemplate& t = job.pod_template;
  EXPECT_EQ(t.image, "registry.example/trainbench/worker:0.1.0-cuda");
  EXPECT_EQ(t.image_pull_policy, "IfNotPresent");
  EXPECT_EQ(t.service_account_name, "bench-runner");
  EXPECT_EQ(t.resource_limits.at("nvidia.com/gpu"), "8");  // a number becomes its text
  EXPECT_EQ(t.resource_limits.at("memory"), "64Gi");
  EXPECT_EQ(t.resource_limits.at("cpu"), "7.5");
  EXPECT_EQ(t.resource_requests.at("cpu"), "7500m");
  EXPECT_EQ(t.node_selector.at("node.kubernetes.io/instance-type"), "p4d.24xlarge");
  ASSERT_EQ(t.tolerations.size(), 1u);
  EXPECT_EQ(t.tolerations[0].at("operator"), "Exists");
  EXPECT_EQ(t.volumes[0].at("emptyDir").at("sizeLimit"), "8Gi");
  EXPECT_EQ(t.volume_mounts[0].at("mountPath"), "/dev/shm");
  ASSERT_EQ(t.env.size(), 2u);
  EXPECT_EQ(t.env[0].at("value"), "1");  // quoted: stays a string
  EXPECT_EQ(t.env[1].at("valueFrom").at("fieldRef").at("fieldPath"), "spec.nodeName");
  EXPECT_EQ(t.annotations.at("example.com/owner"), "ml-infra");
  EXPECT_EQ(t.labels.at("team"), "ml-infra");
  EXPECT_EQ(job.nccl.socket_ifname, "eth0");
  EXPECT_EQ(job.nccl.ib_disable, std::optional<bool>(true));
  EXPECT_EQ(job.nccl.debug, "WARN");
  EXPECT_EQ(job.nccl.extra_env.at("NCCL_P2P_DISABLE"), "1");
  EXPECT_EQ(job.run_policy.backoff_limit, 0);
  EXPECT_EQ(job.run_policy.scheduling_timeout_seconds, 60);
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
}

TEST(Spec, OperatorFieldDefaults) {
  const BenchmarkJob job = parse_benchmark_job(kValid);
  EXPECT_EQ(job.master_port, 29500);
  EXPECT_EQ(job.pod_template.image, "");  // unset: the operator's image for spec.device
  EXPECT_EQ(PodTemplate::default_worker_image(Device::kCpu), "trainbench/worker:0.1.0");
  EXPECT_EQ(PodTemplate::default_worker_image(Device::kCuda), "trainbench/worker:0.1.0-cuda");
  EXPECT_EQ(job.pod_template.image_pull_policy, "");
  EXPECT_TRUE(job.pod_template.env.is_array() && job.pod_template.env.empty());
  EXPECT_FALSE(job.nccl.ib_disable.has_value());
  EXPECT_EQ(job.nccl.debug, "");
  EXPECT_EQ(job.run_policy.backoff_limit, 2);
  EXPECT_EQ(job.run_policy.scheduling_timeout_seconds, 300);
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_EQ(job.run_policy.active_deadline_seconds, 0);
  EXPECT_EQ(job.run_policy.collective_timeout_seconds, 300);
}

TEST(Spec, ToJsonRoundTrips) {
  for (const char* text : {kValid, kOperatorJob}) {
    const BenchmarkJob job = parse_benchmark_job(text);
    const nlohmann::json j = to_json(job);
    EXPECT_EQ(j.at("spec").at("template").value("image", ""), job.pod_template.image);
    const BenchmarkJob again = parse_benchmark_job(j.dump());
    EXPECT_EQ(to_json(again), j) << j.dump(2);
  }
}

TEST(Spec, ToJsonLeavesUnsetOptionalsOut) {
  const nlohmann::json j = to_json(parse_benchmark_job(kValid));
  EXPECT_FALSE(j.at("spec").contains("nccl"));
  EXPECT_FALSE(j.at("spec").at("template").contains("imagePullPolicy"));
  EXPECT_FALSE(j.at("spec").at("sweep")[1].contains("paradigm"));
  EXPECT_EQ(j.at("spec").at("sweep")[0].at("paradigm"), "none");
  EXPECT_EQ(j.at("spec").at("backend"), "gloo");
}

std::string job_with(const std::string& benchmark_extra, const std::string& sweep) {
  return "apiVersion: trainbench.dev/v1alpha1\nkind: BenchmarkJob\nmetadata:\n  name: job-a\nspec:\n  benchmark:\n"
         "    model: mlp\n" + benchmark_extra + "  sweep:\n" + sweep;
}

TEST(Spec, ReportsEveryProblemAtOnce) {
  try {
    parse_benchmark_job(job_with("    batchSizePerDevice: 0\n    repeats: 0\n", "    - {nodes: 0, devicesPerNode: 1}\n"));
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.errors().size(), 3u) << e.what();
  }
}

TEST(Spec, MissingFileIsAClearError) {
  try {
    load_benchmark_job("/nonexistent/job.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/job.yaml"), std::string::npos);
  }
}

}  // namespace
}  // namespace trainbench

namespace trainbench {
namespace {
TEST(Spec, DirectoryIsNotASpec) {
  try {
    load_benchmark_job("/");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}
}  // namespace
}  // namespace trainbench
