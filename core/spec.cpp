#include "core/spec.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

namespace trainbench {
namespace {

std::string quote(const std::string& s) { return "\"" + s + "\""; }

std::string list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Walks a YAML tree, collecting FieldErrors with full paths instead of throwing at the first.
class Reader {
 public:
  explicit Reader(std::vector<FieldError>& errors) : errors_(errors) {}

  void error(const std::string& path, const std::string& message) { errors_.push_back({path, message}); }

  /// True when `node` is a mapping; flags every key not in `allowed`.
  bool object(const YAML::Node& node, const std::string& path, const std::vector<std::string>& allowed) {
    if (!node.IsMap()) {
      error(path.empty() ? "<document>" : path, "must be an object, got " + describe(node));
      return false;
    }
    for (const auto& kv : node) {
      std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        error(join(path, key), "unknown field (allowed: " + list(allowed) + ")");
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

  void read_string(const YAML::Node& parent, const std::string& key, const std::string& path, std::string& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsScalar()) {
      error(join(path, key), "must be a string, got " + describe(n));
      return;
    }
    out = n.Scalar();
  }

  void read_int(const YAML::Node& parent, const std::string& key, const std::string& path, int& out) {
    long long v = 0;
    if (read_integer(parent, key, path, v)) {
      if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
        error(join(path, key), "must be a 32-bit integer, got " + std::to_string(v));
        return;
      }
      out = static_cast<int>(v);
    }
  }

  bool read_integer(const YAML::Node& parent, const std::string& key, const std::string& path, long long& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return false;
    return scalar_integer(n, join(path, key), out);
  }

  bool scalar_integer(const YAML::Node& n, const std::string& path, long long& out) {
    static const std::regex kInt(R"([+-]?[0-9]+)");
    if (!n.IsScalar() || !std::regex_match(n.Scalar(), kInt)) {
      error(path, "must be an integer, got " + describe(n));
      return false;
    }
    try {
      out = std::stoll(n.Scalar());
    } catch (const std::exception&) {
      error(path, "integer out of range, got " + describe(n));
      return false;
    }
    return true;
  }

  bool read_double(const YAML::Node& parent, const std::string& key, const std::string& path, double& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return false;
    static const std::regex kNum(R"([+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)");
    if (!n.IsScalar() || !std::regex_match(n.Scalar(), kNum)) {
      error(join(path, key), "must be a number, got " + describe(n));
      return false;
    }
    try {
      out = std::stod(n.Scalar());
    } catch (const std::exception&) {
      error(join(path, key), "number out of range, got " + describe(n));
      return false;
    }
    return true;
  }

  void read_bool(const YAML::Node& parent, const std::string& key, const std::string& path, bool& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) {
      out = n.Scalar() == "true";
      return;
    }
    error(join(path, key), "must be true or false, got " + describe(n));
  }

  void read_string_map(const YAML::Node& parent, const std::string& key, const std::string& path,
                       std::map<std::string, std::string>& out) {
    const YAML::Node n = parent[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsMap()) {
      error(join(path, key), "must be a map of strings, got " + describe(n));
      return;
    }
    for (const auto& kv : n) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (!kv.second.IsScalar()) {
        error(join(path, key) + "." + k, "must be a string, got " + describe(kv.second));
        continue;
      }
      out[k] = kv.second.Scalar();
    }
  }

 private:
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
  r.read_string_map(n, "labels", "metadata", m.labels);
  r.read_string_map(n, "annotations", "metadata", m.annotations);
}

void read_mlp(Reader& r, const YAML::Node& n, const std::string& path, MlpSpec& m) {
  if (!r.object(n, path, {"inputSize", "hiddenSizes", "numClasses"})) return;
  r.read_int(n, "inputSize", path, m.input_size);
  r.read_int(n, "numClasses", path, m.num_classes);
  const YAML::Node h = n["hiddenSizes"];
  if (h.IsDefined() && !h.IsNull()) {
    if (!h.IsSequence()) {
      r.error(path + ".hiddenSizes", "must be a list of integers, got " + Reader::describe(h));
      return;
    }
    m.hidden_sizes.clear();
    for (std::size_t i = 0; i < h.size(); ++i) {
      long long v = 0;
      if (r.scalar_integer(h[i], path + ".hiddenSizes[" + std::to_string(i) + "]", v)) {
        m.hidden_sizes.push_back(static_cast<int>(std::clamp<long long>(v, -1, 1 << 30)));
      }
    }
  }
}

