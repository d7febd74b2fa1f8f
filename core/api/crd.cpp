#include "core/api/crd.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "core/api/job_status.hpp"
#include "core/spec/image_reference.hpp"
#include "core/spec/master_ports.hpp"
#include "core/spec/spec.hpp"
#include "core/spec/spec_workloads.hpp"
#include "core/spec/yaml_json.hpp"
#include "core/util/text_cells.hpp"

namespace trainbench {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

json string_t(const std::string& description) { return {{"type", "string"}, {"description", description}}; }

/// An enum string; maxLength (the longest value) keeps CEL rules that read it cheap to estimate.
json enum_t(const std::vector<std::string>& values, const std::string& description,
            const std::optional<std::string>& dflt = std::nullopt) {
  std::size_t longest = 0;
  for (const auto& v : values) longest = std::max(longest, v.size());
  json j = {{"type", "string"}, {"enum", values}, {"maxLength", longest}, {"description", description}};
  if (dflt) j["default"] = *dflt;
  return j;
}

/// A 32-bit integer within `r` (core reads these as int and rejects anything wider).
json int_t(const std::string& description, IntRange r, const std::optional<long long>& dflt = std::nullopt) {
  json j = {
      {"type", "integer"}, {"format", "int32"}, {"minimum", r.min}, {"maximum", r.max}, {"description", description}};
  if (dflt) j["default"] = *dflt;
  return j;
}

json positive_number(const std::string& description, const std::optional<double>& dflt = std::nullopt,
                     const std::optional<long long>& max = std::nullopt) {
  json j = {{"type", "number"}, {"minimum", 0}, {"exclusiveMinimum", true}, {"description", description}};
  if (dflt) j["default"] = *dflt;
  if (max) j["maximum"] = *max;
  return j;
}

json bool_t(const std::string& description, const std::optional<bool>& dflt = std::nullopt) {
  json j = {{"type", "boolean"}, {"description", description}};
  if (dflt) j["default"] = *dflt;
  return j;
}

json object_t(const std::string& description, json properties, const std::vector<std::string>& required = {}) {
  json j = {{"type", "object"}, {"description", description}, {"properties", std::move(properties)}};
  if (!required.empty()) j["required"] = required;
  return j;
}

/// A map (string keys): at most kMaxMapEntries entries, as core reads it.
json map_t(const std::string& description, json values) {
  return {{"type", "object"},
          {"description", description},
          {"maxProperties", kMaxMapEntries},
          {"additionalProperties", std::move(values)}};
}

json bounded_string_t(int max_length) { return {{"type", "string"}, {"maxLength", max_length}}; }

/// A list of 32-bit integers in `item` (layer widths, block indices), at most `max_items` long.
json int_list_t(const std::string& description, int max_items, IntRange item) {
  return {{"type", "array"},
          {"description", description},
          {"maxItems", max_items},
          {"items", {{"type", "integer"}, {"format", "int32"}, {"minimum", item.min}, {"maximum", item.max}}}};
}

json label_value_t() {
  return {{"type", "string"}, {"maxLength", kMaxLabelValueLength}, {"pattern", kLabelValuePattern}};
}

/// Kubernetes' resource.Quantity as CRDs spell it: integer or string, never negative.
json quantity_t() {
  return {{"anyOf", json::array({{{"type", "integer"}}, {{"type", "string"}}})},
          {"x-kubernetes-int-or-string", true},
          {"maxLength", kMaxQuantityLength},
          {"pattern", kQuantityPattern},
          {"minimum", bounds::kMinQuantity}};
}

/// A list of Kubernetes objects kept verbatim; `required` string fields must be there.
json k8s_objects_t(const std::string& description, const std::vector<std::string>& required) {
  json item = {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  if (!required.empty()) {
    item["required"] = required;
    for (const auto& r : required) item["properties"][r] = {{"type", "string"}, {"minLength", 1}};
  }
  return {{"type", "array"}, {"description", description}, {"maxItems", kMaxPodListItems}, {"items", item}};
}

json with_default(json schema, const json& value) {
  schema["default"] = value;
  return schema;
}

json date_time_t(const std::string& description) {
  return {{"type", "string"}, {"format", "date-time"}, {"description", description}};
}

json cel(const std::string& rule, const std::string& message) { return {{"rule", rule}, {"message", message}}; }

/// `has(x.f) ? x.f : default`: CEL sees defaulted objects from a real API server, but the
/// rules do not depend on that.
std::string field_or(const std::string& obj, const std::string& field, const std::string& dflt) {
  return "(has(" + obj + "." + field + ") ? " + obj + "." + field + " : " + dflt + ")";
}

std::string cel_string(const std::string& s) { return "'" + s + "'"; }

/// A closed set's value as a CEL string literal ('ddp'): the rules spell values as core does.
template <typename E>
std::string cel_value(E v) {
  return cel_string(to_string(v));
}

json transformer_schema() {
  const TransformerSpec t;
  auto knob = [](const std::string& what, int dflt) {
    return int_t(what + "; 0 keeps the model's preset.", bounds::kTransformerSize, dflt);
  };
  return object_t(
      "Size overrides of bert-base and gpt2-small (presets: 12 layers, hidden 768, 12 heads, intermediate 3072; "
      "vocab 30522 / 50257, positions 512 / 1024).",
      {{"layers", knob("Transformer layers", t.layers)},
       {"hidden", knob("Hidden size (a multiple of heads)", t.hidden)},
       {"heads", knob("Attention heads", t.heads)},
       {"intermediate", knob("Feed-forward inner size", t.intermediate)},
       {"vocabSize", knob("Vocabulary size", t.vocab_size)},
       {"maxPositions", knob("Position embeddings (>= sequenceLength)", t.max_positions)},
       {"attention", enum_t(allowed_texts<Attention>(),
                            "auto: the fused kernel (at::scaled_dot_product_attention) where libtorch has it (2.x), "
                            "else eager; eager: matmul, softmax, matmul; fused: the fused kernel, an error on "
                            "libtorch 1.x.",
                            to_string(t.attention))}});
}

json mlstm_schema() {
  const MlstmSpec m;
  return object_t("The multiplicative LSTM of the scaling note (byte-level, vocab 256).",
                  {{"hiddenSize", int_t("Hidden (and memory) size.", bounds::kMlstmSize, m.hidden_size)},
                   {"embeddingSize", int_t("Byte embedding size.", bounds::kMlstmSize, m.embedding_size)}});
}

json hybrid_embedding_schema() {
  const HybridEmbeddingSpec h;
  return object_t(
      "The DDP + RPC benchmark's HybridModel: numTables EmbeddingBags (sum), concatenated, then Linear layers "
      "denseSizes... -> numClasses.",
      {{"numTables",
        int_t("Embedding tables (one per parameter server in the seed).", bounds::kEmbeddingSize, h.num_tables)},
       {"numEmbeddings", int_t("Rows per table.", bounds::kEmbeddingSize, h.num_embeddings)},
       {"embeddingDim", int_t("Columns per table.", bounds::kEmbeddingSize, h.embedding_dim)},
       {"bagSize", int_t("Indices per bag (one bag per example and table).", bounds::kEmbeddingSize, h.bag_size)},
       {"denseSizes", with_default(int_list_t("Hidden widths of the dense part (ReLU after the second layer, as in "
                                              "the seed).",
                                              kMaxLayerListItems, bounds::kLayerWidth),
                                   h.dense_sizes)},
       {"numClasses", int_t("Output classes.", bounds::kNumClasses, h.num_classes)}});
}

json allreduce_schema() {
  const AllreduceSpec a;
  // Powers of two only: an integer enum says so where a CRD has no "power of two" keyword.
  auto size_t_ = [](const std::string& description, std::int64_t dflt) {
    return json{{"type", "integer"}, {"format", "int32"}, {"enum", allreduce_size_values()},
                {"default", dflt}, {"description", description}};
  };
  json j = object_t(
      "paradigm allreduce: message sizes swept by doubling from minBytes to maxBytes (powers of two, 4 B to "
      "1 GiB), and the element type.",
      {{"minBytes", size_t_("Smallest message in bytes (a power of two).", a.min_bytes)},
       {"maxBytes", size_t_("Largest message in bytes (a power of two, >= minBytes).", a.max_bytes)},
       {"dtype", enum_t(known_allreduce_dtypes(), "Element type of the all-reduced buffers.", a.dtype)}});
  j["x-kubernetes-validations"] = json::array(
      {cel(field_or("self", "minBytes", std::to_string(a.min_bytes)) + " <= " +
               field_or("self", "maxBytes", std::to_string(a.max_bytes)),
           "spec.benchmark.allreduce: minBytes must be <= maxBytes")});
  return j;
}

/// spec.benchmark's fields that judge the runs, not what they run (docs/report.md).
json verdict_schema(const BenchmarkSpec& b) {
  return {
      {"efficiencyTarget", positive_number("Runs below this scaling efficiency are flagged (belowTarget), in (0, 1].",
                                           b.efficiency_target, bounds::kMaxEfficiencyTarget)},
      {"noiseThresholdPercent",
       positive_number("A run whose repeats' p50 sec/iter differ by more than this % ((max - min) / median) is "
                       "marked noisy.",
                       b.noise_threshold_percent)},
      {"stragglerThreshold",
       positive_number("Ranks whose straggler score (fastest rank's compute per step / theirs) is below this are "
                       "named stragglers, in (0, 1].",
                       b.straggler_threshold, 1)},
      {"peakTFLOPS", positive_number("Peak TFLOP/s per device that MFU is measured against; unset: the GPU table, "
                                     "or on CPU a GEMM measured in the run.")}};
}

json mlp_schema() {
  const MlpSpec m;
  return object_t(
      "Shape of the mlp model: inputSize -> hiddenSizes... -> numClasses, ReLU between layers.",
      {{"inputSize", int_t("Input features.", bounds::kInputSize, m.input_size)},
       {"hiddenSizes",
        with_default(int_list_t("Hidden layer widths.", kMaxLayerListItems, bounds::kLayerWidth), m.hidden_sizes)},
       {"numClasses", int_t("Output classes.", bounds::kNumClasses, m.num_classes)}});
}

json ddp_schema() {
  const DdpSpec d;
  return object_t(
      "DistributedDataParallel settings.",
      {{"implementation",
        enum_t(allowed_texts<DdpImplementation>(),
               "Whose DDP averages the gradients: pytorch (c10d::Reducer, as torch.nn.parallel."
               "DistributedDataParallel drives it) or trainbench (trainbench's own bucketed reducer).",
               to_string(d.implementation))},
       {"bucketCapMB", positive_number("Gradient bucket size in MB, as DDP's bucket_cap_mb.", d.bucket_cap_mb)},
       {"gradientCompression",
        enum_t(known_compressions(), "Buckets cast to 16 bits for the all-reduce (none keeps fp32).",
               to_string(d.gradient_compression))},
       {"broadcastBuffers",
        bool_t("Broadcast BatchNorm buffers from rank 0 before each forward.", d.broadcast_buffers)}});
}

json benchmark_schema() {
  const BenchmarkSpec b;
  const json mlp = mlp_schema();
  const json ddp = ddp_schema();
  json schema = object_t(
      "What is trained and measured. Data is synthetic, made on the device once per run.",
      {{"model", enum_t(known_models(),
                        "The model; parameter counts equal the reference implementations' "
                        "(torchvision, BERT-base with pooler, GPT-2 small).")},
       {"paradigm", enum_t(known_paradigms(),
                           "none: one process, no communication (the \"no ddp\" row); ddp: data parallel with "
                           "bucketed all-reduce; zero: ddp with Adam's state sharded over the ranks (ZeRO-1); "
                           "pipeline / model-parallel: one model stage per rank, GPipe micro-batches / one batch; "
                           "hybrid-ps: model hybrid-embedding, its dense part replicated with DDP over the trainers, "
                           "its embedding rows sharded over parameter servers (the DDP + RPC benchmark).",
                           to_string(b.paradigm))},
       {"batchSizePerDevice",
        int_t("Examples per rank per step.", bounds::kBatchSizePerDevice, b.batch_size_per_device)},
       {"precision", enum_t(known_precisions(),
                            "Training precision: fp32; amp-bf16 (autocast to bfloat16, CPU or GPU); amp-fp16 "
                            "(autocast to float16 with dynamic loss scaling, GPU only).",
                            to_string(b.precision))},
       {"warmupSteps", int_t("Steps run before timing starts.", bounds::kWarmupSteps, b.warmup_steps)},
       {"measureSteps", int_t("Timed steps per repeat.", bounds::kMeasureSteps, b.measure_steps)},
       {"repeats",
        int_t("Rounds of measureSteps; the report shows the median over rounds.", bounds::kRepeats, b.repeats)},
       {"seed",
        {{"type", "integer"},
         {"format", "int64"},
         {"minimum", bounds::kSeed.min},
         {"default", b.seed},
         {"description", "Seed of model initialisation and synthetic data."}}},
       {"learningRate", positive_number("Learning rate of the optimizer.", b.learning_rate)},
       {"threadsPerProcess", int_t("Intra-op threads per rank; 0: the node's cores / ranks per node.",
                                   bounds::kThreadsPerProcess, b.threads_per_process)},
       {"imageSize", int_t("Input height and width of the image models.", bounds::kImageSize, b.image_size)},
       {"mlp", mlp},
       {"ddp", ddp},
       {"optimizer", enum_t(known_optimizers(),
                            "sgd (momentum 0.9) or adam (betas 0.9/0.999, eps 1e-8); unset: adam for paradigm zero, "
                            "sgd for the others.")},
       {"pipeline",
        object_t("paradigms pipeline and model-parallel: the model as a sequence of blocks split into one stage "
                 "per rank.",
                 {{"microBatches", int_t("pipeline: micro-batches per step (GPipe); model-parallel uses 1.",
                                         bounds::kMicroBatches, b.pipeline.micro_batches)},
                  {"boundaries",
                   int_list_t("Index of the first block of stages 1..S-1 (S = nodes x devicesPerNode), each below "
                              "the model's block count; unset: balanced by parameter count.",
                              kMaxBoundaries, bounds::kBoundary)}})},
       {"sequenceLength",
        int_t("Tokens per sequence of bert-base, gpt2-small and mlstm (their ex/sec counts sequences).",
              bounds::kSequenceLength, b.sequence_length)},
       {"transformer", transformer_schema()},
       {"mlstm", mlstm_schema()},
       {"hybridEmbedding", hybrid_embedding_schema()},
       {"allreduce", allreduce_schema()},
       {"hybridPs",
        object_t("paradigm hybrid-ps: the parameter servers besides the trainers (nodes x devicesPerNode).",
                 {{"parameterServers",
                   int_t("Parameter-server processes; each owns a contiguous range of every table's rows (at most "
                         "hybridEmbedding.numEmbeddings).",
                         bounds::kParameterServers, b.hybrid_ps.parameter_servers)}})}});
  schema["properties"].update(verdict_schema(b));
  return schema;  // model: required unless every run is allreduce (spec's rule)
}

json sweep_schema() {
  const SweepEntry e;
  json item =
      object_t("One run: a cluster shape, optionally overriding spec.benchmark.",
               {{"nodes", int_t("Machines (M in the row label); one trainer pod each.", bounds::kNodes, e.nodes)},
                {"devicesPerNode", int_t("Processes per machine, one per device (G in the row label).",
                                         bounds::kDevicesPerNode, e.devices_per_node)},
                {"paradigm", enum_t(known_paradigms(), "Overrides spec.benchmark.paradigm for this run.")},
                {"bucketCapMB", positive_number("Overrides spec.benchmark.ddp.bucketCapMB for this run.")},
                {"parameterServers",
                 int_t("paradigm hybrid-ps only: overrides spec.benchmark.hybridPs.parameterServers for this run.",
                       bounds::kParameterServers)}});
  item["x-kubernetes-validations"] = json::array(
      {cel(field_or("self", "nodes", std::to_string(e.nodes)) + " * " +
               field_or("self", "devicesPerNode", std::to_string(e.devices_per_node)) +
               " <= " + std::to_string(kMaxWorldSize),
           "nodes x devicesPerNode must be <= " + std::to_string(kMaxWorldSize))});
  return {{"type", "array"},
          {"description", "One run per entry, in order; speedup and efficiency are against the one-device run."},
          {"minItems", kMinSweepEntries},
          {"maxItems", kMaxSweepEntries},
          {"items", item}};
}

/// An image field: a reference in distribution's grammar (core/spec/image_reference.hpp), the
/// registered digests of their exact length.
json image_t(const std::string& description) {
  return {{"type", "string"},
          {"description", description},
          {"minLength", kMinImageLength},
          {"maxLength", kMaxImageLength},
          {"pattern", kImageReferencePattern},
          {"x-kubernetes-validations", json::array({cel(image_digest_cel_rule(), image_digest_rule_message())})}};
}

json template_schema() {
  const PodTemplate t;
  json quantities = map_t("Resource name -> quantity (8, \"500m\", \"4Gi\").", quantity_t());
  return object_t(
      "Merged by the operator into every pod it creates (masters and trainers).",
      {{"image", image_t("Worker image. Unset: the operator's for spec.device (its --worker-image, default " +
                         PodTemplate::default_worker_image(Device::kCpu) + "; --worker-cuda-image, default " +
                         PodTemplate::default_worker_image(Device::kCuda) + ").")},
       {"imagePullPolicy", enum_t(known_pull_policies(), "Unset: Kubernetes' default for the image's tag.")},
       {"serviceAccountName",
        {{"type", "string"},
         {"maxLength", kMaxServiceAccountNameLength},
         {"pattern", kDnsSubdomainPattern},
         {"description", "ServiceAccount of the trainer pods (masters use the job's reporter account)."}}},
       {"resources", object_t("Container resources of the trainer pods, as core/v1 ResourceRequirements.",
                              {{"limits", quantities}, {"requests", quantities}})},
       {"nodeSelector", map_t("Pod nodeSelector.", label_value_t())},
       {"tolerations", k8s_objects_t("Pod tolerations (core/v1 Toleration), kept verbatim.", {})},
       {"volumes", k8s_objects_t("Pod volumes (core/v1 Volume), kept verbatim.", {"name"})},
       {"volumeMounts",
        k8s_objects_t("Worker container volumeMounts (core/v1 VolumeMount), kept verbatim.", {"name", "mountPath"})},
       {"env", k8s_objects_t("Extra worker container env (core/v1 EnvVar), kept verbatim.", {"name"})},
       {"annotations", map_t("Pod annotations.", bounded_string_t(kMaxAnnotationValueLength))},
       {"labels", map_t("Pod labels; trainbench.dev/* and the operator's app.kubernetes.io/* labels are reserved.",
                        label_value_t())}});
}

json nccl_schema() {
  return object_t(
      "NCCL environment of the worker pods; unset fields are not set.",
      {{"socketIfname",
        {{"type", "string"}, {"maxLength", kMaxSocketIfnameLength}, {"description", "NCCL_SOCKET_IFNAME, e.g. eth0."}}},
       {"ibDisable", bool_t("NCCL_IB_DISABLE (true: 1).")},
       {"debug", enum_t(known_nccl_debug_levels(), "NCCL_DEBUG.")},
       {"extraEnv", map_t("More variables, name -> value; names are letters, digits and '_', not starting with a "
                          "digit (checked by trainbench: schemas cannot constrain map keys).",
                          bounded_string_t(kMaxEnvValueLength))}});
}

json baseline_schema() {
  const BaselineSpec b;
  json schema = object_t(
      "What the operator compares the finished job's report with (the Regressed condition): exactly one of "
      "benchmarkJob and configMap, in the job's namespace.",
      {{"benchmarkJob",
        {{"type", "string"},
         {"maxLength", kMaxJobNameLength},
         {"pattern", kJobNamePattern},
         {"description", "An earlier BenchmarkJob: its status.report."}}},
       {"configMap",
        object_t("A ConfigMap holding a report (trainbench run --json) under a key.",
                 {{"name",
                   {{"type", "string"},
                    {"maxLength", kMaxDnsSubdomainLength},
                    {"pattern", kDnsSubdomainPattern},
                    {"description", "The ConfigMap's name."}}},
                  {"key",
                   {{"type", "string"},
                    {"maxLength", kMaxConfigMapKeyLength},
                    {"pattern", kConfigMapKeyPattern},
                    {"description", "The data key holding the report; unset: " + b.config_map_key + "."}}}},
                 {"name"})},
       {"regressionThresholdPercent",
        {{"type", "number"},
         {"minimum", bounds::kRegressionThresholdPercent.min},
         {"maximum", bounds::kRegressionThresholdPercent.max},
         {"description",
          "Regressed when a row's p50 ex/sec is significantly lower by more than this (percent); "
          "unset: " +
              printf_str("%g", b.regression_threshold_percent) + "."}}}});
  schema["x-kubernetes-validations"] = json::array({cel("has(self.benchmarkJob) != has(self.configMap)",
                                                        "spec.baseline: must name exactly one of benchmarkJob and "
                                                        "configMap")});
  return schema;
}

json run_policy_schema() {
  const RunPolicy p;
  json j =
      object_t("How runs are bounded, restarted and cleaned up.",
               {{"activeDeadlineSeconds", int_t("A job still going after this many seconds fails; 0: no deadline.",
                                                bounds::kActiveDeadlineSeconds, p.active_deadline_seconds)},
                {"collectiveTimeoutSeconds", int_t("Rendezvous and collective timeout inside the workers.",
                                                   bounds::kCollectiveTimeoutSeconds, p.collective_timeout_seconds)},
                {"backoffLimit", int_t("Whole-run restarts (new attempts) after a failed pod before the job fails.",
                                       bounds::kBackoffLimit, p.backoff_limit)},
                {"schedulingTimeoutSeconds",
                 int_t("All pods of a run must be Running within this, or the run fails naming the pending pods.",
                       bounds::kSchedulingTimeoutSeconds, p.scheduling_timeout_seconds)},
                {"hangTimeoutSeconds",
                 int_t("No rank advancing for this long fails the run naming the stuck ranks; below "
                       "collectiveTimeoutSeconds; 0: off; unset: 120 when collectiveTimeoutSeconds is longer, "
                       "else off.",
                       bounds::kHangTimeoutSeconds)},
                {"cleanPodPolicy",
                 enum_t(known_clean_pod_policies(), "Pods deleted when a run ends: All, only Running ones, or None.",
                        to_string(p.clean_pod_policy))}});
  j["x-kubernetes-validations"] =
      json::array({cel("!has(self.hangTimeoutSeconds) || self.hangTimeoutSeconds == 0 || self.hangTimeoutSeconds < " +
                           field_or("self", "collectiveTimeoutSeconds", std::to_string(p.collective_timeout_seconds)),
                       "hangTimeoutSeconds must be below collectiveTimeoutSeconds (0 turns it off)")});
  return j;
}

json with(json schema, const json& more) {
  schema.update(more);
  return schema;
}

json workloads_schema() {
  json env_item = object_t("An environment variable of every rank (not one trainbench sets).",
                           {{"name", with(bounded_string_t(kMaxEnvNameLength), {{"pattern", kEnvNamePattern}})},
                            {"value", bounded_string_t(kMaxEnvValueLength)}},
                           {"name"});
  std::string reserved;
  for (const std::string& n : executor_variable_names()) reserved += (reserved.empty() ? "'" : ", '") + n + "'";
  env_item["x-kubernetes-validations"] = json::array(
      {cel("!(self.name in [" + reserved + "]) && !self.name.startsWith('TRAINBENCH_')",
           "a program's env may not set a variable trainbench sets for every rank (the torchrun environment, "
           "TRAINBENCH_*)")});
  const auto strings = [](const std::string& description) {
    return json{{"type", "array"},
                {"description", description},
                {"maxItems", kMaxProgramArgs},
                {"items", bounded_string_t(kMaxProgramArgLength)}};
  };
  json program = object_t(
      "A training program run as every rank with the torchrun environment; it reports through the probe "
      "protocol (docs/workloads.md).",
      {{"image", image_t("The trainer pods' image; unset: the operator's worker image for spec.device.")},
       {"command", with(strings("The executable and its first arguments."), {{"minItems", 1}})},
       {"args", strings("Appended to command.")},
       {"env", {{"type", "array"}, {"description", "Added to each rank's environment."},
                {"maxItems", kMaxPodListItems}, {"items", env_item},
                {"x-kubernetes-validations",
                 json::array({cel("self.all(e, self.exists_one(f, f.name == e.name))", "env names must be unique")})}}},
       {"workingDir", with(string_t("Working directory of the program (absolute)."),
                           {{"minLength", 1}, {"maxLength", kMaxProgramArgLength}, {"pattern", "^/"}})},
       {"flopsPerExample", positive_number("Training FLOPs of one example (forward + backward), for MFU.")}},
      {"command"});
  json item = object_t("A workload: the built-in worker (no program) or a program, run on every sweep entry.",
                       {{"name", with(bounded_string_t(kMaxWorkloadNameLength), {{"pattern", kWorkloadNamePattern}})},
                        {"program", program}},
                       {"name"});
  item["properties"]["name"]["description"] = "Unique; names the workload's rows in the report.";
  return {{"type", "array"},
          {"description", "What each sweep entry runs, in order (runs = workloads x sweep); unset: the built-in "
                          "worker alone."},
          {"maxItems", kMaxWorkloads},
          {"items", item},
          {"x-kubernetes-validations",
           json::array({cel("self.all(w, self.exists_one(v, v.name == w.name))", "workload names must be unique"),
                        cel("self.filter(w, !has(w.program)).size() <= 1",
                            "at most one built-in workload (no program): the built-in worker runs once per sweep entry")})}};
}

json spec_schema() {
  const BenchmarkJob j;
  json spec =
      object_t("The benchmark and its sweep of cluster shapes; trainbench run reads the same document.",
               {{"benchmark", benchmark_schema()},
                {"sweep", sweep_schema()},
                {"device", enum_t(known_devices(), "Where the workers train.", to_string(j.device))},
                {"backend", enum_t(known_backends(), "Collective backend; unset: gloo on cpu, nccl on cuda.")},
                {"masterPort", int_t("MASTER_PORT of every run (the rendezvous store on the master pod); not 9390, "
                                     "the master pod's progress port.",
                                     bounds::kMasterPort, j.master_port)},
                {"runPolicy", run_policy_schema()},
                {"template", template_schema()},
                {"nccl", nccl_schema()},
                {"baseline", baseline_schema()},
                {"suspend", bool_t("Operator: no pods while true (queueing, e.g. Kueue admits the job by "
                                   "setting false); suspending a running job interrupts its current run, "
                                   "which starts again from its beginning on resume (unset: false).")},
                {"workloads", workloads_schema()}},
               {"benchmark", "sweep"});
  const BenchmarkSpec b;
  const SweepEntry e;
  const std::string paradigm =
      "(has(e.paradigm) ? e.paradigm : (has(self.benchmark) && has(self.benchmark.paradigm) ? "
      "self.benchmark.paradigm : " +
      cel_value(b.paradigm) + "))";
  const std::string device = field_or("self", "device", cel_value(j.device));
  spec["x-kubernetes-validations"] = json::array(
      {cel("!has(self.masterPort) || self.masterPort != " + std::to_string(kMasterProgressPort),
           "spec.masterPort: must not be " + std::to_string(kMasterProgressPort) +
               " (the master pod serves its run's progress there)"),
       cel("!has(self.backend) || self.backend != " + cel_value(Backend::kNccl) + " || " + device +
               " == " + cel_value(Device::kCuda),
           "spec.backend: nccl needs spec.device cuda"),
       cel("!has(self.sweep) || self.sweep.all(e, " + paradigm + " != " + cel_value(Paradigm::kNone) + " || (" +
               field_or("e", "nodes", std::to_string(e.nodes)) + " == 1 && " +
               field_or("e", "devicesPerNode", std::to_string(e.devices_per_node)) + " == 1))",
           "spec.sweep: paradigm none runs on exactly one device (nodes 1, devicesPerNode 1)"),
       cel("!has(self.benchmark.precision) || self.benchmark.precision != " + cel_value(Precision::kAmpFp16) + " || " +
               device + " == " + cel_value(Device::kCuda),
           "spec.benchmark.precision: amp-fp16 needs spec.device cuda"),
       cel("!has(self.benchmark) || has(self.benchmark.model) || (has(self.sweep) && size(self.sweep) > 0 && "
           "self.sweep.all(e, " +
               paradigm + " == " + cel_value(Paradigm::kAllreduce) +
               ")) || (has(self.workloads) && size(self.workloads) > 0 && self.workloads.all(w, has(w.program)))",
           "spec.benchmark.model: is required unless every run is paradigm allreduce or every workload a program"),
       cel("!has(self.sweep) || self.sweep.all(e, !has(e.parameterServers) || " + paradigm +
               " == " + cel_value(Paradigm::kHybridPs) + ")",
           "spec.sweep: parameterServers is only for paradigm hybrid-ps"),
       cel("!has(self.sweep) || self.sweep.all(e, " + paradigm + " != " + cel_value(Paradigm::kHybridPs) +
               " || (has(self.benchmark) && has(self.benchmark.model) && self.benchmark.model == 'hybrid-embedding'))",
           "spec.benchmark.model: paradigm hybrid-ps needs model hybrid-embedding"),
       cel("!has(self.sweep) || " + device + " == " + cel_value(Device::kCpu) + " || self.sweep.all(e, " + paradigm +
               " != " + cel_value(Paradigm::kHybridPs) + ")",
           "spec.device: paradigm hybrid-ps runs on cpu (gloo)"),
       cel("!has(self.workloads) || !has(self.sweep) || size(self.workloads) * size(self.sweep) <= " +
               std::to_string(kMaxRuns),
           "spec.workloads: workloads x sweep entries must be at most " + std::to_string(kMaxRuns) + " runs")});
  return spec;
}

json condition_schema() {
  // metav1.Condition, as Kubernetes' own CRDs spell it.
  return {
      {"type", "object"},
      {"description", "A condition: types " + join(known_condition_types(), ", ") + "."},
      {"required", {"lastTransitionTime", "message", "reason", "status", "type"}},
      {"properties",
       {{"type",
         {{"type", "string"},
          {"maxLength", 316},
          {"pattern",
           "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
           ")?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"},
          {"description", "Condition type."}}},
        {"status",
         {{"type", "string"}, {"enum", {"True", "False", "Unknown"}}, {"description", "True, False or Unknown."}}},
        {"reason",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 1024},
          {"pattern", "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
          {"description", "CamelCase reason."}}},
        {"message",
         {{"type", "string"}, {"maxLength", kMaxConditionMessageLength}, {"description", "Human-readable details."}}},
        {"lastTransitionTime", date_time_t("When status last changed.")},
        {"observedGeneration",
         {{"type", "integer"},
          {"format", "int64"},
          {"minimum", 0},
          {"description", "The generation it was set for."}}}}}};
}

/// status.progressDetail (core/api/job_status.hpp ProgressDetail).
json progress_detail_schema() {
  auto count = [](const std::string& d) {
    return json{{"type", "integer"}, {"format", "int32"}, {"minimum", 0}, {"description", d}};
  };
  auto seconds = [](const std::string& d) {
    return json{{"type", "integer"}, {"format", "int64"}, {"minimum", 0}, {"description", d}};
  };
  json run = object_t(
      "The run in progress and where its loop stands.",
      {{"index", count("Position in spec.sweep (status.runs[index]).")},
       {"label", string_t("Its shape, as status.runs[index].label.")},
       {"attempt", count("0-based; bumped by a restart.")},
       {"stage", enum_t(allowed_texts<LoopStage>(), "Starting, Warmup, Measure or Finishing.")},
       {"step", count("Steps done in the warm-up or in the current repeat.")},
       {"steps", count("Steps of the warm-up or of a repeat.")},
       {"repeat", count("1-based repeat (Measure, Finishing).")},
       {"repeats", count("Repeats of the measured steps.")},
       {"secondsPerStep", {{"type", "number"}, {"minimum", 0}, {"description", "The run's measured rate so far."}}},
       {"estimatedRemainingSeconds", seconds("The run's steps left at its measured rate.")}},
      {"index", "stage"});
  return object_t("Progress of the job while it runs (docs/operator.md, \"Progress\").",
                  {{"percent",
                    {{"type", "integer"},
                     {"format", "int32"},
                     {"minimum", 0},
                     {"maximum", 100},
                     {"description", "Of the whole job; 100 once it succeeded."}}},
                   {"estimatedRemainingSeconds", seconds("The whole job's estimated time left.")},
                   {"lastUpdateTime", date_time_t("When the operator last wrote it.")},
                   {"currentRun", run}},
                  {"percent", "lastUpdateTime"});
}

json status_schema() {
  json run = object_t(
      "One sweep entry's run.",
      {{"index",
        {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}, {"description", "Position in spec.sweep."}}},
       {"label", string_t("Row label: \"no ddp\" or \"1M/2G\".")},
       {"phase", enum_t(known_run_phases(), "Run phase.")},
       {"attempt",
        {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}, {"description", "0-based; bumped by a restart."}}},
       {"restarts",
        {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}, {"description", "Whole-run restarts so far."}}},
       {"interruptions",
        {{"type", "integer"},
         {"format", "int32"},
         {"minimum", 0},
         {"description", "Attempts ended by spec.suspend (not failures: no restart counted)."}}},
       {"podsCreated", {{"type", "boolean"}, {"description", "The current attempt's pods were created."}}},
       {"startTime", date_time_t("When the run's pods were created.")},
       {"attemptStartTime", date_time_t("When the current attempt's pods were created.")},
       {"completionTime", date_time_t("When the run ended.")},
       {"message", string_t("Why it failed or is waiting.")},
       {"environment",
        {{"type", "object"},
         {"x-kubernetes-preserve-unknown-fields", true},
         {"description", "What rank 0 saw: versions, backend, device, BLAS, threads."}}},
       {"summary",
        {{"type", "object"},
         {"x-kubernetes-preserve-unknown-fields", true},
         {"description", "The run's summarised result (per-rank percentiles)."}}}},
      {"index", "phase"});
  return object_t(
      "Written by the operator.",
      {{"phase", enum_t(known_job_phases(), "Job phase.")},
       {"conditions",
        {{"type", "array"},
         {"description", "Invalid, Running, Succeeded, Failed."},
         {"x-kubernetes-list-type", "map"},
         {"x-kubernetes-list-map-keys", json::array({"type"})},
         {"items", condition_schema()}}},
       {"observedGeneration",
        {{"type", "integer"}, {"format", "int64"}, {"minimum", 0}, {"description", "The generation last acted on."}}},
       {"runsTotal", {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}, {"description", "Sweep entries."}}},
       {"runsDone", {{"type", "integer"}, {"format", "int32"}, {"minimum", 0}, {"description", "Runs ended."}}},
       {"progress", string_t("runsDone/runsTotal, e.g. \"2/3\" (the Runs column).")},
       {"percentComplete", string_t("progressDetail.percent, e.g. \"42%\" (the Progress column).")},
       {"progressDetail", progress_detail_schema()},
       {"runs", {{"type", "array"}, {"description", "One entry per started run."}, {"items", run}}},
       {"report",
        {{"type", "object"},
         {"x-kubernetes-preserve-unknown-fields", true},
         {"description", "The report trainbench run prints, as JSON (docs/report.md)."}}},
       {"startTime", date_time_t("When the operator started the job.")},
       {"completionTime", date_time_t("When the job ended.")},
       {"bestExamplesPerSec", {{"type", "number"}, {"description", "Highest examples/sec over finished runs."}}},
       {"bestSpeedup", {{"type", "number"}, {"description", "Highest speedup over the one-device run."}}},
       {"lowestEfficiency",
        {{"type", "number"},
         {"description",
          "Lowest scaling efficiency of the sweep (spec.benchmark.efficiencyTarget flags runs below it)."}}},
       {"noisyRuns",
        {{"type", "integer"},
         {"format", "int32"},
         {"minimum", 0},
         {"description", "Runs whose repeats disagree beyond spec.benchmark.noiseThresholdPercent."}}}});
}

