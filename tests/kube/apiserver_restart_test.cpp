// The reflector across faults of the real control plane: etcd compaction and API-server restarts
// (tests/controlplane/controlplane.sh compact and restart-apiserver). A restart would disturb
// every other test on the shared control plane, so this suite starts one of its own in a
// temporary directory (about 12 s; its own ctest entry, controlplane.KubeApiServerRestart).
//
// What the real server does (measured, tests/controlplane/restart_test.sh checks it too): after
// compaction alone the watch cache still serves old resourceVersions; after a restart it starts
// at etcd's revision then, so a watch resumed from an older resourceVersion gets an ERROR event
// with Status 410 Expired in a 200 stream, and after compaction + restart a list at such a
// resourceVersion is HTTP 410.
//
// The client itself after a restart: a connection it kept alive to the old server is dead, and
// cpprestsdk fails a POST/PUT/PATCH sent on it ("Failed to write request body") instead of
// sending it again on a new connection as Go's net/http does (a GET it retries). kube/transport
// sends such a never-sent request once more; the first writes after each restart below are
// plain calls, so they fail if it does not.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "apiserver_support.hpp"
#include "kube/client.hpp"
#include "kube/errors.hpp"
#include "kube/reflector.hpp"
#include "kube/retry.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::config_map;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const kube::ResourceType kCm = kube::resources::config_maps();

class KubeApiServerRestart : public ::testing::Test {
 protected:
  // One control plane for the suite, started before its first test and stopped after its last.
  static void SetUpTestSuite() {
    scratch_ = new kubetest::TempDir();
    dir_ = scratch_->path() + "/controlplane";
    try {
      kubetest::controlplane_sh({"start", dir_});
    } catch (const std::exception& e) {
      start_error_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    try {
      kubetest::controlplane_sh({"stop", dir_});
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    delete scratch_;
    scratch_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(start_error_.empty()) << start_error_;
    admin_ = std::make_shared<kube::Client>(kubetest::admin_config(dir_ + "/kubeconfig"));
    namespace_ = std::make_unique<kubetest::TestNamespace>(admin_);
  }
  void TearDown() override { namespace_.reset(); }

  const std::string& ns() const { return namespace_->name(); }

  static kubetest::TempDir* scratch_;
  static std::string dir_;
  static std::string start_error_;
  std::shared_ptr<kube::Client> admin_;
  std::unique_ptr<kubetest::TestNamespace> namespace_;
};

kubetest::TempDir* KubeApiServerRestart::scratch_ = nullptr;
std::string KubeApiServerRestart::dir_;
std::string KubeApiServerRestart::start_error_;

// The first event of a watch from `rv` (the server ends it after 5 s).
kube::WatchEvent first_event(const kube::Client& client, const std::string& ns, const std::string& rv) {
  kube::WatchOptions wo;
  wo.resource_version = rv;
  wo.timeout_seconds = 5;
  auto watch = client.watch(kCm, ns, wo);
  kube::WatchEvent ev;
  if (!watch->next(ev)) throw std::runtime_error("the watch from " + rv + " ended without an event");
  watch->stop();
  return ev;
}

}  // namespace

// etcd compacted and the API server restarted under a running reflector: its watch breaks, the
// reconnect from its resourceVersion meets a real 410, and it lists again.
TEST_F(KubeApiServerRestart, ReflectorRelistsOnGoneAfterCompactionAndRestart) {
  const std::string created = admin_->create(kCm, ns(), config_map("before"))["metadata"]["resourceVersion"];
  admin_->create(kCm, ns(), config_map("second"));  // so the compaction's revision is past `created`
  kubetest::Events events;
  kube::Reflector r(admin_, kCm, ns(), kubetest::quick_reflector(), events.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(30s));
  EXPECT_TRUE(events.has("add before"));
  EXPECT_TRUE(events.has("add second"));
  ASSERT_TRUE(kubetest::eventually([&] { return r.stats().watches >= 1; }, 30s));
  const std::string held = r.resource_version();
  const auto lists_before = r.stats().lists;
  EXPECT_EQ(r.stats().relists_on_gone, 0u);

  const std::string revision = kubetest::controlplane_sh({"compact", dir_});
  ASSERT_GE(std::stoll(revision), std::stoll(held)) << revision;
  ASSERT_GT(std::stoll(revision), std::stoll(created)) << revision;
  kubetest::controlplane_sh({"restart-apiserver", dir_});

  // What the reflector meets, seen directly: the watch from its resourceVersion is answered with
  // an ERROR event 410 Expired; and a list at exactly a version from before the compaction's
  // revision (etcd keeps that revision itself) with HTTP 410.
  const kube::WatchEvent gone = first_event(*admin_, ns(), held);
  ASSERT_EQ(gone.type, kube::WatchEventType::kError) << gone.object.dump();
  EXPECT_EQ(gone.object["code"], 410) << gone.object.dump();
  EXPECT_EQ(gone.object["reason"], "Expired") << gone.object.dump();
  EXPECT_EQ(gone.object["message"].get<std::string>().rfind("too old resource version: " + held + " ", 0), 0u)
      << gone.object.dump();
  kube::ListOptions exact;
  exact.resource_version = created;
  exact.resource_version_match = "Exact";
  EXPECT_THROW(admin_->list(kCm, ns(), exact), kube::GoneError);

  ASSERT_TRUE(kubetest::eventually(
      [&] { return r.stats().relists_on_gone >= 1 && r.stats().lists > lists_before; }, 60s))
      << "lists " << r.stats().lists << ", relists on 410 " << r.stats().relists_on_gone << ", failures "
      << r.stats().failures;
  admin_->create(kCm, ns(), config_map("after"));  // on the connection kept from before
  ASSERT_TRUE(kubetest::eventually([&] { return events.has("add after"); }, 30s));
  EXPECT_EQ(r.cache()->size(), admin_->list(kCm, ns())["items"].size());  // kube-root-ca.crt too
  EXPECT_TRUE(r.cache()->get(ns(), "before"));
  EXPECT_TRUE(r.cache()->get(ns(), "after"));
  r.stop();
}

// A reflector authenticated as a pod is (a ServiceAccount token from a file) carries on across
// an API-server restart: same CA, same signing key, same port; it sees what changes afterwards.
TEST_F(KubeApiServerRestart, ReflectorReconnectsAfterApiServerRestart) {
  admin_->create(kube::resources::service_accounts(), ns(), json{{"metadata", {{"name", "watcher"}}}});
  admin_->create(kube::resources::roles(), ns(), json::parse(R"({
    "metadata": {"name": "watcher"},
    "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]
  })"));
  json binding = json::parse(R"({
    "metadata": {"name": "watcher"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "watcher"},
    "subjects": [{"kind": "ServiceAccount", "name": "watcher"}]
  })");
  binding["subjects"][0]["namespace"] = ns();
  admin_->create(kube::resources::role_bindings(), ns(), binding);
  admin_->create(kCm, ns(), config_map("before"));

