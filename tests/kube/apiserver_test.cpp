// The kube client against the real kube-apiserver of the shared control plane (tests/controlplane,
// ctest label controlplane; KUBECONFIG from the fixture): CRUD and its errors, field causes,
// selectors and paging, deletecollection, a CRD with a status subresource, watches with bookmarks,
// authentication and TLS failures, a ServiceAccount token limited by RBAC. Each test works in a
// namespace of its own (TestNamespace), so they run beside the other tests on the control plane.
// The tests that restart the API server use a control plane of their own:
// apiserver_restart_test.cpp.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apiserver_support.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"
#include "test_pki.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::config_map;
using kubetest::names;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const kube::ResourceType kCm = kube::resources::config_maps();

class KubeApiServer : public ::testing::Test {
 protected:
  void SetUp() override {
    admin_ = std::make_shared<kube::Client>(kubetest::admin_config(kubetest::fixture_kubeconfig()));
    namespace_ = std::make_unique<kubetest::TestNamespace>(admin_);
  }
  void TearDown() override { namespace_.reset(); }

  const std::string& ns() const { return namespace_->name(); }

  std::shared_ptr<kube::Client> admin_;
  std::unique_ptr<kubetest::TestNamespace> namespace_;
};

}  // namespace

TEST_F(KubeApiServer, ConfigMapCrudConflictAndNotFound) {
  const json created = admin_->create(kCm, ns(), config_map("settings", {{"app", "bench"}}));
  EXPECT_EQ(created["metadata"]["namespace"], ns());
  ASSERT_TRUE(created["metadata"]["resourceVersion"].is_string());
  ASSERT_TRUE(created["metadata"]["uid"].is_string());

  try {
    admin_->create(kCm, ns(), config_map("settings"));
    FAIL() << "duplicate create succeeded";
  } catch (const kube::ConflictError& e) {
    EXPECT_TRUE(e.is_already_exists()) << e.what();
  }

  json current = admin_->get(kCm, ns(), "settings");
  EXPECT_EQ(current["data"]["k"], "v");
  json changed = current;
  changed["data"]["k"] = "v2";
  const json updated = admin_->update(kCm, ns(), changed);
  EXPECT_EQ(updated["data"]["k"], "v2");
  EXPECT_NE(updated["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"]);

  // `current` still holds the old resourceVersion.
  current["data"]["k"] = "stale";
  try {
    admin_->update(kCm, ns(), current);
    FAIL() << "stale update succeeded";
  } catch (const kube::ConflictError& e) {
    EXPECT_TRUE(e.is_conflict()) << e.what();
    EXPECT_EQ(e.request(), "PUT /api/v1/namespaces/" + ns() + "/configmaps/settings");
  }

  EXPECT_EQ(admin_->merge_patch(kCm, ns(), "settings", json{{"data", {{"extra", "1"}}}})["data"]["extra"], "1");
  const json patched =
      admin_->json_patch(kCm, ns(), "settings", json::array({{{"op", "replace"}, {"path", "/data/k"}, {"value", "v3"}}}));
  EXPECT_EQ(patched["data"]["k"], "v3");
  kube::WriteOptions wo;
  wo.field_manager = "kube-client-test";
  wo.force = true;
  const json applied = admin_->apply(kCm, ns(), json{{"metadata", {{"name", "applied"}}}, {"data", {{"a", "b"}}}}, wo);
  EXPECT_EQ(applied["data"]["a"], "b");
  EXPECT_EQ(applied["metadata"]["managedFields"][0]["manager"], "kube-client-test");

  kube::DeleteOptions del;
  del.propagation_policy = "Background";
  admin_->remove(kCm, ns(), "settings", del);
  EXPECT_THROW(admin_->get(kCm, ns(), "settings"), kube::NotFoundError);
  EXPECT_FALSE(admin_->try_get(kCm, ns(), "settings"));
  EXPECT_THROW(admin_->remove(kCm, ns(), "settings"), kube::NotFoundError);
  EXPECT_THROW(admin_->get(kCm, "no-such-namespace", "x"), kube::NotFoundError);
}

TEST_F(KubeApiServer, InvalidObjectsCarryFieldCauses) {
  try {
    admin_->create(kCm, ns(), config_map("Not_A_Valid_Name"));
    FAIL() << "invalid name accepted";
  } catch (const kube::InvalidError& e) {
    EXPECT_EQ(e.code(), 422);
    ASSERT_FALSE(e.details().causes.empty()) << e.what();
    EXPECT_EQ(e.details().causes[0].field, "metadata.name") << e.what();
  }
}

