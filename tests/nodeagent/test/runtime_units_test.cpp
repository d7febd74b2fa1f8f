// Unit tests of the node agent's runtime (tests/nodeagent/runtime).

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/container_config.hpp"
#include "runtime/container_log.hpp"
#include "runtime/container_runtime.hpp"
#include "runtime/image_store.hpp"
#include "runtime/pod_env.hpp"
#include "runtime/pod_status.hpp"
#include "runtime/simulated_run.hpp"

using noderuntime::json;

// ---------- logs, statuses, env: what both kubelets share ----------

TEST(NodeRuntimeUnits, TailLinesAsTheKubeletCountsThem) {
  using noderuntime::tail_lines;
  EXPECT_EQ(tail_lines("a\nb\nc\n", 2), "b\nc\n");
  EXPECT_EQ(tail_lines("a\nb\nc", 2), "b\nc");  // a last line without its newline counts
  EXPECT_EQ(tail_lines("a\nb\n", 5), "a\nb\n");
  EXPECT_EQ(tail_lines("a\nb\n", 0), "");
}

namespace {

noderuntime::RunPtr one_container_run(const std::string& restart_policy) {
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}}},
                    {"spec", {{"nodeName", "n1"}, {"restartPolicy", restart_policy},
                              {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
  return noderuntime::make_pod_run(pod, "/pods", "127.9.1.1", "127.9.0.10");
}

}  // namespace

TEST(NodeRuntimeUnits, PodStatusFollowsTheContainers) {
  auto run = one_container_run("Never");
  EXPECT_EQ(run->dir, "/pods/ns_p_u1");
  EXPECT_EQ(noderuntime::pod_status_report(*run).phase, "Pending");
  run->containers[0].has_log = run->containers[0].running = run->containers[0].ready = true;
  auto report = noderuntime::pod_status_report(*run);
  EXPECT_EQ(report.phase, "Running");
  EXPECT_TRUE(report.ready);
  json status = json::object();
  ASSERT_TRUE(noderuntime::apply_pod_status(status, report));
  EXPECT_EQ(status["podIP"], "127.9.1.1");
  EXPECT_EQ(status["hostIPs"][0]["ip"], "127.9.0.10");
  run->containers[0].running = run->containers[0].ready = false;
  run->containers[0].finished = true;
  run->containers[0].exit_code = 3;
  report = noderuntime::pod_status_report(*run);
  EXPECT_EQ(report.phase, "Failed");
  ASSERT_TRUE(noderuntime::apply_pod_status(status, report));
  EXPECT_EQ(status["conditions"][3]["reason"], "PodCompleted");
  EXPECT_FALSE(noderuntime::apply_pod_status(status, {}));  // a finished pod never runs again
}

namespace {

/// A cluster with one ConfigMap and one Service address.
class FakeCluster : public noderuntime::ClusterView {
 public:
  std::optional<json> config_map(const std::string& ns, const std::string& name) override {
    if (ns == "ns" && name == "settings") return json{{"data", {{"greeting", "hello"}}}};
    return std::nullopt;
  }
  std::optional<json> secret(const std::string&, const std::string&) override { return std::nullopt; }
  std::string service_address(const std::string& ns, const std::string& service) override {
    return ns == "ns" && service == "master" ? "127.9.1.7" : "";
  }
  std::string hostname_address(const std::string&, const std::string&, const std::string&) override { return ""; }
  std::string api_host() override { return "127.0.0.1"; }
  int api_port() override { return 6443; }
  std::string api_ca_pem() override { return ""; }
};

}  // namespace

TEST(NodeRuntimeUnits, SimulatedRunIsRunningAtOnceAndEndsOnDeletion) {
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}}},
                    {"spec", {{"nodeName", "n1"}, {"restartPolicy", "Never"},
                              {"initContainers", {{{"name", "setup"}, {"image", "busybox"}}}},
                              {"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}};
  auto run = noderuntime::make_pod_run(pod, "/pods", "127.9.1.1", "127.9.0.10");
  run->runtime = "nodeagent";
  noderuntime::start_simulated(*run);
  EXPECT_TRUE(run->fake);
  auto report = noderuntime::pod_status_report(*run);
  EXPECT_EQ(report.phase, "Running");
  EXPECT_TRUE(report.ready);
  EXPECT_TRUE(report.initialized);
  json status = json::object();
  ASSERT_TRUE(noderuntime::apply_pod_status(status, report));
  EXPECT_EQ(status["podIP"], "127.9.1.1");
  const json& main = status["containerStatuses"][0];
  EXPECT_EQ(main["started"], true);
  EXPECT_EQ(main["ready"], true);
  EXPECT_EQ(main["containerID"], "nodeagent://u1-main");
  EXPECT_TRUE(main["state"]["running"].contains("startedAt"));
  EXPECT_EQ(status["initContainerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
  EXPECT_EQ(noderuntime::container_log_path(*run, "main"), "");  // nothing ran: no log
  const std::string started = main["state"]["running"]["startedAt"];

  EXPECT_TRUE(noderuntime::stop_simulated(*run, 15));
  EXPECT_FALSE(noderuntime::stop_simulated(*run, 15));  // once
  report = noderuntime::pod_status_report(*run);
  EXPECT_EQ(report.phase, "Failed");  // 143: a program ended by SIGTERM
  EXPECT_FALSE(report.ready);
  ASSERT_TRUE(noderuntime::apply_pod_status(status, report));
  const json& term = status["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(term["exitCode"], 143);
  EXPECT_EQ(term["startedAt"], started);
  EXPECT_EQ(status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"], 0);
}

TEST(NodeRuntimeUnits, ContainerEnvFromTheClusterView) {
  FakeCluster cluster;
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"labels", {{"app", "x"}}}}},
                    {"spec", {{"nodeName", "n1"}}},
                    {"status", {{"podIP", "127.9.1.1"}}}};
  const json container = {
      {"env",
       {{{"name", "G"}, {"valueFrom", {{"configMapKeyRef", {{"name", "settings"}, {"key", "greeting"}}}}}},
        {{"name", "APP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['app']"}}}}}},
        {{"name", "IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
        {{"name", "BOTH"}, {"value", "$(G)-$(APP)"}}}}};
  const auto env = noderuntime::container_env({cluster, pod}, container);
  using E = noderuntime::EnvList;
  EXPECT_EQ(env, (E{{"G", "hello"}, {"APP", "x"}, {"IP", "127.9.1.1"}, {"BOTH", "hello-x"}}));
  const json missing = {{"env", {{{"name", "M"}, {"valueFrom", {{"configMapKeyRef", {{"name", "nope"}, {"key", "k"}}}}}}}}};
  try {
    noderuntime::container_env({cluster, pod}, missing);
    ADD_FAILURE() << "a missing ConfigMap was not refused";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "configmap \"nope\" not found");
  }
}

