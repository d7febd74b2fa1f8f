#include "operator/controller/manifests.hpp"

#include <algorithm>
#include <optional>

#include "operator/controller/json_access.hpp"
#include "operator/controller/naming.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

constexpr int kDefaultMasterPort = 29500;
/// Worker i of a trainer pod serves /metrics on kMetricsPort + i (container port "metrics-i").
constexpr int kMetricsPort = 9400;
/// After its run, a worker keeps serving its last values this long (a few scrape intervals), also
/// through the SIGTERM of the run's cleanup; spec.template.env can set
/// TRAINBENCH_METRICS_LINGER_SECONDS to another value. Trainer pods get a termination grace
/// period that covers it.
constexpr int kDefaultMetricsLingerSeconds = 20;
constexpr int kGraceBeyondLingerSeconds = 10;
constexpr const char* kGpuResource = "nvidia.com/gpu";

/// TRAINBENCH_METRICS_LINGER_SECONDS from spec.template.env when it is a plain number there.
std::optional<int> template_linger_seconds(const json& tmpl) {
  for (const auto& e : get_or(tmpl, "env", json::array())) {
    if (!e.is_object() || get_or(e, "name", "") != "TRAINBENCH_METRICS_LINGER_SECONDS") continue;
    const json value = get_or(e, "value", "");
    if (!value.is_string()) return std::nullopt;
    const std::string v = value.get<std::string>();
    if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoi(v);
  }
  return std::nullopt;
}

bool template_sets_env(const json& tmpl, const std::string& name) {
  for (const auto& e : get_or(tmpl, "env", json::array())) {
    if (e.is_object() && get_or(e, "name", "") == name) return true;
  }
  return false;
}

json metadata(const JobContext& job, const std::string& name, const std::string& component, int run = -1,
              int attempt = -1, const std::string& role = "") {
  return {{"name", name},
          {"namespace", job.namespace_},
          {"labels", object_labels(job.name, component, run, attempt, role)},
          {"ownerReferences", json::array({owner_reference(job)})}};
}

json env_var(const std::string& name, const std::string& value) { return {{"name", name}, {"value", value}}; }

json field_env(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

/// The rank's identity: after spec.template.env in a pod's list (of two entries with one name,
/// Kubernetes uses the later), so that a template cannot move a rank.
bool is_rank_identity(const std::string& name) {
  return name == "RANK" || name == "LOCAL_RANK" || name == "NODE_RANK" || name == "GROUP_RANK";
}

/// The entries of `vars` that are (identity) or are not (!identity) the rank's identity, in order.
json env_list(const std::vector<EnvVar>& vars, bool identity) {
  json env = json::array();
  for (const auto& v : vars) {
    if (is_rank_identity(v.name) == identity) env.push_back(env_var(v.name, v.value));
  }
  return env;
}

/// What only a pod has, after the rank's variables: the run and attempt it belongs to, its own
/// address and names (downward API), and spec.nccl.
json pod_only_env(const JobContext& job, const RunConfig& run, int attempt) {
  json env = json::array({
      env_var("TRAINBENCH_JOB", job.name), env_var("TRAINBENCH_RUN", std::to_string(run.index)),
      env_var("TRAINBENCH_ATTEMPT", std::to_string(attempt)), env_var("TRAINBENCH_EXTERNAL_STORE", "1"),
      field_env("POD_IP", "status.podIP"), field_env("POD_NAME", "metadata.name"),
      field_env("POD_NAMESPACE", "metadata.namespace"),
      field_env("NODE_NAME", "spec.nodeName"),  // named in the hang message (core/analysis/hang.hpp)
  });
  const json nccl = get_or(job.spec, "nccl", json::object());
  if (nccl.contains("socketIfname")) env.push_back(env_var("NCCL_SOCKET_IFNAME", nccl["socketIfname"].get<std::string>()));
  if (nccl.contains("ibDisable")) env.push_back(env_var("NCCL_IB_DISABLE", nccl["ibDisable"].get<bool>() ? "1" : "0"));
  if (nccl.contains("debug")) env.push_back(env_var("NCCL_DEBUG", nccl["debug"].get<std::string>()));
  if (nccl.contains("extraEnv") && nccl["extraEnv"].is_object()) {
    for (const auto& [k, v] : nccl["extraEnv"].items()) env.push_back(env_var(k, v.is_string() ? v.get<std::string>() : v.dump()));
  }
  return env;
}

std::vector<EnvVar> rank_variables_in_pod(const JobContext& job, const RunConfig& run, const RankPlacement& p) {
  return rank_variables(run, p, master_address(job.name, job.namespace_, run.index), master_port(job));
}

/// Trainer pod `node`: the variables of its first rank but the per-process ones (trainbench
/// node-launch sets RANK and LOCAL_RANK for each worker it starts), and after WORLD_SIZE
/// NPROC_PER_NODE, the number of workers node-launch starts.
std::vector<EnvVar> trainer_pod_variables(const JobContext& job, const RunConfig& run, int node) {
  const RankPlacement first = placements(run).at(static_cast<std::size_t>(node * run.devices_per_node));
  std::vector<EnvVar> vars;
  for (auto& v : rank_variables_in_pod(job, run, first)) {
    if (is_per_process_variable(v.name)) continue;
    vars.push_back(std::move(v));
    if (vars.back().name == "WORLD_SIZE") vars.push_back({"NPROC_PER_NODE", std::to_string(run.devices_per_node)});
  }
  return vars;
}

/// The master pod runs no rank: node 0's trainer-pod variables without a rank identity, as role
/// master.
std::vector<EnvVar> master_pod_variables(const JobContext& job, const RunConfig& run) {
  std::vector<EnvVar> vars;
  for (auto& v : trainer_pod_variables(job, run, 0)) {
    if (is_rank_identity(v.name)) continue;
    if (v.name == "TRAINBENCH_ROLE") v.value = "master";
    vars.push_back(std::move(v));
  }
  return vars;
}

/// Non-root, no privilege escalation, read-only root filesystem, no capabilities.
json container_security() {
  return {{"allowPrivilegeEscalation", false},
          {"readOnlyRootFilesystem", true},
          {"runAsNonRoot", true},
          {"capabilities", {{"drop", json::array({"ALL"})}}}};
}

/// spec.template's volumes and mounts, each with the pods' own: /tmp (an emptyDir: the root
/// filesystem is read-only) and, for a program's pods, /dev/shm (memory: PyTorch's data loaders
/// and NCCL share memory between a node's ranks through it).
std::pair<json, json> pod_volumes(const json& tmpl, bool shared_memory) {
  json volumes = get_or(tmpl, "volumes", json::array());
  volumes.push_back({{"name", "tmp"}, {"emptyDir", json::object()}});
  json mounts = get_or(tmpl, "volumeMounts", json::array());
  mounts.push_back({{"name", "tmp"}, {"mountPath", "/tmp"}});
  if (shared_memory) {
    volumes.push_back({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}});
    mounts.push_back({{"name", "dshm"}, {"mountPath", "/dev/shm"}});
  }
  return {volumes, mounts};
}

