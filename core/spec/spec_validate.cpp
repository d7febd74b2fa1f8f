// Semantic checks of a BenchmarkJob (validate()): bounds from core/spec/spec_bounds.hpp, the rules
// that relate fields, and the Kubernetes-shaped parts of spec.template. Run by the reader on every
// parsed job and by the operator on every custom resource, whatever wrote it.

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "core/spec/image_reference.hpp"
#include "core/spec/master_ports.hpp"
#include "core/spec/model_sizes.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/spec_messages.hpp"
#include "core/spec/spec_workloads.hpp"

namespace trainbench {
namespace {

using spec_messages::fmt_number;
using spec_messages::join_list;
using spec_messages::matches;
using spec_messages::one_of_message;
using spec_messages::quote;
using spec_messages::text_problem;

class Checker {
 public:
  explicit Checker(std::vector<FieldError>& errors) : errors_(errors) {}

  void at_least(const std::string& path, long long v, long long min) {
    if (v < min) errors_.push_back({path, "must be >= " + std::to_string(min) + ", got " + std::to_string(v)});
  }
  void at_most(const std::string& path, long long v, long long max) {
    if (v > max) errors_.push_back({path, "must be <= " + std::to_string(max) + ", got " + std::to_string(v)});
  }
  void in_range(const std::string& path, long long v, IntRange r) {
    at_least(path, v, r.min);
    at_most(path, v, r.max);
  }
  void positive(const std::string& path, double v) {
    if (!(v > 0) || !std::isfinite(v)) errors_.push_back({path, "must be > 0, got " + fmt_number(v)});
  }
  /// In (0, 1].
  void fraction(const std::string& path, double v) {
    if (!(v > 0 && v <= 1)) errors_.push_back({path, "must be > 0 and <= 1, got " + fmt_number(v)});
  }
  void one_of(const std::string& path, const std::string& v, const std::vector<std::string>& allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
      errors_.push_back({path, one_of_message(allowed, v)});
  }
  void add(const std::string& path, const std::string& message) { errors_.push_back({path, message}); }

