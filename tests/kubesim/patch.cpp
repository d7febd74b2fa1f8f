#include "patch.hpp"

#include <stdexcept>

namespace kubesim {

json apply_merge_patch(json target, const json& patch) {
  target.merge_patch(patch);
  return target;
}

json apply_json_patch(const json& target, const json& patch) {
  if (!patch.is_array()) throw std::runtime_error("json patch must be an array of operations");
  try {
    return target.patch(patch);
  } catch (const json::exception& e) {
    throw std::runtime_error(e.what());
  }
}

namespace {

std::string merge_key_for(const std::string& field, const json& a, const json& b) {
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" || field == "env" ||
      field == "volumes" || field == "imagePullSecrets" || field == "resourceClaims" || field == "containerStatuses" ||
      field == "initContainerStatuses") {
    return "name";
  }
  if (field == "volumeMounts") return "mountPath";
  if (field == "volumeDevices") return "devicePath";
  if (field == "ownerReferences") return "uid";
  if (field == "conditions") return "type";
  if (field == "hostAliases") return "ip";
  if (field == "topologySpreadConstraints") return "topologyKey";
  if (field == "ports") {
    for (const json* l : {&a, &b}) {
      if (!l->is_array()) continue;
      for (const auto& e : *l) {
        if (e.is_object() && e.contains("containerPort")) return "containerPort";
      }
    }
    return "port";
  }
  return "";
}

bool is_primitive_merge_list(const std::string& field) { return field == "finalizers"; }

json strip_directives(const json& v) {
  if (v.is_object()) {
    json out = json::object();
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it.key().empty() && it.key()[0] == '$') continue;
      out[it.key()] = strip_directives(it.value());
    }
    return out;
  }
  if (v.is_array()) {
    json out = json::array();
    for (const auto& e : v) out.push_back(strip_directives(e));
    return out;
  }
  return v;
}

json smp_value(const json& orig, const json& patch, const std::string& field);

json smp_list(const json& orig, const json& patch, const std::string& field) {
  if (is_primitive_merge_list(field)) {
    json out = orig.is_array() ? orig : json::array();
    for (const auto& e : patch) {
      bool found = false;
      for (const auto& o : out) found = found || o == e;
      if (!found) out.push_back(e);
    }
    return out;
  }
  for (const auto& e : patch) {
    if (e.is_object() && e.value("$patch", "") == "replace") {
      json out = json::array();
      for (const auto& x : patch) {
        if (!(x.is_object() && x.contains("$patch"))) out.push_back(strip_directives(x));
      }
      return out;
    }
  }
  std::string key = merge_key_for(field, orig, patch);
  if (key.empty() || !orig.is_array()) {
    json out = json::array();
    for (const auto& e : patch) {
      if (e.is_object() && e.value("$patch", "") == "delete") continue;
      out.push_back(strip_directives(e));
    }
    return out;
  }
  json out = orig;
  for (const auto& e : patch) {
    if (!e.is_object() || !e.contains(key)) {
      out.push_back(strip_directives(e));
      continue;
    }
    bool del = e.value("$patch", "") == "delete";
    bool found = false;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i].is_object() && out[i].contains(key) && out[i][key] == e[key]) {
        found = true;
        if (del) {
          out.erase(i);
        } else {
          out[i] = smp_value(out[i], e, "");
        }
        break;
      }
    }
    if (!found && !del) out.push_back(strip_directives(e));
  }
  return out;
}

