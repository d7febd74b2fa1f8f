#include "log_server.hpp"

#include <filesystem>

#include "runtime/container_log.hpp"
#include "runtime/util.hpp"

namespace nodeagent {

using json = nlohmann::json;
using noderuntime::HttpRequest;
using noderuntime::HttpResponder;

namespace {

long long number_param(const HttpRequest& req, const std::string& key, long long fallback) {
  if (!req.has_param(key)) return fallback;
  try {
    return std::stoll(req.param(key));
  } catch (const std::logic_error&) {
    return fallback;
  }
}

bool flag_param(const HttpRequest& req, const std::string& key) {
  const std::string v = req.param(key);
  return v == "true" || v == "1";
}

/// What the log of one request is: the file, what of it goes out first.
struct LogPlan {
  std::string path;
  std::string head;  ///< the log so far, after tailLines and limitBytes
  std::size_t offset = 0;
  long long budget = -1;  ///< bytes still allowed (limitBytes), -1: no limit
};

LogPlan plan_log(const HttpRequest& req, const std::string& path) {
  LogPlan p;
  p.path = path;
  try {
    p.head = noderuntime::read_file(path);
  } catch (const std::exception&) {
  }
  p.offset = p.head.size();
  if (req.has_param("tailLines")) p.head = noderuntime::tail_lines(p.head, number_param(req, "tailLines", 0));
  p.budget = number_param(req, "limitBytes", -1);
  if (p.budget >= 0 && static_cast<long long>(p.head.size()) > p.budget) {
    p.head.resize(static_cast<std::size_t>(p.budget));
  }
  if (p.budget >= 0) p.budget -= static_cast<long long>(p.head.size());
  return p;
}

}  // namespace

LogServer::LogServer(std::shared_ptr<const kube::Client> client, NodePods& pods, LogServerConfig config)
    : client_(std::move(client)),
      pods_(pods),
      config_(std::move(config)),
      server_(config_.ip, static_cast<unsigned short>(config_.port), config_.cert_file, config_.key_file,
              [this](const HttpRequest& req, HttpResponder& res) { handle(req, res); }, config_.client_ca_file) {}

bool LogServer::authorized(const HttpRequest& req) {
  std::string key = req.client_cn;
  for (const auto& g : req.client_orgs) key += "\n" + g;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = decisions_.find(key);
    if (it != decisions_.end() && it->second.second > now) return it->second.first;
  }
  const json review = {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec",
       {{"user", req.client_cn},
        {"groups", req.client_orgs},
        {"resourceAttributes",
         {{"verb", "get"}, {"resource", "nodes"}, {"subresource", "proxy"}, {"name", config_.node}}}}}};
  bool allowed = false;
  try {
    const json answer = client_->request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "", &review);
    allowed = answer.value("status", json::object()).value("allowed", false);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainbench-nodeagent: SubjectAccessReview for %s: %s\n", req.client_cn.c_str(), e.what());
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  decisions_[key] = {allowed, now + std::chrono::seconds(allowed ? 60 : 10)};
  return allowed;
}

void LogServer::handle(const HttpRequest& req, HttpResponder& res) {
  if (req.path == "/healthz") {
    res.send(200, "text/plain", "ok");
    return;
  }
  if (!authorized(req)) {
    res.send(403, "text/plain",
             "Forbidden (user=" + req.client_cn + ", verb=get, resource=nodes, subresource=proxy)");
    return;
  }
  const auto parts = noderuntime::split(req.path, '/');  // "", containerLogs, ns, pod, container
  if (req.method != "GET" || parts.size() != 5 || parts[1] != "containerLogs") {
    res.send(404, "text/plain", "404 page not found");
    return;
  }
  serve_log(req, res, parts[2], parts[3], parts[4]);
}

void LogServer::serve_log(const HttpRequest& req, HttpResponder& res, const std::string& ns, const std::string& pod,
                          const std::string& container) {
  noderuntime::RunPtr run = pods_.find(ns, pod);
  std::string path = run ? noderuntime::container_log_path(*run, container) : "";
  if (path.empty()) {
    res.send(404, "text/plain", "container \"" + container + "\" in pod \"" + pod + "\" has no log on this node");
    return;
  }
  const bool previous = flag_param(req, "previous");
  if (previous) path = noderuntime::PodRunner::previous_log_path(path);
  if (previous && !std::filesystem::exists(path)) {
    res.send(400, "text/plain", "previous terminated container \"" + container + "\" in pod \"" + pod + "\" not found");
    return;
  }
  LogPlan plan = plan_log(req, path);
  if (previous || !flag_param(req, "follow")) {
    res.send(200, "text/plain", plan.head);
    return;
  }
  if (!res.start_stream(200, "text/plain") || !res.write_chunk(plan.head)) return;
  noderuntime::LogFollower follower{
      [&] { return !noderuntime::container_running(*run, container) || plan.budget == 0; },
      [&](const std::string& more) {
        std::string out = more;
        if (plan.budget >= 0 && static_cast<long long>(out.size()) > plan.budget) {
          out.resize(static_cast<std::size_t>(plan.budget));
        }
        if (plan.budget >= 0) plan.budget -= static_cast<long long>(out.size());
        return res.write_chunk(out);
      },
      [&] { return res.peer_closed(); }};
  if (noderuntime::follow_log(plan.path, plan.offset, follower)) res.end_stream();
}

}  // namespace nodeagent