void read_ddp(Reader& r, const YAML::Node& n, const std::string& path, DdpSpec& d) {
  if (!r.object(n, path, {"bucketCapMB", "gradientCompression", "broadcastBuffers"})) return;
  r.read_double(n, "bucketCapMB", path, d.bucket_cap_mb);
  r.read_string(n, "gradientCompression", path, d.gradient_compression);
  r.read_bool(n, "broadcastBuffers", path, d.broadcast_buffers);
}

void read_benchmark(Reader& r, const YAML::Node& n, BenchmarkSpec& b) {
  const std::string path = "spec.benchmark";
  if (!r.object(n, path,
                {"model", "paradigm", "batchSizePerDevice", "precision", "warmupSteps", "measureSteps", "repeats",
                 "seed", "learningRate", "threadsPerProcess", "imageSize", "mlp", "ddp"}))
    return;
  r.read_string(n, "model", path, b.model);
  r.read_string(n, "paradigm", path, b.paradigm);
  r.read_int(n, "batchSizePerDevice", path, b.batch_size_per_device);
  r.read_string(n, "precision", path, b.precision);
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
}

void read_sweep(Reader& r, const YAML::Node& n, std::vector<SweepEntry>& sweep) {
  if (!n.IsSequence()) {
    r.error("spec.sweep", "must be a list of {nodes, devicesPerNode}, got " + Reader::describe(n));
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "spec.sweep[" + std::to_string(i) + "]";
    SweepEntry e;
    if (r.object(n[i], path, {"nodes", "devicesPerNode", "paradigm", "bucketCapMB"})) {
      r.read_int(n[i], "nodes", path, e.nodes);
      r.read_int(n[i], "devicesPerNode", path, e.devices_per_node);
      std::string p;
      r.read_string(n[i], "paradigm", path, p);
      if (!p.empty()) e.paradigm = p;
      double cap = 0;
      if (r.read_double(n[i], "bucketCapMB", path, cap)) e.bucket_cap_mb = cap;
    }
    sweep.push_back(e);
  }
}

void read_run_policy(Reader& r, const YAML::Node& n, RunPolicy& p) {
  if (!r.object(n, "spec.runPolicy", {"activeDeadlineSeconds", "collectiveTimeoutSeconds"})) return;
  r.read_int(n, "activeDeadlineSeconds", "spec.runPolicy", p.active_deadline_seconds);
  r.read_int(n, "collectiveTimeoutSeconds", "spec.runPolicy", p.collective_timeout_seconds);
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
  if (!r.object(spec, "spec", {"benchmark", "sweep", "device", "backend", "runPolicy"})) return;
  if (spec["benchmark"].IsDefined() && !spec["benchmark"].IsNull()) read_benchmark(r, spec["benchmark"], job.benchmark);
  if (spec["sweep"].IsDefined() && !spec["sweep"].IsNull()) read_sweep(r, spec["sweep"], job.sweep);
  r.read_string(spec, "device", "spec", job.device);
  r.read_string(spec, "backend", "spec", job.backend);
  if (spec["runPolicy"].IsDefined() && !spec["runPolicy"].IsNull()) read_run_policy(r, spec["runPolicy"], job.run_policy);
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
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      errors_.push_back({path, "must be one of [" + list(allowed) + "], got " + quote(v)});
    }
  }
  void add(const std::string& path, const std::string& message) { errors_.push_back({path, message}); }

 private:
  std::vector<FieldError>& errors_;
};

bool is_dns_label(const std::string& s) {
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, kLabel);
}

constexpr int kMaxSweepEntries = 64;
constexpr int kMaxWorldSize = 4096;

}  // namespace

