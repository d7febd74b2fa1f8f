#include "apps_strategy.hpp"

#include "status.hpp"
#include "strategies.hpp"
#include "workloads.hpp"

namespace kubesim {

namespace {

bool is_deployment(const ResourceType& t) { return t.kind == "Deployment"; }

json& object_at(json& parent, const std::string& key) {
  if (!parent.contains(key) || !parent[key].is_object()) parent[key] = json::object();
  return parent[key];
}

void default_strategy(json& spec) {
  json& strategy = object_at(spec, "strategy");
  if (strategy.value("type", "").empty()) strategy["type"] = "RollingUpdate";
  if (strategy["type"] != "RollingUpdate") return;
  json& rolling = object_at(strategy, "rollingUpdate");
  if (!rolling.contains("maxUnavailable") || rolling["maxUnavailable"].is_null()) rolling["maxUnavailable"] = "25%";
  if (!rolling.contains("maxSurge") || rolling["maxSurge"].is_null()) rolling["maxSurge"] = "25%";
}

// SetDefaults_Deployment / SetDefaults_ReplicaSet, and the pod template's spec.
void default_workload(const ResourceType& t, json& obj) {
  json& spec = object_at(obj, "spec");
  if (!spec.contains("replicas") || spec["replicas"].is_null()) spec["replicas"] = 1;
  if (is_deployment(t)) {
    default_strategy(spec);
    if (!spec.contains("revisionHistoryLimit")) spec["revisionHistoryLimit"] = 10;
    if (!spec.contains("progressDeadlineSeconds")) spec["progressDeadlineSeconds"] = 600;
  }
  json& tmpl = object_at(spec, "template");
  // As the real server serializes a PodTemplateSpec's ObjectMeta.
  object_at(tmpl, "metadata")["creationTimestamp"] = nullptr;
  default_pod_template_spec(object_at(tmpl, "spec"));
}

// intstr.IntOrString as %#v prints it.
std::string go_int_or_string(const json& v) {
  if (v.is_number_integer()) return "intstr.IntOrString{Type:0, IntVal:" + v.dump() + ", StrVal:\"\"}";
  return "intstr.IntOrString{Type:1, IntVal:0, StrVal:" + json(v.is_string() ? v.get<std::string>() : "").dump() + "}";
}

FieldError invalid_raw(const std::string& field, const std::string& shown, const std::string& detail) {
  return {"FieldValueInvalid", field, "Invalid value: " + shown + ": " + detail};
}

void check_nonnegative(std::vector<FieldError>& errs, const json& spec, const std::string& key) {
  if (spec.contains(key) && spec[key].is_number() && spec[key].get<long long>() < 0) {
    errs.push_back(invalid_error("spec." + key, spec[key], "must be greater than or equal to 0"));
  }
}

bool is_percent(const json& v) {
  return v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().back() == '%';
}

void validate_rolling_update(std::vector<FieldError>& errs, const json& rolling) {
  const std::string base = "spec.strategy.rollingUpdate.";
  const json unavailable = rolling.value("maxUnavailable", json(0)), surge = rolling.value("maxSurge", json(0));
  for (const auto& [name, v] : {std::pair<std::string, json>{"maxUnavailable", unavailable}, {"maxSurge", surge}}) {
    if (scaled_value(v, 100, true) < 0) {
      errs.push_back(invalid_raw(base + name, go_int_or_string(v), "must be greater than or equal to 0"));
    }
  }
  if (scaled_value(unavailable, 100, true) == 0 && scaled_value(surge, 100, true) == 0) {
    errs.push_back(
        invalid_raw(base + "maxUnavailable", go_int_or_string(unavailable), "may not be 0 when `maxSurge` is 0"));
  }
  if (is_percent(unavailable) && scaled_value(unavailable, 100, true) > 100) {
    errs.push_back(
        invalid_raw(base + "maxUnavailable", go_int_or_string(unavailable), "must not be greater than 100%"));
  }
}

void validate_strategy(std::vector<FieldError>& errs, const json& spec) {
  const json strategy = spec.value("strategy", json::object());
  const std::string type = strategy.value("type", "");
  if (type == "Recreate") {
    if (strategy.contains("rollingUpdate") && !strategy["rollingUpdate"].is_null()) {
      errs.push_back(
          forbidden_error("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"));
    }
  } else if (type == "RollingUpdate") {
    validate_rolling_update(errs, strategy.value("rollingUpdate", json::object()));
  } else {
    errs.push_back(not_supported_error("spec.strategy.type", type, {"\"Recreate\"", "\"RollingUpdate\""}));
  }
}

// ValidateDeploymentSpec's / ValidateReplicaSetSpec's selector and template rules.
void validate_selector_and_template(std::vector<FieldError>& errs, const json& spec) {
  const json selector = spec.value("selector", json());
  if (!selector.is_object()) {
    errs.push_back(required_error("spec.selector"));
  } else if (selector.value("matchLabels", json::object()).empty() &&
             selector.value("matchExpressions", json::array()).empty()) {
    errs.push_back(
        invalid_raw("spec.selector", go_label_selector(selector), "empty selector is invalid for deployment"));
  }
  const json tmpl = spec.value("template", json::object());
  const json meta = tmpl.value("metadata", json::object());
  const json labels = meta.value("labels", json());
  // A missing selector selects nothing, an empty one everything (LabelSelectorAsSelector).
  bool empty_selector = selector.is_object() && selector.value("matchLabels", json::object()).empty() &&
                        selector.value("matchExpressions", json::array()).empty();
  if (!empty_selector && !selector_matches(selector, labels)) {
    errs.push_back(invalid_raw("spec.template.metadata.labels", go_string_map(labels),
                               "`selector` does not match template `labels`"));
  }
  for (auto e : validate_metadata(meta)) {
    e.field = "spec.template." + e.field;
    errs.push_back(e);
  }
  const json pod_spec = tmpl.value("spec", json::object());
  auto perrs = validate_pod_template_spec(pod_spec, "spec.template.spec");
  errs.insert(errs.end(), perrs.begin(), perrs.end());
  const std::string rp = pod_spec.value("restartPolicy", "");
  if (rp == "OnFailure" || rp == "Never") {
    errs.push_back(not_supported_error("spec.template.spec.restartPolicy", rp, {"\"Always\""}));
  }
  if (pod_spec.contains("activeDeadlineSeconds")) {
    errs.push_back(forbidden_error("spec.template.spec.activeDeadlineSeconds",
                                   "activeDeadlineSeconds in ReplicaSet is not Supported"));
  }
}

void validate_workload(const ResourceType& t, const json& obj) {
  std::vector<FieldError> errs;
  const json spec = obj.value("spec", json::object());
  check_nonnegative(errs, spec, "replicas");
  validate_selector_and_template(errs, spec);
  check_nonnegative(errs, spec, "minReadySeconds");
  if (is_deployment(t)) {
    validate_strategy(errs, spec);
    check_nonnegative(errs, spec, "revisionHistoryLimit");
    long long deadline = spec.value("progressDeadlineSeconds", 600LL), min_ready = spec.value("minReadySeconds", 0LL);
    if (deadline <= min_ready) {
      errs.push_back(invalid_error("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"));
    }
  }
  if (!errs.empty()) throw invalid(t.group, t.kind, obj["metadata"].value("name", ""), errs);
}

}  // namespace

void prepare_workload_create(const ResourceType& t, json& obj) {
  default_workload(t, obj);
  validate_workload(t, obj);
  obj["status"] = json::object();
}

void prepare_workload_update(const ResourceType& t, const json& old, json& obj, const std::string& subresource) {
  if (subresource == "status") return;
  default_workload(t, obj);
  validate_workload(t, obj);
  const json old_selector = old.value("spec", json::object()).value("selector", json());
  const json new_selector = obj["spec"].value("selector", json());
  if (old_selector != new_selector) {
    throw invalid(t.group, t.kind, obj["metadata"].value("name", ""),
                  {invalid_raw("spec.selector", go_label_selector(new_selector), "field is immutable")});
  }
  // Annotations are copied to a Deployment's ReplicaSets: a change bumps the generation.
  const json* old_annotations = json_path(old, "metadata.annotations");
  const json* new_annotations = json_path(obj, "metadata.annotations");
  bool changed =
      (old_annotations ? *old_annotations : json::object()) != (new_annotations ? *new_annotations : json::object());
  if (is_deployment(t) && changed) obj["metadata"]["generation"] = old["metadata"].value("generation", 1LL) + 1;
}

}  // namespace kubesim
