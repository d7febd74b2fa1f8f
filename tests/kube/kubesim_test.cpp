// Integration tests of the kube client against the real kubesim binary (HTTPS with its own CA,
// bearer tokens, RBAC, CRDs, watches, compaction). Each test starts its own kubesim.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "kubesim_process.hpp"
#include "kube/client.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"
#include "kube/reflector.hpp"
#include "test_pki.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::KubesimProcess;
using kubetest::ScopedEnv;
using kubetest::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const kube::ResourceType kCm = kube::resources::config_maps();
const kube::ResourceType kWidgets{"example.com", "v1", "widgets", true, "Widget"};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json config_map(const std::string& name, std::map<std::string, std::string> labels = {}) {
  json cm = {{"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}};
  if (!labels.empty()) cm["metadata"]["labels"] = labels;
  return cm;
}

std::vector<std::string> names(const json& list) {
  std::vector<std::string> out;
  for (const auto& item : list["items"]) out.push_back(item["metadata"]["name"]);
  return out;
}

// Polls `pred` for up to `d`.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds d = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

class KubesimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (KubesimProcess::executable().empty()) {
      GTEST_SKIP() << "kubesim is not built in this tree (no `kubesim` CMake target when tests/kube was "
                      "configured): the integration tests against it are skipped";
    }
  }

  // Starts kubesim (no kubelet: these tests create no pods) and an admin client from its kubeconfig.
  void start(std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"--kubelet", "none"});
    sim_ = std::make_unique<KubesimProcess>(dir_.path(), args);
    admin_ = std::make_shared<kube::Client>(admin_config());
  }

  kube::ClientConfig admin_config() const {
    auto cfg = kube::load_kubeconfig(sim_->kubeconfig_path());
    cfg.qps = 200;
    cfg.burst = 200;
    cfg.timeout = 10s;
    return cfg;
  }

  void post_admin(const std::string& path) {
    json empty = json::object();
    admin_->request("POST", path, "", &empty);
  }

  TempDir dir_;
  std::unique_ptr<KubesimProcess> sim_;
  std::shared_ptr<kube::Client> admin_;
};

// Records reflector callbacks.
struct Events {
  std::mutex m;
  std::vector<std::string> log;
  void add(const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    log.push_back(s);
  }
  bool has(const std::string& s) {
    std::lock_guard<std::mutex> lock(m);
    return std::find(log.begin(), log.end(), s) != log.end();
  }
  kube::ReflectorHandlers handlers() {
    kube::ReflectorHandlers h;
    h.on_add = [this](const json& o) { add("add " + o["metadata"]["name"].get<std::string>()); };
    h.on_update = [this](const json&, const json& o) { add("update " + o["metadata"]["name"].get<std::string>()); };
    h.on_delete = [this](const json& o) { add("delete " + o["metadata"]["name"].get<std::string>()); };
    h.on_error = [this](const std::string& e) { add("error " + e); };
    return h;
  }
};

kube::ReflectorOptions quick_reflector() {
  kube::ReflectorOptions o;
  o.backoff.initial = 50ms;
  o.backoff.max = 500ms;
  return o;
}

}  // namespace

TEST_F(KubesimTest, ConfigMapCrudConflictAndNotFound) {
  start();
  const json created = admin_->create(kCm, "default", config_map("settings", {{"app", "bench"}}));
  EXPECT_EQ(created["metadata"]["namespace"], "default");
  ASSERT_TRUE(created["metadata"]["resourceVersion"].is_string());
  ASSERT_TRUE(created["metadata"]["uid"].is_string());

  try {
    admin_->create(kCm, "default", config_map("settings"));
    FAIL() << "duplicate create succeeded";
  } catch (const kube::ConflictError& e) {
    EXPECT_TRUE(e.is_already_exists()) << e.what();
  }

  json current = admin_->get(kCm, "default", "settings");
  EXPECT_EQ(current["data"]["k"], "v");
  json changed = current;
  changed["data"]["k"] = "v2";
  const json updated = admin_->update(kCm, "default", changed);
  EXPECT_EQ(updated["data"]["k"], "v2");
  EXPECT_NE(updated["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"]);

  // `current` still holds the old resourceVersion.
  current["data"]["k"] = "stale";
  try {
    admin_->update(kCm, "default", current);
    FAIL() << "stale update succeeded";
  } catch (const kube::ConflictError& e) {
    EXPECT_TRUE(e.is_conflict()) << e.what();
    EXPECT_EQ(e.request(), "PUT /api/v1/namespaces/default/configmaps/settings");
  }

  EXPECT_EQ(admin_->merge_patch(kCm, "default", "settings", json{{"data", {{"extra", "1"}}}})["data"]["extra"], "1");
  const json patched = admin_->json_patch(kCm, "default", "settings",
                                          json::array({{{"op", "replace"}, {"path", "/data/k"}, {"value", "v3"}}}));
  EXPECT_EQ(patched["data"]["k"], "v3");
  kube::WriteOptions wo;
  wo.field_manager = "kube-client-test";
  wo.force = true;
  const json applied = admin_->apply(kCm, "default", json{{"metadata", {{"name", "applied"}}}, {"data", {{"a", "b"}}}}, wo);
  EXPECT_EQ(applied["data"]["a"], "b");

  kube::DeleteOptions del;
  del.propagation_policy = "Background";
  admin_->remove(kCm, "default", "settings", del);
  EXPECT_THROW(admin_->get(kCm, "default", "settings"), kube::NotFoundError);
  EXPECT_FALSE(admin_->try_get(kCm, "default", "settings"));
  EXPECT_THROW(admin_->remove(kCm, "default", "settings"), kube::NotFoundError);
  EXPECT_THROW(admin_->get(kCm, "no-such-namespace", "x"), kube::NotFoundError);
}

