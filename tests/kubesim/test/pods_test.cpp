// The kubelet simulator: pods run as local processes; exit codes, termination messages, logs,
// kills through the admin endpoint, DNS emulation of <svc>.<ns>.svc names, scheduling with
// nodeSelector, fake and none kubelet modes, clean shutdown.

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string pod_yaml(const std::string& name, const std::string& command, const std::string& extra_spec = "",
                     const std::string& labels = "{app: demo}") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", labels: " + labels +
         "}\nspec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 2\n" + extra_spec +
         "  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, " + json(command).dump() + "]\n";
}

std::string phase_of(const Kubesim& sim, const std::string& pod) {
  json p = sim.get_json({"pod", pod});
  return p.is_object() ? p["status"].value("phase", "") : "";
}

}  // namespace

TEST(KubesimPods, FailedPodReportsExitCodeMessageAndLogs) {
  Kubesim sim;
  CmdResult a = sim.apply(pod_yaml("p1", "echo hi; echo 'it broke' > $TRAINBENCH_TERMINATION_LOG; exit 3"));
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "p1") == "Failed"; }));
  json p = sim.get_json({"pod", "p1"});
  const json& term = p["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(term["exitCode"], 3);
  EXPECT_EQ(term["reason"], "Error");
  EXPECT_EQ(term["message"], "it broke\n");
  EXPECT_EQ(p["spec"]["nodeName"], "node-1");
  std::string ip = p["status"]["podIP"];
  // From this instance's own block 127.K.0.0/16, K >= 1 (netblock.hpp).
  const std::string prefix = sim.http("GET", "/kubesim/v1/stats").j()["kubelet"].value("ipPrefix", "?");
  EXPECT_EQ(ip.rfind(prefix, 0), 0u) << ip << " not in " << prefix;
  EXPECT_NE(prefix, "127.0.") << ip;
  CmdResult logs = sim.kubectl({"logs", "p1"});
  EXPECT_EQ(logs.out, "hi\n") << logs.err;
  // Succeeded for exit 0.
  ASSERT_EQ(sim.apply(pod_yaml("p2", "exit 0")).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "p2") == "Succeeded"; }));
  EXPECT_EQ(sim.get_json({"pod", "p2"})["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
  // Label selection.
  CmdResult sel = sim.kubectl({"get", "pods", "-l", "app=demo", "-o", "name"});
  EXPECT_EQ(sel.out, "pod/p1\npod/p2\n");
  CmdResult none = sim.kubectl({"get", "pods", "-l", "app in (other)", "-o", "name"});
  EXPECT_EQ(none.out, "") << none.err;
  CmdResult fs = sim.kubectl({"get", "pods", "--field-selector", "status.phase=Succeeded", "-o", "name"});
  EXPECT_EQ(fs.out, "pod/p2\n") << fs.err;
}

TEST(KubesimPods, EnvironmentDownwardApiAndServiceAccountFiles) {
  Kubesim sim;
  ASSERT_EQ(sim.kubectl({"create", "configmap", "cfg", "--from-literal=greeting=hello"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "secret", "generic", "sec", "--from-literal=pw=hunter2"}).code, 0);
  std::string spec = "apiVersion: v1\nkind: Pod\nmetadata: {name: envp}\nspec:\n  restartPolicy: Never\n"
                     "  containers:\n  - name: main\n    image: x\n"
                     "    command: [sh, -c, 'echo $G $PW $ME $NS $IP $NODE $(X); echo $(cat $TRAINBENCH_SERVICEACCOUNT_DIR/namespace); "
                     "test -s $TRAINBENCH_SERVICEACCOUNT_DIR/token && test -s $TRAINBENCH_SERVICEACCOUNT_DIR/ca.crt && echo "
                     "sa-ok; echo $KUBERNETES_SERVICE_HOST']\n"
                     "    env:\n"
                     "    - {name: X, value: expanded}\n"
                     "    - name: G\n      valueFrom: {configMapKeyRef: {name: cfg, key: greeting}}\n"
                     "    - name: PW\n      valueFrom: {secretKeyRef: {name: sec, key: pw}}\n"
                     "    - name: ME\n      valueFrom: {fieldRef: {fieldPath: metadata.name}}\n"
                     "    - name: NS\n      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}\n"
                     "    - name: IP\n      valueFrom: {fieldRef: {fieldPath: status.podIP}}\n"
                     "    - name: NODE\n      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}\n";
  ASSERT_EQ(sim.apply(spec).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "envp") == "Succeeded"; }));
  json p = sim.get_json({"pod", "envp"});
  std::string ip = p["status"]["podIP"];
  CmdResult logs = sim.kubectl({"logs", "envp"});
  EXPECT_EQ(logs.out, "hello hunter2 envp default " + ip + " node-1 expanded\ndefault\nsa-ok\n127.0.0.1\n");
}

TEST(KubesimPods, AdminKillFailsThePod) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(pod_yaml("victim", "sleep 60")).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "victim") == "Running"; }));
  HttpResult k = sim.http("POST", "/kubesim/v1/namespaces/default/pods/victim/kill?signal=9");
  ASSERT_EQ(k.code, 200) << k.body;
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "victim") == "Failed"; }));
  json p = sim.get_json({"pod", "victim"});
  EXPECT_EQ(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  // Only the admin may use the admin endpoints.
  HttpResult anon = sim.http("POST", "/kubesim/v1/compact", "", "");
  EXPECT_EQ(anon.code, 401);
}

