#pragma once

// Every bound and allowed-value list of the BenchmarkJob spec, defined once: validate()
// (core/spec/spec_validate.cpp) and the reader (core/spec/spec_parse.cpp) refuse past them and the CRD
// generator (core/api/crd.cpp) writes the same numbers and lists into the schema (minimum, maximum,
// maxLength, maxItems, maxProperties, enum). spec_field_bounds() lists them with their field
// paths, and tests/crd checks the CRD at each path against it, both ways.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace trainbench {

inline constexpr long long kInt32Max = std::numeric_limits<std::int32_t>::max();

/// An inclusive integer range. Spec integers are 32-bit (the reader refuses wider ones), so a
/// range without an upper bound of its own ends at kInt32Max, as the CRD's maximum says.
struct IntRange {
  long long min = 0;
  long long max = kInt32Max;
};

// ---- lists, strings and maps (Kubernetes API conventions ask for a bound on each). Lengths
// count characters (code points), as the API server's maxLength does; no pattern runs on a
// string before its length is checked.

inline constexpr int kMaxDocumentBytes = 1 << 20;  ///< a whole spec file or object
inline constexpr int kMinSweepEntries = 1;
inline constexpr int kMaxSweepEntries = 64;
inline constexpr int kMaxWorldSize = 4096;  ///< nodes x devicesPerNode (+ parameterServers)
/// metadata.name: an RFC 1035 label short enough for the operator's per-run Service "NAME-r63".
inline constexpr int kMaxJobNameLength = 59;
inline constexpr int kMaxNamespaceLength = 63;      ///< an RFC 1123 label
inline constexpr int kMaxDnsSubdomainLength = 253;  ///< an RFC 1123 subdomain (label key prefixes)
inline constexpr int kMaxLabelNameLength = 63;      ///< a label or annotation key's name part
inline constexpr int kMaxLabelValueLength = 63;     ///< label and nodeSelector values
inline constexpr int kMinImageLength = 1;           ///< spec.template.image: not empty
inline constexpr int kMaxImageLength = 1024;        ///< spec.template.image
inline constexpr int kMaxServiceAccountNameLength = kMaxDnsSubdomainLength;
inline constexpr int kMaxQuantityLength = 64;             ///< resources.limits / requests values
inline constexpr int kMaxAnnotationValueLength = 4096;    ///< metadata and template annotations
inline constexpr int kMaxEnvValueLength = 4096;           ///< spec.nccl.extraEnv values
inline constexpr int kMaxEnvNameLength = 128;             ///< spec.nccl.extraEnv names
inline constexpr int kMaxSocketIfnameLength = 256;        ///< spec.nccl.socketIfname
inline constexpr int kMaxConfigMapKeyLength = 253;        ///< spec.baseline.configMap.key (a ConfigMap data key)
inline constexpr int kMaxMapEntries = 64;                 ///< labels, annotations, nodeSelector, extraEnv, resources
inline constexpr int kMaxPodListItems = 64;               ///< tolerations, volumes, volumeMounts, env
inline constexpr int kMaxLayerListItems = 64;             ///< mlp.hiddenSizes, hybridEmbedding.denseSizes
inline constexpr int kMaxWorkloads = 16;                  ///< spec.workloads
/// Runs of a job (workloads x sweep entries): the operator names each run's Service NAME-r<i>.
inline constexpr int kMaxRuns = kMaxSweepEntries;
inline constexpr int kMaxWorkloadNameLength = 40;         ///< spec.workloads[].name
inline constexpr int kMaxProgramArgs = 256;               ///< program.command + program.args items
inline constexpr int kMaxProgramArgLength = 4096;         ///< each command / args item, workingDir
inline constexpr int kMaxBoundaries = kMaxWorldSize - 1;  ///< pipeline.boundaries: one per stage after the first

// ---- patterns: ECMAScript and RE2 alike (std::regex here, Go's regexp in the API server)

inline constexpr const char* kJobNamePattern = "^[a-z]([-a-z0-9]*[a-z0-9])?$";
/// A non-negative Kubernetes resource quantity ("8", "500m", "4Gi", "1e3").
inline constexpr const char* kQuantityPattern =
    "^\\+?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?"
    "$";
