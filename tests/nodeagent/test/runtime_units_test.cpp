// Unit tests of the node runtime shared by kubesim and the node agent (tests/nodeagent/runtime).

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/container_config.hpp"
#include "runtime/container_runtime.hpp"
#include "runtime/image_store.hpp"

using noderuntime::json;

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
