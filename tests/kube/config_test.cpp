// kubeconfig and in-cluster configuration.

#include <gtest/gtest.h>

#include <string>

#include "kube/base64.hpp"
#include "kube/config.hpp"
#include "kube/errors.hpp"
#include "test_pki.hpp"
#include "test_util.hpp"

namespace kube = trainbench::kube;
using kubetest::ScopedEnv;
using kubetest::TempDir;
using kubetest::test_pki;

namespace {

std::string b64(const std::string& s) { return kube::base64_encode(s); }

// A kubeconfig with one cluster/user/context; `cluster` and `user` are YAML map bodies
// (indented by 4 spaces).
std::string kubeconfig(const std::string& cluster, const std::string& user, const std::string& current = "dev",
                       const std::string& ns = "team-a") {
  std::string out = "apiVersion: v1\nkind: Config\n";
  if (!current.empty()) out += "current-context: " + current + "\n";
  out += "clusters:\n- name: sim\n  cluster:\n" + cluster;
  out += "users:\n- name: alice\n  user:\n" + user;
  out += "contexts:\n- name: dev\n  context:\n    cluster: sim\n    user: alice\n";
  if (!ns.empty()) out += "    namespace: " + ns + "\n";
  out += "- name: other\n  context:\n    cluster: sim\n    user: alice\n";
  return out;
}

std::string ca_data() { return "    certificate-authority-data: " + b64(test_pki().ca.cert_pem) + "\n"; }
std::string server_line() { return "    server: https://127.0.0.1:6443\n"; }

// Runs `f`, expecting a ConfigError whose message contains every needle.
template <typename F>
void expect_config_error(F&& f, std::initializer_list<std::string> needles) {
  try {
    f();
    FAIL() << "expected ConfigError";
  } catch (const kube::ConfigError& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

}  // namespace

TEST(Kubeconfig, CaDataAndToken) {
  TempDir dir;
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(), "    token: abc123\n"));
  const auto cfg = kube::load_kubeconfig(path);
  EXPECT_EQ(cfg.server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg.tls.ca_pem, test_pki().ca.cert_pem);
  EXPECT_EQ(cfg.token, "abc123");
  EXPECT_TRUE(cfg.token_file.empty());
  EXPECT_EQ(cfg.default_namespace, "team-a");
  EXPECT_NE(cfg.source.find("context dev"), std::string::npos);
  EXPECT_NE(cfg.tls.ca_origin.find("certificate-authority-data"), std::string::npos);
}

TEST(Kubeconfig, CaFileIsResolvedAgainstTheKubeconfigDirectory) {
  TempDir dir;
  dir.write("certs/ca.crt", test_pki().ca.cert_pem);
  const auto path = dir.write("config", kubeconfig(server_line() + "    certificate-authority: certs/ca.crt\n",
                                                   "    token: t\n"));
  const auto cfg = kube::load_kubeconfig(path);
  EXPECT_EQ(cfg.tls.ca_pem, test_pki().ca.cert_pem);
  EXPECT_NE(cfg.tls.ca_origin.find(dir.path() + "/certs/ca.crt"), std::string::npos);
}

TEST(Kubeconfig, MissingCaFileNamesFileAndField) {
  TempDir dir;
  const auto path = dir.write("config", kubeconfig(server_line() + "    certificate-authority: nope.crt\n",
                                                   "    token: t\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); },
                      {path, "clusters[\"sim\"].cluster.certificate-authority", "nope.crt"});
}

TEST(Kubeconfig, TokenFile) {
  TempDir dir;
  dir.write("token", "file-token\n");
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(), "    tokenFile: token\n"));
  const auto cfg = kube::load_kubeconfig(path);
  EXPECT_TRUE(cfg.token.empty());
  EXPECT_EQ(cfg.token_file, dir.path() + "/token");
}

TEST(Kubeconfig, EmptyTokenFileIsAnError) {
  TempDir dir;
  dir.write("token", "\n");
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(), "    tokenFile: token\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "users[\"alice\"].user.tokenFile", "empty"});
}

TEST(Kubeconfig, TokenWinsOverTokenFile) {
  TempDir dir;
  const auto path =
      dir.write("config", kubeconfig(server_line() + ca_data(), "    token: direct\n    tokenFile: missing\n"));
  const auto cfg = kube::load_kubeconfig(path);
  EXPECT_EQ(cfg.token, "direct");
  EXPECT_TRUE(cfg.token_file.empty());
}

