#pragma once

#include <map>
#include <string>

namespace trainbench::op {

/// Deterministic names of everything the operator creates for a job (docs/operator.md), so a
/// restarted operator finds what an earlier one made and never creates duplicates.
std::string run_service_name(const std::string& job, int run);                 // J-r<i>
std::string master_pod_name(const std::string& job, int run, int attempt);      // J-r<i>-a<a>-master
std::string trainer_pod_name(const std::string& job, int run, int attempt, int node);  // ...-trainer-<n>
/// paradigm hybrid-ps: parameter server `server` (0..P-1) of a run attempt.
std::string parameter_server_pod_name(const std::string& job, int run, int attempt, int server);  // ...-ps-<j>
std::string result_configmap_name(const std::string& job, int run);            // J-r<i>-result
std::string reporter_name(const std::string& job);                             // J-reporter
/// MASTER_ADDR: the run's headless Service, J-r<i>.NS.svc
std::string master_address(const std::string& job, const std::string& ns, int run);

/// The Event recording one transition of a job: J.<reason, lower case>[.<key>][.<uid prefix>],
/// e.g. J.runstarted.r0.a1.1f2e3d4c. `key` names the run / attempt / generation the transition
/// belongs to; the uid prefix keeps a re-created job of the same name apart from the old one's
/// Events. The same transition decided twice (a leader killed before its status write) gets
/// the same name, so the second create is AlreadyExists.
std::string transition_event_name(const std::string& job, const std::string& uid, const std::string& reason,
                                  const std::string& key);

inline constexpr const char* kManagedBy = "trainbench-operator";
inline constexpr const char* kJobLabel = "trainbench.dev/job";
inline constexpr const char* kRunLabel = "trainbench.dev/run";
inline constexpr const char* kAttemptLabel = "trainbench.dev/attempt";
inline constexpr const char* kRoleLabel = "trainbench.dev/role";
/// The one container of each kind of pod (what `kubectl logs -c` and the plugin's logs name).
inline constexpr const char* kMasterContainer = "master";
inline constexpr const char* kTrainerContainer = "trainer";
/// A program's trainer pod runs one container per rank of its node: "trainer" (local rank 0),
/// "trainer-1", ... (docs/workloads.md).
inline std::string program_container_name(int local_rank) {
  return local_rank == 0 ? std::string(kTrainerContainer) : std::string(kTrainerContainer) + "-" + std::to_string(local_rank);
}
inline constexpr const char* kParameterServerContainer = "parameter-server";

/// The standard app.kubernetes.io/* labels plus trainbench.dev/job; `component` is master,
/// trainer, parameter-server, result or reporter. run / attempt / role are added when >= 0 / non-empty.
std::map<std::string, std::string> object_labels(const std::string& job, const std::string& component, int run = -1,
                                                 int attempt = -1, const std::string& role = "");

}  // namespace trainbench::op