json printer_column(const std::string& name, const std::string& type, const std::string& path,
                    const std::string& description, int priority = 0) {
  json c = {{"name", name}, {"type", type}, {"jsonPath", path}, {"description", description}};
  if (priority != 0) c["priority"] = priority;
  return c;
}

}  // namespace

// The status vocabulary is core/api/job_status.hpp's: the CRD's enums are its texts.
const std::vector<std::string>& known_job_phases() { return allowed_texts<JobPhase>(); }
const std::vector<std::string>& known_run_phases() { return allowed_texts<RunPhase>(); }
const std::vector<std::string>& known_condition_types() { return allowed_texts<ConditionType>(); }

nlohmann::json benchmarkjob_schema() {
  json metadata = {{"type", "object"},
                   {"properties",
                    {{"name",
                      {{"type", "string"},
                       {"maxLength", kMaxJobNameLength},
                       {"pattern", kJobNamePattern},
                       {"description", "An RFC 1035 label: the operator names each run's Service NAME-r<i>."}}}}}};
  return object_t(
      "A distributed-training benchmark: one run per sweep entry, then a report (sec/iter percentiles, "
      "examples/sec, speedup, scaling efficiency).",
      {{"apiVersion", string_t(std::string("APIVersion: ") + kApiVersion + ".")},
       {"kind", string_t(std::string("Kind: ") + kKind + ".")},
       {"metadata", metadata},
       {"spec", spec_schema()},
       {"status", status_schema()}},
      {"spec"});
}