/// A label value (also nodeSelector values): empty, or alphanumerics with -_. inside.
inline constexpr const char* kLabelValuePattern = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";
/// A ServiceAccount name: an RFC 1123 subdomain.
inline constexpr const char* kDnsSubdomainPattern =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/// A ConfigMap data key (spec.baseline.configMap.key).
inline constexpr const char* kConfigMapKeyPattern = "^[-._a-zA-Z0-9]+$";
/// spec.workloads[].name: a lowercase RFC 1123 label (it names a group of the report's rows).
inline constexpr const char* kWorkloadNamePattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/// An environment variable name in spec.nccl.extraEnv and a program's env (a C identifier).
inline constexpr const char* kEnvNamePattern = "^[A-Za-z_][A-Za-z0-9_]*$";
/// An image reference, [HOST[:PORT]/]PATH[:TAG][@DIGEST]: distribution's grammar
/// (core/spec/image_reference.hpp, whose check names the part that is wrong).
inline constexpr const char* kImageReferencePattern =
    "^(([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*|\\[[a-fA-F0-9:]+\\])"
    "(:[0-9]+)?/)?"
    "[a-z0-9]+(([_.]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([_.]|__|-+)[a-z0-9]+)*)*"
    "(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    "(@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$";

// ---- numbers

inline constexpr int kMinMasterPort = 1024;
inline constexpr int kMaxMasterPort = 65535;
inline constexpr int kMinParameterServers = 1;
inline constexpr int kMaxParameterServers = 256;

namespace bounds {
// spec.benchmark
inline constexpr IntRange kBatchSizePerDevice{1, 65536};
inline constexpr IntRange kWarmupSteps{0};
inline constexpr IntRange kMeasureSteps{1};
inline constexpr IntRange kRepeats{1, 1000};
inline constexpr IntRange kSeed{0, std::numeric_limits<std::int64_t>::max()};  ///< 64-bit
inline constexpr IntRange kThreadsPerProcess{0, 1024};                         ///< 0: the node's cores / ranks on it
inline constexpr IntRange kImageSize{32, 1024};
inline constexpr IntRange kInputSize{1};   ///< mlp.inputSize
inline constexpr IntRange kLayerWidth{1};  ///< mlp.hiddenSizes[], hybridEmbedding.denseSizes[]
inline constexpr IntRange kNumClasses{2};  ///< mlp and hybridEmbedding
inline constexpr IntRange kMicroBatches{1, kBatchSizePerDevice.max};  ///< at most a batch of 1-example micro-batches
inline constexpr IntRange kBoundary{1};                               ///< pipeline.boundaries[]: a block index
inline constexpr IntRange kSequenceLength{1, 65536};
inline constexpr IntRange kTransformerSize{0};  ///< transformer.*: 0 keeps the preset
inline constexpr IntRange kMlstmSize{1};        ///< mlstm.hiddenSize, embeddingSize
inline constexpr IntRange kEmbeddingSize{1};    ///< hybridEmbedding numTables, numEmbeddings, embeddingDim, bagSize
inline constexpr IntRange kParameterServers{kMinParameterServers, kMaxParameterServers};  ///< hybridPs, sweep entries
inline constexpr long long kMaxEfficiencyTarget = 1;  ///< efficiencyTarget in (0, 1]
// spec.sweep[]
inline constexpr IntRange kNodes{1};
inline constexpr IntRange kDevicesPerNode{1};
// spec.runPolicy
inline constexpr IntRange kActiveDeadlineSeconds{0};  ///< 0: no deadline
inline constexpr IntRange kCollectiveTimeoutSeconds{1};
inline constexpr IntRange kBackoffLimit{0};
inline constexpr IntRange kSchedulingTimeoutSeconds{1};
inline constexpr IntRange kHangTimeoutSeconds{0};  ///< 0: no hang detection
// spec.baseline
inline constexpr IntRange kRegressionThresholdPercent{0, 100};
// spec.template.resources: integer quantities are never negative
inline constexpr long long kMinQuantity = 0;
// spec
inline constexpr IntRange kMasterPort{kMinMasterPort, kMaxMasterPort};
}  // namespace bounds

// ---- allowed values; the enums' lists are views of their tables (core/spec/vocabulary.hpp,
// core/spec/paradigm.hpp)

const std::vector<std::string>& known_models();
const std::vector<std::string>& known_paradigms();
const std::vector<std::string>& known_precisions();
const std::vector<std::string>& known_compressions();
const std::vector<std::string>& known_optimizers();          ///< sgd, adam
const std::vector<std::string>& known_devices();             ///< cpu, cuda
const std::vector<std::string>& known_backends();            ///< gloo, nccl
const std::vector<std::string>& known_pull_policies();       ///< Always, IfNotPresent, Never
const std::vector<std::string>& known_clean_pod_policies();  ///< All, Running, None
const std::vector<std::string>& known_nccl_debug_levels();   ///< VERSION, WARN, INFO, TRACE

/// One field's bounds as the CRD states them. `path` is the field's path in the document, list
/// items written "[]" and map values ".*" ("spec.sweep[].nodes", "spec.template.labels.*").
struct FieldBound {
  std::string path;
  std::optional<long long> minimum;
  std::optional<long long> maximum;
  bool exclusive_minimum = false;           ///< numbers that must be > minimum
  std::optional<long long> max_length;      ///< strings, in characters
  std::optional<long long> max_items;       ///< lists
  std::optional<long long> max_properties;  ///< maps
  std::vector<std::string> allowed;         ///< a closed set (the CRD's enum); empty: any value
};

/// Every bound and allowed-value list of spec (and metadata.name), in document order.
const std::vector<FieldBound>& spec_field_bounds();

}  // namespace trainbench