TEST_F(KubeApiServer, LabelAndFieldSelectorsAndPaging) {
  // The namespace also holds kube-root-ca.crt (the root-CA publisher's): no selector below matches it.
  admin_->create(kCm, ns(), config_map("a", {{"app", "bench"}, {"tier", "a"}}));
  admin_->create(kCm, ns(), config_map("b", {{"app", "bench"}, {"tier", "b"}}));
  admin_->create(kCm, ns(), config_map("c", {{"app", "other"}}));
  kube::ListOptions lo;
  lo.label_selector = "app=bench";
  EXPECT_EQ(names(admin_->list(kCm, ns(), lo)), (std::vector<std::string>{"a", "b"}));
  lo.label_selector = "app=bench,tier!=b";
  EXPECT_EQ(names(admin_->list(kCm, ns(), lo)), (std::vector<std::string>{"a"}));
  lo.label_selector.clear();
  lo.field_selector = "metadata.name=c";
  EXPECT_EQ(names(admin_->list(kCm, ns(), lo)), (std::vector<std::string>{"c"}));
  kube::ListOptions paged;
  paged.label_selector = "app in (bench,other)";
  paged.limit = 1;
  const json first = admin_->list(kCm, ns(), paged);
  EXPECT_EQ(names(first), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(first["metadata"].value("continue", "").empty());
  const json all = admin_->list_all(kCm, ns(), paged);
  EXPECT_EQ(names(all), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(all["metadata"].value("resourceVersion", "").empty());
}

TEST_F(KubeApiServer, DeleteCollectionBySelector) {
  admin_->create(kCm, ns(), config_map("a", {{"app", "bench"}, {"run", "0"}}));
  admin_->create(kCm, ns(), config_map("b", {{"app", "bench"}, {"run", "1"}}));
  admin_->create(kCm, ns(), config_map("c", {{"app", "other"}}));
  kube::ListOptions which;
  which.label_selector = "app=bench,run!=1";
  admin_->remove_collection(kCm, ns(), which);
  kube::ListOptions all_ours;
  all_ours.label_selector = "app in (bench,other)";
  EXPECT_EQ(names(admin_->list(kCm, ns(), all_ours)), (std::vector<std::string>{"b", "c"}));
  // Without any selector it would delete the whole namespace's objects: refused client-side.
  EXPECT_THROW(admin_->remove_collection(kCm, ns(), kube::ListOptions{}), std::invalid_argument);
  EXPECT_EQ(names(admin_->list(kCm, ns(), all_ours)), (std::vector<std::string>{"b", "c"}));
}

namespace {

// A CRD of the test's own group (CRDs are cluster-wide; tests run side by side): kind Widget,
// spec.size >= 1, a status subresource.
json widget_crd(const std::string& group) {
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "spec": {
      "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
      "versions": [{
        "name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {
          "type": "object",
          "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
          }
        }}
      }]
    }
  })");
  crd["metadata"]["name"] = "widgets." + group;
  crd["spec"]["group"] = group;
  return crd;
}

// Deletes the CRD (and so its objects) when the test ends, passed or not.
struct CrdCleanup {
  std::shared_ptr<kube::Client> admin;
  std::string name;
  ~CrdCleanup() {
    try {
      admin->remove(kube::resources::custom_resource_definitions(), "", name);
    } catch (const std::exception&) {  // the test's own failure says more
    }
  }
};

}  // namespace

