#include "core/spec.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "core/model_sizes.hpp"
#include "core/version.hpp"
#include "core/yaml_node_json.hpp"

namespace trainbench {
namespace {

std::string quote(const std::string& s) { return "\"" + printable(s) + "\""; }

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

/// The validator's message for a value outside a closed set (the reader's for an enum field).
std::string one_of_message(const std::vector<std::string>& allowed, const std::string& value) {
  return "must be one of [" + list(allowed) + "], got " + quote(value);
}

std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Characters (code points) of a valid UTF-8 string: what the API server's maxLength counts.
std::size_t utf8_length(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

/// "" when `s` is valid UTF-8 of at most `max_length` characters, else why not.
std::string text_problem(const std::string& s, int max_length) {
  if (const auto bad = invalid_utf8_offset(s)) {
    return "must be valid UTF-8, got byte " + escape_invalid_utf8(std::string(1, s[*bad])) + " at offset " +
           std::to_string(*bad);
  }
  if (utf8_length(s) > static_cast<std::size_t>(max_length)) {
    return "must be at most " + std::to_string(max_length) + " characters, got " + std::to_string(utf8_length(s));
  }
  return "";
}

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
        error(join(path, printable(key)), "unknown field (allowed: " + list(allowed) + ")");
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

  /// A field of a closed set (core/vocabulary.hpp): a string spelt as one of E's values.
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
        error(p, "must be a quantity (an integer or a string such as \"500m\" or \"4Gi\"), got " +
                     describe(kv.second));
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
      case detail::ScalarKind::Null: return "null";
      case detail::ScalarKind::Bool: return "boolean";
      case detail::ScalarKind::Int:
      case detail::ScalarKind::Float: return "number";
      case detail::ScalarKind::String: break;
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
  if (!r.object(n, path, {"bucketCapMB", "gradientCompression", "broadcastBuffers"})) return;
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
      r.object(t, tp, {"layers", "hidden", "heads", "intermediate", "vocabSize", "maxPositions"})) {
    r.read_int(t, "layers", tp, b.transformer.layers);
    r.read_int(t, "hidden", tp, b.transformer.hidden);
    r.read_int(t, "heads", tp, b.transformer.heads);
    r.read_int(t, "intermediate", tp, b.transformer.intermediate);
    r.read_int(t, "vocabSize", tp, b.transformer.vocab_size);
    r.read_int(t, "maxPositions", tp, b.transformer.max_positions);
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
    if (p.boundaries[i] < 1) {
      r.error(path + ".boundaries[" + std::to_string(i) + "]",
              "must be a block index >= 1, got " + std::to_string(p.boundaries[i]));
    }
  }
}

void read_benchmark(Reader& r, const YAML::Node& n, BenchmarkSpec& b) {
  const std::string path = "spec.benchmark";
  if (!r.object(n, path,
                {"model", "paradigm", "batchSizePerDevice", "precision", "warmupSteps", "measureSteps", "repeats",
                 "seed", "learningRate", "threadsPerProcess", "imageSize", "mlp", "ddp", "optimizer", "pipeline", "sequenceLength",
                 "transformer", "mlstm", "hybridEmbedding", "allreduce", "hybridPs"}))
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
    if (seed < 0) {
      r.error(path + ".seed", "must be >= 0, got " + std::to_string(seed));
    } else {
      b.seed = static_cast<std::uint64_t>(seed);
    }
  }
  r.read_double(n, "learningRate", path, b.learning_rate);
  r.read_int(n, "threadsPerProcess", path, b.threads_per_process);
  r.read_int(n, "imageSize", path, b.image_size);
  if (n["mlp"].IsDefined() && !n["mlp"].IsNull()) read_mlp(r, n["mlp"], path + ".mlp", b.mlp);
  if (n["ddp"].IsDefined() && !n["ddp"].IsNull()) read_ddp(r, n["ddp"], path + ".ddp", b.ddp);
  r.read_enum(n, "optimizer", path, b.optimizer);
  if (n["pipeline"].IsDefined() && !n["pipeline"].IsNull()) read_pipeline(r, n["pipeline"], path + ".pipeline", b.pipeline);
  read_model_sizes(r, n, path, b);
  if (n["allreduce"].IsDefined() && !n["allreduce"].IsNull()) read_allreduce(r, n["allreduce"], path + ".allreduce", b.allreduce);
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
                 "cleanPodPolicy"}))
    return;
  r.read_int(n, "activeDeadlineSeconds", path, p.active_deadline_seconds);
  r.read_int(n, "collectiveTimeoutSeconds", path, p.collective_timeout_seconds);
  r.read_int(n, "backoffLimit", path, p.backoff_limit);
  r.read_int(n, "schedulingTimeoutSeconds", path, p.scheduling_timeout_seconds);
  r.read_enum(n, "cleanPodPolicy", path, p.clean_pod_policy);
}

