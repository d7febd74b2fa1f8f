// One rank environment: every example job's runs give each rank the same torchrun variables
// whether `trainbench run` starts it (the local executor) or the operator does (its pod
// manifests, plus `trainbench node-launch` inside a trainer pod, which reads the pod's
// environment with node_launch_from_env and starts its ranks through the local executor).
// Cases are the files under examples/ (listed when ctest runs, so a new example is picked up
// without a rebuild) and one two-node hybrid-ps job with threadsPerProcess 0, which no example
// has.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/local_executor.hpp"
#include "cli/node_launch.hpp"
#include "core/plan/run_config.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/yaml_json.hpp"
#include "operator/controller/manifests.hpp"
#include "operator/controller/naming.hpp"

namespace trainbench::op {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Env = std::map<std::string, std::string>;
using RankEnvs = std::map<int, Env>;  ///< rank -> the environment its process starts with

/// The same on both sides, so that threadsPerProcess 0 resolves alike: the cores are the host's
/// for trainbench run and the trainer pod's CPU for the operator.
constexpr int kCores = 8;
const char* const kUnset = "<unset>";

/// Names the host a rank's process runs on (its node locally, its pod in a cluster) in RankEnvs,
/// for the LOCAL_WORLD_SIZE check; never a real variable.
const char* const kHost = "<host>";

/// Differ by host and nothing else: 127.0.0.1 and a free port for trainbench run, the run's
/// Service and spec.masterPort for the operator (checked on their own below).
const std::set<std::string> kHostVariables = {"MASTER_ADDR", "MASTER_PORT"};

/// torchrun's variables; with every name core's rank_variables() sets and any SLURM_* either
/// side sets, the names compared.
const std::set<std::string> kTorchrunVariables = {"MASTER_ADDR", "MASTER_PORT",      "WORLD_SIZE", "RANK",
                                                  "LOCAL_RANK",  "LOCAL_WORLD_SIZE", "NODE_RANK",  "GROUP_RANK"};

struct JobCase {
  std::string name;  ///< the test's name
  std::string yaml;
};

void PrintTo(const JobCase& c, std::ostream* os) { *os << c.name; }

const char* const kTwoNodeHybridPs = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: hybrid-two-nodes, namespace: bench}
spec:
  benchmark:
    model: hybrid-embedding
    paradigm: hybrid-ps
    hybridPs: {parameterServers: 3}
    threadsPerProcess: 0
  sweep:
    - {nodes: 2, devicesPerNode: 2}
    - {nodes: 1, devicesPerNode: 1, paradigm: ddp}
  masterPort: 29600
)";

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<JobCase> job_cases() {
  std::vector<JobCase> cases;
  for (const auto& e : fs::directory_iterator(TRAINBENCH_EXAMPLES_DIR)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".yaml" && ext != ".yml")) continue;
    std::string name = "example_" + e.path().stem().string();
    for (auto& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    cases.push_back({name, read_text(e.path())});
  }
  std::sort(cases.begin(), cases.end(), [](const JobCase& a, const JobCase& b) { return a.name < b.name; });
  cases.push_back({"two_node_hybrid_ps", kTwoNodeHybridPs});
  return cases;
}

/// A pod's environment as its container sees it: a later entry of the same name wins; a
/// downward-API entry stands for its field.
Env pod_env(const json& pod, std::size_t container = 0) {
  Env env;
  for (const auto& e : pod["spec"]["containers"][container]["env"]) {
    const std::string name = e["name"].get<std::string>();
    env[name] = e.contains("value") ? e["value"].get<std::string>()
                                    : "<" + e["valueFrom"]["fieldRef"]["fieldPath"].get<std::string>() + ">";
  }
  return env;
}

/// What trainbench node-launch starts in a trainer pod whose environment is `pod`: its node's
/// ranks, each with the pod's environment under the rank's own variables.
RankEnvs node_launch(const Env& pod) {
  const NodeLaunch launch = node_launch_from_env([&pod](const std::string& name) -> std::optional<std::string> {
    const auto it = pod.find(name);
    if (it == pod.end()) return std::nullopt;
    return it->second;
  });
  RankEnvs ranks;
  for (const RankLaunch& rank : rank_launches(launch.run, launch.options, launch.options.master_port, "/run")) {
    Env env = pod;
    for (const auto& [k, v] : rank.env) env[k] = v;
    ranks[rank.placement.rank] = env;
  }
  return ranks;
}