 private:
  std::vector<FieldError>& errors_;
};

bool is_dns_label(const std::string& s) {
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= static_cast<std::size_t>(kMaxNamespaceLength) && std::regex_match(s, kLabel);
}


/// A label or annotation key: [DNS-subdomain prefix "/"] name (<= 63, alphanumerics with -_. inside).
bool is_qualified_name(const std::string& key) {
  static const std::regex kName("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
  const auto slash = key.find('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (slash != std::string::npos) {
    const std::string prefix = key.substr(0, slash);
    if (prefix.empty() || !matches(prefix, kDnsSubdomainPattern, kMaxDnsSubdomainLength)) return false;
  }
  return !name.empty() && name.size() <= static_cast<std::size_t>(kMaxLabelNameLength) && std::regex_match(name, kName);
}

const char* kQualifiedNameRule =
    "must be a label key: an optional DNS subdomain prefix and '/', then at most 63 characters "
    "(alphanumerics, with '-', '_' and '.' inside)";

/// Labels the operator sets on every pod; spec.template.labels may not set them.
bool is_reserved_label(const std::string& key) {
  static const std::set<std::string> kOperatorLabels{"app.kubernetes.io/name", "app.kubernetes.io/instance",
                                                     "app.kubernetes.io/component", "app.kubernetes.io/managed-by"};
  return key.rfind("trainbench.dev/", 0) == 0 || kOperatorLabels.count(key) > 0;
}

/// The reader's bound on a free-text field, again for jobs built in code (validate() alone):
/// valid UTF-8 of at most `max_length` characters.
void check_text(Checker& c, const std::string& path, const std::string& v, int max_length) {
  const std::string problem = text_problem(v, max_length);
  if (!problem.empty()) c.add(path, problem);
}

/// A pod's image: text, then an image reference (unset: the operator's).
void check_image(Checker& c, const std::string& path, const std::string& image) {
  const std::string problem = text_problem(image, kMaxImageLength);
  if (!problem.empty()) {
    c.add(path, problem);
  } else if (const std::string message = image_reference_message(image); !image.empty() && !message.empty()) {
    c.add(path, message);
  }
}

void check_label_map(Checker& c, const std::string& path, const std::map<std::string, std::string>& m,
                     bool check_values) {
  for (const auto& [k, v] : m) {
    if (!is_qualified_name(k)) {
      c.add(path + "." + printable(k), std::string(kQualifiedNameRule) + ", got key " + quote(k));
    }
    if (!check_values) check_text(c, path + "." + printable(k), v, kMaxAnnotationValueLength);
    if (check_values && !matches(v, kLabelValuePattern, kMaxLabelValueLength)) {
      c.add(path + "." + printable(k),
            "must be a label value (at most 63 characters: alphanumerics, with '-', '_' and '.' "
            "inside), got " +
                quote(v));
    }
  }
}

/// Shape checks of a verbatim Kubernetes list: objects, with the named string fields present.
void check_object_list(Checker& c, const std::string& path, const nlohmann::json& list,
                       const std::vector<std::string>& required) {
  if (!list.is_array()) {
    c.add(path, "must be a list of objects");
    return;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) {
      c.add(p, "must be an object, got " + printable(list[i].dump()));
      continue;
    }
    for (const auto& field : required) {
      auto it = list[i].find(field);
      if (it == list[i].end() || it->is_null()) {
        c.add(p + "." + field, "is required");
      } else if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
        c.add(p + "." + field, "must be a non-empty string, got " + printable(it->dump()));
      }
    }
  }
}

void check_quantities(Checker& c, const std::string& path, const std::map<std::string, std::string>& m) {
  for (const auto& [k, v] : m) {
    if (!matches(v, kQuantityPattern, kMaxQuantityLength)) {
      c.add(path + "." + k, "must be a non-negative quantity such as 8, \"500m\" or \"4Gi\", got " + quote(v));
    }
  }
}

void check_template(Checker& c, const PodTemplate& t) {
  const std::string tp = "spec.template";
  check_image(c, tp + ".image", t.image);
  if (!t.image_pull_policy.empty()) c.one_of(tp + ".imagePullPolicy", t.image_pull_policy, known_pull_policies());
  if (!t.service_account_name.empty() &&
      !matches(t.service_account_name, kDnsSubdomainPattern, kMaxServiceAccountNameLength)) {
    c.add(tp + ".serviceAccountName", "must be a lowercase RFC 1123 subdomain, got " + quote(t.service_account_name));
  }
  check_quantities(c, tp + ".resources.limits", t.resource_limits);
  check_quantities(c, tp + ".resources.requests", t.resource_requests);
  check_label_map(c, tp + ".nodeSelector", t.node_selector, true);
  check_label_map(c, tp + ".labels", t.labels, true);
  for (const auto& kv : t.labels) {
    if (is_reserved_label(kv.first)) {
      c.add(tp + ".labels." + printable(kv.first),
            "is set by the operator (trainbench.dev/* and app.kubernetes.io/name, "
            "instance, component, managed-by are reserved)");
    }
  }
  check_label_map(c, tp + ".annotations", t.annotations, false);
  check_object_list(c, tp + ".tolerations", t.tolerations, {});
  check_object_list(c, tp + ".volumes", t.volumes, {"name"});
  check_object_list(c, tp + ".volumeMounts", t.volume_mounts, {"name", "mountPath"});
  check_object_list(c, tp + ".env", t.env, {"name"});
}

void check_nccl(Checker& c, const NcclSpec& nccl) {
  if (!nccl.debug.empty()) c.one_of("spec.nccl.debug", nccl.debug, known_nccl_debug_levels());
  check_text(c, "spec.nccl.socketIfname", nccl.socket_ifname, kMaxSocketIfnameLength);
  for (const auto& kv : nccl.extra_env) {
    check_text(c, "spec.nccl.extraEnv." + printable(kv.first), kv.second, kMaxEnvValueLength);
    if (!matches(kv.first, kEnvNamePattern, kMaxEnvNameLength)) {
      c.add("spec.nccl.extraEnv." + printable(kv.first),
            "must be an environment variable name (at most " + std::to_string(kMaxEnvNameLength) +
                " letters, digits and '_', not starting with a digit), got " + quote(kv.first));
    }
  }
}

/// pipeline.boundaries: increasing, and each the index of a block the model has.
void check_boundaries(Checker& c, const BenchmarkSpec& b) {
  const std::string bp = "spec.benchmark.pipeline.boundaries";
  const int blocks = model_block_count(b);
  for (std::size_t i = 0; i < b.pipeline.boundaries.size(); ++i) {
    const int v = b.pipeline.boundaries[i];
    const std::string p = bp + "[" + std::to_string(i) + "]";
    if (i > 0 && v <= b.pipeline.boundaries[i - 1]) {
      c.add(p, "must be greater than the previous boundary (" + std::to_string(b.pipeline.boundaries[i - 1]) +
                   "), got " + std::to_string(v));
    } else if (blocks > 0 && v >= blocks) {
      c.add(p, "must be a block index below " + std::to_string(blocks) + " (model " + b.model + " has " +
                   std::to_string(blocks) + " blocks, 0.." + std::to_string(blocks - 1) + "), got " +
                   std::to_string(v));
    }
  }
}

/// paradigms pipeline and model-parallel on sweep entry `e` (path `p`): one stage per rank, at
/// least one block per stage, micro-batches that fit the batch.
void check_staged(Checker& c, const BenchmarkSpec& b, const SweepEntry& e, const std::string& p, Paradigm paradigm) {
  const std::string bp = "spec.benchmark";
  if (paradigm == Paradigm::kPipeline && b.pipeline.micro_batches > b.batch_size_per_device) {
    c.add(bp + ".pipeline.microBatches", "must be <= batchSizePerDevice (" + std::to_string(b.batch_size_per_device) +
                                             ") for paradigm pipeline (" + p + "), got " +
                                             std::to_string(b.pipeline.micro_batches));
  }
  const long long stages = static_cast<long long>(e.nodes) * e.devices_per_node;
  if (!b.pipeline.boundaries.empty() && static_cast<long long>(b.pipeline.boundaries.size()) + 1 != stages) {
    c.add(p, "paradigm " + to_string(paradigm) + " runs one stage per rank: spec.benchmark.pipeline.boundaries has " +
                 std::to_string(b.pipeline.boundaries.size()) + " entries (" +
                 std::to_string(b.pipeline.boundaries.size() + 1) + " stages), but nodes x devicesPerNode is " +
                 std::to_string(stages));
  }
  const int blocks = model_block_count(b);
  if (blocks > 0 && stages > blocks) {
    c.add(p, "paradigm " + to_string(paradigm) + " needs a block per stage: model " + b.model + " has " +
                 std::to_string(blocks) + " blocks, but nodes x devicesPerNode is " + std::to_string(stages));
  }
}

/// paradigm hybrid-ps on sweep entry `e` (path `p`); a parameterServers override on any other
/// paradigm is an error.
void check_hybrid_ps(Checker& c, const BenchmarkJob& job, const SweepEntry& e, const std::string& p,
                     Paradigm paradigm) {
  const BenchmarkSpec& b = job.benchmark;
  const std::string bp = "spec.benchmark";
  if (e.parameter_servers) {
    c.in_range(p + ".parameterServers", *e.parameter_servers, bounds::kParameterServers);
  }
  if (!has_parameter_servers(paradigm)) {
    if (e.parameter_servers) {
      c.add(p + ".parameterServers",
            "is only for paradigm hybrid-ps, but this run is paradigm " + quote(to_string(paradigm)));
    }
    return;
  }
  const std::string why = "paradigm hybrid-ps (" + p + ")";
  if (!b.model.empty() && b.model != "hybrid-embedding") {
    c.add(bp + ".model", why + " shards the embedding tables of model hybrid-embedding, got " + quote(b.model));
  }
  // The servers take requests from any trainer (gloo's recvAnysource): NCCL has no receive from
  // any source, so the whole run is CPU + gloo.
  if (job.device != Device::kCpu) {
    c.add("spec.device", why +
                             " runs on cpu with backend gloo (its servers receive from any trainer, which NCCL "
                             "cannot), got device " +
                             quote(to_string(job.device)));
  }
  if (b.optimizer && *b.optimizer != Optimizer::kSgd) {
    c.add(bp + ".optimizer", why +
                                 ": embedding rows take plain SGD on the servers and the dense part SGD with "
                                 "momentum 0.9: must be sgd, got " +
                                 quote(to_string(*b.optimizer)));
  }
  if (b.precision != Precision::kFp32) {
    c.add(bp + ".precision", why + " trains in fp32 only, got " + quote(to_string(b.precision)));
  }
  const int servers = e.parameter_servers.value_or(b.hybrid_ps.parameter_servers);
  const std::string servers_path = e.parameter_servers ? p + ".parameterServers" : bp + ".hybridPs.parameterServers";
  const int rows = b.hybrid_embedding.num_embeddings;
  if (rows >= 1 && servers > rows) {
    c.add(servers_path, "must be <= spec.benchmark.hybridEmbedding.numEmbeddings (" + std::to_string(rows) +
                            ": every server owns at least one row of each table) for " + why + ", got " +
                            std::to_string(servers));
  }
  const long long processes = static_cast<long long>(e.nodes) * e.devices_per_node + servers;
  if (e.nodes >= 1 && e.devices_per_node >= 1 && servers >= 1 && processes > kMaxWorldSize) {
    c.add(servers_path, "nodes x devicesPerNode + parameterServers (the run's processes) must be <= " +
                            std::to_string(kMaxWorldSize) + ", got " + std::to_string(processes));
  }
}

/// apiVersion, kind, metadata.name and metadata.namespace.
void check_document(Checker& c, const BenchmarkJob& job) {
  if (job.api_version != kApiVersion) {
    c.add("apiVersion", std::string("must be ") + quote(kApiVersion) + ", got " + quote(job.api_version));
  }
  if (job.kind != kKind) c.add("kind", std::string("must be ") + quote(kKind) + ", got " + quote(job.kind));
  if (job.metadata.name.empty()) {
    c.add("metadata.name", "is required");
  } else if (!matches(job.metadata.name, kJobNamePattern, kMaxJobNameLength)) {
    c.add("metadata.name",
          "must be a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a letter, ending with a letter or "
          "digit, at most " +
              std::to_string(kMaxJobNameLength) +
              " characters: the operator names each run's Service NAME-r<i>), got " + quote(job.metadata.name));
  }
  if (!is_dns_label(job.metadata.namespace_)) {
    c.add("metadata.namespace", "must be a lowercase RFC 1123 label, got " + quote(job.metadata.namespace_));
  }
}

/// spec.benchmark.model: one of known_models(), required unless every run is paradigm
/// allreduce (which trains nothing).
void check_model(Checker& c, const BenchmarkJob& job) {
  const BenchmarkSpec& b = job.benchmark;
  const bool all_allreduce =
      !job.sweep.empty() && std::all_of(job.sweep.begin(), job.sweep.end(), [&b](const SweepEntry& e) {
        return !trains_model(e.paradigm.value_or(b.paradigm));
      });
  if (!has_builtin_workload(job)) return;  // programs bring their own model (validate_workloads)
  if (!b.model.empty()) {
    c.one_of("spec.benchmark.model", b.model, known_models());
  } else if (!all_allreduce) {
    c.add("spec.benchmark.model",
          "is required (one of [" + join_list(known_models()) + "]) unless every run is paradigm allreduce");
  }
}

/// spec.benchmark: each field within its bounds (core/spec/spec_bounds.hpp), then the rules that
/// relate fields.
void check_benchmark(Checker& c, const BenchmarkJob& job) {
  using namespace bounds;
  const BenchmarkSpec& b = job.benchmark;
  const std::string bp = "spec.benchmark";
  check_model(c, job);
  for (const auto& e : validate_allreduce(b.allreduce, bp + ".allreduce")) c.add(e.path, e.message);
  c.in_range(bp + ".batchSizePerDevice", b.batch_size_per_device, kBatchSizePerDevice);
  c.in_range(bp + ".warmupSteps", b.warmup_steps, kWarmupSteps);
  c.in_range(bp + ".measureSteps", b.measure_steps, kMeasureSteps);
  c.in_range(bp + ".repeats", b.repeats, kRepeats);
  c.positive(bp + ".learningRate", b.learning_rate);
  c.fraction(bp + ".stragglerThreshold", b.straggler_threshold);
  c.positive(bp + ".efficiencyTarget", b.efficiency_target);
  if (b.efficiency_target > static_cast<double>(kMaxEfficiencyTarget)) {
    c.add(bp + ".efficiencyTarget", "must be <= 1 (a scaling efficiency), got " + fmt_number(b.efficiency_target));
  }
  c.positive(bp + ".noiseThresholdPercent", b.noise_threshold_percent);
  if (b.peak_tflops) c.positive(bp + ".peakTFLOPS", *b.peak_tflops);
  c.in_range(bp + ".threadsPerProcess", b.threads_per_process, kThreadsPerProcess);
  c.in_range(bp + ".imageSize", b.image_size, kImageSize);
  c.in_range(bp + ".mlp.inputSize", b.mlp.input_size, kInputSize);
  c.in_range(bp + ".mlp.numClasses", b.mlp.num_classes, kNumClasses);
  for (std::size_t i = 0; i < b.mlp.hidden_sizes.size(); ++i) {
    c.in_range(bp + ".mlp.hiddenSizes[" + std::to_string(i) + "]", b.mlp.hidden_sizes[i], kLayerWidth);
  }
  c.positive(bp + ".ddp.bucketCapMB", b.ddp.bucket_cap_mb);
  c.in_range(bp + ".pipeline.microBatches", b.pipeline.micro_batches, kMicroBatches);
  check_boundaries(c, b);
  if (b.precision == Precision::kAmpFp16 && job.device != Device::kCuda) {
    c.add(bp + ".precision",
          "amp-fp16 needs spec.device cuda (CPU autocast has bfloat16 only: use amp-bf16), got "
          "device " +
              quote(to_string(job.device)));
  }
  for (const auto& e : validate_model_sizes(b)) c.add(e.path, e.message);
  c.in_range(bp + ".hybridPs.parameterServers", b.hybrid_ps.parameter_servers, kParameterServers);
}

/// spec.backend against spec.device, spec.runPolicy and spec.masterPort.
void check_cluster(Checker& c, const BenchmarkJob& job) {
  using namespace bounds;
  if (job.backend == Backend::kNccl && job.device != Device::kCuda) {
    c.add("spec.backend", "nccl needs spec.device cuda, got device " + quote(to_string(job.device)));
  }
  const RunPolicy& rp = job.run_policy;
  c.in_range("spec.runPolicy.activeDeadlineSeconds", rp.active_deadline_seconds, kActiveDeadlineSeconds);
  c.in_range("spec.runPolicy.collectiveTimeoutSeconds", rp.collective_timeout_seconds, kCollectiveTimeoutSeconds);
  c.in_range("spec.runPolicy.backoffLimit", rp.backoff_limit, kBackoffLimit);
  c.in_range("spec.runPolicy.schedulingTimeoutSeconds", rp.scheduling_timeout_seconds, kSchedulingTimeoutSeconds);
  if (const auto hang = rp.hang_timeout_seconds) {
    c.in_range("spec.runPolicy.hangTimeoutSeconds", *hang, kHangTimeoutSeconds);
    // A hang must be named before the workers' own collective timeout ends the run anonymously.
    if (*hang > 0 && *hang >= rp.collective_timeout_seconds) {
      c.add("spec.runPolicy.hangTimeoutSeconds", "must be below spec.runPolicy.collectiveTimeoutSeconds (" +
                                                     std::to_string(rp.collective_timeout_seconds) + "), got " +
                                                     std::to_string(*hang) + "; 0 turns it off");
    }
  }
  c.in_range("spec.masterPort", job.master_port, kMasterPort);
  if (job.master_port == kMasterProgressPort) {
    c.add("spec.masterPort", "must not be " + std::to_string(kMasterProgressPort) +
                                 ": the master pod serves its run's progress on that port");
  }
}

/// spec.baseline: exactly one of benchmarkJob (not this job) and configMap, well-formed names,
/// a threshold in percent.
void check_baseline(Checker& c, const BenchmarkJob& job) {
  if (!job.baseline) return;
  const BaselineSpec& b = *job.baseline;
  const std::string p = "spec.baseline";
  if (b.benchmark_job.empty() == b.config_map.empty()) {
    c.add(p, "must name exactly one of benchmarkJob and configMap, got " +
                 std::string(b.benchmark_job.empty() ? "neither" : "both"));
  }
  if (!b.benchmark_job.empty() && !matches(b.benchmark_job, kJobNamePattern, kMaxJobNameLength)) {
    c.add(p + ".benchmarkJob", "must be a BenchmarkJob's name, got " + quote(b.benchmark_job));
  } else if (!b.benchmark_job.empty() && b.benchmark_job == job.metadata.name) {
    c.add(p + ".benchmarkJob", "must name an earlier job, not this one (" + quote(b.benchmark_job) + ")");
  }
  if (!b.config_map.empty() && !matches(b.config_map, kDnsSubdomainPattern, kMaxDnsSubdomainLength)) {
    c.add(p + ".configMap.name", "must be a ConfigMap's name (an RFC 1123 subdomain), got " + quote(b.config_map));
  }
  if (!b.config_map.empty() && !matches(b.config_map_key, kConfigMapKeyPattern, kMaxConfigMapKeyLength)) {
    c.add(p + ".configMap.key",
          "must be a ConfigMap key (alphanumerics, '-', '_', '.'), got " + quote(b.config_map_key));
  }
  const IntRange r = bounds::kRegressionThresholdPercent;
  const double t = b.regression_threshold_percent;
  if (!(t >= static_cast<double>(r.min) && t <= static_cast<double>(r.max))) {
    c.add(p + ".regressionThresholdPercent",
          "must be between " + std::to_string(r.min) + " and " + std::to_string(r.max) + ", got " + fmt_number(t));
  }
}

/// spec.sweep[i] (path `p`): its shape, then what its paradigm asks of it and of spec.benchmark.
void check_sweep_entry(Checker& c, const BenchmarkJob& job, const SweepEntry& e, const std::string& p) {
  const BenchmarkSpec& b = job.benchmark;
  c.in_range(p + ".nodes", e.nodes, bounds::kNodes);
  c.in_range(p + ".devicesPerNode", e.devices_per_node, bounds::kDevicesPerNode);
  if (e.nodes >= 1 && e.devices_per_node >= 1 && static_cast<long long>(e.nodes) * e.devices_per_node > kMaxWorldSize) {
    c.add(p, "nodes x devicesPerNode must be <= " + std::to_string(kMaxWorldSize) + ", got " +
                 std::to_string(static_cast<long long>(e.nodes) * e.devices_per_node));
  }
  const Paradigm paradigm = e.paradigm.value_or(b.paradigm);
  if (paradigm == Paradigm::kNone && (e.nodes != 1 || e.devices_per_node != 1)) {
    c.add(p + (e.nodes != 1 ? ".nodes" : ".devicesPerNode"),
          "paradigm none runs on exactly one device (nodes 1, devicesPerNode 1), got nodes " + std::to_string(e.nodes) +
              ", devicesPerNode " + std::to_string(e.devices_per_node));
  }
  if (e.bucket_cap_mb) c.positive(p + ".bucketCapMB", *e.bucket_cap_mb);
  if (paradigm == Paradigm::kZero && b.optimizer && *b.optimizer != Optimizer::kAdam) {
    c.add("spec.benchmark.optimizer",
          "paradigm zero shards Adam's state (" + p + "): must be adam, got " + quote(to_string(*b.optimizer)));
  }
  check_hybrid_ps(c, job, e, p, paradigm);
  if (splits_into_stages(paradigm)) check_staged(c, b, e, p, paradigm);
}

void check_sweep(Checker& c, const BenchmarkJob& job) {
  if (job.sweep.empty()) {
    c.add("spec.sweep", "must list at least one {nodes, devicesPerNode}");
  } else if (job.sweep.size() > static_cast<std::size_t>(kMaxSweepEntries)) {
    c.add("spec.sweep", "must have at most " + std::to_string(kMaxSweepEntries) + " entries, got " +
                            std::to_string(job.sweep.size()));
  }
  for (std::size_t i = 0; i < job.sweep.size(); ++i) {
    check_sweep_entry(c, job, job.sweep[i], "spec.sweep[" + std::to_string(i) + "]");
  }
}

}  // namespace

std::vector<FieldError> validate(const BenchmarkJob& job) {
  std::vector<FieldError> errors;
  Checker c(errors);
  // In the order of the document, as a reader of the error list expects them.
  check_document(c, job);
  check_benchmark(c, job);
  check_cluster(c, job);
  check_template(c, job.pod_template);
  check_nccl(c, job.nccl);
  check_baseline(c, job);
  check_label_map(c, "metadata.labels", job.metadata.labels, true);
  check_label_map(c, "metadata.annotations", job.metadata.annotations, false);
  check_sweep(c, job);
  for (const auto& e : validate_workloads(job)) c.add(e.path, e.message);
  return errors;
}

}  // namespace trainbench