TEST(NodeRuntimeUnits, ServiceNamesInEnvValuesResolveThroughTheClusterView) {
  FakeCluster cluster;
  std::string v = "tcp://master.ns.svc:29500,https://kubernetes.default.svc.cluster.local";
  EXPECT_TRUE(noderuntime::rewrite_service_names(cluster, v));
  EXPECT_EQ(v, "tcp://127.9.1.7:29500,https://127.0.0.1");
  v = "worker.ns.svc";
  EXPECT_FALSE(noderuntime::rewrite_service_names(cluster, v));  // no address yet: unchanged
  EXPECT_EQ(v, "worker.ns.svc");
}

// ---------- image mode: what the kubelet and runtime make of a container and its image ----------

namespace {

noderuntime::ImageConfig shell_image() {
  noderuntime::ImageConfig image;
  image.entrypoint = {"/bin/sh", "-c"};
  image.cmd = {"echo hi"};
  image.user = "app";
  return image;
}

const char* const kPasswd = "root:x:0:0:root:/root:/bin/bash\napp:x:1000:1000::/home/app:/bin/sh\n";
const char* const kGroup = "root:x:0:\napp:x:1000:\nvideo:x:44:app,other\n";

json pod_with(const json& pod_sc) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}}}, {"spec", {{"securityContext", pod_sc}}}};
}

}  // namespace