TEST_F(KubeApiServer, CustomResourceWithStatusSubresource) {
  const std::string group = ns() + ".example.com";
  const kube::ResourceType widgets{group, "v1", "widgets", true, "Widget"};
  admin_->create(kube::resources::custom_resource_definitions(), "", widget_crd(group));
  CrdCleanup cleanup{admin_, "widgets." + group};
  ASSERT_TRUE(kubetest::eventually(
      [&] {
        try {
          admin_->list(widgets, ns());
          return true;
        } catch (const kube::NotFoundError&) {
          return false;
        }
      },
      60s))
      << "the CRD was not served within 60 s";

  const json w = admin_->create(widgets, ns(), json{{"metadata", {{"name", "w1"}}}, {"spec", {{"size", 3}}}});
  EXPECT_EQ(w["apiVersion"], group + "/v1");
  EXPECT_EQ(w["kind"], "Widget");

  // The status subresource writes the status only: its spec change is ignored.
  const json with_status = admin_->patch_status(widgets, ns(), "w1",
                                                json{{"status", {{"phase", "Ready"}}}, {"spec", {{"size", 9}}}});
  EXPECT_EQ(with_status["status"]["phase"], "Ready");
  EXPECT_EQ(with_status["spec"]["size"], 3);
  EXPECT_EQ(admin_->get(widgets, ns(), "w1")["status"]["phase"], "Ready");

  json stale = w;  // the resourceVersion from before the status patch
  stale["spec"]["size"] = 4;
  EXPECT_THROW(admin_->update(widgets, ns(), stale), kube::ConflictError);

  // ... and the main resource writes all but the status.
  json current = admin_->get(widgets, ns(), "w1");
  current["spec"]["size"] = 5;
  current["status"]["phase"] = "Overwritten";
  const json updated = admin_->update(widgets, ns(), current);
  EXPECT_EQ(updated["spec"]["size"], 5);
  EXPECT_EQ(updated["status"]["phase"], "Ready");

  try {
    admin_->create(widgets, ns(), json{{"metadata", {{"name", "w2"}}}, {"spec", {{"size", 0}}}});
    FAIL() << "spec.size 0 accepted (minimum 1)";
  } catch (const kube::InvalidError& e) {
    ASSERT_FALSE(e.details().causes.empty()) << e.what();
    EXPECT_EQ(e.details().causes[0].field, "spec.size") << e.what();
  }

  admin_->remove(widgets, ns(), "w1");
  EXPECT_THROW(admin_->get(widgets, ns(), "w1"), kube::NotFoundError);
}

// The real server sends a watch's bookmarks about every minute and once 2 s before the watch's
// timeoutSeconds, then ends it cleanly: a 10 s watch sees the three events, a bookmark, and its end.
// The watch selects "w" by name: the controller-manager's root-CA publisher creates the
// namespace's kube-root-ca.crt when it gets to it, which under load is after the list (CI saw it
// as a fourth event).
TEST_F(KubeApiServer, WatchReceivesEventsBookmarksAndItsEnd) {
  const json list = admin_->list(kCm, ns());
  kube::WatchOptions wo;
  wo.resource_version = list["metadata"]["resourceVersion"];
  wo.field_selector = "metadata.name=w";
  wo.timeout_seconds = 10;
  const auto started = std::chrono::steady_clock::now();
  auto watch = admin_->watch(kCm, ns(), wo);
  admin_->create(kCm, ns(), config_map("w"));
  admin_->merge_patch(kCm, ns(), "w", json{{"data", {{"k", "v2"}}}});
  admin_->remove(kCm, ns(), "w");

  std::vector<kube::WatchEventType> seen;
  std::vector<std::string> versions;
  std::vector<long long> bookmarks_after_events;
  int bookmarks = 0;
  kube::WatchEvent ev;
  while (watch->next(ev)) {
    ASSERT_NE(ev.type, kube::WatchEventType::kError) << ev.object.dump();
    const std::string rv = ev.object["metadata"]["resourceVersion"];
    ASSERT_FALSE(rv.empty());
    if (ev.type == kube::WatchEventType::kBookmark) {
      ++bookmarks;
      if (seen.size() == 3) bookmarks_after_events.push_back(std::stoll(rv));
      continue;
    }
    EXPECT_EQ(ev.object["metadata"]["name"], "w");
    seen.push_back(ev.type);
    versions.push_back(rv);
  }
  const auto lasted = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(seen, (std::vector<kube::WatchEventType>{kube::WatchEventType::kAdded, kube::WatchEventType::kModified,
                                                       kube::WatchEventType::kDeleted}));
  EXPECT_GE(bookmarks, 1) << "no bookmark within the watch's 10 s";
  ASSERT_EQ(versions.size(), 3u);
  EXPECT_LT(std::stoll(versions[0]), std::stoll(versions[1]));
  EXPECT_LT(std::stoll(versions[1]), std::stoll(versions[2]));
  for (long long b : bookmarks_after_events) EXPECT_GE(b, std::stoll(versions[2])) << "a bookmark went back";
  // The server ended it after timeoutSeconds, not earlier.
  EXPECT_GE(lasted, 9s);
}

TEST_F(KubeApiServer, BadTokenIsUnauthorizedAnonymousIsForbidden) {
  auto cfg = kubetest::admin_config(kubetest::fixture_kubeconfig());
  cfg.tls.client_cert_pem.clear();  // else the client certificate authenticates first
  cfg.tls.client_key_pem.clear();
  cfg.token = "not-a-valid-token";
  kube::Client client(cfg);
  try {
    client.get(kCm, ns(), "x");
    FAIL() << "a bad token was accepted";
  } catch (const kube::UnauthorizedError& e) {
    EXPECT_EQ(e.code(), 401);
    EXPECT_EQ(std::string(e.what()).find("not-a-valid-token"), std::string::npos) << e.what();
  }
  // No credentials at all: the real server authenticates system:anonymous, which RBAC refuses.
  cfg.token.clear();
  kube::Client anonymous(cfg);
  try {
    anonymous.get(kCm, ns(), "x");
    FAIL() << "an anonymous request was allowed";
  } catch (const kube::ForbiddenError& e) {
    EXPECT_NE(std::string(e.what()).find("system:anonymous"), std::string::npos) << e.what();
  }
}