/// Every rank of `run` as `trainbench run` starts it.
RankEnvs local_ranks(const RunConfig& run) {
  const LocalExecutorOptions opts;  // every rank, master 127.0.0.1
  RankEnvs ranks;
  for (const RankLaunch& launch : rank_launches(run, opts, 40123, "/run")) {
    ranks[launch.placement.rank] = launch.env;
    ranks[launch.placement.rank][kHost] = "node " + std::to_string(launch.placement.node_rank);
  }
  return ranks;
}

/// Every rank of `run` as the operator starts it; also checks that each trainer pod's own value
/// of a variable equals what the pod's ranks get.
RankEnvs operator_ranks(const JobContext& job, const RunConfig& run) {
  RankEnvs ranks;
  for (int node = 0; node < run.nodes && run.program; ++node) {
    // a program's pod runs each of its node's ranks in a container of its own
    const json pod = trainer_pod(job, run, 0, node);
    for (std::size_t c = 0; c < pod["spec"]["containers"].size(); ++c) {
      const Env env = pod_env(pod, c);
      const int rank = std::stoi(env.at("RANK"));
      ranks[rank] = env;
      ranks[rank][kHost] = "trainer pod " + std::to_string(node);
    }
  }
  for (int node = 0; node < run.nodes && !run.program; ++node) {
    const Env pod = pod_env(trainer_pod(job, run, 0, node));
    for (const auto& [rank, env] : node_launch(pod)) {
      for (const auto& [name, value] : pod) {
        if (kTorchrunVariables.count(name) || env.count(name)) {
          EXPECT_EQ(value, env.at(name)) << "trainer pod " << node << " sets " << name << " unlike its rank " << rank;
        }
      }
      ranks[rank] = env;
      ranks[rank][kHost] = "trainer pod " + std::to_string(node);
    }
  }
  for (int j = 0; j < run.parameter_servers; ++j) {
    const Env pod = pod_env(parameter_server_pod(job, run, 0, j));
    const int rank = std::stoi(pod.at("RANK"));
    ranks[rank] = pod;
    ranks[rank][kHost] = "parameter-server pod " + std::to_string(j);
  }
  return ranks;
}

/// torchrun's definition, whoever launched the ranks: LOCAL_WORLD_SIZE is the number of ranks
/// on the rank's host, whose LOCAL_RANKs are 0 .. LOCAL_WORLD_SIZE - 1.
void expect_local_ranks_count_their_host(const RankEnvs& ranks) {
  std::map<std::string, std::vector<const Env*>> by_host;
  for (const auto& [rank, env] : ranks) by_host[env.at(kHost)].push_back(&env);
  for (const auto& [host, envs] : by_host) {
    SCOPED_TRACE(host);
    std::set<int> local_ranks;
    for (const Env* env : envs) {
      EXPECT_EQ(env->at("LOCAL_WORLD_SIZE"), std::to_string(envs.size()));
      local_ranks.insert(std::stoi(env->at("LOCAL_RANK")));
    }
    EXPECT_EQ(local_ranks.size(), envs.size());
    EXPECT_EQ(*local_ranks.begin(), 0);
    EXPECT_EQ(*local_ranks.rbegin(), static_cast<int>(envs.size()) - 1);
  }
}

std::string value_or_unset(const Env& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? kUnset : it->second;
}

std::set<std::string> compared_names(const RunConfig& run, const Env& a, const Env& b) {
  std::set<std::string> names = kTorchrunVariables;
  for (const auto& v : rank_variables(run, RankPlacement{}, "", 0)) names.insert(v.name);
  for (const Env* env : {&a, &b}) {
    for (const auto& [name, value] : *env) {
      if (name.rfind("SLURM_", 0) == 0) names.insert(name);
    }
  }
  return names;
}

/// TRAINBENCH_RUN_CONFIG without what records where the parameter servers sit: whether they
/// have pods of their own, and the threads per process that follow from it.
json run_config_but_server_placement(const std::string& text) {
  json j = json::parse(text);
  j.erase("parameterServersOwnPods");
  j.erase("threadsPerProcess");
  return j;
}