/// A container of a run's pod: `rank_vars` (core's rank environment, see env_list for the
/// order), the pod's own variables, spec.template's env, then the container's own variables;
/// the job's image unless the container names one (a program's).
json rank_container(const JobContext& job, const RunConfig& run, int attempt, const std::vector<EnvVar>& rank_vars,
                    json container, const json& mounts) {
  const json tmpl = get_or(job.spec, "template", json::object());
  if (!container.contains("image")) container["image"] = job.image;
  container["imagePullPolicy"] = get_or(tmpl, "imagePullPolicy", "IfNotPresent");
  container["volumeMounts"] = mounts;
  container["securityContext"] = container_security();
  container["terminationMessagePolicy"] = "FallbackToLogsOnError";
  json env = env_list(rank_vars, false);
  for (const auto& e : pod_only_env(job, run, attempt)) env.push_back(e);
  const json template_env = get_or(tmpl, "env", json::array());
  for (const auto& e : template_env) env.push_back(e);
  for (const auto& e : env_list(rank_vars, true)) env.push_back(e);
  if (container.contains("env")) {
    for (const auto& e : container["env"]) env.push_back(e);
  }
  container["env"] = env;
  return container;
}

/// A pod of the run with these containers (rank_container) and volumes, spec.template's labels,
/// annotations, nodeSelector and tolerations merged in.
json pod_of(const JobContext& job, const std::string& name, const RunConfig& run, int attempt, const std::string& role,
            json containers, json volumes, bool needs_api_token) {
  const json tmpl = get_or(job.spec, "template", json::object());
  json meta = metadata(job, name, role, run.index, attempt, role);
  const json pod_labels = get_or(tmpl, "labels", json::object());  // named: items() must not outlive it
  for (const auto& [k, v] : pod_labels.items()) meta["labels"].emplace(k, v);
  if (tmpl.contains("annotations")) meta["annotations"] = tmpl["annotations"];
  json spec = {{"restartPolicy", "Never"},
               {"automountServiceAccountToken", needs_api_token},
               {"securityContext", {{"runAsNonRoot", true}, {"runAsUser", 65532}, {"runAsGroup", 65532}}},
               {"containers", std::move(containers)},
               {"volumes", std::move(volumes)}};
  if (needs_api_token) spec["serviceAccountName"] = reporter_name(job.name);
  if (tmpl.contains("nodeSelector")) spec["nodeSelector"] = tmpl["nodeSelector"];
  if (tmpl.contains("tolerations")) spec["tolerations"] = tmpl["tolerations"];
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

/// A pod of the run with one container (the master, a trainer running node-launch, a
/// parameter server).
json pod(const JobContext& job, const std::string& name, const RunConfig& run, int attempt, const std::string& role,
         const std::vector<EnvVar>& rank_vars, json container, bool needs_api_token) {
  auto [volumes, mounts] = pod_volumes(get_or(job.spec, "template", json::object()), false);
  json c = rank_container(job, run, attempt, rank_vars, std::move(container), mounts);
  return pod_of(job, name, run, attempt, role, json::array({c}), volumes, needs_api_token);
}

}  // namespace

