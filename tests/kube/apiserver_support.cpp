#include "apiserver_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "kube/errors.hpp"
#include "kube/resource.hpp"

namespace kubetest {

namespace kube = trainbench::kube;
using nlohmann::json;

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

std::string fixture_kubeconfig() {
  const char* path = std::getenv("KUBECONFIG");
  if (path == nullptr || *path == '\0') {
    throw std::runtime_error("KUBECONFIG is not set: run through ctest (the controlplane fixture sets it), or "
                             "export KUBECONFIG=DIR/kubeconfig of a control plane started by controlplane.sh");
  }
  return path;
}

kube::ClientConfig admin_config(const std::string& kubeconfig) {
  kube::ClientConfig cfg = kube::load_kubeconfig(kubeconfig);
  cfg.qps = 200;
  cfg.burst = 200;
  cfg.timeout = std::chrono::seconds(30);
  cfg.user_agent = "trainbench-kube-tests";
  return cfg;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string controlplane_sh(const std::vector<std::string>& args) {
  std::string command = "bash " + shell_quote(TRAINBENCH_CONTROLPLANE_SH);
  for (const auto& a : args) command += " " + shell_quote(a);
  command += " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + command);
  std::string output;
  char buffer[4096];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(command + " failed (status " + std::to_string(status) + "):\n" + output);
  }
  return output;
}

namespace {

// "kt-<suite>-<test>-<pid>" as a DNS label: lowercase letters, digits and '-', at most 63.
std::string namespace_for_current_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string base = info == nullptr ? "test" : std::string(info->test_suite_name()) + "-" + info->name();
  std::string label;
  for (char c : base) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool ok = std::isalnum(static_cast<unsigned char>(l)) != 0;
    if (ok) {
      label += l;
    } else if (!label.empty() && label.back() != '-') {
      label += '-';
    }
  }
  const std::string suffix = "-" + std::to_string(::getpid());
  label = label.substr(0, 63 - 3 - suffix.size());
  while (!label.empty() && label.back() == '-') label.pop_back();
  return "kt-" + label + suffix;
}

}  // namespace

TestNamespace::TestNamespace(std::shared_ptr<const kube::Client> admin)
    : admin_(std::move(admin)), name_(namespace_for_current_test()) {
  admin_->create(kube::resources::namespaces(), "", json{{"metadata", {{"name", name_}}}});
}

TestNamespace::~TestNamespace() {
  try {
    admin_->remove(kube::resources::namespaces(), "", name_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deleting namespace %s: %s\n", name_.c_str(), e.what());
  }
}

json config_map(const std::string& name, const std::map<std::string, std::string>& labels) {
  json cm = {{"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}};
  if (!labels.empty()) cm["metadata"]["labels"] = labels;
  return cm;
}

std::vector<std::string> names(const json& list) {
  std::vector<std::string> out;
  for (const auto& item : list["items"]) out.push_back(item["metadata"]["name"]);
  return out;
}

std::string service_account_token(const kube::Client& admin, const std::string& ns, const std::string& account) {
  const json request = {{"apiVersion", "authentication.k8s.io/v1"},
                        {"kind", "TokenRequest"},
                        {"spec", {{"expirationSeconds", 3600}}}};
  const json issued =
      admin.request("POST", "/api/v1/namespaces/" + ns + "/serviceaccounts/" + account + "/token", "", &request);
  return issued.at("status").at("token").get<std::string>();
}

void Events::add(const std::string& entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  log_.push_back(entry);
}

bool Events::has(const std::string& entry) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::find(log_.begin(), log_.end(), entry) != log_.end();
}

kube::ReflectorHandlers Events::handlers() {
  kube::ReflectorHandlers h;
  h.on_add = [this](const json& o) { add("add " + o["metadata"]["name"].get<std::string>()); };
  h.on_update = [this](const json&, const json& o) { add("update " + o["metadata"]["name"].get<std::string>()); };
  h.on_delete = [this](const json& o) { add("delete " + o["metadata"]["name"].get<std::string>()); };
  h.on_error = [this](const std::string& e) { add("error " + e); };
  return h;
}

kube::ReflectorOptions quick_reflector() {
  kube::ReflectorOptions o;
  o.backoff.initial = std::chrono::milliseconds(50);
  o.backoff.max = std::chrono::milliseconds(500);
  return o;
}

}  // namespace kubetest