TEST_F(KubesimTest, InvalidObjectsCarryFieldCauses) {
  start();
  try {
    admin_->create(kCm, "default", config_map("Not_A_Valid_Name"));
    FAIL() << "invalid name accepted";
  } catch (const kube::InvalidError& e) {
    ASSERT_FALSE(e.details().causes.empty()) << e.what();
    EXPECT_EQ(e.details().causes[0].field, "metadata.name") << e.what();
  }
}

TEST_F(KubesimTest, LabelAndFieldSelectorsAndPaging) {
  start();
  admin_->create(kCm, "default", config_map("a", {{"app", "bench"}, {"tier", "a"}}));
  admin_->create(kCm, "default", config_map("b", {{"app", "bench"}, {"tier", "b"}}));
  admin_->create(kCm, "default", config_map("c", {{"app", "other"}}));
  kube::ListOptions lo;
  lo.label_selector = "app=bench";
  EXPECT_EQ(names(admin_->list(kCm, "default", lo)), (std::vector<std::string>{"a", "b"}));
  lo.label_selector = "app=bench,tier!=b";
  EXPECT_EQ(names(admin_->list(kCm, "default", lo)), (std::vector<std::string>{"a"}));
  lo.label_selector.clear();
  lo.field_selector = "metadata.name=c";
  EXPECT_EQ(names(admin_->list(kCm, "default", lo)), (std::vector<std::string>{"c"}));
  kube::ListOptions paged;
  paged.label_selector = "app in (bench,other)";
  paged.limit = 1;
  const json first = admin_->list(kCm, "default", paged);
  EXPECT_EQ(first["items"].size(), 1u);
  EXPECT_FALSE(first["metadata"].value("continue", "").empty());
  const json all = admin_->list_all(kCm, "default", paged);
  EXPECT_EQ(names(all), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(all["metadata"].value("resourceVersion", "").empty());
}

TEST_F(KubesimTest, DeleteCollectionBySelector) {
  start();
  admin_->create(kCm, "default", config_map("a", {{"app", "bench"}, {"run", "0"}}));
  admin_->create(kCm, "default", config_map("b", {{"app", "bench"}, {"run", "1"}}));
  admin_->create(kCm, "default", config_map("c", {{"app", "other"}}));
  kube::ListOptions which;
  which.label_selector = "app=bench,run!=1";
  admin_->remove_collection(kCm, "default", which);
  kube::ListOptions all_ours;
  all_ours.label_selector = "app in (bench,other)";
  EXPECT_EQ(names(admin_->list(kCm, "default", all_ours)), (std::vector<std::string>{"b", "c"}));
  // Without any selector it would delete the whole namespace's objects: refused client-side.
  EXPECT_THROW(admin_->remove_collection(kCm, "default", kube::ListOptions{}), std::invalid_argument);
  EXPECT_EQ(names(admin_->list(kCm, "default", all_ours)), (std::vector<std::string>{"b", "c"}));
}

TEST_F(KubesimTest, CustomResourceWithStatusSubresource) {
  start();
  const json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
      "group": "example.com",
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
  admin_->create(kube::resources::custom_resource_definitions(), "", crd);
  ASSERT_TRUE(eventually([&] {
    try {
      admin_->list(kWidgets, "default");
      return true;
    } catch (const kube::NotFoundError&) {
      return false;
    }
  }));

  const json w = admin_->create(kWidgets, "default", json{{"metadata", {{"name", "w1"}}}, {"spec", {{"size", 3}}}});
  EXPECT_EQ(w["apiVersion"], "example.com/v1");
  EXPECT_EQ(w["kind"], "Widget");

  const json with_status = admin_->patch_status(kWidgets, "default", "w1", json{{"status", {{"phase", "Ready"}}}});
  EXPECT_EQ(with_status["status"]["phase"], "Ready");
  EXPECT_EQ(with_status["spec"]["size"], 3);
  EXPECT_EQ(admin_->get(kWidgets, "default", "w1")["status"]["phase"], "Ready");

  json stale = w;  // the resourceVersion from before the status patch
  stale["spec"]["size"] = 4;
  EXPECT_THROW(admin_->update(kWidgets, "default", stale), kube::ConflictError);

  EXPECT_THROW(admin_->create(kWidgets, "default", json{{"metadata", {{"name", "w2"}}}, {"spec", {{"size", 0}}}}),
               kube::InvalidError);

  admin_->remove(kWidgets, "default", "w1");
  EXPECT_THROW(admin_->get(kWidgets, "default", "w1"), kube::NotFoundError);
}

TEST_F(KubesimTest, WatchReceivesEventsAndBookmarks) {
  start({"--bookmark-interval", "0.2"});
  const json list = admin_->list(kCm, "default");
  kube::WatchOptions wo;
  wo.resource_version = list["metadata"]["resourceVersion"];
  wo.timeout_seconds = 30;
  auto watch = admin_->watch(kCm, "default", wo);
  admin_->create(kCm, "default", config_map("w"));
  admin_->merge_patch(kCm, "default", "w", json{{"data", {{"k", "v2"}}}});
  admin_->remove(kCm, "default", "w");

  std::vector<kube::WatchEventType> seen;
  bool bookmark = false;
  kube::WatchEvent ev;
  while (seen.size() < 3 || !bookmark) {
    ASSERT_TRUE(watch->next(ev));
    if (ev.type == kube::WatchEventType::kBookmark) {
      bookmark = true;
      EXPECT_FALSE(ev.object["metadata"]["resourceVersion"].get<std::string>().empty());
      continue;
    }
    ASSERT_NE(ev.type, kube::WatchEventType::kError) << ev.object.dump();
    EXPECT_EQ(ev.object["metadata"]["name"], "w");
    seen.push_back(ev.type);
  }
  EXPECT_EQ(seen, (std::vector<kube::WatchEventType>{kube::WatchEventType::kAdded, kube::WatchEventType::kModified,
                                                       kube::WatchEventType::kDeleted}));
  watch->stop();
}

TEST_F(KubesimTest, ReflectorRelistsAfterCompaction) {
  start({"--bookmark-interval", "3600"});
  admin_->create(kCm, "default", config_map("before"));
  Events events;
  kube::Reflector r(admin_, kCm, "default", quick_reflector(), events.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(20s));
  EXPECT_TRUE(events.has("add before"));
  ASSERT_TRUE(eventually([&] { return r.stats().watches >= 1; }));
  // Moves the resourceVersion past what the reflector holds (another namespace: no event for it),
  // compacts, and drops the watches: the reconnect meets 410 and must list again.
  admin_->create(kCm, "kube-system", config_map("elsewhere"));
  post_admin("/kubesim/v1/compact");
  post_admin("/kubesim/v1/watches/close");
  ASSERT_TRUE(eventually([&] { return r.stats().relists_on_gone >= 1 && r.stats().lists >= 2; }))
      << "lists " << r.stats().lists << ", relists on 410 " << r.stats().relists_on_gone;
  admin_->create(kCm, "default", config_map("after"));
  ASSERT_TRUE(eventually([&] { return events.has("add after"); }));
  EXPECT_EQ(r.cache()->size(), admin_->list(kCm, "default")["items"].size());  // kube-root-ca.crt too
  EXPECT_TRUE(r.cache()->get("default", "after"));
  r.stop();
}

TEST_F(KubesimTest, ReflectorReconnectsWhenKubesimRestarts) {
  start({"--bookmark-interval", "1"});
  // The reflector's client reads the admin token from its file, so it picks up a new one after a 401.
  auto cfg = admin_config();
  cfg.token.clear();
  cfg.token_file = sim_->admin_token_path();
  auto client = std::make_shared<kube::Client>(cfg);
  Events events;
  kube::Reflector r(client, kCm, "default", quick_reflector(), events.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(20s));
  ASSERT_TRUE(eventually([&] { return r.stats().watches >= 1; }));
  const std::string ca_before = read_text(dir_.path() + "/ca.crt");

  sim_->restart();  // same port, same directory
  ASSERT_TRUE(eventually([&] { return r.stats().failures >= 1 || r.stats().watches >= 2; }));
  if (read_text(dir_.path() + "/ca.crt") != ca_before) {
    r.stop();
    GTEST_SKIP() << "kubesim made a new CA on restart (DIR/ca.crt changed), so no client configured before the "
                    "restart can verify it; reconnecting across a restart is covered against the scripted server "
                    "(Reflector.ReconnectsWhenTheServerRestarts). The reflector kept retrying: "
                 << r.stats().failures << " failures so far";
  }
  admin_ = std::make_shared<kube::Client>(admin_config());  // a new admin token
  admin_->create(kCm, "default", config_map("after-restart"));
  ASSERT_TRUE(eventually([&] { return events.has("add after-restart"); }));
  r.stop();
}

TEST_F(KubesimTest, BadTokenIsUnauthorized) {
  start();
  auto cfg = admin_config();
  cfg.token = "not-a-valid-token";
  kube::Client client(cfg);
  try {
    client.get(kCm, "default", "x");
    FAIL();
  } catch (const kube::UnauthorizedError& e) {
    EXPECT_EQ(e.code(), 401);
    EXPECT_EQ(std::string(e.what()).find("not-a-valid-token"), std::string::npos);
  }
}

TEST_F(KubesimTest, WrongCaFailsTls) {
  start();
  auto cfg = admin_config();
  cfg.tls.ca_pem = kubetest::test_pki().other_ca.cert_pem;
  kube::Client client(cfg);
  try {
    client.get(kCm, "default", "x");
    FAIL();
  } catch (const kube::TransportError& e) {
    EXPECT_EQ(e.kind(), kube::TransportError::Kind::kTls) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate verify failed"), std::string::npos) << e.what();
  }
}

TEST_F(KubesimTest, ServiceAccountTokenIsLimitedByRbac) {
  start();
  const std::string ns = "default";
  admin_->create(kube::resources::service_accounts(), ns, json{{"metadata", {{"name", "reporter"}}}});
  admin_->create(kube::resources::roles(), ns, json::parse(R"({
    "metadata": {"name": "reporter"},
    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["job-r0-result"],
               "verbs": ["get", "update", "patch"]}]
  })"));
  admin_->create(kube::resources::role_bindings(), ns, json::parse(R"({
    "metadata": {"name": "reporter"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reporter"},
    "subjects": [{"kind": "ServiceAccount", "name": "reporter", "namespace": "default"}]
  })"));
  admin_->create(kCm, ns, config_map("job-r0-result"));
  admin_->create(kCm, ns, config_map("someone-else"));
  json token_request = {{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec", {{"expirationSeconds", 3600}}}};
  const json issued =
      admin_->request("POST", "/api/v1/namespaces/default/serviceaccounts/reporter/token", "", &token_request);
  const std::string token = issued["status"]["token"];
  ASSERT_FALSE(token.empty());

  // As a pod sees it: the in-cluster config from a ServiceAccount directory.
  TempDir sa;
  sa.write("token", token);
  sa.write("ca.crt", read_text(dir_.path() + "/ca.crt"));
  sa.write("namespace", ns);
  ScopedEnv host("KUBERNETES_SERVICE_HOST", std::string("127.0.0.1"));
  ScopedEnv port("KUBERNETES_SERVICE_PORT", std::to_string(sim_->port()));
  ScopedEnv dir("TRAINBENCH_SERVICEACCOUNT_DIR", sa.path());
  kube::Client pod(kube::load_in_cluster_config());
  EXPECT_EQ(pod.default_namespace(), "default");

  json mine = pod.get(kCm, "", "job-r0-result");
  mine["data"]["result"] = "{}";
  EXPECT_EQ(pod.update(kCm, "", mine)["data"]["result"], "{}");
  EXPECT_EQ(pod.merge_patch(kCm, "", "job-r0-result", json{{"data", {{"attempt", "0"}}}})["data"]["attempt"], "0");
  EXPECT_THROW(pod.get(kCm, "", "someone-else"), kube::ForbiddenError);
  EXPECT_THROW(pod.list(kCm, ""), kube::ForbiddenError);
  EXPECT_THROW(pod.create(kCm, "", config_map("new")), kube::ForbiddenError);
  try {
    pod.remove(kCm, "", "job-r0-result");
    FAIL();
  } catch (const kube::ForbiddenError& e) {
    EXPECT_TRUE(e.is_forbidden());
    EXPECT_EQ(std::string(e.what()).find(token), std::string::npos);
  }
}
