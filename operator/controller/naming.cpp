#include "operator/controller/naming.hpp"

namespace trainbench::op {

std::string run_service_name(const std::string& job, int run) { return job + "-r" + std::to_string(run); }

std::string master_pod_name(const std::string& job, int run, int attempt) {
  return run_service_name(job, run) + "-a" + std::to_string(attempt) + "-master";
}

std::string trainer_pod_name(const std::string& job, int run, int attempt, int node) {
  return run_service_name(job, run) + "-a" + std::to_string(attempt) + "-trainer-" + std::to_string(node);
}

std::string parameter_server_pod_name(const std::string& job, int run, int attempt, int server) {
  return run_service_name(job, run) + "-a" + std::to_string(attempt) + "-ps-" + std::to_string(server);
}

std::string result_configmap_name(const std::string& job, int run) { return run_service_name(job, run) + "-result"; }

std::string reporter_name(const std::string& job) { return job + "-reporter"; }

std::string master_address(const std::string& job, const std::string& ns, int run) {
  return run_service_name(job, run) + "." + ns + ".svc";
}

std::string transition_event_name(const std::string& job, const std::string& uid, const std::string& reason,
                                  const std::string& key) {
  std::string name = job + ".";
  for (const char c : reason) name += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (!key.empty()) name += "." + key;
  if (!uid.empty()) name += "." + uid.substr(0, 8);
  return name;
}

std::map<std::string, std::string> object_labels(const std::string& job, const std::string& component, int run,
                                                 int attempt, const std::string& role) {
  std::map<std::string, std::string> l{{"app.kubernetes.io/name", "trainbench"},
                                       {"app.kubernetes.io/instance", job},
                                       {"app.kubernetes.io/component", component},
                                       {"app.kubernetes.io/managed-by", kManagedBy},
                                       {kJobLabel, job}};
  if (run >= 0) l[kRunLabel] = std::to_string(run);
  if (attempt >= 0) l[kAttemptLabel] = std::to_string(attempt);
  if (!role.empty()) l[kRoleLabel] = role;
  return l;
}

}  // namespace trainbench::op
