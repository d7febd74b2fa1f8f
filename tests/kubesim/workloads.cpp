#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "selectors.hpp"

namespace kubesim {

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string go_quoted(const json& v) { return json(v.is_string() ? v.get<std::string>() : v.dump()).dump(); }

std::string go_string_slice(const json& values) {
  if (!values.is_array()) return "[]string(nil)";
  std::vector<std::string> parts;
  for (const auto& v : values) parts.push_back(go_quoted(v));
  return "[]string{" + join(parts, ", ") + "}";
}

// One requirement of a selector in labels.Selector's String() form.
struct Requirement {
  std::string key;
  std::string text;
};

std::vector<Requirement> requirements(const json& selector) {
  std::vector<Requirement> out;
  const json labels = selector.value("matchLabels", json::object());
  for (auto it = labels.begin(); it != labels.end(); ++it) {
    out.push_back({it.key(), it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : "")});
  }
  for (const auto& e : selector.value("matchExpressions", json::array())) {
    std::string key = e.value("key", ""), op = e.value("operator", "");
    std::vector<std::string> values;
    for (const auto& v : e.value("values", json::array())) values.push_back(v.is_string() ? v.get<std::string>() : "");
    std::sort(values.begin(), values.end());
    if (op == "In")
      out.push_back({key, key + " in (" + join(values, ",") + ")"});
    else if (op == "NotIn")
      out.push_back({key, key + " notin (" + join(values, ",") + ")"});
    else if (op == "Exists")
      out.push_back({key, key});
    else if (op == "DoesNotExist")
      out.push_back({key, "!" + key});
  }
  std::stable_sort(out.begin(), out.end(), [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return out;
}

}  // namespace

std::string meta_field(const json& obj, const char* field) {
  const json* v = json_path(obj, std::string("metadata.") + field);
  return v && v->is_string() ? v->get<std::string>() : "";
}

bool being_deleted(const json& obj) {
  const json* v = json_path(obj, "metadata.deletionTimestamp");
  return v && !v->is_null();
}

bool selector_matches(const json& selector, const json& labels) {
  if (!selector.is_object()) return false;
  return LabelSelector::from_object(selector).matches(labels.is_object() ? labels : json::object());
}

std::string selector_string(const json& selector) {
  if (!selector.is_object()) return "";
  std::vector<std::string> parts;
  for (const auto& r : requirements(selector)) parts.push_back(r.text);
  return join(parts, ",");
}

std::string go_string_map(const json& labels) {
  if (!labels.is_object()) return "map[string]string(nil)";
  std::vector<std::string> parts;
  for (auto it = labels.begin(); it != labels.end(); ++it)
    parts.push_back(go_quoted(it.key()) + ":" + go_quoted(it.value()));
  return "map[string]string{" + join(parts, ", ") + "}";
}

std::string go_label_selector(const json& selector) {
  const json s = selector.is_object() ? selector : json::object();
  std::string exprs = "[]v1.LabelSelectorRequirement(nil)";
  if (s.contains("matchExpressions") && s["matchExpressions"].is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : s["matchExpressions"]) {
      parts.push_back("v1.LabelSelectorRequirement{Key:" + go_quoted(e.value("key", "")) +
                      ", Operator:" + go_quoted(e.value("operator", "")) +
                      ", Values:" + go_string_slice(e.value("values", json())) + "}");
    }
    exprs = "[]v1.LabelSelectorRequirement{" + join(parts, ", ") + "}";
  }
  return "v1.LabelSelector{MatchLabels:" + go_string_map(s.value("matchLabels", json())) +
         ", MatchExpressions:" + exprs + "}";
}

json semantic_form(const json& value) {
  if (value.is_object()) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      json v = semantic_form(it.value());
      if (!v.is_null() && !((v.is_object() || v.is_array()) && v.empty())) out[it.key()] = std::move(v);
    }
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const auto& e : value) out.push_back(semantic_form(e));
    return out;
  }
  return value;
}