JobContext job_context(const json& obj, const WorkerImages& images) {
  JobContext c;
  const json& md = obj.at("metadata");
  c.name = md.at("name").get<std::string>();
  c.namespace_ = get_or(md, "namespace", "default").get<std::string>();
  c.uid = get_or(md, "uid", "").get<std::string>();
  c.spec = get_or(obj, "spec", json::object());
  // Any job, valid or not, gets here (reconcile validates after): nothing may throw.
  const bool cuda = get_or(c.spec, "device", "cpu") == to_string(Device::kCuda);
  const json image = get_or(get_or(c.spec, "template", json::object()), "image", nullptr);
  c.image = image.is_string() ? image.get<std::string>() : cuda ? images.cuda : images.cpu;
  return c;
}

json owner_reference(const JobContext& job) {
  return {{"apiVersion", "trainbench.dev/v1alpha1"}, {"kind", "BenchmarkJob"}, {"name", job.name},
          {"uid", job.uid}, {"controller", true}, {"blockOwnerDeletion", true}};
}

int master_port(const JobContext& job) { return get_or(job.spec, "masterPort", kDefaultMasterPort).get<int>(); }

json run_service(const JobContext& job, int run) {
  json sel = {{kJobLabel, job.name}, {kRunLabel, std::to_string(run)}, {kRoleLabel, "master"}};
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata(job, run_service_name(job.name, run), "master", run)},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", sel},
            {"ports", json::array({{{"name", "store"}, {"port", master_port(job)}, {"targetPort", master_port(job)}}})}}}};
}

json result_configmap(const JobContext& job, int run) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", metadata(job, result_configmap_name(job.name, run), "result", run)},
          {"data", json::object()}};
}

json reporter_service_account(const JobContext& job) {
  return {{"apiVersion", "v1"},
          {"kind", "ServiceAccount"},
          {"metadata", metadata(job, reporter_name(job.name), "reporter")},
          {"automountServiceAccountToken", false}};
}

json reporter_role(const JobContext& job, int runs) {
  json names = json::array();
  for (int i = 0; i < runs; ++i) names.push_back(result_configmap_name(job.name, i));
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", metadata(job, reporter_name(job.name), "reporter")},
          {"rules", json::array({{{"apiGroups", json::array({""})},
                                  {"resources", json::array({"configmaps"})},
                                  {"resourceNames", names},
                                  {"verbs", json::array({"get", "update", "patch"})}}})}};
}

json reporter_role_binding(const JobContext& job) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", metadata(job, reporter_name(job.name), "reporter")},
          {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", reporter_name(job.name)}}},
          {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", reporter_name(job.name)},
                                     {"namespace", job.namespace_}}})}};
}

json master_pod(const JobContext& job, const RunConfig& run, int attempt) {
  json c = {{"name", kMasterContainer},
            {"command", json::array({"trainbench-worker", "--master"})},
            {"ports", json::array({{{"name", "store"}, {"containerPort", master_port(job)}},
                                   {{"name", "progress"}, {"containerPort", kMasterProgressPort}}})},
            {"env", json::array({env_var("TRAINBENCH_RESULT_CONFIGMAP", result_configmap_name(job.name, run.index)),
                                 env_var("TRAINBENCH_PROGRESS_PORT", std::to_string(kMasterProgressPort))})},
            {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}};
  return pod(job, master_pod_name(job.name, run.index, attempt), run, attempt, "master", master_pod_variables(job, run),
             c, true);
}

namespace {

/// A trainer pod's resources: spec.template.resources, and for a cuda job whose template does not
/// name nvidia.com/gpu, the run's devicesPerNode GPUs (requests = limits, as for any extended
/// resource): each run of a sweep holds the GPUs it uses, a 1-GPU run one GPU, not a node's worth.
json trainer_resources(const JobContext& job, const json& tmpl, const RunConfig& run) {
  json res = get_or(tmpl, "resources", json::object());
  if (get_or(job.spec, "device", "cpu") != "cuda") return res;
  for (const char* kind : {"limits", "requests"}) {
    if (get_or(get_or(res, kind, json::object()), kGpuResource, nullptr) != nullptr) return res;
  }
  res["limits"][kGpuResource] = run.devices_per_node;
  res["requests"][kGpuResource] = run.devices_per_node;
  return res;
}

}  // namespace