void read_template(Reader& r, const YAML::Node& n, PodTemplate& t) {
  const std::string path = "spec.template";
  if (!r.object(n, path,
                {"image", "imagePullPolicy", "serviceAccountName", "resources", "nodeSelector", "tolerations",
                 "volumes", "volumeMounts", "env", "annotations", "labels"}))
    return;
  r.read_string(n, "image", path, t.image, kMaxImageLength);
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
                {"benchmark", "sweep", "device", "backend", "runPolicy", "masterPort", "template", "nccl"}))
    return;
  if (spec["benchmark"].IsDefined() && !spec["benchmark"].IsNull()) read_benchmark(r, spec["benchmark"], job.benchmark);
  if (spec["sweep"].IsDefined() && !spec["sweep"].IsNull()) read_sweep(r, spec["sweep"], job.sweep);
  r.read_enum(spec, "device", "spec", job.device);
  r.read_enum(spec, "backend", "spec", job.backend);
  if (spec["runPolicy"].IsDefined() && !spec["runPolicy"].IsNull()) read_run_policy(r, spec["runPolicy"], job.run_policy);
  r.read_int(spec, "masterPort", "spec", job.master_port);
  if (spec["template"].IsDefined() && !spec["template"].IsNull()) read_template(r, spec["template"], job.pod_template);
  if (spec["nccl"].IsDefined() && !spec["nccl"].IsNull()) read_nccl(r, spec["nccl"], job.nccl);
}

// ---- semantic validation ----

class Checker {
 public:
  explicit Checker(std::vector<FieldError>& errors) : errors_(errors) {}

  void at_least(const std::string& path, long long v, long long min) {
    if (v < min) errors_.push_back({path, "must be >= " + std::to_string(min) + ", got " + std::to_string(v)});
  }
  void at_most(const std::string& path, long long v, long long max) {
    if (v > max) errors_.push_back({path, "must be <= " + std::to_string(max) + ", got " + std::to_string(v)});
  }
  void positive(const std::string& path, double v) {
    if (!(v > 0) || !std::isfinite(v)) errors_.push_back({path, "must be > 0, got " + fmt_number(v)});
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
  return s.size() <= 63 && std::regex_match(s, kLabel);
}

/// `pattern` on `s`, only when `s` is at most `max_length` bytes: std::regex recurses once per
/// character, so no pattern runs on unbounded text.
bool matches(const std::string& s, const char* pattern, int max_length) {
  if (s.size() > static_cast<std::size_t>(max_length)) return false;
  // Compiled once per pattern (a std::regex costs ~400 us to build, a match well under 1 us).
  // The patterns are core's constants, so the cache is bounded by their number.
  static std::mutex mu;
  static std::map<std::string, std::regex> compiled;
  const std::regex* re = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = compiled.find(pattern);
    if (it == compiled.end()) it = compiled.emplace(pattern, std::regex(pattern)).first;
    re = &it->second;  // map nodes are stable; matching a const regex is thread-safe
  }
  return std::regex_match(s, *re);
}

