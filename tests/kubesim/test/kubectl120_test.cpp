// Debian's kubectl 1.20 (kubernetes-client), fetched with `apt-get download` into the build
// tree (never installed); skipped when it cannot be had.

#include <gtest/gtest.h>

#include <filesystem>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string kubectl_120() {
  namespace fs = std::filesystem;
  const std::string dir = KUBESIM_TOOLS_DIR;
  const std::string exe = dir + "/kubectl-1.20/usr/bin/kubectl";
  if (fs::exists(exe)) return exe;
  fs::create_directories(dir);
  std::string script = "cd '" + dir + "' && rm -f kubernetes-client_*.deb && apt-get download kubernetes-client >/dev/null 2>&1 && "
                       "dpkg -x kubernetes-client_*.deb kubectl-1.20.tmp && mv kubectl-1.20.tmp kubectl-1.20";
  CmdResult r = run_cmd({"/bin/sh", "-c", script}, {}, "", 50);
  return fs::exists(exe) ? exe : "";
}

}  // namespace

TEST(KubesimKubectl120, ApplyGetPatchDelete) {
  std::string k = kubectl_120();
  if (k.empty()) GTEST_SKIP() << "kubectl 1.20 (apt-get download kubernetes-client) is not available";
  Kubesim sim;
  CmdResult v = sim.kubectl_bin(k, {"version"});
  ASSERT_EQ(v.code, 0) << v.err;
  EXPECT_NE(v.out.find("v1.20"), std::string::npos);
  ASSERT_EQ(sim.kubectl_bin(k, {"apply", "-f", "-"}, widget_crd_yaml()).code, 0);
  CmdResult a = sim.kubectl_bin(k, {"apply", "-f", "-"},
                                "apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: old}\nspec: {size: 2}\n");
  ASSERT_EQ(a.code, 0) << a.err;
  CmdResult g = sim.kubectl_bin(k, {"get", "widgets", "-o", "jsonpath={.items[0].spec.size}"});
  EXPECT_EQ(g.out, "2") << g.err;
  CmdResult p = sim.kubectl_bin(k, {"patch", "widget", "old", "--type=merge", "-p", R"({"spec":{"size":4}})"});
  EXPECT_EQ(p.code, 0) << p.err;
  CmdResult cm = sim.kubectl_bin(k, {"create", "configmap", "c1", "--from-literal=a=b"});
  EXPECT_EQ(cm.code, 0) << cm.err;
  CmdResult d = sim.kubectl_bin(k, {"delete", "widget", "old"});
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(sim.http("GET", "/apis/example.dev/v1alpha1/namespaces/default/widgets/old").code, 404);
  CmdResult pods = sim.kubectl_bin(k, {"get", "pods"});
  EXPECT_EQ(pods.code, 0) << pods.err;
}