TEST(NodeRuntimeUnits, ImageCommandArgsAgainstEntrypointAndCmd) {
  using noderuntime::container_argv;
  const auto image = shell_image();
  const std::map<std::string, std::string> vars = {{"X", "x1"}};
  using V = std::vector<std::string>;
  EXPECT_EQ(container_argv(json::object(), image, vars), (V{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(container_argv({{"args", {"echo $(X)"}}}, image, vars), (V{"/bin/sh", "-c", "echo x1"}));
  EXPECT_EQ(container_argv({{"command", {"id"}}}, image, vars), (V{"id"}));  // command drops CMD
  EXPECT_EQ(container_argv({{"command", {"ls"}}, {"args", {"-l"}}}, image, vars), (V{"ls", "-l"}));
}

TEST(NodeRuntimeUnits, ImageUserRunAsUserAndGroups) {
  using noderuntime::resolve_identity;
  auto id = resolve_identity(pod_with(json::object()), json::object(), "app", kPasswd, kGroup);
  EXPECT_EQ(id.uid, 1000u);
  EXPECT_EQ(id.gid, 1000u);
  EXPECT_EQ(id.home, "/home/app");
  EXPECT_EQ(id.groups, (std::vector<unsigned>{44}));
  id = resolve_identity(pod_with(json::object()), json::object(), "1000:video", kPasswd, kGroup);
  EXPECT_EQ(id.gid, 44u);
  id = resolve_identity(pod_with({{"runAsUser", 5}, {"supplementalGroups", {7}}, {"fsGroup", 8}}),
                        {{"securityContext", {{"runAsGroup", 6}}}}, "app", kPasswd, kGroup);
  EXPECT_EQ(id.uid, 5u);
  EXPECT_EQ(id.gid, 6u);
  EXPECT_EQ(id.home, "/");
  EXPECT_EQ(id.groups, (std::vector<unsigned>{7, 8}));
  id = resolve_identity(pod_with(json::object()), json::object(), "", kPasswd, kGroup);
  EXPECT_EQ(id.uid, 0u);
  EXPECT_EQ(id.home, "/root");
  EXPECT_THROW(resolve_identity(pod_with(json::object()), json::object(), "nobody", kPasswd, kGroup),
               noderuntime::ContainerConfigError);
}

TEST(NodeRuntimeUnits, RunAsNonRootMessagesAreTheKubelets) {
  const json pod = pod_with({{"runAsNonRoot", true}});
  const json c = {{"name", "main"}};
  auto message = [&](const json& container, const std::string& image_user) -> std::string {
    try {
      noderuntime::verify_run_as_non_root(pod, container, image_user);
      return "";
    } catch (const noderuntime::ContainerConfigError& e) {
      return e.reason() + ": " + e.what();
    }
  };
  const std::string where = " (pod: \"p_ns(u1)\", container: main)";
  EXPECT_EQ(message(c, ""),
            "CreateContainerConfigError: container has runAsNonRoot and image will run as root" + where);
  EXPECT_EQ(message(c, "0:0"),
            "CreateContainerConfigError: container has runAsNonRoot and image will run as root" + where);
  EXPECT_EQ(message(c, "app"),
            "CreateContainerConfigError: container has runAsNonRoot and image has non-numeric user "
            "(app), cannot verify user is non-root" +
                where);
  EXPECT_EQ(message({{"name", "main"}, {"securityContext", {{"runAsUser", 0}}}}, "65532"),
            "CreateContainerConfigError: container's runAsUser breaks non-root policy" + where);
  EXPECT_EQ(message(c, "65532:65532"), "");
  EXPECT_EQ(message({{"name", "main"}, {"securityContext", {{"runAsUser", 7}}}}, "app"), "");
}

TEST(NodeRuntimeUnits, ImageNamesResolveToTheLocalStore) {
  using V = std::vector<std::string>;
  EXPECT_EQ(noderuntime::ImageStore::candidates("trainbench/worker:0.1.0"),
            (V{"localhost/trainbench/worker:0.1.0", "trainbench/worker:0.1.0"}));
  EXPECT_EQ(noderuntime::ImageStore::candidates("busybox"), (V{"localhost/busybox:latest", "busybox:latest"}));
  EXPECT_EQ(noderuntime::ImageStore::candidates("localhost/x/y"), (V{"localhost/x/y:latest"}));
  EXPECT_EQ(noderuntime::ImageStore::candidates("registry:5000/x"), (V{"registry:5000/x:latest"}));
  EXPECT_EQ(noderuntime::ImageStore::candidates("ghcr.io/a/b@sha256:00"), (V{"ghcr.io/a/b@sha256:00"}));
}

TEST(NodeRuntimeUnits, ContainerSetupPlanOrder) {
  noderuntime::ContainerLaunch l;
  l.lower = "/img";
  l.state_dir = "/state";
  l.process.cwd = "/w";
  l.process.read_only_root = true;
  l.mounts = {{"/h/sa", "/var/run/secrets/kubernetes.io/serviceaccount", true, false}, {"/h/v", "/data", false, false}};
  const auto plan = noderuntime::setup_plan(l);
  using Op = noderuntime::SetupStep::Op;
  ASSERT_GE(plan.size(), 4u);
  EXPECT_EQ(plan[0].op, Op::Mount);
  EXPECT_EQ(plan[0].data, "lowerdir=/img,upperdir=/state/upper,workdir=/state/work");
  EXPECT_EQ(plan[2].op, Op::Pivot);
  auto index_of = [&](const std::string& target, Op op) {
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (plan[i].path == target && plan[i].op == op) return static_cast<long>(i);
    }
    return -1L;
  };
  EXPECT_LT(index_of("/data", Op::Mount), index_of("/var/run/secrets/kubernetes.io/serviceaccount", Op::Mount));
  EXPECT_EQ(plan.back().op, Op::Mount);  // the read-only remount of / comes last
  EXPECT_EQ(plan.back().path, "/");
  EXPECT_LT(index_of("/w", Op::Mkdir), static_cast<long>(plan.size()) - 1);
}