TEST_F(KubeApiServer, WrongCaFailsTls) {
  auto cfg = kubetest::admin_config(kubetest::fixture_kubeconfig());
  cfg.tls.ca_pem = kubetest::test_pki().other_ca.cert_pem;
  kube::Client client(cfg);
  try {
    client.get(kCm, ns(), "x");
    FAIL() << "a server certificate from another CA was accepted";
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kTls) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos) << e.what();
  }
}

namespace {

// Role "reporter" in `ns`: get/update/patch of the ConfigMap job-r0-result only (what a master
// pod's ServiceAccount may do), bound to ServiceAccount "reporter".
void make_reporter_account(kube::Client& admin, const std::string& ns) {
  admin.create(kube::resources::service_accounts(), ns, json{{"metadata", {{"name", "reporter"}}}});
  admin.create(kube::resources::roles(), ns, json::parse(R"({
    "metadata": {"name": "reporter"},
    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["job-r0-result"],
               "verbs": ["get", "update", "patch"]}]
  })"));
  json binding = json::parse(R"({
    "metadata": {"name": "reporter"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reporter"},
    "subjects": [{"kind": "ServiceAccount", "name": "reporter"}]
  })");
  binding["subjects"][0]["namespace"] = ns;
  admin.create(kube::resources::role_bindings(), ns, binding);
}

}  // namespace

TEST_F(KubeApiServer, ServiceAccountTokenIsLimitedByRbac) {
  make_reporter_account(*admin_, ns());
  admin_->create(kCm, ns(), config_map("job-r0-result"));
  admin_->create(kCm, ns(), config_map("someone-else"));
  const std::string token = kubetest::service_account_token(*admin_, ns(), "reporter");
  ASSERT_FALSE(token.empty());

  // As a pod sees it: the in-cluster config from a ServiceAccount directory.
  const auto admin_cfg = kubetest::admin_config(kubetest::fixture_kubeconfig());
  const std::string port = admin_cfg.server.substr(admin_cfg.server.rfind(':') + 1);
  kubetest::TempDir sa;
  sa.write("token", token);
  sa.write("ca.crt", admin_cfg.tls.ca_pem);
  sa.write("namespace", ns());
  kubetest::ScopedEnv host("KUBERNETES_SERVICE_HOST", std::string("127.0.0.1"));
  kubetest::ScopedEnv port_env("KUBERNETES_SERVICE_PORT", port);
  kubetest::ScopedEnv dir("TRAINBENCH_SERVICEACCOUNT_DIR", sa.path());
  kube::Client pod(kube::load_in_cluster_config());
  EXPECT_EQ(pod.default_namespace(), ns());

  // The real RBAC authorizer learns of the new Role from its informers: allowed within seconds.
  json mine;
  ASSERT_TRUE(kubetest::eventually(
      [&] {
        try {
          mine = pod.get(kCm, "", "job-r0-result");
          return true;
        } catch (const kube::ForbiddenError&) {
          return false;
        }
      },
      30s))
      << "the Role did not allow get within 30 s";
  mine["data"]["result"] = "{}";
  EXPECT_EQ(pod.update(kCm, "", mine)["data"]["result"], "{}");
  EXPECT_EQ(pod.merge_patch(kCm, "", "job-r0-result", json{{"data", {{"attempt", "0"}}}})["data"]["attempt"], "0");
  EXPECT_THROW(pod.get(kCm, "", "someone-else"), kube::ForbiddenError);
  EXPECT_THROW(pod.list(kCm, ""), kube::ForbiddenError);
  EXPECT_THROW(pod.create(kCm, "", config_map("new")), kube::ForbiddenError);
  try {
    pod.remove(kCm, "", "job-r0-result");
    FAIL() << "delete allowed";
  } catch (const kube::ForbiddenError& e) {
    EXPECT_TRUE(e.is_forbidden());
    // The real server names the account (never the token).
    EXPECT_NE(std::string(e.what()).find("system:serviceaccount:" + ns() + ":reporter"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find(token), std::string::npos);
  }
}