long long scaled_value(const json& v, long long total, bool round_up) {
  if (v.is_number_integer()) return v.get<long long>();
  if (!v.is_string()) return 0;
  std::string s = v.get<std::string>();
  if (s.empty() || s.back() != '%') {
    try {
      return std::stoll(s);
    } catch (const std::exception&) {
      return 0;
    }
  }
  long long pct = 0;
  try {
    pct = std::stoll(s.substr(0, s.size() - 1));
  } catch (const std::exception&) {
    return 0;
  }
  double exact = static_cast<double>(pct) * static_cast<double>(total) / 100.0;
  return static_cast<long long>(round_up ? std::ceil(exact) : std::floor(exact));
}

const json* controller_ref(const json& obj) {
  const json* refs = json_path(obj, "metadata.ownerReferences");
  if (!refs || !refs->is_array()) return nullptr;
  for (const auto& r : *refs) {
    if (r.value("controller", false)) return &r;
  }
  return nullptr;
}

bool controlled_by(const json& obj, const std::string& owner_uid) {
  const json* ref = controller_ref(obj);
  return ref && ref->value("uid", "") == owner_uid;
}

json controller_ref_to(const json& owner, const std::string& kind) {
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"name", owner["metadata"].value("name", "")},
          {"uid", owner["metadata"].value("uid", "")},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

bool pod_active(const json& pod) {
  if (being_deleted(pod)) return false;
  const json* phase = json_path(pod, "status.phase");
  std::string p = phase && phase->is_string() ? phase->get<std::string>() : "";
  return p != "Succeeded" && p != "Failed";
}

const json* find_condition(const json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions") || !status["conditions"].is_array()) return nullptr;
  for (const auto& c : status["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool pod_ready(const json& pod) {
  const json status = pod.value("status", json::object());
  const json* c = find_condition(status, "Ready");
  return c && c->value("status", "") == "True";
}

bool pod_available(const json& pod, long long min_ready_s, Clock::time_point now) {
  const json st = pod.value("status", json::object());
  const json* c = find_condition(st, "Ready");
  if (!c || c->value("status", "") != "True") return false;
  if (min_ready_s <= 0) return true;
  auto since = parse_rfc3339(c->value("lastTransitionTime", ""));
  return since + std::chrono::seconds(min_ready_s) <= now;
}

void set_or_omit(json& obj, const std::string& field, long long value) {
  if (value == 0) {
    obj.erase(field);
  } else {
    obj[field] = value;
  }
}

// ---------- ControllerLoop ----------

ControllerLoop::~ControllerLoop() { stop(); }

void ControllerLoop::start() {
  {
    Lock lock(api_.store().mu());
    watcher_ = api_.store().watch_now("*", "");
  }
  thread_ = std::thread([this] { run(); });
}

void ControllerLoop::stop() {
  if (stopping_.exchange(true)) return;
  if (watcher_) watcher_->close();
  if (thread_.joinable()) thread_.join();
  if (watcher_) {
    Lock lock(api_.store().mu());
    api_.store().unwatch(watcher_);
  }
}

void ControllerLoop::run() {
  const auto resync = std::chrono::milliseconds(1000);
  auto next_resync = std::chrono::steady_clock::now() + resync;
  std::set<ObjectRef> dirty;
  while (!stopping_) {
    WatchEvent ev;
    // Drain what is queued, then sync each object once.
    if (watcher_->next(ev, std::chrono::milliseconds(200))) {
      route(ev, dirty);
      while (dirty.size() < 1000 && watcher_->next(ev, std::chrono::milliseconds(0))) route(ev, dirty);
    }
    if (std::chrono::steady_clock::now() >= next_resync) {
      Lock lock(api_.store().mu());
      for (const auto& obj : api_.store().list(resync_key(), "")) {
        dirty.insert({resync_key(), (*obj)["metadata"].value("namespace", ""), (*obj)["metadata"].value("name", "")});
      }
      next_resync = std::chrono::steady_clock::now() + resync;
    }
    sync_all(dirty);
  }
}

void ControllerLoop::sync_all(std::set<ObjectRef>& dirty) {
  for (const auto& ref : dirty) {
    if (stopping_) break;
    try {
      Lock lock(api_.store().mu());
      sync(ref);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kubesim %s: %s/%s: %s\n", name_.c_str(), ref.ns.c_str(), ref.name.c_str(), e.what());
    }
  }
  dirty.clear();
}

}  // namespace kubesim