  kubetest::TempDir secrets;
  auto cfg = kubetest::admin_config(dir_ + "/kubeconfig");
  cfg.tls.client_cert_pem.clear();
  cfg.tls.client_key_pem.clear();
  cfg.token_file = secrets.write("token", kubetest::service_account_token(*admin_, ns(), "watcher"));
  auto client = std::make_shared<kube::Client>(cfg);
  ASSERT_TRUE(kubetest::eventually(  // until the RBAC authorizer knows the new Role
      [&] {
        try {
          client->list(kCm, ns());
          return true;
        } catch (const kube::ForbiddenError&) {
          return false;
        }
      },
      30s));

  kubetest::Events events;
  kube::Reflector r(client, kCm, ns(), kubetest::quick_reflector(), events.handlers());
  r.start();
  ASSERT_TRUE(r.wait_for_sync(30s));
  ASSERT_TRUE(kubetest::eventually([&] { return r.stats().watches >= 1; }, 30s));
  const auto before = r.stats();

  kubetest::controlplane_sh({"restart-apiserver", dir_});
  // The open watch broke with the old server; the new one answers the resumed watch with 410.
  ASSERT_TRUE(kubetest::eventually(
      [&] {
        const auto s = r.stats();
        return s.watches > before.watches && s.relists_on_gone > before.relists_on_gone;
      },
      60s))
      << "watches " << r.stats().watches << ", relists on 410 " << r.stats().relists_on_gone << ", failures "
      << r.stats().failures;
  admin_->create(kCm, ns(), config_map("after-restart"));
  admin_->remove(kCm, ns(), "before");
  ASSERT_TRUE(kubetest::eventually([&] { return events.has("add after-restart") && events.has("delete before"); }, 30s));
  EXPECT_FALSE(r.cache()->get(ns(), "before"));
  r.stop();
}
