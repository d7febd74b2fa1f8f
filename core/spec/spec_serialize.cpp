// BenchmarkJob -> JSON: every default filled in, unset optional fields left out, enums as their
// spec text (core/spec/vocabulary.hpp); parse_benchmark_job(to_json(job).dump()) gives the job back.

#include "core/spec/model_sizes.hpp"
#include "core/spec/spec.hpp"

namespace trainbench {
namespace {

using nlohmann::json;

json benchmark_json(const BenchmarkSpec& b) {
  json benchmark = {
      {"model", b.model},
      {"paradigm", to_string(b.paradigm)},
      {"batchSizePerDevice", b.batch_size_per_device},
      {"precision", to_string(b.precision)},
      {"warmupSteps", b.warmup_steps},
      {"measureSteps", b.measure_steps},
      {"repeats", b.repeats},
      {"seed", b.seed},
      {"learningRate", b.learning_rate},
      {"stragglerThreshold", b.straggler_threshold},
      {"efficiencyTarget", b.efficiency_target},
      {"noiseThresholdPercent", b.noise_threshold_percent},
      {"threadsPerProcess", b.threads_per_process},
      {"imageSize", b.image_size},
      {"mlp",
       {{"inputSize", b.mlp.input_size}, {"hiddenSizes", b.mlp.hidden_sizes}, {"numClasses", b.mlp.num_classes}}},
      {"ddp",
       {{"implementation", to_string(b.ddp.implementation)},
        {"bucketCapMB", b.ddp.bucket_cap_mb},
        {"gradientCompression", to_string(b.ddp.gradient_compression)},
        {"broadcastBuffers", b.ddp.broadcast_buffers}}},
      {"pipeline", {{"microBatches", b.pipeline.micro_batches}, {"boundaries", b.pipeline.boundaries}}},
      {"sequenceLength", b.sequence_length},
      {"transformer", to_json(b.transformer)},
      {"mlstm", to_json(b.mlstm)},
      {"hybridEmbedding", to_json(b.hybrid_embedding)},
  };
  if (b.optimizer) benchmark["optimizer"] = to_string(*b.optimizer);
  if (b.peak_tflops) benchmark["peakTFLOPS"] = *b.peak_tflops;
  benchmark["allreduce"] = to_json(b.allreduce);
  benchmark["hybridPs"] = {{"parameterServers", b.hybrid_ps.parameter_servers}};
  if (b.model.empty()) benchmark.erase("model");  // allowed when every run is allreduce
  return benchmark;
}

json sweep_json(const std::vector<SweepEntry>& sweep) {
  json out = json::array();
  for (const SweepEntry& e : sweep) {
    json entry = {{"nodes", e.nodes}, {"devicesPerNode", e.devices_per_node}};
    if (e.paradigm) entry["paradigm"] = to_string(*e.paradigm);
    if (e.bucket_cap_mb) entry["bucketCapMB"] = *e.bucket_cap_mb;
    if (e.parameter_servers) entry["parameterServers"] = *e.parameter_servers;
    out.push_back(entry);
  }
  return out;
}

json template_json(const PodTemplate& t) {
  json tmpl = json::object();
  if (!t.image.empty()) tmpl["image"] = t.image;
  if (!t.image_pull_policy.empty()) tmpl["imagePullPolicy"] = t.image_pull_policy;
  if (!t.service_account_name.empty()) tmpl["serviceAccountName"] = t.service_account_name;
  if (!t.resource_limits.empty()) tmpl["resources"]["limits"] = t.resource_limits;
  if (!t.resource_requests.empty()) tmpl["resources"]["requests"] = t.resource_requests;
  if (!t.node_selector.empty()) tmpl["nodeSelector"] = t.node_selector;
  if (!t.tolerations.empty()) tmpl["tolerations"] = t.tolerations;
  if (!t.volumes.empty()) tmpl["volumes"] = t.volumes;
  if (!t.volume_mounts.empty()) tmpl["volumeMounts"] = t.volume_mounts;
  if (!t.env.empty()) tmpl["env"] = t.env;
  if (!t.annotations.empty()) tmpl["annotations"] = t.annotations;
  if (!t.labels.empty()) tmpl["labels"] = t.labels;
  return tmpl;
}

/// The set fields of spec.nccl; empty when none is.
json nccl_json(const NcclSpec& n) {
  json nccl = json::object();
  if (!n.socket_ifname.empty()) nccl["socketIfname"] = n.socket_ifname;
  if (n.ib_disable) nccl["ibDisable"] = *n.ib_disable;
  if (!n.debug.empty()) nccl["debug"] = n.debug;
  if (!n.extra_env.empty()) nccl["extraEnv"] = n.extra_env;
  return nccl;
}

json workloads_json(const std::vector<WorkloadSpec>& workloads) {
  json out = json::array();
  for (const WorkloadSpec& w : workloads) {
    json wj = {{"name", w.name}};
    if (const auto& p = w.program) {
      json pj = {{"command", p->command}};
      if (!p->image.empty()) pj["image"] = p->image;
      if (!p->args.empty()) pj["args"] = p->args;
      if (!p->env.empty()) {
        pj["env"] = json::array();
        for (const auto& v : p->env) pj["env"].push_back({{"name", v.name}, {"value", v.value}});
      }
      if (!p->working_dir.empty()) pj["workingDir"] = p->working_dir;
      if (p->flops_per_example) pj["flopsPerExample"] = *p->flops_per_example;
      wj["program"] = pj;
    }
    out.push_back(wj);
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const BenchmarkJob& job) {
  json metadata = {{"name", job.metadata.name}, {"namespace", job.metadata.namespace_}};
  if (!job.metadata.labels.empty()) metadata["labels"] = job.metadata.labels;
  if (!job.metadata.annotations.empty()) metadata["annotations"] = job.metadata.annotations;
  const RunPolicy& rp = job.run_policy;
  json spec = {
      {"benchmark", benchmark_json(job.benchmark)},
      {"sweep", sweep_json(job.sweep)},
      {"device", to_string(job.device)},
      {"masterPort", job.master_port},
      {"runPolicy",
       {{"activeDeadlineSeconds", rp.active_deadline_seconds},
        {"collectiveTimeoutSeconds", rp.collective_timeout_seconds},
        {"backoffLimit", rp.backoff_limit},
        {"schedulingTimeoutSeconds", rp.scheduling_timeout_seconds},
        {"cleanPodPolicy", to_string(rp.clean_pod_policy)}}},
      {"template", template_json(job.pod_template)},
  };
  if (job.backend) spec["backend"] = to_string(*job.backend);
  if (rp.hang_timeout_seconds) spec["runPolicy"]["hangTimeoutSeconds"] = *rp.hang_timeout_seconds;
  const json nccl = nccl_json(job.nccl);
  if (!nccl.empty()) spec["nccl"] = nccl;
  if (const auto& b = job.baseline) {
    json bj = {{"regressionThresholdPercent", b->regression_threshold_percent}};
    if (!b->benchmark_job.empty()) bj["benchmarkJob"] = b->benchmark_job;
    if (!b->config_map.empty()) bj["configMap"] = {{"name", b->config_map}, {"key", b->config_map_key}};
    spec["baseline"] = bj;
  }
  if (job.suspend) spec["suspend"] = true;
  if (!job.workloads.empty()) spec["workloads"] = workloads_json(job.workloads);
  return {{"apiVersion", job.api_version}, {"kind", job.kind}, {"metadata", metadata}, {"spec", spec}};
}

}  // namespace trainbench
