// Authentication and RBAC: ServiceAccount tokens from `kubectl create token`, requests that
// Roles allow and forbid (with the real 403 message), resourceNames, subresources, the
// escalation check, token invalidation, and the audit log.

#include <gtest/gtest.h>

#include "harness.hpp"

using namespace kubesim_test;

namespace {

std::string token_for(const Kubesim& sim, const std::string& sa, const std::string& ns = "default") {
  CmdResult t = sim.kubectl({"create", "token", sa, "-n", ns});
  EXPECT_EQ(t.code, 0) << t.err;
  std::string tok = t.out;
  while (!tok.empty() && (tok.back() == '\n' || tok.back() == '\r')) tok.pop_back();
  return tok;
}

}  // namespace

TEST(KubesimRbac, ServiceAccountTokenAllowedAndForbidden) {
  Kubesim sim;
  ASSERT_EQ(sim.kubectl({"create", "serviceaccount", "reporter"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "role", "result-writer", "--verb=get,update,patch", "--resource=configmaps",
                         "--resource-name=job-r0-result"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "rolebinding", "result-writer", "--role=result-writer",
                         "--serviceaccount=default:reporter"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "configmap", "job-r0-result", "--from-literal=result={}"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "configmap", "other-result", "--from-literal=result={}"}).code, 0);
  std::string tok = token_for(sim, "reporter");
  ASSERT_FALSE(tok.empty());

  HttpResult ok = sim.http("GET", "/api/v1/namespaces/default/configmaps/job-r0-result", "", tok);
  EXPECT_EQ(ok.code, 200) << ok.body;
  HttpResult patched = sim.http("PATCH", "/api/v1/namespaces/default/configmaps/job-r0-result",
                                R"({"data":{"result":"{\"attempt\":0}"}})", tok, "application/merge-patch+json");
  EXPECT_EQ(patched.code, 200) << patched.body;

  HttpResult denied = sim.http("GET", "/api/v1/namespaces/default/configmaps/other-result", "", tok);
  EXPECT_EQ(denied.code, 403);
  json st = denied.j();
  EXPECT_EQ(st["kind"], "Status");
  EXPECT_EQ(st["reason"], "Forbidden");
  EXPECT_EQ(st["message"],
            "configmaps \"other-result\" is forbidden: User \"system:serviceaccount:default:reporter\" cannot get "
            "resource \"configmaps\" in API group \"\" in the namespace \"default\"");
  HttpResult list = sim.http("GET", "/api/v1/namespaces/default/configmaps", "", tok);
  EXPECT_EQ(list.code, 403) << "resourceNames never allow list";
  HttpResult pods = sim.http("GET", "/api/v1/namespaces/default/pods", "", tok);
  EXPECT_EQ(pods.code, 403);
  HttpResult disc = sim.http("GET", "/apis", "", tok);
  EXPECT_EQ(disc.code, 200) << "discovery is open to authenticated users";

  CmdResult can = sim.kubectl({"auth", "can-i", "update", "configmaps/job-r0-result",
                               "--as=system:serviceaccount:default:reporter"});
  EXPECT_EQ(can.out, "yes\n") << can.err;
  CmdResult cannot = sim.kubectl({"auth", "can-i", "delete", "configmaps/job-r0-result",
                                  "--as=system:serviceaccount:default:reporter"});
  EXPECT_EQ(cannot.out, "no\n");

  // The audit log records who did what, with the response code.
  int forbidden = 0, allowed = 0;
  for (const auto& e : sim.audit()) {
    if (e.value("user", "") != "system:serviceaccount:default:reporter" || e.value("resource", "") != "configmaps") continue;
    if (e["code"] == 403) ++forbidden;
    if (e["code"] == 200) ++allowed;
  }
  EXPECT_EQ(forbidden, 2);
  EXPECT_EQ(allowed, 2);

  // Deleting the ServiceAccount invalidates its tokens.
  ASSERT_EQ(sim.kubectl({"delete", "serviceaccount", "reporter"}).code, 0);
  HttpResult gone = sim.http("GET", "/api/v1/namespaces/default/configmaps/job-r0-result", "", tok);
  EXPECT_EQ(gone.code, 401);
}

TEST(KubesimRbac, StatusSubresourceAndClusterRoles) {
  Kubesim sim;
  ASSERT_EQ(sim.apply(widget_crd_yaml()).code, 0);
  ASSERT_EQ(sim.apply("apiVersion: example.dev/v1alpha1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n").code, 0);
  ASSERT_EQ(sim.kubectl({"create", "namespace", "ops"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "serviceaccount", "operator", "-n", "ops"}).code, 0);
  ASSERT_EQ(sim.apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: widget-status}
rules:
- apiGroups: [example.dev]
  resources: [widgets]
  verbs: [get, list, watch]
- apiGroups: [example.dev]
  resources: [widgets/status]
  verbs: [patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: widget-status}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: widget-status}
subjects:
- {kind: ServiceAccount, name: operator, namespace: ops}
)").code, 0);
  std::string tok = token_for(sim, "operator", "ops");
  const std::string w = "/apis/example.dev/v1alpha1/namespaces/default/widgets/w";
  EXPECT_EQ(sim.http("PATCH", w + "/status", R"({"status":{"phase":"Ok"}})", tok, "application/merge-patch+json").code, 200);
  HttpResult spec = sim.http("PATCH", w, R"({"spec":{"size":2}})", tok, "application/merge-patch+json");
  EXPECT_EQ(spec.code, 403);
  EXPECT_NE(spec.j()["message"].get<std::string>().find("cannot patch resource \"widgets\" in API group \"example.dev\""),
            std::string::npos) << spec.body;
  EXPECT_EQ(sim.http("GET", "/apis/example.dev/v1alpha1/widgets", "", tok).code, 200);
  HttpResult nodes = sim.http("GET", "/api/v1/nodes", "", tok);
  EXPECT_EQ(nodes.j()["message"],
            "nodes is forbidden: User \"system:serviceaccount:ops:operator\" cannot list resource \"nodes\" in API "
            "group \"\" at the cluster scope");
}

TEST(KubesimRbac, EscalationIsPrevented) {
  Kubesim sim;
  ASSERT_EQ(sim.kubectl({"create", "serviceaccount", "op"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "role", "role-admin", "--verb=create,get", "--resource=roles,rolebindings"}).code, 0);
  ASSERT_EQ(sim.kubectl({"create", "rolebinding", "role-admin", "--role=role-admin", "--serviceaccount=default:op"}).code, 0);
  std::string tok = token_for(sim, "op");
  std::string role = R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"cm"},
    "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]})";
  HttpResult r = sim.http("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role, tok);
  EXPECT_EQ(r.code, 403) << r.body;
  EXPECT_NE(r.body.find("attempting to grant RBAC permissions not currently held"), std::string::npos) << r.body;
  // A role within the creator's own permissions is fine.
  std::string small = R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"reader"},
    "rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["get"]}]})";
  EXPECT_EQ(sim.http("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", small, tok).code, 201);
}
