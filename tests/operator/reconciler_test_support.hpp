// What the reconciler's tests share: a job, the decision's actions by verb, and a cluster that
// applies a decision the way the API server would (creates appear, deletes vanish, status merge
// patches land), plus the kubelet's and the master's side (pod phases, a run's result).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/plan/run_config.hpp"
#include "core/report/report.hpp"
#include "operator/controller/naming.hpp"
#include "operator/controller/reconciler.hpp"

namespace trainbench::op::reconcile_test {

using nlohmann::json;

inline json job_object(json spec_extra = json::object()) {
  json spec = {{"benchmark", {{"model", "mlp"}, {"batchSizePerDevice", 8}, {"warmupSteps", 1}, {"measureSteps", 4},
                              {"repeats", 1}}},
               {"sweep", json::array({{{"nodes", 1}, {"devicesPerNode", 1}, {"paradigm", "none"}},
                                      {{"nodes", 2}, {"devicesPerNode", 2}}})},
               {"runPolicy", {{"backoffLimit", 1}, {"schedulingTimeoutSeconds", 60}}}};
  spec.update(spec_extra, true);
  return {{"apiVersion", "trainbench.dev/v1alpha1"},
          {"kind", "BenchmarkJob"},
          {"metadata", {{"name", "bj"}, {"namespace", "ns1"}, {"uid", "uid-1"}, {"generation", 1}}},
          {"spec", spec}};
}

inline Clock::time_point t0() { return *parse_time("2026-11-22T10:00:00Z"); }

inline std::vector<const Action*> of(const Decision& d, Action::Verb v, const std::string& resource = "") {
  std::vector<const Action*> out;
  for (const auto& a : d.actions) {
    if (a.verb == v && (resource.empty() || a.resource == resource)) out.push_back(&a);
  }
  return out;
}

inline json status_of(const Decision& d) {
  auto p = of(d, Action::Verb::PatchStatus);
  return p.empty() ? json() : p.back()->body["status"];
}

/// A label selector of "k=v" and "k!=v" terms, as the API server evaluates it.
inline bool matches(const std::string& selector, const json& obj) {
  const json labels = obj["metadata"].value("labels", json::object());
  std::size_t start = 0;
  while (start <= selector.size()) {
    const std::size_t end = std::min(selector.find(',', start), selector.size());
    const std::string term = selector.substr(start, end - start);
    const bool negated = term.find("!=") != std::string::npos;
    const std::size_t op = negated ? term.find("!=") : term.find('=');
    const std::string key = term.substr(0, op), value = term.substr(op + (negated ? 2 : 1));
    const bool equal = labels.contains(key) && labels[key] == value;
    if (equal == negated) return false;
    start = end + 1;
  }
  return true;
}

/// Pod names a decision deletes, one by one or by a collection delete.
inline std::vector<std::string> deleted_pods(const Decision& d) {
  std::vector<std::string> out;
  for (const auto& a : d.actions) {
    if (a.resource != "pods") continue;
    if (a.verb == Action::Verb::Delete) out.push_back(a.name);
    if (a.verb == Action::Verb::DeleteCollection) out.insert(out.end(), a.names.begin(), a.names.end());
  }
  return out;
}

/// Applies a decision the way the cluster would: creates appear (pods Pending), deletes vanish,
/// the status patch (a JSON merge patch) lands.
inline void apply(Observed& o, const Decision& d) {
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::Create) {
      if (a.resource == "pods") o.pods.push_back(a.body);
      if (a.resource == "services") o.services.push_back(a.body);
      if (a.resource == "configmaps") o.configmaps.push_back(a.body);
      if (a.resource == "serviceaccounts") o.reporter_service_account = true;
      if (a.resource == "roles") o.reporter_role = true;
      if (a.resource == "rolebindings") o.reporter_role_binding = true;
      if (a.resource == "workloads") o.workload = a.body;
    } else if (a.verb == Action::Verb::DeleteCollection && a.resource == "pods") {
      o.pods.erase(
          std::remove_if(o.pods.begin(), o.pods.end(), [&](const json& p) { return matches(a.label_selector, p); }),
          o.pods.end());
    } else if ((a.verb == Action::Verb::Delete || a.verb == Action::Verb::ForceDelete) && a.resource == "pods") {
      o.pods.erase(
          std::remove_if(o.pods.begin(), o.pods.end(), [&](const json& p) { return p["metadata"]["name"] == a.name; }),
          o.pods.end());
    } else if (a.verb == Action::Verb::PatchStatus && a.resource == "benchmarkjobs") {
      o.job["status"].merge_patch(a.body["status"]);  // as the API server: RFC 7386
    } else if (a.verb == Action::Verb::PatchStatus && a.resource == "workloads") {
      o.workload->merge_patch(a.body);
    } else if (a.verb == Action::Verb::Patch && a.resource == "benchmarkjobs") {
      o.job.merge_patch(a.body);
      o.job["metadata"]["generation"] = o.job["metadata"]["generation"].get<int>() + 1;
    }
  }
}