const std::vector<std::string>& known_models() {
  static const std::vector<std::string> v{"mlp",      "resnet18",        "resnet50",
                                          "resnet101", "resnext50_32x4d", "resnext101_32x8d"};
  return v;
}
const std::vector<std::string>& known_paradigms() {
  static const std::vector<std::string> v{"none", "ddp"};
  return v;
}
const std::vector<std::string>& known_precisions() {
  static const std::vector<std::string> v{"fp32"};
  return v;
}
const std::vector<std::string>& known_compressions() {
  static const std::vector<std::string> v{"none", "fp16", "bf16"};
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
  } else if (!is_dns_label(job.metadata.name)) {
    c.add("metadata.name",
          "must be a lowercase RFC 1123 label (a-z, 0-9 and '-', starting and ending with a letter or digit, "
          "at most 63 characters), got " + quote(job.metadata.name));
  }
  if (!is_dns_label(job.metadata.namespace_)) {
    c.add("metadata.namespace", "must be a lowercase RFC 1123 label, got " + quote(job.metadata.namespace_));
  }

  const BenchmarkSpec& b = job.benchmark;
  const std::string bp = "spec.benchmark";
  if (b.model.empty()) {
    c.add(bp + ".model", "is required (one of [" + list(known_models()) + "])");
  } else {
    c.one_of(bp + ".model", b.model, known_models());
  }
  c.one_of(bp + ".paradigm", b.paradigm, known_paradigms());
  c.at_least(bp + ".batchSizePerDevice", b.batch_size_per_device, 1);
  c.at_most(bp + ".batchSizePerDevice", b.batch_size_per_device, 65536);
  c.one_of(bp + ".precision", b.precision, known_precisions());
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
  c.one_of(bp + ".ddp.gradientCompression", b.ddp.gradient_compression, known_compressions());

  c.one_of("spec.device", job.device, {"cpu", "cuda"});
  if (!job.backend.empty()) {
    c.one_of("spec.backend", job.backend, {"gloo", "nccl"});
    if (job.backend == "nccl" && job.device != "cuda") {
      c.add("spec.backend", "nccl needs spec.device cuda, got device " + quote(job.device));
    }
  }
  c.at_least("spec.runPolicy.activeDeadlineSeconds", job.run_policy.active_deadline_seconds, 0);
  c.at_least("spec.runPolicy.collectiveTimeoutSeconds", job.run_policy.collective_timeout_seconds, 1);

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
    const std::string paradigm = e.paradigm.value_or(b.paradigm);
    if (e.paradigm) c.one_of(p + ".paradigm", *e.paradigm, known_paradigms());
    if (paradigm == "none" && (e.nodes != 1 || e.devices_per_node != 1)) {
      c.add(p + (e.nodes != 1 ? ".nodes" : ".devicesPerNode"),
            "paradigm none runs on exactly one device (nodes 1, devicesPerNode 1), got nodes " +
                std::to_string(e.nodes) + ", devicesPerNode " + std::to_string(e.devices_per_node));
    }
    if (e.bucket_cap_mb) c.positive(p + ".bucketCapMB", *e.bucket_cap_mb);
  }
  return errors;
}

BenchmarkJob parse_benchmark_job(const std::string& yaml_text) {
  std::vector<FieldError> errors;
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml_text);
  } catch (const YAML::Exception& e) {
    throw SpecError({{"<yaml>", "not valid YAML: " + e.msg + " at line " + std::to_string(e.mark.line + 1) +
                                    ", column " + std::to_string(e.mark.column + 1)}});
  }
  if (docs.size() != 1) {
    throw SpecError({{"<yaml>", "expected exactly one document, got " + std::to_string(docs.size())}});
  }
  BenchmarkJob job;
  Reader reader(errors);
  read_document(reader, docs[0], job);
  if (job.backend.empty()) job.backend = job.device == "cuda" ? "nccl" : "gloo";
  if (!errors.empty()) throw SpecError(errors);  // don't pile semantic errors on parse errors
  errors = validate(job);
  if (!errors.empty()) throw SpecError(errors);
  return job;
}

BenchmarkJob load_benchmark_job(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw SpecError({{"<file>", "cannot read " + quote(path) + ": not a regular file"}});
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError({{"<file>", "cannot read " + quote(path)}});
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_benchmark_job(ss.str());
}

}  // namespace trainbench