class ManifestRankEnvironment : public ::testing::TestWithParam<JobCase> {
 protected:
  void SetUp() override {
    job_ = parse_benchmark_job(GetParam().yaml);
    context_ = job_context(yaml_to_json(GetParam().yaml));
  }

  BenchmarkJob job_;
  JobContext context_;
};

// The operator's plan (every parameter server in a pod of its own) through both launchers: one
// rank environment, whoever starts the rank.
TEST_P(ManifestRankEnvironment, EveryRankGetsTheSameVariablesFromBothLaunchers) {
  for (const RunConfig& run : plan_runs(job_, kCores, ServerPlacement::OwnPods)) {
    SCOPED_TRACE("run " + std::to_string(run.index) + " " + run.label());
    const RankEnvs local = local_ranks(run);
    const RankEnvs cluster = operator_ranks(context_, run);
    ASSERT_EQ(local.size(), static_cast<std::size_t>(run.process_count()));
    ASSERT_EQ(cluster.size(), local.size());
    for (const auto& [rank, env] : local) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      ASSERT_TRUE(cluster.count(rank));
      const Env& pod = cluster.at(rank);
      for (const std::string& name : compared_names(run, env, pod)) {
        if (kHostVariables.count(name)) continue;
        EXPECT_EQ(value_or_unset(env, name), value_or_unset(pod, name)) << name;
      }
      EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
      EXPECT_EQ(pod.at("MASTER_ADDR"), master_address(context_.name, context_.namespace_, run.index));
      EXPECT_EQ(pod.at("MASTER_PORT"), std::to_string(master_port(context_)));
    }
  }
}

// trainbench run's own plan (parameter servers beside node 0's trainers) against the
// operator's: a run without parameter servers is the same rank for rank; with them, only the
// variables that say where the servers sit differ: on node 0, LOCAL_WORLD_SIZE (node 0 hosts P
// more processes locally; a server pod hosts 1) and a server's LOCAL_RANK (after node 0's
// trainers locally; 0 in its pod); on every rank, the threads of threadsPerProcess 0 (node 0's
// cores divided among its processes, for the whole run) and in TRAINBENCH_RUN_CONFIG those
// threads and parameterServersOwnPods.
TEST_P(ManifestRankEnvironment, TrainbenchRunDiffersOnlyWhereTheParameterServersSit) {
  const std::vector<RunConfig> local_plan = plan_runs(job_, kCores);
  const std::vector<RunConfig> operator_plan = plan_runs(job_, kCores, ServerPlacement::OwnPods);
  ASSERT_EQ(local_plan.size(), operator_plan.size());
  for (std::size_t i = 0; i < local_plan.size(); ++i) {
    const RunConfig& run = local_plan[i];
    SCOPED_TRACE("run " + std::to_string(run.index) + " " + run.label());
    const RankEnvs local = local_ranks(run);
    const RankEnvs cluster = operator_ranks(context_, operator_plan[i]);
    ASSERT_EQ(cluster.size(), local.size());
    for (const auto& [rank, env] : local) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const Env& pod = cluster.at(rank);
      std::set<std::string> may_differ;
      if (run.parameter_servers > 0) may_differ = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TRAINBENCH_RUN_CONFIG"};
      if (run.parameter_servers > 0 && env.at("NODE_RANK") == "0")
        may_differ.insert({"LOCAL_WORLD_SIZE", "LOCAL_RANK"});
      for (const std::string& name : compared_names(run, env, pod)) {
        if (kHostVariables.count(name) || may_differ.count(name)) continue;
        EXPECT_EQ(value_or_unset(env, name), value_or_unset(pod, name)) << name;
      }
      EXPECT_EQ(run_config_but_server_placement(env.at("TRAINBENCH_RUN_CONFIG")),
                run_config_but_server_placement(pod.at("TRAINBENCH_RUN_CONFIG")));
    }
  }
}