nlohmann::json benchmarkjob_crd() {
  json version = {{"name", kCrdVersion},
                  {"served", true},
                  {"storage", true},
                  {"schema", {{"openAPIV3Schema", benchmarkjob_schema()}}},
                  {"subresources", {{"status", json::object()}}},
                  {"additionalPrinterColumns",
                   json::array({printer_column("Phase", "string", ".status.phase", "Job phase"),
                                printer_column("Runs", "string", ".status.progress", "Runs done / total"),
                                printer_column("Progress", "string", ".status.percentComplete", "Percent done"),
                                // "integer": the API server prints the number truncated (its tableconvertor)
                                printer_column("Best ex/s", "integer", ".status.bestExamplesPerSec",
                                               "Highest examples/sec over finished runs"),
                                printer_column("Speedup", "number", ".status.bestSpeedup",
                                               "Highest speedup over the one-device run"),
                                printer_column("Lowest eff.", "number", ".status.lowestEfficiency",
                                               "Lowest scaling efficiency of the sweep"),
                                printer_column("Noisy", "integer", ".status.noisyRuns", "Runs marked noisy", 1),
                                printer_column("Model", "string", ".spec.benchmark.model", "Benchmarked model", 1),
                                printer_column("Age", "date", ".metadata.creationTimestamp", "Time since creation")})}};
  return {{"apiVersion", "apiextensions.k8s.io/v1"},
          {"kind", "CustomResourceDefinition"},
          {"metadata", {{"name", kCrdName}, {"labels", {{"app.kubernetes.io/name", "trainbench"}}}}},
          {"spec",
           {{"group", kCrdGroup},
            {"names",
             {{"kind", kKind},
              {"listKind", std::string(kKind) + "List"},
              {"plural", kCrdPlural},
              {"singular", kCrdSingular},
              {"shortNames", json::array({kCrdShortName})},
              {"categories", json::array({kCrdCategory})}}},
            {"scope", "Namespaced"},
            {"versions", json::array({version})}}}};
}

std::string benchmarkjob_crd_yaml() {
  return std::string(
      // "core/crd.cpp": this file's path before core/ had folders, kept so that the generated CRD
      // stays byte-identical.
             "# The BenchmarkJob CustomResourceDefinition. Generated by `trainbench crd` from core/crd.cpp,\n"
             "# which takes allowed values, limits and defaults from core's spec validation: do not edit.\n"
             "# Regenerate: ") +
         kCrdRegenerate + "\n" + json_to_yaml(benchmarkjob_crd());
}

}  // namespace trainbench
