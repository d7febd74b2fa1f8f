// The spec reader: YAML (or JSON) text -> BenchmarkJob. Every field is read with its type as the
// API server sees it and every problem collected with its path; closed sets are parsed into their
// enums here, once (core/spec/vocabulary.hpp). Semantic checks are core/spec/spec_validate.cpp's.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/spec/spec.hpp"
#include "core/spec/spec_messages.hpp"
#include "core/spec/yaml_node_json.hpp"

namespace trainbench {
namespace {

using spec_messages::join_list;
using spec_messages::one_of_message;
using spec_messages::quote;
using spec_messages::text_problem;

/// The longest string core reads where no tighter bound applies (a key of a map, a string in a
/// verbatim Kubernetes object is bounded by kMaxDocumentBytes only).
constexpr int kAnyLength = kMaxDocumentBytes;

/// Walks a YAML tree, collecting FieldErrors with full paths instead of throwing at the first.
/// Scalars are typed as the API server sees them (YAML 1.2 core schema, as yaml_to_json): a
/// quoted or !!str-tagged "5" is a string, so an integer field refuses it.
class Reader {
 public:
  explicit Reader(std::vector<FieldError>& errors) : errors_(errors) {}

  void error(const std::string& path, const std::string& message) { errors_.push_back({path, message}); }
  std::size_t error_count() const { return errors_.size(); }

  /// True when `node` is a mapping; flags every key not in `allowed`.
  bool object(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed) {
    if (!node.IsMap()) {
      error(path.empty() ? "<document>" : path, "must be an object, got " + describe(node));
      return false;
    }
    for (const auto& kv : node) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(join(path, printable(key)), "unknown field (allowed: " + join_list(allowed) + ")");
      }
    }
    return true;
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  static std::string describe(const YAML::Node& node) {
    if (!node.IsDefined() || node.IsNull()) return "null";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "an object";
    return quote(node.Scalar());
  }