TEST(Kubeconfig, ClientCertificateFiles) {
  TempDir dir;
  dir.write("alice.crt", test_pki().client.cert_pem);
  dir.write("alice.key", test_pki().client.key_pem);
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(),
                                                   "    client-certificate: alice.crt\n    client-key: alice.key\n"));
  const auto cfg = kube::load_kubeconfig(path);
  EXPECT_EQ(cfg.tls.client_cert_pem, test_pki().client.cert_pem);
  EXPECT_EQ(cfg.tls.client_key_pem, test_pki().client.key_pem);
  EXPECT_TRUE(cfg.token.empty());
}

TEST(Kubeconfig, ClientCertificateData) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + ca_data(), "    client-certificate-data: " + b64(test_pki().client.cert_pem) +
                                                          "\n    client-key-data: " + b64(test_pki().client.key_pem) +
                                                          "\n"));
  const auto cfg = kube::load_kubeconfig(path);
  EXPECT_EQ(cfg.tls.client_cert_pem, test_pki().client.cert_pem);
  EXPECT_EQ(cfg.tls.client_key_pem, test_pki().client.key_pem);
}

TEST(Kubeconfig, ClientKeyThatDoesNotMatchTheCertificate) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + ca_data(), "    client-certificate-data: " + b64(test_pki().client.cert_pem) +
                                                          "\n    client-key-data: " + b64(test_pki().server.key_pem) +
                                                          "\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "client-key-data", "does not match"});
}

TEST(Kubeconfig, ClientCertificateWithoutKey) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + ca_data(), "    client-certificate-data: " + b64(test_pki().client.cert_pem) + "\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "users[\"alice\"].user", "client-key is missing"});
}

TEST(Kubeconfig, MissingCurrentContext) {
  TempDir dir;
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(), "    token: t\n", /*current=*/""));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "current-context", "not set"});
  // Naming a context works without current-context.
  EXPECT_EQ(kube::load_kubeconfig(path, "other").default_namespace, "default");
}

TEST(Kubeconfig, CurrentContextNamesAMissingContext) {
  TempDir dir;
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(), "    token: t\n", "ghost"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "current-context", "\"ghost\""});
  expect_config_error([&] { kube::load_kubeconfig(path, "nothere"); }, {"no context named \"nothere\""});
}

TEST(Kubeconfig, InsecureSkipTlsVerifyIsRefused) {
  TempDir dir;
  const auto path =
      dir.write("config", kubeconfig(server_line() + "    insecure-skip-tls-verify: true\n", "    token: t\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); },
                      {path, "clusters[\"sim\"].cluster.insecure-skip-tls-verify", "refused", "always verifies"});
}

TEST(Kubeconfig, InsecureSkipTlsVerifyFalseIsFine) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + ca_data() + "    insecure-skip-tls-verify: false\n", "    token: t\n"));
  EXPECT_NO_THROW(kube::load_kubeconfig(path));
}

TEST(Kubeconfig, BadBase64) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + "    certificate-authority-data: LS0tLS1CRUdJTi!!!\n", "    token: t\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); },
                      {path, "clusters[\"sim\"].cluster.certificate-authority-data", "invalid base64", "'!'"});
}

TEST(Kubeconfig, Base64ThatIsNotAPemCertificate) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + "    certificate-authority-data: " + b64("hello") + "\n", "    token: t\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "certificate-authority-data", "not a valid PEM"});
}

TEST(Kubeconfig, BothCaFileAndDataIsAnError) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + ca_data() + "    certificate-authority: ca.crt\n", "    token: t\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "both certificate-authority and"});
}

TEST(Kubeconfig, PlainHttpServerIsRefused) {
  TempDir dir;
  const auto path = dir.write("config", kubeconfig("    server: http://127.0.0.1:8080\n", "    token: t\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "cluster.server", "not an https://"});
}

TEST(Kubeconfig, ExecPluginsAreRefused) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig(server_line() + ca_data(), "    exec:\n      command: aws\n      apiVersion: x\n"));
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "users[\"alice\"].user.exec", "not supported"});
}

TEST(Kubeconfig, MissingFile) {
  expect_config_error([] { kube::load_kubeconfig("/nonexistent/kubeconfig"); }, {"/nonexistent/kubeconfig"});
}

TEST(Kubeconfig, InvalidYaml) {
  TempDir dir;
  const auto path = dir.write("config", "clusters: [\n  - {name: a\n");
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "not valid YAML"});
}

TEST(Kubeconfig, WrongShapes) {
  TempDir dir;
  const auto p1 = dir.write("c1", "clusters: {a: b}\n");
  expect_config_error([&] { kube::load_kubeconfig(p1, "x"); }, {p1, "clusters: must be a list"});
  const auto p2 = dir.write("c2", "clusters:\n- name: a\n  cluster:\n    server: [1, 2]\n"
                                  "contexts:\n- name: x\n  context: {cluster: a}\n");
  expect_config_error([&] { kube::load_kubeconfig(p2, "x"); }, {p2, "clusters[\"a\"].cluster.server", "string"});
}

