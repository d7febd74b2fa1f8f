// Unit tests of kubesim's pure pieces: selectors, patches, CRD schemas, request parsing, and image
// mode's container config (argv, user, runAsNonRoot), image names and container setup plan.

#include <gtest/gtest.h>

#include <algorithm>

#include "container_config.hpp"
#include "container_runtime.hpp"
#include "image_store.hpp"
#include "patch.hpp"
#include "schema.hpp"
#include "selectors.hpp"
#include "server.hpp"
#include "status.hpp"

using kubesim::json;

TEST(KubesimUnits, LabelSelectors) {
  json labels = {{"app", "web"}, {"tier", "front"}, {"n", "5"}};
  auto m = [&](const std::string& s) { return kubesim::LabelSelector::parse(s).matches(labels); };
  EXPECT_TRUE(m("app=web"));
  EXPECT_TRUE(m("app==web,tier=front"));
  EXPECT_FALSE(m("app!=web"));
  EXPECT_TRUE(m("app in (db, web)"));
  EXPECT_FALSE(m("app notin (web)"));
  EXPECT_TRUE(m("tier"));
  EXPECT_TRUE(m("!missing"));
  EXPECT_FALSE(m("!app"));
  EXPECT_TRUE(m("n>3"));
  EXPECT_FALSE(m("n<3"));
  EXPECT_TRUE(m(""));
  EXPECT_THROW(kubesim::LabelSelector::parse("app in web"), kubesim::ApiError);
  EXPECT_THROW(kubesim::LabelSelector::parse("a b"), kubesim::ApiError);
}

TEST(KubesimUnits, FieldSelectors) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}}, {"status", {{"phase", "Running"}}}};
  auto ok = [](const std::string&) { return true; };
  EXPECT_TRUE(kubesim::FieldSelector::parse("metadata.name=p,status.phase!=Failed", ok).matches(pod));
  EXPECT_FALSE(kubesim::FieldSelector::parse("status.phase==Pending", ok).matches(pod));
  EXPECT_THROW(kubesim::FieldSelector::parse("spec.x=1", [](const std::string&) { return false; }), kubesim::ApiError);
}

TEST(KubesimUnits, StrategicMergePatchMergesListsByKey) {
  json pod = json::parse(R"({"spec":{"containers":[{"name":"a","image":"x:1","env":[{"name":"A","value":"1"}]},
    {"name":"b","image":"y:1"}]},"metadata":{"finalizers":["f1"]}})");
  json patch = json::parse(R"({"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
    "containers":[{"name":"a","image":"x:2","env":[{"name":"B","value":"2"}]},{"name":"b","$patch":"delete"}]},
    "metadata":{"finalizers":["f2"]}})");
  json out = kubesim::apply_strategic_merge_patch(pod, patch);
  ASSERT_EQ(out["spec"]["containers"].size(), 1u);
  EXPECT_EQ(out["spec"]["containers"][0]["image"], "x:2");
  EXPECT_EQ(out["spec"]["containers"][0]["env"].size(), 2u);
  EXPECT_EQ(out["metadata"]["finalizers"], json({"f1", "f2"}));
  EXPECT_FALSE(out["spec"].contains("$setElementOrder/containers"));
}

TEST(KubesimUnits, ServerSideApplyRemovesFieldsNoLongerApplied) {
  json cur = {{"metadata", {{"labels", {{"a", "1"}, {"b", "2"}}}}}, {"spec", {{"x", 1}, {"y", 2}}}};
  json prev = {{"metadata", {{"labels", {{"a", "1"}, {"b", "2"}}}}}, {"spec", {{"x", 1}, {"y", 2}}}};
  json next = {{"metadata", {{"labels", {{"a", "1"}}}}}, {"spec", {{"x", 3}}}};
  json out = kubesim::apply_server_side(cur, next, &prev, false);
  EXPECT_EQ(out["metadata"]["labels"], json({{"a", "1"}}));
  EXPECT_EQ(out["spec"], json({{"x", 3}}));
}

TEST(KubesimUnits, SchemaDefaultsPrunesAndValidates) {
  json schema = json::parse(R"({"type":"object","properties":{"spec":{"type":"object","required":["n"],
    "properties":{"n":{"type":"integer","minimum":1,"maximum":8},"s":{"type":"string","default":"d","pattern":"^[a-z]+$"},
    "l":{"type":"array","minItems":1,"items":{"type":"object","properties":{"k":{"type":"string","enum":["a","b"]}}}},
    "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}})");
  json obj = json::parse(R"({"apiVersion":"v","kind":"K","metadata":{"name":"x"},
    "spec":{"n":9,"l":[{"k":"c","junk":1}],"free":{"any":1},"extra":true}})");
  std::vector<std::string> unknown;
  kubesim::default_and_prune(schema, obj, unknown);
  EXPECT_EQ(obj["spec"]["s"], "d");
  EXPECT_FALSE(obj["spec"].contains("extra"));
  EXPECT_FALSE(obj["spec"]["l"][0].contains("junk"));
  EXPECT_EQ(obj["spec"]["free"]["any"], 1);
  EXPECT_EQ(unknown, (std::vector<std::string>{"spec.extra", "spec.l[0].junk"}));
  auto errs = kubesim::validate_against_schema(schema, obj);
  ASSERT_EQ(errs.size(), 2u);
  std::vector<std::string> msgs;
  for (const auto& e : errs) msgs.push_back(e.str());
  EXPECT_NE(std::find(msgs.begin(), msgs.end(), "spec.n: Invalid value: 9: spec.n in body should be less than or equal to 8"),
            msgs.end());
  EXPECT_NE(std::find(msgs.begin(), msgs.end(), "spec.l[0].k: Unsupported value: \"c\": supported values: \"a\", \"b\""),
            msgs.end());
}