/// A label or annotation key: [DNS-subdomain prefix "/"] name (<= 63, alphanumerics with -_. inside).
bool is_qualified_name(const std::string& key) {
  static const std::regex kName("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]");
  const auto slash = key.find('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (slash != std::string::npos) {
    const std::string prefix = key.substr(0, slash);
    if (prefix.empty() || !matches(prefix, kDnsSubdomainPattern, 253)) return false;
  }
  return !name.empty() && name.size() <= 63 && std::regex_match(name, kName);
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
  if (t.image.empty()) c.add(tp + ".image", "must not be empty (default " + PodTemplate::default_worker_image() + ")");
  check_text(c, tp + ".image", t.image, kMaxImageLength);
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
    c.at_least(p + ".parameterServers", *e.parameter_servers, kMinParameterServers);
    c.at_most(p + ".parameterServers", *e.parameter_servers, kMaxParameterServers);
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

}  // namespace

std::string PodTemplate::default_worker_image() { return std::string("trainbench/worker:") + kVersion; }

const std::vector<std::string>& known_models() {
  static const std::vector<std::string> v{"mlp",       "resnet18",        "resnet50",
                                          "resnet101", "resnext50_32x4d", "resnext101_32x8d",
                                          "bert-base", "gpt2-small",      "mlstm",
                                          "hybrid-embedding"};
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

std::vector<FieldError> validate(const BenchmarkJob& job) {
  std::vector<FieldError> errors;
  Checker c(errors);
  if (job.api_version != kApiVersion) {
    c.add("apiVersion", std::string("must be ") + quote(kApiVersion) + ", got " + quote(job.api_version));
  }
  if (job.kind != kKind) c.add("kind", std::string("must be ") + quote(kKind) + ", got " + quote(job.kind));
  if (job.metadata.name.empty()) {
    c.add("metadata.name", "is required");
  } else if (!matches(job.metadata.name, kJobNamePattern, kMaxJobNameLength)) {
    c.add("metadata.name",
          "must be a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a letter, ending with a letter or "
          "digit, at most " + std::to_string(kMaxJobNameLength) +
          " characters: the operator names each run's Service NAME-r<i>), got " + quote(job.metadata.name));
  }
  if (!is_dns_label(job.metadata.namespace_)) {
    c.add("metadata.namespace", "must be a lowercase RFC 1123 label, got " + quote(job.metadata.namespace_));
  }

  const BenchmarkSpec& b = job.benchmark;
  const std::string bp = "spec.benchmark";
  // paradigm allreduce trains nothing: a job whose runs are all allreduce needs no model.
  const bool all_allreduce =
      !job.sweep.empty() && std::all_of(job.sweep.begin(), job.sweep.end(), [&b](const SweepEntry& e) {
        return !trains_model(e.paradigm.value_or(b.paradigm));
      });
  if (b.model.empty()) {
    if (!all_allreduce) {
      c.add(bp + ".model", "is required (one of [" + list(known_models()) + "]) unless every run is paradigm allreduce");
    }
  } else {
    c.one_of(bp + ".model", b.model, known_models());
  }
  for (const auto& e : validate_allreduce(b.allreduce, bp + ".allreduce")) c.add(e.path, e.message);
  c.at_least(bp + ".batchSizePerDevice", b.batch_size_per_device, 1);
  c.at_most(bp + ".batchSizePerDevice", b.batch_size_per_device, 65536);
  c.at_least(bp + ".warmupSteps", b.warmup_steps, 0);
  c.at_least(bp + ".measureSteps", b.measure_steps, 1);
  c.at_least(bp + ".repeats", b.repeats, 1);
  c.at_most(bp + ".repeats", b.repeats, 1000);
  c.positive(bp + ".learningRate", b.learning_rate);
  c.at_least(bp + ".threadsPerProcess", b.threads_per_process, 0);
  c.at_most(bp + ".threadsPerProcess", b.threads_per_process, 1024);
  c.at_least(bp + ".imageSize", b.image_size, 32);
  c.at_most(bp + ".imageSize", b.image_size, 1024);
  c.at_least(bp + ".mlp.inputSize", b.mlp.input_size, 1);
  c.at_least(bp + ".mlp.numClasses", b.mlp.num_classes, 2);
  for (std::size_t i = 0; i < b.mlp.hidden_sizes.size(); ++i) {
    c.at_least(bp + ".mlp.hiddenSizes[" + std::to_string(i) + "]", b.mlp.hidden_sizes[i], 1);
  }
  c.positive(bp + ".ddp.bucketCapMB", b.ddp.bucket_cap_mb);
  c.at_least(bp + ".pipeline.microBatches", b.pipeline.micro_batches, 1);
  c.at_most(bp + ".pipeline.microBatches", b.pipeline.micro_batches, 65536);  // batchSizePerDevice's bound
  check_boundaries(c, b);
  if (b.precision == Precision::kAmpFp16 && job.device != Device::kCuda) {
    c.add(bp + ".precision",
          "amp-fp16 needs spec.device cuda (CPU autocast has bfloat16 only: use amp-bf16), got "
          "device " +
              quote(to_string(job.device)));
  }
  for (const auto& e : validate_model_sizes(b)) c.add(e.path, e.message);
  c.at_least(bp + ".hybridPs.parameterServers", b.hybrid_ps.parameter_servers, kMinParameterServers);
  c.at_most(bp + ".hybridPs.parameterServers", b.hybrid_ps.parameter_servers, kMaxParameterServers);

  if (job.backend == Backend::kNccl && job.device != Device::kCuda) {
    c.add("spec.backend", "nccl needs spec.device cuda, got device " + quote(to_string(job.device)));
  }
  c.at_least("spec.runPolicy.activeDeadlineSeconds", job.run_policy.active_deadline_seconds, 0);
  c.at_least("spec.runPolicy.collectiveTimeoutSeconds", job.run_policy.collective_timeout_seconds, 1);
  c.at_least("spec.runPolicy.backoffLimit", job.run_policy.backoff_limit, 0);
  c.at_least("spec.runPolicy.schedulingTimeoutSeconds", job.run_policy.scheduling_timeout_seconds, 1);
  c.at_least("spec.masterPort", job.master_port, kMinMasterPort);
  c.at_most("spec.masterPort", job.master_port, kMaxMasterPort);

  check_template(c, job.pod_template);
  check_nccl(c, job.nccl);
  check_label_map(c, "metadata.labels", job.metadata.labels, true);
  check_label_map(c, "metadata.annotations", job.metadata.annotations, false);

  if (job.sweep.empty()) {
    c.add("spec.sweep", "must list at least one {nodes, devicesPerNode}");
  } else if (job.sweep.size() > static_cast<std::size_t>(kMaxSweepEntries)) {
    c.add("spec.sweep", "must have at most " + std::to_string(kMaxSweepEntries) + " entries, got " +
                            std::to_string(job.sweep.size()));
  }
  for (std::size_t i = 0; i < job.sweep.size(); ++i) {
    const SweepEntry& e = job.sweep[i];
    const std::string p = "spec.sweep[" + std::to_string(i) + "]";
    c.at_least(p + ".nodes", e.nodes, 1);
    c.at_least(p + ".devicesPerNode", e.devices_per_node, 1);
    if (e.nodes >= 1 && e.devices_per_node >= 1 &&
        static_cast<long long>(e.nodes) * e.devices_per_node > kMaxWorldSize) {
      c.add(p, "nodes x devicesPerNode must be <= " + std::to_string(kMaxWorldSize) + ", got " +
                   std::to_string(static_cast<long long>(e.nodes) * e.devices_per_node));
    }
    const Paradigm paradigm = e.paradigm.value_or(b.paradigm);
    if (paradigm == Paradigm::kNone && (e.nodes != 1 || e.devices_per_node != 1)) {
      c.add(p + (e.nodes != 1 ? ".nodes" : ".devicesPerNode"),
            "paradigm none runs on exactly one device (nodes 1, devicesPerNode 1), got nodes " +
                std::to_string(e.nodes) + ", devicesPerNode " + std::to_string(e.devices_per_node));
    }
    if (e.bucket_cap_mb) c.positive(p + ".bucketCapMB", *e.bucket_cap_mb);
    if (paradigm == Paradigm::kZero && b.optimizer && *b.optimizer != Optimizer::kAdam) {
      c.add(bp + ".optimizer",
            "paradigm zero shards Adam's state (" + p + "): must be adam, got " + quote(to_string(*b.optimizer)));
    }
    check_hybrid_ps(c, job, e, p, paradigm);
    if (splits_into_stages(paradigm)) check_staged(c, b, e, p, paradigm);
  }
  return errors;
}

nlohmann::json to_json(const BenchmarkJob& job) {
  using nlohmann::json;
  const BenchmarkSpec& b = job.benchmark;
  json metadata = {{"name", job.metadata.name}, {"namespace", job.metadata.namespace_}};
  if (!job.metadata.labels.empty()) metadata["labels"] = job.metadata.labels;
  if (!job.metadata.annotations.empty()) metadata["annotations"] = job.metadata.annotations;
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
      {"threadsPerProcess", b.threads_per_process},
      {"imageSize", b.image_size},
      {"mlp",
       {{"inputSize", b.mlp.input_size}, {"hiddenSizes", b.mlp.hidden_sizes}, {"numClasses", b.mlp.num_classes}}},
      {"ddp",
       {{"bucketCapMB", b.ddp.bucket_cap_mb},
        {"gradientCompression", to_string(b.ddp.gradient_compression)},
        {"broadcastBuffers", b.ddp.broadcast_buffers}}},
      {"pipeline", {{"microBatches", b.pipeline.micro_batches}, {"boundaries", b.pipeline.boundaries}}},
      {"sequenceLength", b.sequence_length},
      {"transformer", to_json(b.transformer)},
      {"mlstm", to_json(b.mlstm)},
      {"hybridEmbedding", to_json(b.hybrid_embedding)},
  };
  if (b.optimizer) benchmark["optimizer"] = to_string(*b.optimizer);
  benchmark["allreduce"] = to_json(b.allreduce);
  benchmark["hybridPs"] = {{"parameterServers", b.hybrid_ps.parameter_servers}};
  if (b.model.empty()) benchmark.erase("model");  // allowed when every run is allreduce
  json sweep = json::array();
  for (const SweepEntry& e : job.sweep) {
    json entry = {{"nodes", e.nodes}, {"devicesPerNode", e.devices_per_node}};
    if (e.paradigm) entry["paradigm"] = to_string(*e.paradigm);
    if (e.bucket_cap_mb) entry["bucketCapMB"] = *e.bucket_cap_mb;
    if (e.parameter_servers) entry["parameterServers"] = *e.parameter_servers;
    sweep.push_back(entry);
  }
  const RunPolicy& rp = job.run_policy;
  const PodTemplate& t = job.pod_template;
  json tmpl = {{"image", t.image}};
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
  json spec = {
      {"benchmark", benchmark},
      {"sweep", sweep},
      {"device", to_string(job.device)},
      {"masterPort", job.master_port},
      {"runPolicy",
       {{"activeDeadlineSeconds", rp.active_deadline_seconds},
        {"collectiveTimeoutSeconds", rp.collective_timeout_seconds},
        {"backoffLimit", rp.backoff_limit},
        {"schedulingTimeoutSeconds", rp.scheduling_timeout_seconds},
        {"cleanPodPolicy", to_string(rp.clean_pod_policy)}}},
      {"template", tmpl},
  };
  if (job.backend) spec["backend"] = to_string(*job.backend);
  json nccl = json::object();
  if (!job.nccl.socket_ifname.empty()) nccl["socketIfname"] = job.nccl.socket_ifname;
  if (job.nccl.ib_disable) nccl["ibDisable"] = *job.nccl.ib_disable;
  if (!job.nccl.debug.empty()) nccl["debug"] = job.nccl.debug;
  if (!job.nccl.extra_env.empty()) nccl["extraEnv"] = job.nccl.extra_env;
  if (!nccl.empty()) spec["nccl"] = nccl;
  return {{"apiVersion", job.api_version}, {"kind", job.kind}, {"metadata", metadata}, {"spec", spec}};
}

namespace {

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
