#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/plan/run_config.hpp"
#include "core/spec/master_ports.hpp"
#include "core/spec/spec.hpp"

namespace trainbench::op {

/// --worker-image / --worker-cuda-image: the image of a job's pods when its spec.template.image
/// is unset, by spec.device (docker/worker.Dockerfile builds both).
struct WorkerImages {
  std::string cpu = PodTemplate::default_worker_image(Device::kCpu);
  std::string cuda = PodTemplate::default_worker_image(Device::kCuda);
};

/// The BenchmarkJob an object belongs to: its ownerReference and its settings for pods.
struct JobContext {
  std::string name;
  std::string namespace_;
  std::string uid;
  nlohmann::json spec;  ///< the job's spec as stored (template, nccl, masterPort, runPolicy)
  std::string image;    ///< every pod's: spec.template.image, else the WorkerImages' for spec.device
};

JobContext job_context(const nlohmann::json& job_object, const WorkerImages& images = {});

/// ownerReferences entry pointing at the job (controller, blockOwnerDeletion).
nlohmann::json owner_reference(const JobContext& job);

/// Headless Service J-r<i> selecting the run's master (publishNotReadyAddresses, port "store").
nlohmann::json run_service(const JobContext& job, int run);
/// Empty ConfigMap J-r<i>-result that the run's master fills in.
nlohmann::json result_configmap(const JobContext& job, int run);
/// ServiceAccount, Role (get/update/patch on exactly the job's result ConfigMaps) and
/// RoleBinding J-reporter: the identity the masters write results with.
nlohmann::json reporter_service_account(const JobContext& job);
nlohmann::json reporter_role(const JobContext& job, int runs);
nlohmann::json reporter_role_binding(const JobContext& job);

// The pods' environment is core's rank environment (rank_variables in core/plan/run_config.hpp) with
// MASTER_ADDR = the run's Service and MASTER_PORT = master_port(), plus what only a pod has
// (TRAINBENCH_JOB/RUN/ATTEMPT, TRAINBENCH_EXTERNAL_STORE, POD_IP/NAME/NAMESPACE, spec.nccl).
// `run` is planned with ServerPlacement::OwnPods.

/// The master pod of attempt `attempt` of `run` (rendezvous store + result delivery): node 0's
/// trainer-pod variables without NODE_RANK/GROUP_RANK, TRAINBENCH_ROLE=master.
nlohmann::json master_pod(const JobContext& job, const RunConfig& run, int attempt);
/// Trainer pod `node` of attempt `attempt` (trainbench node-launch runs run.devices_per_node
/// worker processes): the rank variables shared by the node's ranks (all but RANK and LOCAL_RANK,
/// which node-launch sets per process) and NPROC_PER_NODE.
nlohmann::json trainer_pod(const JobContext& job, const RunConfig& run, int attempt, int node);
/// paradigm hybrid-ps: parameter server `server` as one trainbench-worker process with the
/// whole rank environment (RANK = trainers + server, LOCAL_RANK 0, LOCAL_WORLD_SIZE 1,
/// NODE_RANK 0, WORLD_SIZE = trainers + servers, TRAINBENCH_ROLE=parameter-server).
nlohmann::json parameter_server_pod(const JobContext& job, const RunConfig& run, int attempt, int server);

/// Port of the rendezvous store (spec.masterPort, default 29500).
int master_port(const JobContext& job);

}  // namespace trainbench::op