TEST(KubesimUnits, RequestInfo) {
  kubesim::HttpRequest r;
  r.method = "GET";
  r.path = "/api/v1/namespaces/ns/pods/p/log";
  auto i = kubesim::parse_request_info(r);
  EXPECT_TRUE(i.resource_request);
  EXPECT_EQ(i.verb, "get");
  EXPECT_EQ(i.ns, "ns");
  EXPECT_EQ(i.resource, "pods");
  EXPECT_EQ(i.name, "p");
  EXPECT_EQ(i.subresource, "log");
  r.path = "/api/v1/namespaces/ns";
  i = kubesim::parse_request_info(r);
  EXPECT_EQ(i.resource, "namespaces");
  EXPECT_EQ(i.name, "ns");
  r.path = "/apis/example.dev/v1/widgets";
  r.query.emplace("watch", "true");
  i = kubesim::parse_request_info(r);
  EXPECT_EQ(i.verb, "watch");
  EXPECT_EQ(i.group, "example.dev");
  r.method = "DELETE";
  r.query.clear();
  r.path = "/api/v1/namespaces/ns/configmaps";
  EXPECT_EQ(kubesim::parse_request_info(r).verb, "deletecollection");
  r.method = "GET";
  r.path = "/apis";
  EXPECT_FALSE(kubesim::parse_request_info(r).resource_request);
}

// ---------- image mode: what the kubelet and runtime make of a container and its image ----------

namespace {

kubesim::ImageConfig shell_image() {
  kubesim::ImageConfig image;
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

TEST(KubesimUnits, ImageCommandArgsAgainstEntrypointAndCmd) {
  using kubesim::container_argv;
  const auto image = shell_image();
  const std::map<std::string, std::string> vars = {{"X", "x1"}};
  using V = std::vector<std::string>;
  EXPECT_EQ(container_argv(json::object(), image, vars), (V{"/bin/sh", "-c", "echo hi"}));
  EXPECT_EQ(container_argv({{"args", {"echo $(X)"}}}, image, vars), (V{"/bin/sh", "-c", "echo x1"}));
  EXPECT_EQ(container_argv({{"command", {"id"}}}, image, vars), (V{"id"}));  // command drops CMD
  EXPECT_EQ(container_argv({{"command", {"ls"}}, {"args", {"-l"}}}, image, vars), (V{"ls", "-l"}));
}

TEST(KubesimUnits, ImageUserRunAsUserAndGroups) {
  using kubesim::resolve_identity;
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
               kubesim::ContainerConfigError);
}

TEST(KubesimUnits, RunAsNonRootMessagesAreTheKubelets) {
  const json pod = pod_with({{"runAsNonRoot", true}});
  const json c = {{"name", "main"}};
  auto message = [&](const json& container, const std::string& image_user) -> std::string {
    try {
      kubesim::verify_run_as_non_root(pod, container, image_user);
      return "";
    } catch (const kubesim::ContainerConfigError& e) {
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

TEST(KubesimUnits, ImageNamesResolveToTheLocalStore) {
  using V = std::vector<std::string>;
  EXPECT_EQ(kubesim::ImageStore::candidates("trainbench/worker:0.1.0"),
            (V{"localhost/trainbench/worker:0.1.0", "trainbench/worker:0.1.0"}));
  EXPECT_EQ(kubesim::ImageStore::candidates("busybox"), (V{"localhost/busybox:latest", "busybox:latest"}));
  EXPECT_EQ(kubesim::ImageStore::candidates("localhost/x/y"), (V{"localhost/x/y:latest"}));
  EXPECT_EQ(kubesim::ImageStore::candidates("registry:5000/x"), (V{"registry:5000/x:latest"}));
  EXPECT_EQ(kubesim::ImageStore::candidates("ghcr.io/a/b@sha256:00"), (V{"ghcr.io/a/b@sha256:00"}));
}

TEST(KubesimUnits, ContainerSetupPlanOrder) {
  kubesim::ContainerLaunch l;
  l.lower = "/img";
  l.state_dir = "/state";
  l.process.cwd = "/w";
  l.process.read_only_root = true;
  l.mounts = {{"/h/sa", "/var/run/secrets/kubernetes.io/serviceaccount", true, false}, {"/h/v", "/data", false, false}};
  const auto plan = kubesim::setup_plan(l);
  using Op = kubesim::SetupStep::Op;
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
