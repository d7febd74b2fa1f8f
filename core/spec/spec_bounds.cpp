#include "core/spec/spec_bounds.hpp"

#include "core/spec/allreduce.hpp"
#include "core/spec/spec.hpp"
#include "core/util/version.hpp"

namespace trainbench {

std::string PodTemplate::default_worker_image(Device device) {
  return std::string("trainbench/worker:") + kVersion + (device == Device::kCuda ? "-cuda" : "");
}

const std::vector<std::string>& known_models() {
  static const std::vector<std::string> v{
      "mlp",       "resnet18",   "resnet50", "resnet101",       "resnext50_32x4d", "resnext101_32x8d",
      "bert-base", "gpt2-small", "mlstm",    "hybrid-embedding"};
  return v;
}
const std::vector<std::string>& known_paradigms() { return allowed_texts<Paradigm>(); }
const std::vector<std::string>& known_precisions() { return allowed_texts<Precision>(); }
const std::vector<std::string>& known_optimizers() { return allowed_texts<Optimizer>(); }
const std::vector<std::string>& known_compressions() { return allowed_texts<GradientCompression>(); }
const std::vector<std::string>& known_devices() { return allowed_texts<Device>(); }
const std::vector<std::string>& known_backends() { return allowed_texts<Backend>(); }
const std::vector<std::string>& known_pull_policies() {
  static const std::vector<std::string> v{"Always", "IfNotPresent", "Never"};
  return v;
}
const std::vector<std::string>& known_clean_pod_policies() { return allowed_texts<CleanPodPolicy>(); }
const std::vector<std::string>& known_nccl_debug_levels() {
  static const std::vector<std::string> v{"VERSION", "WARN", "INFO", "TRACE"};
  return v;
}

namespace {

// Builders of the table's rows, one per kind of bound.
FieldBound field(const std::string& path) {
  FieldBound f;
  f.path = path;
  return f;
}
FieldBound range(const std::string& path, IntRange r) {
  FieldBound f = field(path);
  f.minimum = r.min;
  f.maximum = r.max;
  return f;
}
FieldBound at_least(const std::string& path, long long min) {
  FieldBound f = field(path);
  f.minimum = min;
  return f;
}
FieldBound positive(const std::string& path, std::optional<long long> max = std::nullopt) {
  FieldBound f = at_least(path, 0);
  f.exclusive_minimum = true;
  f.maximum = max;
  return f;
}
FieldBound length(const std::string& path, long long max_length) {
  FieldBound f = field(path);
  f.max_length = max_length;
  return f;
}
FieldBound items(const std::string& path, long long max_items) {
  FieldBound f = field(path);
  f.max_items = max_items;
  return f;
}
FieldBound entries(const std::string& path) {
  FieldBound f = field(path);
  f.max_properties = kMaxMapEntries;
  return f;
}
FieldBound one_of(const std::string& path, const std::vector<std::string>& allowed) {
  FieldBound f = field(path);
  f.allowed = allowed;
  return f;
}

void benchmark_bounds(std::vector<FieldBound>& t) {
  using namespace bounds;
  const std::string b = "spec.benchmark.";
  t.insert(t.end(), {one_of(b + "model", known_models()),
                     one_of(b + "paradigm", known_paradigms()),
                     range(b + "batchSizePerDevice", kBatchSizePerDevice),
                     one_of(b + "precision", known_precisions()),
                     range(b + "warmupSteps", kWarmupSteps),
                     range(b + "measureSteps", kMeasureSteps),
                     range(b + "repeats", kRepeats),
                     at_least(b + "seed", kSeed.min),
                     positive(b + "learningRate"),
                     positive(b + "stragglerThreshold", 1),
                     positive(b + "efficiencyTarget", kMaxEfficiencyTarget),
                     positive(b + "noiseThresholdPercent"),
                     positive(b + "peakTFLOPS"),
                     range(b + "threadsPerProcess", kThreadsPerProcess),
                     range(b + "imageSize", kImageSize),
                     range(b + "mlp.inputSize", kInputSize),
                     items(b + "mlp.hiddenSizes", kMaxLayerListItems),
                     range(b + "mlp.hiddenSizes[]", kLayerWidth),
                     range(b + "mlp.numClasses", kNumClasses),
                     one_of(b + "ddp.implementation", allowed_texts<DdpImplementation>()),
                     positive(b + "ddp.bucketCapMB"),
                     one_of(b + "ddp.gradientCompression", known_compressions()),
                     one_of(b + "optimizer", known_optimizers()),
                     one_of(b + "transformer.attention", allowed_texts<Attention>()),
                     range(b + "pipeline.microBatches", kMicroBatches),
                     items(b + "pipeline.boundaries", kMaxBoundaries),
                     range(b + "pipeline.boundaries[]", kBoundary),
                     range(b + "sequenceLength", kSequenceLength)});
  for (const char* f : {"layers", "hidden", "heads", "intermediate", "vocabSize", "maxPositions"}) {
    t.push_back(range(b + "transformer." + f, kTransformerSize));
  }
  for (const char* f : {"hiddenSize", "embeddingSize"}) t.push_back(range(b + "mlstm." + f, kMlstmSize));
  for (const char* f : {"numTables", "numEmbeddings", "embeddingDim", "bagSize"}) {
    t.push_back(range(b + "hybridEmbedding." + f, kEmbeddingSize));
  }
  t.insert(t.end(), {items(b + "hybridEmbedding.denseSizes", kMaxLayerListItems),
                     range(b + "hybridEmbedding.denseSizes[]", kLayerWidth),
                     range(b + "hybridEmbedding.numClasses", kNumClasses),
                     one_of(b + "allreduce.dtype", known_allreduce_dtypes()),
                     range(b + "hybridPs.parameterServers", kParameterServers)});
}

void cluster_bounds(std::vector<FieldBound>& t) {
  using namespace bounds;
  t.insert(t.end(), {items("spec.sweep", kMaxSweepEntries), range("spec.sweep[].nodes", kNodes),
                     range("spec.sweep[].devicesPerNode", kDevicesPerNode),
                     one_of("spec.sweep[].paradigm", known_paradigms()), positive("spec.sweep[].bucketCapMB"),
                     range("spec.sweep[].parameterServers", kParameterServers), one_of("spec.device", known_devices()),
                     one_of("spec.backend", known_backends()), range("spec.masterPort", kMasterPort),
                     range("spec.runPolicy.activeDeadlineSeconds", kActiveDeadlineSeconds),
                     range("spec.runPolicy.collectiveTimeoutSeconds", kCollectiveTimeoutSeconds),
                     range("spec.runPolicy.backoffLimit", kBackoffLimit),
                     range("spec.runPolicy.schedulingTimeoutSeconds", kSchedulingTimeoutSeconds),
                     range("spec.runPolicy.hangTimeoutSeconds", kHangTimeoutSeconds),
                     one_of("spec.runPolicy.cleanPodPolicy", known_clean_pod_policies()),
                     length("spec.baseline.benchmarkJob", kMaxJobNameLength),
                     length("spec.baseline.configMap.name", kMaxDnsSubdomainLength),
                     length("spec.baseline.configMap.key", kMaxConfigMapKeyLength),
                     range("spec.baseline.regressionThresholdPercent", kRegressionThresholdPercent)});
}

void workload_bounds(std::vector<FieldBound>& t) {
  const std::string p = "spec.workloads[].";
  const std::string q = p + "program.";
  t.insert(t.end(), {items("spec.workloads", kMaxWorkloads), length(p + "name", kMaxWorkloadNameLength),
                     length(q + "image", kMaxImageLength), items(q + "command", kMaxProgramArgs),
                     length(q + "command[]", kMaxProgramArgLength), items(q + "args", kMaxProgramArgs),
                     length(q + "args[]", kMaxProgramArgLength), items(q + "env", kMaxPodListItems),
                     length(q + "env[].name", kMaxEnvNameLength), length(q + "env[].value", kMaxEnvValueLength),
                     length(q + "workingDir", kMaxProgramArgLength), positive(q + "flopsPerExample")});
}

void template_bounds(std::vector<FieldBound>& t) {
  const std::string p = "spec.template.";
  t.insert(t.end(), {length(p + "image", kMaxImageLength), one_of(p + "imagePullPolicy", known_pull_policies()),
                     length(p + "serviceAccountName", kMaxServiceAccountNameLength)});
  for (const char* kind : {"limits", "requests"}) {
    FieldBound quantity = length(p + "resources." + kind + ".*", kMaxQuantityLength);
    quantity.minimum = bounds::kMinQuantity;
    t.insert(t.end(), {entries(p + "resources." + kind), quantity});
  }
  for (const char* list : {"tolerations", "volumes", "volumeMounts", "env"})
    t.push_back(items(p + list, kMaxPodListItems));
  for (const char* map : {"nodeSelector", "labels"}) {
    t.insert(t.end(), {entries(p + map), length(p + map + ".*", kMaxLabelValueLength)});
  }
  t.insert(t.end(), {entries(p + "annotations"), length(p + "annotations.*", kMaxAnnotationValueLength),
                     length("spec.nccl.socketIfname", kMaxSocketIfnameLength),
                     one_of("spec.nccl.debug", known_nccl_debug_levels()), entries("spec.nccl.extraEnv"),
                     length("spec.nccl.extraEnv.*", kMaxEnvValueLength), length("metadata.name", kMaxJobNameLength)});
}

}  // namespace

const std::vector<FieldBound>& spec_field_bounds() {
  static const std::vector<FieldBound> table = [] {
    std::vector<FieldBound> t;
    benchmark_bounds(t);
    cluster_bounds(t);
    template_bounds(t);
    workload_bounds(t);
    return t;
  }();
  return table;
}

}  // namespace trainbench