/// A program's trainer pod (docs/workloads.md, "On Kubernetes"): one container per rank of the
/// node, each the program with its own RANK and LOCAL_RANK, as torchrun's workers would be, and
/// each with one GPU on cuda. Their process group's store and the probe's records are the master
/// pod's store (TORCHELASTIC_USE_AGENT_STORE=True makes env:// rendezvous a client of it, as
/// under torchrun's agent; TRAINBENCH_STORE tells the probe where it is).
json program_trainer_pod(const JobContext& job, const RunConfig& run, int attempt, int node) {
  const json tmpl = get_or(job.spec, "template", json::object());
  const ProgramSpec& program = *run.program;
  auto [volumes, mounts] = pod_volumes(tmpl, true);
  const std::string store =
      master_address(job.name, job.namespace_, run.index) + ":" + std::to_string(master_port(job));
  json resources = get_or(tmpl, "resources", json::object());
  if (get_or(job.spec, "device", "cpu") == "cuda" &&
      get_or(get_or(resources, "limits", json::object()), kGpuResource, nullptr) == nullptr &&
      get_or(get_or(resources, "requests", json::object()), kGpuResource, nullptr) == nullptr) {
    resources["limits"][kGpuResource] = 1;
    resources["requests"][kGpuResource] = 1;
  }
  json containers = json::array();
  for (int local = 0; local < run.devices_per_node; ++local) {
    const RankPlacement p = placements(run).at(static_cast<std::size_t>(node * run.devices_per_node + local));
    json c = {{"name", program_container_name(local)}, {"command", program.command}, {"args", program.args}};
    if (!program.image.empty()) c["image"] = program.image;
    if (!program.working_dir.empty()) c["workingDir"] = program.working_dir;
    json env = json::array();
    for (const auto& v : program.env) env.push_back(env_var(v.name, v.value));
    env.push_back(env_var("TORCHELASTIC_USE_AGENT_STORE", "True"));
    env.push_back(env_var("TRAINBENCH_STORE", store));
    c["env"] = env;
    if (!resources.empty()) c["resources"] = resources;
    containers.push_back(rank_container(job, run, attempt, rank_variables_in_pod(job, run, p), c, mounts));
  }
  return pod_of(job, trainer_pod_name(job.name, run.index, attempt, node), run, attempt, to_string(Role::kTrainer),
                containers, volumes, false);
}

json trainer_pod(const JobContext& job, const RunConfig& run, int attempt, int node) {
  if (run.program) return program_trainer_pod(job, run, attempt, node);
  const json tmpl = get_or(job.spec, "template", json::object());
  json c = {{"name", kTrainerContainer},
            {"command", json::array({"trainbench", "node-launch"})},
            {"env", json::array({env_var("TRAINBENCH_METRICS_PORT", std::to_string(kMetricsPort))})}};
  if (!template_sets_env(tmpl, "TRAINBENCH_METRICS_LINGER_SECONDS")) {
    c["env"].push_back(env_var("TRAINBENCH_METRICS_LINGER_SECONDS", std::to_string(kDefaultMetricsLingerSeconds)));
  }
  json ports = json::array();
  for (int i = 0; i < run.devices_per_node; ++i) {
    ports.push_back({{"name", "metrics-" + std::to_string(i)}, {"containerPort", kMetricsPort + i}, {"protocol", "TCP"}});
  }
  c["ports"] = ports;
  c["resources"] = trainer_resources(job, tmpl, run);
  if (c["resources"].empty()) c.erase("resources");
  json p = pod(job, trainer_pod_name(job.name, run.index, attempt, node), run, attempt, to_string(Role::kTrainer),
               trainer_pod_variables(job, run, node), c, false);
  const int linger = template_linger_seconds(tmpl).value_or(kDefaultMetricsLingerSeconds);
  p["spec"]["terminationGracePeriodSeconds"] = std::max(30, linger + kGraceBeyondLingerSeconds);
  return p;
}

json parameter_server_pod(const JobContext& job, const RunConfig& run, int attempt, int server) {
  const json tmpl = get_or(job.spec, "template", json::object());
  const RankPlacement placement = placements(run).at(static_cast<std::size_t>(run.world_size() + server));
  json c = {{"name", kParameterServerContainer}, {"command", json::array({"trainbench-worker"})}};
  if (tmpl.contains("resources")) c["resources"] = tmpl["resources"];
  return pod(job, parameter_server_pod_name(job.name, run.index, attempt, server), run, attempt, to_string(Role::kParameterServer),
             rank_variables_in_pod(job, run, placement), c, false);
}

}  // namespace trainbench::op