inline void set_phase(Observed& o, const std::string& pod, const std::string& phase, int exit_code = 0) {
  for (auto& p : o.pods) {
    if (p["metadata"]["name"] != pod) continue;
    p["status"]["phase"] = phase;
    if (phase == "Failed" || phase == "Succeeded") {
      p["status"]["containerStatuses"] = json::array(
          {{{"name", "trainer"},
            {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", "Error"}, {"message", "trainbench-worker rank 1: boom"}}}}}}});
    }
  }
}

inline void all_running(Observed& o) {
  for (auto& p : o.pods) p["status"]["phase"] = "Running";
}

inline std::string env(const json& pod, const std::string& name) {
  for (const auto& e : pod["spec"]["containers"][0]["env"]) {
    if (e["name"] == name) return e.contains("value") ? e["value"].get<std::string>() : "<ref>";
  }
  return "<unset>";
}

/// Delivers run `run`'s result: every rank's step times per repeat are `steps`; with `compute`
/// (one per rank), each step's compute is that and the rest of it communication.
inline void deliver_result(Observed& o, int run, int attempt, int world,
                           const std::vector<std::vector<double>>& steps = {{0.1, 0.2, 0.3}},
                           const std::vector<double>& compute = {}) {
  RunConfig cfg;
  cfg.index = run;
  cfg.nodes = 1;
  cfg.devices_per_node = world;
  cfg.paradigm = world == 1 ? Paradigm::kNone : Paradigm::kDdp;
  cfg.batch_size_per_device = 8;
  RunResult r;
  r.world_size = world;
  r.environment.backend = "gloo";
  for (int k = 0; k < world; ++k) r.ranks.push_back({k, 0, k, steps, 1000, 1.0});
  for (std::size_t k = 0; k < compute.size(); ++k) {
    for (const auto& rep : steps) {
      r.ranks[k].compute_seconds.emplace_back(rep.size(), compute[k]);
      r.ranks[k].communication_seconds.emplace_back();
      for (double sec : rep) r.ranks[k].communication_seconds.back().push_back(sec - compute[k]);
    }
  }
  json payload = {{"attempt", attempt}, {"run", to_json(summarize_run(cfg, r))}, {"environment", to_json(r.environment)}};
  for (auto& cm : o.configmaps) {
    if (cm["metadata"]["name"] == result_configmap_name("bj", run)) cm["data"]["result"] = payload.dump();
  }
}

/// Runs both steps of a two-run job (2 repeats), delivering `steps0` then `steps1` (4 ranks).
inline Decision finish_two_runs(Observed& o, const std::vector<std::vector<double>>& steps0,
                                const std::vector<std::vector<double>>& steps1) {
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 0, 0, 1, steps0);
  apply(o, reconcile(o));
  all_running(o);
  apply(o, reconcile(o));
  deliver_result(o, 1, 0, 4, steps1);
  Decision d = reconcile(o);
  apply(o, d);
  return d;
}

inline const json* condition_of(const json& status, const std::string& type) {
  for (const auto& c : status["conditions"]) {
    if (c["type"] == type) return &c;
  }
  return nullptr;
}

inline std::vector<std::string> event_reasons(const Decision& d) {
  std::vector<std::string> out;
  for (const auto* e : of(d, Action::Verb::Event)) out.push_back(e->body["reason"]);
  return out;
}

}  // namespace trainbench::op::reconcile_test