json smp_value(const json& orig, const json& patch, const std::string& field) {
  if (patch.is_array()) return smp_list(orig, patch, field);
  if (!patch.is_object()) return patch;
  std::string directive = patch.value("$patch", "");
  if (directive == "replace") return strip_directives(patch);
  json out = orig.is_object() ? orig : json::object();
  if (patch.contains("$retainKeys") && patch["$retainKeys"].is_array()) {
    json kept = json::object();
    for (const auto& k : patch["$retainKeys"]) {
      if (k.is_string() && out.contains(k.get<std::string>())) kept[k.get<std::string>()] = out[k.get<std::string>()];
    }
    out = kept;
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& k = it.key();
    if (starts_with(k, "$deleteFromPrimitiveList/")) {
      std::string name = k.substr(std::string("$deleteFromPrimitiveList/").size());
      if (out.contains(name) && out[name].is_array() && it.value().is_array()) {
        json kept = json::array();
        for (const auto& e : out[name]) {
          bool drop = false;
          for (const auto& d : it.value()) drop = drop || d == e;
          if (!drop) kept.push_back(e);
        }
        out[name] = kept;
      }
      continue;
    }
    if (!k.empty() && k[0] == '$') continue;
    if (it.value().is_null()) {
      out.erase(k);
    } else if (it.value().is_object()) {
      if (it.value().value("$patch", "") == "delete") {
        out.erase(k);
        continue;
      }
      out[k] = smp_value(out.contains(k) ? out[k] : json(), it.value(), k);
    } else if (it.value().is_array()) {
      out[k] = smp_list(out.contains(k) ? out[k] : json(), it.value(), k);
    } else {
      out[k] = it.value();
    }
  }
  return out;
}

// Removes from `target` what `previous` had and `applied` no longer has.
void remove_unapplied(json& target, const json& previous, const json& applied, const std::string& field, bool builtin) {
  if (previous.is_object() && target.is_object()) {
    for (auto it = previous.begin(); it != previous.end(); ++it) {
      const std::string& k = it.key();
      if (field.empty() && (k == "apiVersion" || k == "kind")) continue;
      if (!applied.is_object() || !applied.contains(k)) {
        if (!(field.empty() && k == "metadata")) target.erase(k);
        continue;
      }
      if (target.contains(k)) remove_unapplied(target[k], it.value(), applied[k], k, builtin);
    }
    return;
  }
  if (previous.is_array() && target.is_array() && builtin) {
    std::string key = merge_key_for(field, previous, applied);
    if (key.empty()) return;
    for (const auto& p : previous) {
      if (!p.is_object() || !p.contains(key)) continue;
      bool still = false;
      const json* applied_elem = nullptr;
      if (applied.is_array()) {
        for (const auto& a : applied) {
          if (a.is_object() && a.contains(key) && a[key] == p[key]) {
            still = true;
            applied_elem = &a;
          }
        }
      }
      for (std::size_t i = 0; i < target.size(); ++i) {
        if (target[i].is_object() && target[i].contains(key) && target[i][key] == p[key]) {
          if (!still) {
            target.erase(i);
          } else {
            remove_unapplied(target[i], p, *applied_elem, "", builtin);
          }
          break;
        }
      }
    }
  }
}

json apply_merge(const json& target, const json& applied, const std::string& field, bool builtin) {
  if (applied.is_object()) {
    json out = target.is_object() ? target : json::object();
    for (auto it = applied.begin(); it != applied.end(); ++it) {
      if (it.value().is_null()) {
        out.erase(it.key());
        continue;
      }
      out[it.key()] = apply_merge(out.contains(it.key()) ? out[it.key()] : json(), it.value(), it.key(), builtin);
    }
    return out;
  }
  if (applied.is_array() && builtin) {
    std::string key = merge_key_for(field, target, applied);
    if (is_primitive_merge_list(field)) return smp_list(target, applied, field);
    if (key.empty() || !target.is_array()) return applied;
    json out = target;
    for (const auto& e : applied) {
      bool found = false;
      for (auto& o : out) {
        if (e.is_object() && o.is_object() && e.contains(key) && o.contains(key) && o[key] == e[key]) {
          o = apply_merge(o, e, "", builtin);
          found = true;
          break;
        }
      }
      if (!found) out.push_back(e);
    }
    return out;
  }
  return applied;
}

}  // namespace

json apply_strategic_merge_patch(json target, const json& patch) {
  if (!patch.is_object()) throw std::runtime_error("strategic merge patch must be a JSON object");
  return smp_value(target, patch, "");
}

json apply_server_side(json current, const json& applied, const json* previous_applied, bool builtin) {
  if (previous_applied) remove_unapplied(current, *previous_applied, applied, "", builtin);
  return apply_merge(current, applied, "", builtin);
}

}  // namespace kubesim