  /// A string field: `image: 1` or `socketIfname: true` is refused, since the API server would
  /// see a number or a boolean; so is invalid UTF-8 or more than `max_length` characters.
  void read_string(const YAML::Node& parent, const std::string& key, const std::string& path, std::string& out,
                   int max_length = kAnyLength) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsScalar() || !is_yaml_string(n)) {
      error(join(path, key), "must be a string, got " + describe(n) + quote_hint(n));
      return;
    }
    const std::string problem = text_problem(n.Scalar(), max_length);
    if (!problem.empty()) {
      error(join(path, key), problem);
      return;
    }
    out = n.Scalar();
  }

  /// A field of a closed set (core/spec/vocabulary.hpp): a string spelt as one of E's values.
  template <typename E>
  void read_enum(const YAML::Node& parent, const std::string& key, const std::string& path, E& out) {
    if (const auto v = read_enum_text<E>(parent, key, path, false)) out = *v;
  }

  /// An optional field of a closed set: absent, null or "" leaves `out` unset.
  template <typename E>
  void read_enum(const YAML::Node& parent, const std::string& key, const std::string& path, std::optional<E>& out) {
    if (const auto v = read_enum_text<E>(parent, key, path, true)) out = *v;
  }

  void read_int(const YAML::Node& parent, const std::string& key, const std::string& path, int& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    scalar_int32(n, join(path, key), out);
  }

  bool scalar_int32(const YAML::Node& n, const std::string& path, int& out) {
    long long v = 0;
    if (!scalar_integer(n, path, v)) return false;
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      error(path, "must be a 32-bit integer, got " + std::to_string(v));
      return false;
    }
    out = static_cast<int>(v);
    return true;
  }

  bool read_integer(const YAML::Node& parent, const std::string& key, const std::string& path, long long& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return false;
    return scalar_integer(n, join(path, key), out);
  }

  bool scalar_integer(const YAML::Node& n, const std::string& path, long long& out) {
    if (!n.IsScalar() || detail::scalar_kind(n) != detail::ScalarKind::Int) {
      error(path, "must be an integer, got " + describe(n) + number_hint(n));
      return false;
    }
    const auto v = detail::parse_int64(n.Scalar());
    if (!v) {
      error(path, "integer out of range, got " + describe(n));
      return false;
    }
    out = *v;
    return true;
  }

  bool read_double(const YAML::Node& parent, const std::string& key, const std::string& path, double& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return false;
    const auto kind = n.IsScalar() ? detail::scalar_kind(n) : detail::ScalarKind::String;
    if (kind != detail::ScalarKind::Int && kind != detail::ScalarKind::Float) {
      error(join(path, key), "must be a number, got " + describe(n) + number_hint(n));
      return false;
    }
    const auto v = detail::parse_finite_double(n.Scalar());
    if (!v) {
      error(join(path, key), "must be a finite number, got " + describe(n));
      return false;
    }
    out = *v;
    return true;
  }

  void read_bool(const YAML::Node& parent, const std::string& key, const std::string& path, bool& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (n.IsScalar() && detail::scalar_kind(n) == detail::ScalarKind::Bool) {
      out = n.Scalar()[0] == 't' || n.Scalar()[0] == 'T';
      return;
    }
    error(join(path, key), "must be true or false, got " + describe(n) + number_hint(n));
  }

  /// A map of strings: a value YAML reads as a number, boolean or null is refused (the API server
  /// would see a non-string), with a hint to quote it; values longer than `max_value_length`
  /// characters, invalid UTF-8 and more than kMaxMapEntries entries are refused.
  void read_string_map(const YAML::Node& parent, const std::string& key, const std::string& path,
                       std::map<std::string, std::string>& out, int max_value_length) {
    const YAML::Node n = parent[key];
    if (!map_node(n, join(path, key), "a map of strings")) return;
    for (const auto& kv : n) {
      const std::string p = join(path, key) + "." + (kv.first.IsScalar() ? printable(kv.first.Scalar()) : "?");
      if (!kv.second.IsScalar() || !is_yaml_string(kv.second)) {
        error(p, "must be a string, got " + describe(kv.second) + quote_hint(kv.second));
        continue;
      }
      if (!text_ok(p, kv.first.Scalar(), kAnyLength) || !text_ok(p, kv.second.Scalar(), max_value_length)) continue;
      out[kv.first.Scalar()] = kv.second.Scalar();
    }
  }

  /// requests/limits: integers and quantity strings; a bare fraction (0.5) is refused because the
  /// API server's int-or-string schema would refuse it ("0.5" or "500m" are fine).
  void read_quantity_map(const YAML::Node& parent, const std::string& key, const std::string& path,
                         std::map<std::string, std::string>& out) {
    const YAML::Node n = parent[key];
    if (!map_node(n, join(path, key), "a map of quantities")) return;
    for (const auto& kv : n) {
      const std::string p = join(path, key) + "." + (kv.first.IsScalar() ? printable(kv.first.Scalar()) : "?");
      if (!kv.second.IsScalar()) {
        error(p, "must be a quantity (an integer or a string such as \"500m\" or \"4Gi\"), got " + describe(kv.second));
        continue;
      }
      const detail::ScalarKind kind = detail::scalar_kind(kv.second);
      if (kind != detail::ScalarKind::String && kind != detail::ScalarKind::Int) {
        error(p, "must be an integer or a quantity string, got " + describe(kv.second) +
                     " (write fractions as strings: \"0.5\" or \"500m\")");
        continue;
      }
      if (!text_ok(p, kv.first.Scalar(), kAnyLength) || !text_ok(p, kv.second.Scalar(), kMaxQuantityLength)) continue;
      out[kv.first.Scalar()] = kv.second.Scalar();
    }
  }

  /// A list of Kubernetes objects (tolerations, volumes, ...), kept verbatim as JSON.
  void read_object_list(const YAML::Node& parent, const std::string& key, const std::string& path,
                        nlohmann::json& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    const std::string p = join(path, key);
    if (!n.IsSequence()) {
      error(p, "must be a list of objects, got " + describe(n));
      return;
    }
    if (!list_size_ok(n, p, kMaxPodListItems)) return;
    out = nlohmann::json::array();
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsMap()) {
        error(p + "[" + std::to_string(i) + "]", "must be an object, got " + describe(n[i]));
        continue;
      }
      try {
        out.push_back(detail::yaml_node_to_json(n[i]));
      } catch (const std::exception& e) {
        error(p + "[" + std::to_string(i) + "]", e.what());
      }
    }
  }

  /// A list of strings (a program's command, args): each item a string of at most max_length.
  void read_string_list(const YAML::Node& parent, const std::string& key, const std::string& path,
                        std::vector<std::string>& out, int max_items, int max_length) {
    const YAML::Node n = parent[key];
    const std::string p = join(path, key);
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsSequence()) {
      error(p, "must be a list of strings, got " + describe(n));
      return;
    }
    if (!list_size_ok(n, p, max_items)) return;
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string item = p + "[" + std::to_string(i) + "]";
      if (!is_yaml_string(n[i])) {
        error(item, "must be a string, got " + describe(n[i]) + quote_hint(n[i]));
      } else if (const std::string problem = text_problem(n[i].Scalar(), max_length); !problem.empty()) {
        error(item, problem);
      } else {
        out.push_back(n[i].Scalar());
      }
    }
  }

  bool list_size_ok(const YAML::Node& n, const std::string& path, int max_items) {
    if (n.size() <= static_cast<std::size_t>(max_items)) return true;
    error(path, "must have at most " + std::to_string(max_items) + " items, got " + std::to_string(n.size()));
    return false;
  }

  static bool is_yaml_string(const YAML::Node& n) {
    return n.IsScalar() && detail::scalar_kind(n) == detail::ScalarKind::String;
  }

  static std::string quote_hint(const YAML::Node& n) {
    if (n.IsScalar() && !is_yaml_string(n)) return " (YAML reads it as a " + kind_name(n) + "; quote it)";
    return "";
  }

  /// For a number or boolean field given a string that would be one unquoted: say so.
  static std::string number_hint(const YAML::Node& n) {
    if (!is_yaml_string(n) || detail::plain_scalar_kind(n.Scalar()) == detail::ScalarKind::String) return "";
    return " (a quoted or !!str scalar is a string to YAML and to the API server; write it without quotes or tag)";
  }

  static std::string kind_name(const YAML::Node& n) {
    switch (detail::scalar_kind(n)) {
      case detail::ScalarKind::Null:
        return "null";
      case detail::ScalarKind::Bool:
        return "boolean";
      case detail::ScalarKind::Int:
      case detail::ScalarKind::Float:
        return "number";
      case detail::ScalarKind::String:
        break;
    }
    return "string";
  }

 private:
  template <typename E>
  std::optional<E> read_enum_text(const YAML::Node& parent, const std::string& key, const std::string& path,
                                  bool empty_is_unset) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return std::nullopt;
    const std::size_t before = error_count();
    std::string text;
    read_string(parent, key, path, text);
    if (error_count() != before || (empty_is_unset && text.empty())) return std::nullopt;
    const auto v = parse_enum<E>(text);
    if (!v) error(join(path, key), one_of_message(allowed_texts<E>(), text));
    return v;
  }

  bool map_node(const YAML::Node& n, const std::string& path, const char* what) {
    if (!n.IsDefined() || n.IsNull()) return false;
    if (!n.IsMap()) {
      error(path, std::string("must be ") + what + ", got " + describe(n));
      return false;
    }
    if (n.size() <= static_cast<std::size_t>(kMaxMapEntries)) return true;
    error(path, "must have at most " + std::to_string(kMaxMapEntries) + " entries, got " + std::to_string(n.size()));
    return false;
  }

  bool text_ok(const std::string& path, const std::string& s, int max_length) {
    const std::string problem = text_problem(s, max_length);
    if (!problem.empty()) error(path, problem);
    return problem.empty();
  }

  std::vector<FieldError>& errors_;
};