TEST(KubesimPods, DnsEmulationRewritesServiceNames) {
  Kubesim sim;
  std::string yaml = R"(apiVersion: v1
kind: Service
metadata: {name: master}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {role: master}
  ports: [{port: 29500}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: x
    command: [sh, -c, 'echo "$MASTER_ADDR $URL $API"']
    env:
    - {name: MASTER_ADDR, value: master.default.svc}
    - {name: URL, value: "tcp://master.default.svc.cluster.local:29500"}
    - {name: API, value: kubernetes.default.svc}
)";
  ASSERT_EQ(sim.apply(yaml).code, 0);
  // The client waits for a pod behind the Service: start it a moment later.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(phase_of(sim, "client"), "Pending");
  ASSERT_EQ(sim.apply(pod_yaml("master", "sleep 30", "", "{role: master}")).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "client") == "Succeeded"; }));
  std::string ip = sim.get_json({"pod", "master"})["status"]["podIP"];
  CmdResult logs = sim.kubectl({"logs", "client"});
  EXPECT_EQ(logs.out, ip + " tcp://" + ip + ":29500 127.0.0.1\n");
}

TEST(KubesimPods, DeletionStopsTheProcessAndRemovesThePod) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(pod_yaml("sleeper", "echo $$$$ > $HOME/pid; exec sleep 60")).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "sleeper") == "Running"; }));
  json p = sim.get_json({"pod", "sleeper"});
  std::string pidfile = sim.dir() + "/pods/default_sleeper_" + p["metadata"]["uid"].get<std::string>() + "/pid";
  ASSERT_TRUE(wait_until(5, [&] { return !read_text(pidfile).empty(); }));
  pid_t pid = std::stoi(read_text(pidfile));
  EXPECT_TRUE(process_alive(pid));
  CmdResult d = sim.kubectl({"delete", "pod", "sleeper", "--timeout=20s"});
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_FALSE(sim.get_json({"pod", "sleeper"}).is_object());
  EXPECT_TRUE(wait_until(5, [&] { return !process_alive(pid); }));
}

TEST(KubesimPods, ShutdownKillsRunningPods) {
  auto sim = std::make_unique<Kubesim>();
  ASSERT_EQ(sim->apply(pod_yaml("long", "echo $$$$ > $HOME/pid; exec sleep 60")).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(*sim, "long") == "Running"; }));
  json p = sim->get_json({"pod", "long"});
  std::string pidfile = sim->dir() + "/pods/default_long_" + p["metadata"]["uid"].get<std::string>() + "/pid";
  ASSERT_TRUE(wait_until(5, [&] { return !read_text(pidfile).empty(); }));
  pid_t pid = std::stoi(read_text(pidfile));
  EXPECT_EQ(sim->stop(), 0);
  EXPECT_TRUE(wait_until(5, [&] { return !process_alive(pid); }));
}

TEST(KubesimPods, UnschedulablePodStaysPending) {
  Kubesim sim({"--node", "gpu-1:accelerator=nvidia", "--node", "cpu-1"});
  ASSERT_EQ(sim.apply(pod_yaml("nowhere", "true", "  nodeSelector: {accelerator: tpu}\n")).code, 0);
  ASSERT_EQ(sim.apply(pod_yaml("gpu", "true", "  nodeSelector: {accelerator: nvidia}\n")).code, 0);
  ASSERT_TRUE(wait_until(20, [&] { return phase_of(sim, "gpu") == "Succeeded"; }));
  EXPECT_EQ(sim.get_json({"pod", "gpu"})["spec"]["nodeName"], "gpu-1");
  json p = sim.get_json({"pod", "nowhere"});
  EXPECT_EQ(p["status"]["phase"], "Pending");
  bool unschedulable = false;
  for (const auto& c : p["status"]["conditions"]) {
    if (c["type"] == "PodScheduled") unschedulable = c["status"] == "False" && c["reason"] == "Unschedulable";
  }
  EXPECT_TRUE(unschedulable) << p["status"].dump();
  CmdResult nodes = sim.kubectl({"get", "nodes", "-o", "name"});
  EXPECT_EQ(nodes.out, "node/cpu-1\nnode/gpu-1\n");
}

TEST(KubesimPods, FakeAndNoneKubeletModes) {
  {
    Kubesim sim({"--kubelet", "fake"});
    CmdResult a = sim.apply(pod_yaml("f", "exit 1"));
    ASSERT_EQ(a.code, 0) << a.err;
    ASSERT_TRUE(wait_until(10, [&] { return phase_of(sim, "f") == "Running"; }));
    CmdResult d = sim.kubectl({"delete", "pod", "f", "--timeout=10s"});
    EXPECT_EQ(d.code, 0) << d.err;
  }
  {
    Kubesim sim({"--kubelet", "none"});
    CmdResult a = sim.apply(pod_yaml("idle", "exit 0"));
    ASSERT_EQ(a.code, 0) << a.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    json p = sim.get_json({"pod", "idle"});
    EXPECT_EQ(p["status"]["phase"], "Pending");
    EXPECT_FALSE(p["spec"].contains("nodeName"));
  }
}