TEST(Kubeconfig, ContextNamesAMissingCluster) {
  TempDir dir;
  const auto path = dir.write("config", "current-context: x\ncontexts:\n- name: x\n  context: {cluster: gone}\n");
  expect_config_error([&] { kube::load_kubeconfig(path); }, {path, "contexts[\"x\"].context.cluster", "\"gone\""});
}

TEST(Kubeconfig, ColonSeparatedListMergesFirstWins) {
  TempDir dir;
  const auto first = dir.write("a", "current-context: from-b\n");
  const auto second = dir.write("b", kubeconfig(server_line() + ca_data(), "    token: t\n", "dev"));
  const auto third = dir.write("c", "contexts:\n- name: from-b\n  context: {cluster: sim, user: alice, namespace: z}\n");
  const auto cfg = kube::load_kubeconfig(first + ":" + dir.path() + "/missing:" + second + ":" + third);
  EXPECT_EQ(cfg.default_namespace, "z");
  EXPECT_EQ(cfg.token, "t");
}

TEST(Kubeconfig, DefaultConfigUsesKubeconfigEnv) {
  TempDir dir;
  const auto path = dir.write("config", kubeconfig(server_line() + ca_data(), "    token: env-token\n"));
  ScopedEnv env("KUBECONFIG", path);
  EXPECT_EQ(kube::load_default_config().token, "env-token");
}

// ---------------------------------------------------------------------------------------------

class InClusterConfig : public ::testing::Test {
 protected:
  TempDir dir;
  ScopedEnv host{"KUBERNETES_SERVICE_HOST", std::string("127.0.0.1")};
  ScopedEnv port{"KUBERNETES_SERVICE_PORT", std::string("6443")};
  ScopedEnv sa{"TRAINBENCH_SERVICEACCOUNT_DIR", std::nullopt};
};

TEST_F(InClusterConfig, ReadsServiceAccountDirectory) {
  dir.write("token", "sa-token\n");
  dir.write("ca.crt", test_pki().ca.cert_pem);
  dir.write("namespace", "jobs\n");
  const auto cfg = kube::load_in_cluster_config(dir.path());
  EXPECT_EQ(cfg.server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg.token_file, dir.path() + "/token");
  EXPECT_TRUE(cfg.token.empty());
  EXPECT_EQ(cfg.tls.ca_pem, test_pki().ca.cert_pem);
  EXPECT_EQ(cfg.default_namespace, "jobs");
  EXPECT_NE(cfg.source.find(dir.path()), std::string::npos);
}

TEST_F(InClusterConfig, DirectoryFromEnvironment) {
  dir.write("token", "sa-token");
  dir.write("ca.crt", test_pki().ca.cert_pem);
  ScopedEnv override_dir("TRAINBENCH_SERVICEACCOUNT_DIR", dir.path());
  const auto cfg = kube::load_in_cluster_config();
  EXPECT_EQ(cfg.token_file, dir.path() + "/token");
  EXPECT_EQ(cfg.default_namespace, "default");
  // load_default_config prefers in-cluster when KUBECONFIG is unset.
  ScopedEnv no_kubeconfig("KUBECONFIG", std::nullopt);
  EXPECT_EQ(kube::load_default_config().token_file, dir.path() + "/token");
}

TEST_F(InClusterConfig, Ipv6HostIsBracketed) {
  dir.write("token", "t");
  dir.write("ca.crt", test_pki().ca.cert_pem);
  ScopedEnv v6("KUBERNETES_SERVICE_HOST", std::string("fd00::1"));
  EXPECT_EQ(kube::load_in_cluster_config(dir.path()).server, "https://[fd00::1]:6443");
}

TEST_F(InClusterConfig, MissingTokenNamesTheFile) {
  dir.write("ca.crt", test_pki().ca.cert_pem);
  expect_config_error([&] { kube::load_in_cluster_config(dir.path()); }, {"in-cluster config: token", dir.path() + "/token"});
}

TEST_F(InClusterConfig, MissingCaNamesTheFile) {
  dir.write("token", "t");
  expect_config_error([&] { kube::load_in_cluster_config(dir.path()); }, {"ca.crt", dir.path() + "/ca.crt"});
}

TEST_F(InClusterConfig, MissingEnvironment) {
  dir.write("token", "t");
  dir.write("ca.crt", test_pki().ca.cert_pem);
  ScopedEnv unset("KUBERNETES_SERVICE_HOST", std::nullopt);
  expect_config_error([&] { kube::load_in_cluster_config(dir.path()); }, {"KUBERNETES_SERVICE_HOST"});
}