// ---- the document's sections ----

void read_metadata(Reader& r, const YAML::Node& n, ObjectMeta& m) {
  // Kubernetes' ObjectMeta: the fields a server adds are accepted and ignored.
  if (!r.object(n, "metadata",
                {"name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
                 "creationTimestamp", "managedFields", "finalizers", "ownerReferences", "generateName",
                 "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}))
    return;
  r.read_string(n, "name", "metadata", m.name);
  r.read_string(n, "namespace", "metadata", m.namespace_);
  r.read_string_map(n, "labels", "metadata", m.labels, kMaxLabelValueLength);
  r.read_string_map(n, "annotations", "metadata", m.annotations, kMaxAnnotationValueLength);
}

void read_int_list(Reader& r, const YAML::Node& n, const std::string& path, std::vector<int>& out, int max_items) {
  if (!n.IsDefined() || n.IsNull()) return;
  if (!n.IsSequence()) {
    r.error(path, "must be a list of integers, got " + Reader::describe(n));
    return;
  }
  if (!r.list_size_ok(n, path, max_items)) return;
  out.clear();
  for (std::size_t i = 0; i < n.size(); ++i) {
    int v = 0;
    if (r.scalar_int32(n[i], path + "[" + std::to_string(i) + "]", v)) out.push_back(v);
  }
}

void read_mlp(Reader& r, const YAML::Node& n, const std::string& path, MlpSpec& m) {
  if (!r.object(n, path, {"inputSize", "hiddenSizes", "numClasses"})) return;
  r.read_int(n, "inputSize", path, m.input_size);
  r.read_int(n, "numClasses", path, m.num_classes);
  read_int_list(r, n["hiddenSizes"], path + ".hiddenSizes", m.hidden_sizes, kMaxLayerListItems);
}

void read_ddp(Reader& r, const YAML::Node& n, const std::string& path, DdpSpec& d) {
  if (!r.object(n, path, {"implementation", "bucketCapMB", "gradientCompression", "broadcastBuffers"})) return;
  r.read_enum(n, "implementation", path, d.implementation);
  r.read_double(n, "bucketCapMB", path, d.bucket_cap_mb);
  r.read_enum(n, "gradientCompression", path, d.gradient_compression);
  r.read_bool(n, "broadcastBuffers", path, d.broadcast_buffers);
}

void read_allreduce(Reader& r, const YAML::Node& n, const std::string& path, AllreduceSpec& a) {
  if (!r.object(n, path, {"minBytes", "maxBytes", "dtype"})) return;
  long long v = 0;
  if (r.read_integer(n, "minBytes", path, v)) a.min_bytes = v;
  if (r.read_integer(n, "maxBytes", path, v)) a.max_bytes = v;
  r.read_string(n, "dtype", path, a.dtype);
}

void read_hybrid_ps(Reader& r, const YAML::Node& n, const std::string& path, HybridPsSpec& h) {
  if (!r.object(n, path, {"parameterServers"})) return;
  r.read_int(n, "parameterServers", path, h.parameter_servers);
}

void read_model_sizes(Reader& r, const YAML::Node& n, const std::string& path, BenchmarkSpec& b) {
  r.read_int(n, "sequenceLength", path, b.sequence_length);
  const YAML::Node t = n["transformer"];
  const std::string tp = path + ".transformer";
  if (t.IsDefined() && !t.IsNull() &&
      r.object(t, tp, {"layers", "hidden", "heads", "intermediate", "vocabSize", "maxPositions", "attention"})) {
    r.read_int(t, "layers", tp, b.transformer.layers);
    r.read_int(t, "hidden", tp, b.transformer.hidden);
    r.read_int(t, "heads", tp, b.transformer.heads);
    r.read_int(t, "intermediate", tp, b.transformer.intermediate);
    r.read_int(t, "vocabSize", tp, b.transformer.vocab_size);
    r.read_int(t, "maxPositions", tp, b.transformer.max_positions);
    r.read_enum(t, "attention", tp, b.transformer.attention);
  }
  const YAML::Node m = n["mlstm"];
  const std::string mp = path + ".mlstm";
  if (m.IsDefined() && !m.IsNull() && r.object(m, mp, {"hiddenSize", "embeddingSize"})) {
    r.read_int(m, "hiddenSize", mp, b.mlstm.hidden_size);
    r.read_int(m, "embeddingSize", mp, b.mlstm.embedding_size);
  }
  const YAML::Node h = n["hybridEmbedding"];
  const std::string hp = path + ".hybridEmbedding";
  if (h.IsDefined() && !h.IsNull() &&
      r.object(h, hp, {"numTables", "numEmbeddings", "embeddingDim", "bagSize", "denseSizes", "numClasses"})) {
    auto& he = b.hybrid_embedding;
    r.read_int(h, "numTables", hp, he.num_tables);
    r.read_int(h, "numEmbeddings", hp, he.num_embeddings);
    r.read_int(h, "embeddingDim", hp, he.embedding_dim);
    r.read_int(h, "bagSize", hp, he.bag_size);
    r.read_int(h, "numClasses", hp, he.num_classes);
    read_int_list(r, h["denseSizes"], hp + ".denseSizes", he.dense_sizes, kMaxLayerListItems);
  }
}

void read_pipeline(Reader& r, const YAML::Node& n, const std::string& path, PipelineSpec& p) {
  if (!r.object(n, path, {"microBatches", "boundaries"})) return;
  r.read_int(n, "microBatches", path, p.micro_batches);
  const std::size_t before = r.error_count();
  read_int_list(r, n["boundaries"], path + ".boundaries", p.boundaries, kMaxBoundaries);
  if (r.error_count() != before) return;
  for (std::size_t i = 0; i < p.boundaries.size(); ++i) {
    if (p.boundaries[i] < bounds::kBoundary.min) {
      r.error(path + ".boundaries[" + std::to_string(i) + "]",
              "must be a block index >= " + std::to_string(bounds::kBoundary.min) + ", got " +
                  std::to_string(p.boundaries[i]));
    }
  }
}

void read_benchmark(Reader& r, const YAML::Node& n, BenchmarkSpec& b) {
  const std::string path = "spec.benchmark";
  if (!r.object(n, path,
                {"model",
                 "paradigm",
                 "batchSizePerDevice",
                 "precision",
                 "warmupSteps",
                 "measureSteps",
                 "repeats",
                 "seed",
                 "learningRate",
                 "threadsPerProcess",
                 "imageSize",
                 "mlp",
                 "ddp",
                 "optimizer",
                 "pipeline",
                 "sequenceLength",
                 "transformer",
                 "mlstm",
                 "hybridEmbedding",
                 "allreduce",
                 "hybridPs",
                 "stragglerThreshold",
                 "efficiencyTarget",
                 "noiseThresholdPercent",
                 "peakTFLOPS"}))
    return;
  r.read_string(n, "model", path, b.model);
  r.read_enum(n, "paradigm", path, b.paradigm);
  r.read_int(n, "batchSizePerDevice", path, b.batch_size_per_device);
  r.read_enum(n, "precision", path, b.precision);
  r.read_int(n, "warmupSteps", path, b.warmup_steps);
  r.read_int(n, "measureSteps", path, b.measure_steps);
  r.read_int(n, "repeats", path, b.repeats);
  long long seed = 0;
  if (r.read_integer(n, "seed", path, seed)) {
    if (seed < bounds::kSeed.min) {
      r.error(path + ".seed", "must be >= " + std::to_string(bounds::kSeed.min) + ", got " + std::to_string(seed));
    } else {
      b.seed = static_cast<std::uint64_t>(seed);
    }
  }
  r.read_double(n, "learningRate", path, b.learning_rate);
  r.read_double(n, "stragglerThreshold", path, b.straggler_threshold);
  r.read_double(n, "efficiencyTarget", path, b.efficiency_target);
  r.read_double(n, "noiseThresholdPercent", path, b.noise_threshold_percent);
  if (double peak = 0; r.read_double(n, "peakTFLOPS", path, peak)) b.peak_tflops = peak;
  r.read_int(n, "threadsPerProcess", path, b.threads_per_process);
  r.read_int(n, "imageSize", path, b.image_size);
  if (n["mlp"].IsDefined() && !n["mlp"].IsNull()) read_mlp(r, n["mlp"], path + ".mlp", b.mlp);
  if (n["ddp"].IsDefined() && !n["ddp"].IsNull()) read_ddp(r, n["ddp"], path + ".ddp", b.ddp);
  r.read_enum(n, "optimizer", path, b.optimizer);
  if (n["pipeline"].IsDefined() && !n["pipeline"].IsNull())
    read_pipeline(r, n["pipeline"], path + ".pipeline", b.pipeline);
  read_model_sizes(r, n, path, b);
  if (n["allreduce"].IsDefined() && !n["allreduce"].IsNull())
    read_allreduce(r, n["allreduce"], path + ".allreduce", b.allreduce);
  if (n["hybridPs"].IsDefined() && !n["hybridPs"].IsNull()) {
    read_hybrid_ps(r, n["hybridPs"], path + ".hybridPs", b.hybrid_ps);
  }
}

void read_sweep(Reader& r, const YAML::Node& n, std::vector<SweepEntry>& sweep) {
  if (!n.IsSequence()) {
    r.error("spec.sweep", "must be a list of {nodes, devicesPerNode}, got " + Reader::describe(n));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "spec.sweep[" + std::to_string(i) + "]";
    SweepEntry e;
    if (r.object(n[i], path, {"nodes", "devicesPerNode", "paradigm", "bucketCapMB", "parameterServers"})) {
      r.read_int(n[i], "nodes", path, e.nodes);
      r.read_int(n[i], "devicesPerNode", path, e.devices_per_node);
      r.read_enum(n[i], "paradigm", path, e.paradigm);
      double cap = 0;
      if (r.read_double(n[i], "bucketCapMB", path, cap)) e.bucket_cap_mb = cap;
      int servers = 0;
      if (n[i]["parameterServers"].IsDefined() && !n[i]["parameterServers"].IsNull()) {
        const std::size_t before = r.error_count();
        r.read_int(n[i], "parameterServers", path, servers);
        if (r.error_count() == before) e.parameter_servers = servers;
      }
    }
    sweep.push_back(e);
  }
}

void read_run_policy(Reader& r, const YAML::Node& n, RunPolicy& p) {
  const std::string path = "spec.runPolicy";
  if (!r.object(n, path,
                {"activeDeadlineSeconds", "collectiveTimeoutSeconds", "backoffLimit", "schedulingTimeoutSeconds",
                 "hangTimeoutSeconds", "cleanPodPolicy"}))
    return;
  r.read_int(n, "activeDeadlineSeconds", path, p.active_deadline_seconds);
  r.read_int(n, "collectiveTimeoutSeconds", path, p.collective_timeout_seconds);
  r.read_int(n, "backoffLimit", path, p.backoff_limit);
  r.read_int(n, "schedulingTimeoutSeconds", path, p.scheduling_timeout_seconds);
  if (n["hangTimeoutSeconds"].IsDefined() && !n["hangTimeoutSeconds"].IsNull()) {
    int hang = 0;
    const std::size_t before = r.error_count();
    r.read_int(n, "hangTimeoutSeconds", path, hang);
    if (r.error_count() == before) p.hang_timeout_seconds = hang;
  }
  r.read_enum(n, "cleanPodPolicy", path, p.clean_pod_policy);
}

void read_template(Reader& r, const YAML::Node& n, PodTemplate& t) {
  const std::string path = "spec.template";
  if (!r.object(n, path,
                {"image", "imagePullPolicy", "serviceAccountName", "resources", "nodeSelector", "tolerations",
                 "volumes", "volumeMounts", "env", "annotations", "labels"}))
    return;
  r.read_string(n, "image", path, t.image, kMaxImageLength);
  if (n["image"].IsDefined() && n["image"].IsScalar() && n["image"].Scalar().empty()) {
    r.error(path + ".image", "must not be empty (unset: the operator's image for spec.device, " +
                                 PodTemplate::default_worker_image(Device::kCpu) + " or " +
                                 PodTemplate::default_worker_image(Device::kCuda) + ")");
  }
  r.read_string(n, "imagePullPolicy", path, t.image_pull_policy);
  r.read_string(n, "serviceAccountName", path, t.service_account_name, kMaxServiceAccountNameLength);
  const YAML::Node res = n["resources"];
  if (res.IsDefined() && !res.IsNull() && r.object(res, path + ".resources", {"limits", "requests"})) {
    r.read_quantity_map(res, "limits", path + ".resources", t.resource_limits);
    r.read_quantity_map(res, "requests", path + ".resources", t.resource_requests);
  }
  r.read_string_map(n, "nodeSelector", path, t.node_selector, kMaxLabelValueLength);
  r.read_object_list(n, "tolerations", path, t.tolerations);
  r.read_object_list(n, "volumes", path, t.volumes);
  r.read_object_list(n, "volumeMounts", path, t.volume_mounts);
  r.read_object_list(n, "env", path, t.env);
  r.read_string_map(n, "annotations", path, t.annotations, kMaxAnnotationValueLength);
  r.read_string_map(n, "labels", path, t.labels, kMaxLabelValueLength);
}

void read_nccl(Reader& r, const YAML::Node& n, NcclSpec& c) {
  const std::string path = "spec.nccl";
  if (!r.object(n, path, {"socketIfname", "ibDisable", "debug", "extraEnv"})) return;
  r.read_string(n, "socketIfname", path, c.socket_ifname, kMaxSocketIfnameLength);
  const YAML::Node ib = n["ibDisable"];
  if (ib.IsDefined() && !ib.IsNull()) {
    bool v = false;
    const std::size_t before = r.error_count();
    r.read_bool(n, "ibDisable", path, v);  // reports anything but a boolean
    if (r.error_count() == before) c.ib_disable = v;
  }
  r.read_string(n, "debug", path, c.debug);
  r.read_string_map(n, "extraEnv", path, c.extra_env, kMaxEnvValueLength);
}

void read_baseline(Reader& r, const YAML::Node& n, BaselineSpec& b) {
  const std::string path = "spec.baseline";
  if (!r.object(n, path, {"benchmarkJob", "configMap", "regressionThresholdPercent"})) return;
  r.read_string(n, "benchmarkJob", path, b.benchmark_job, kMaxJobNameLength);
  const YAML::Node cm = n["configMap"];
  if (cm.IsDefined() && !cm.IsNull() && r.object(cm, path + ".configMap", {"name", "key"})) {
    r.read_string(cm, "name", path + ".configMap", b.config_map, kMaxDnsSubdomainLength);
    r.read_string(cm, "key", path + ".configMap", b.config_map_key, kMaxConfigMapKeyLength);
    if (b.config_map.empty()) r.error(path + ".configMap.name", "is required");
  }
  r.read_double(n, "regressionThresholdPercent", path, b.regression_threshold_percent);
}

void read_program_env(Reader& r, const YAML::Node& n, const std::string& path, std::vector<ProgramEnvVar>& env) {
  if (!n.IsSequence()) {
    r.error(path, "must be a list of {name, value}, got " + Reader::describe(n));
    return;
  }
  if (!r.list_size_ok(n, path, kMaxPodListItems)) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (!r.object(n[i], p, {"name", "value"})) continue;
    ProgramEnvVar v;
    r.read_string(n[i], "name", p, v.name, kMaxEnvNameLength);
    r.read_string(n[i], "value", p, v.value, kMaxEnvValueLength);
    env.push_back(v);
  }
}

void read_program(Reader& r, const YAML::Node& n, const std::string& path, ProgramSpec& p) {
  if (!r.object(n, path, {"image", "command", "args", "env", "workingDir", "flopsPerExample"})) return;
  r.read_string(n, "image", path, p.image, kMaxImageLength);
  r.read_string_list(n, "command", path, p.command, kMaxProgramArgs, kMaxProgramArgLength);
  r.read_string_list(n, "args", path, p.args, kMaxProgramArgs, kMaxProgramArgLength);
  if (n["env"].IsDefined() && !n["env"].IsNull()) read_program_env(r, n["env"], path + ".env", p.env);
  r.read_string(n, "workingDir", path, p.working_dir, kMaxProgramArgLength);
  if (double flops = 0; r.read_double(n, "flopsPerExample", path, flops)) p.flops_per_example = flops;
}

void read_workloads(Reader& r, const YAML::Node& n, std::vector<WorkloadSpec>& workloads) {
  if (!n.IsSequence()) {
    r.error("spec.workloads", "must be a list of {name, program}, got " + Reader::describe(n));
    return;
  }
  if (!r.list_size_ok(n, "spec.workloads", kMaxWorkloads)) return;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "spec.workloads[" + std::to_string(i) + "]";
    WorkloadSpec w;
    if (r.object(n[i], path, {"name", "program"})) {
      r.read_string(n[i], "name", path, w.name, kMaxWorkloadNameLength);
      const YAML::Node program = n[i]["program"];
      if (program.IsDefined() && !program.IsNull()) read_program(r, program, path + ".program", w.program.emplace());
    }
    workloads.push_back(w);
  }
}

void read_document(Reader& r, const YAML::Node& doc, BenchmarkJob& job) {
  if (!r.object(doc, "", {"apiVersion", "kind", "metadata", "spec", "status"})) return;
  if (!doc["apiVersion"].IsDefined()) {
    r.error("apiVersion", std::string("is required (") + kApiVersion + ")");
  } else {
    r.read_string(doc, "apiVersion", "", job.api_version);
  }
  if (!doc["kind"].IsDefined()) {
    r.error("kind", std::string("is required (") + kKind + ")");
  } else {
    r.read_string(doc, "kind", "", job.kind);
  }
  if (doc["metadata"].IsDefined()) read_metadata(r, doc["metadata"], job.metadata);
  const YAML::Node spec = doc["spec"];
  if (!spec.IsDefined() || spec.IsNull()) {
    r.error("spec", "is required");
    return;
  }
  if (!r.object(spec, "spec",
                {"benchmark", "sweep", "device", "backend", "runPolicy", "masterPort", "template", "nccl", "baseline",
                 "suspend", "workloads"}))
    return;
  if (spec["benchmark"].IsDefined() && !spec["benchmark"].IsNull()) read_benchmark(r, spec["benchmark"], job.benchmark);
  if (spec["sweep"].IsDefined() && !spec["sweep"].IsNull()) read_sweep(r, spec["sweep"], job.sweep);
  r.read_enum(spec, "device", "spec", job.device);
  r.read_enum(spec, "backend", "spec", job.backend);
  if (spec["runPolicy"].IsDefined() && !spec["runPolicy"].IsNull())
    read_run_policy(r, spec["runPolicy"], job.run_policy);
  r.read_int(spec, "masterPort", "spec", job.master_port);
  if (spec["template"].IsDefined() && !spec["template"].IsNull()) read_template(r, spec["template"], job.pod_template);
  if (spec["nccl"].IsDefined() && !spec["nccl"].IsNull()) read_nccl(r, spec["nccl"], job.nccl);
  if (spec["baseline"].IsDefined() && !spec["baseline"].IsNull())
    read_baseline(r, spec["baseline"], job.baseline.emplace());
  r.read_bool(spec, "suspend", "spec", job.suspend);
  if (spec["workloads"].IsDefined() && !spec["workloads"].IsNull()) read_workloads(r, spec["workloads"], job.workloads);
}

FieldError document_too_large(std::size_t bytes) {
  return {"<yaml>", "the document is " + std::to_string(bytes) + " bytes; at most " +
                        std::to_string(kMaxDocumentBytes) + " are read"};
}

/// The one document of `text`, or a SpecError on "<yaml>": too large, not YAML, not one document.
YAML::Node load_spec_document(const std::string& text) {
  if (text.size() > static_cast<std::size_t>(kMaxDocumentBytes)) throw SpecError({document_too_large(text.size())});
  try {
    return detail::load_one_document(text);
  } catch (const std::runtime_error& e) {
    throw SpecError({{"<yaml>", std::string(e.what())}});
  }
}

/// Every key given twice in one mapping: yaml-cpp would keep the first silently. This walk also
/// spends the node budget (kMaxYamlNodes) first, so an alias bomb is refused before it is read.
void report_duplicate_keys(const YAML::Node& doc, std::vector<FieldError>& errors) {
  try {
    detail::find_duplicate_keys(doc, [&errors](const std::string& path, const std::string& key, int first, int second) {
      errors.push_back({Reader::join(path, printable(key)),
                        "duplicate key " + quote(key) + " (lines " + std::to_string(first) + " and " +
                            std::to_string(second) + "): one would be ignored silently; keep one"});
    });
  } catch (const std::runtime_error& e) {
    throw SpecError({{"<yaml>", std::string(e.what())}});  // past the node budget: read no further
  }
}

/// Invalid UTF-8 the field readers did not see (a comment, an ignored metadata field).
void report_invalid_utf8(const std::string& text, std::vector<FieldError>& errors) {
  const auto bad = invalid_utf8_offset(text);
  if (!bad) return;
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(*bad), '\n') + 1;
  errors.push_back({"<yaml>", "invalid UTF-8: byte " + escape_invalid_utf8(text.substr(*bad, 1)) + " at line " +
                                  std::to_string(line)});
}

}  // namespace

BenchmarkJob parse_benchmark_job(const std::string& yaml_text) {
  const YAML::Node doc = load_spec_document(yaml_text);
  std::vector<FieldError> errors;
  report_duplicate_keys(doc, errors);
  BenchmarkJob job;
  Reader reader(errors);
  read_document(reader, doc, job);
  if (errors.empty()) report_invalid_utf8(yaml_text, errors);
  if (!job.backend) job.backend = default_backend(job.device);
  if (!errors.empty()) throw SpecError(errors);  // don't pile semantic errors on parse errors
  errors = validate(job);
  if (!errors.empty()) throw SpecError(errors);
  return job;
}

BenchmarkJob load_benchmark_job(const std::string& path) {
  std::error_code ec;
  const std::string name = "\"" + printable(path, 4096) + "\"";
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw SpecError({{"<file>", "cannot read " + name + ": not a regular file"}});
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > static_cast<std::uintmax_t>(kMaxDocumentBytes)) {  // refused before it is read
    throw SpecError({document_too_large(static_cast<std::size_t>(size))});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError({{"<file>", "cannot read " + name}});
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_benchmark_job(ss.str());
}

}  // namespace trainbench