// The definition both launchers follow, on both plans: trainbench run (parameter servers beside
// node 0's trainers: node 0 hosts devicesPerNode + P processes) and the operator (a trainer pod
// hosts devicesPerNode, a parameter-server pod 1).
TEST_P(ManifestRankEnvironment, LocalWorldSizeCountsTheRanksOfTheirHost) {
  for (const RunConfig& run : plan_runs(job_, kCores)) {
    SCOPED_TRACE("trainbench run: run " + std::to_string(run.index) + " " + run.label());
    expect_local_ranks_count_their_host(local_ranks(run));
  }
  for (const RunConfig& run : plan_runs(job_, kCores, ServerPlacement::OwnPods)) {
    SCOPED_TRACE("operator: run " + std::to_string(run.index) + " " + run.label());
    expect_local_ranks_count_their_host(operator_ranks(context_, run));
  }
}

INSTANTIATE_TEST_SUITE_P(Jobs, ManifestRankEnvironment, ::testing::ValuesIn(job_cases()),
                         [](const auto& tc_info) { return tc_info.param.name; });

}  // namespace
}  // namespace trainbench::op

namespace trainbench::op {
namespace {

// A program workload's trainer pod (docs/workloads.md, "On Kubernetes"): one container per rank
// of its node running the program, each with one GPU on cuda, the master pod's store for its
// process group (TORCHELASTIC_USE_AGENT_STORE) and the probe (TRAINBENCH_STORE), the program's
// image, args, env and working directory, and shared memory for its ranks.
TEST(ProgramPod, OneContainerPerRankOnTheMastersStore) {
  const std::string yaml = R"(apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: ours, namespace: team}
spec:
  device: cuda
  benchmark: {batchSizePerDevice: 8}
  sweep: [{nodes: 2, devicesPerNode: 2}]
  workloads:
    - name: mine
      program:
        image: registry.example.com/team/trainer:1.4
        command: [python3, /app/train.py]
        args: [--fast]
        env: [{name: LOG_LEVEL, value: debug}]
        workingDir: /app
)";
  const RunConfig run = plan_runs(parse_benchmark_job(yaml), 8, ServerPlacement::OwnPods).at(0);
  const JobContext job = job_context(yaml_to_json(yaml));
  const json pod = trainer_pod(job, run, 0, 1);
  const json& containers = pod["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  for (std::size_t c = 0; c < 2; ++c) {
    SCOPED_TRACE("container " + std::to_string(c));
    const json& ct = containers[c];
    EXPECT_EQ(ct["name"], c == 0 ? "trainer" : "trainer-1");
    EXPECT_EQ(ct["image"], "registry.example.com/team/trainer:1.4");
    EXPECT_EQ(ct["command"], json::array({"python3", "/app/train.py"}));
    EXPECT_EQ(ct["args"], json::array({"--fast"}));
    EXPECT_EQ(ct["workingDir"], "/app");
    EXPECT_EQ(ct["resources"]["limits"]["nvidia.com/gpu"], 1);
    const Env env = pod_env(pod, c);
    EXPECT_EQ(env.at("RANK"), std::to_string(2 + c));
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(c));
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
    EXPECT_EQ(env.at("WORLD_SIZE"), "4");
    EXPECT_EQ(env.at("LOG_LEVEL"), "debug");
    EXPECT_EQ(env.at("TORCHELASTIC_USE_AGENT_STORE"), "True");
    EXPECT_EQ(env.at("TRAINBENCH_STORE"),
              master_address("ours", "team", 0) + ":" + std::to_string(master_port(job)));
    EXPECT_EQ(env.at("MASTER_ADDR"), master_address("ours", "team", 0)) << "the store env:// connects to";
    EXPECT_TRUE(json::parse(env.at("TRAINBENCH_RUN_CONFIG")).contains("program"));
    EXPECT_EQ(ct["securityContext"]["runAsNonRoot"], true);
  }
  bool shm = false;
  for (const auto& v : pod["spec"]["volumes"]) shm = shm || (v["name"] == "dshm" && v["emptyDir"]["medium"] == "Memory");
  EXPECT_TRUE(shm) << pod["spec"]["volumes"].dump();
  // The master runs trainbench's worker image (it serves the store and reads the records).
  EXPECT_EQ(master_pod(job, run, 0)["spec"]["containers"][0]["image"],
            PodTemplate::default_worker_image(Device::kCuda));
}

}  // namespace
}  // namespace trainbench::op
