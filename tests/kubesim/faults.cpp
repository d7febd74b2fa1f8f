#include "faults.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "server.hpp"

namespace kubesim {

namespace {

const std::map<std::string, FaultKind>& kinds() {
  static const std::map<std::string, FaultKind> k = {
      {"500", FaultKind::kInternalError},      {"503", FaultKind::kUnavailable},
      {"429", FaultKind::kTooManyRequests},    {"reset-before", FaultKind::kResetBefore},
      {"reset-after", FaultKind::kResetAfter}, {"slow", FaultKind::kSlow},
      {"watch-cut", FaultKind::kWatchCut}};
  return k;
}

std::set<std::string> string_set(const json& rule, const std::string& key, const std::string& where) {
  std::set<std::string> out;
  if (!rule.contains(key)) return out;
  if (!rule[key].is_array()) throw bad_request(where + "." + key + " must be a list of strings");
  for (const auto& v : rule[key]) {
    if (!v.is_string()) throw bad_request(where + "." + key + " must be a list of strings");
    out.insert(v.get<std::string>());
  }
  return out;
}

double number_in(const json& rule, const std::string& key, double def, double lo, double hi, const std::string& where) {
  if (!rule.contains(key)) return def;
  if (!rule[key].is_number()) throw bad_request(where + "." + key + " must be a number");
  const double v = rule[key].get<double>();
  if (!(v >= lo && v <= hi)) {
    throw bad_request(where + "." + key + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

FaultRule parse_rule(const json& r, const std::string& where) {
  if (!r.is_object()) throw bad_request(where + " must be an object");
  for (const auto& kv : r.items()) {
    static const std::set<std::string> known = {"fault",    "verbs",        "resources",         "userAgent",
                                                "fraction", "delaySeconds", "retryAfterSeconds", "cutAfterEvents",
                                                "limit"};
    if (!known.count(kv.key())) throw bad_request(where + ": unknown field \"" + kv.key() + "\"");
  }
  FaultRule rule;
  rule.name = r.value("fault", "");
  auto kind = kinds().find(rule.name);
  if (kind == kinds().end()) {
    throw bad_request(where + ".fault must be one of 500, 503, 429, reset-before, reset-after, slow, watch-cut");
  }
  rule.kind = kind->second;
  rule.verbs = string_set(r, "verbs", where);
  rule.resources = string_set(r, "resources", where);
  if (r.contains("userAgent") && !r["userAgent"].is_string()) throw bad_request(where + ".userAgent must be a string");
  rule.user_agent = r.value("userAgent", "");
  rule.fraction = number_in(r, "fraction", 1, 0, 1, where);
  rule.delay_s = number_in(r, "delaySeconds", 5, 0, 600, where);
  // 429 always carries Retry-After (1 s unless given); 503 only when the rule gives one.
  const double unset = rule.kind == FaultKind::kTooManyRequests ? 1 : -1;
  rule.retry_after_s = static_cast<int>(number_in(r, "retryAfterSeconds", unset, 0, 3600, where));
  rule.cut_after_events = static_cast<int>(number_in(r, "cutAfterEvents", 0, 0, 1e6, where));
  rule.limit = static_cast<long long>(number_in(r, "limit", -1, -1, 1e12, where));
  return rule;
}

bool matches(const FaultRule& r, const std::string& verb, const std::string& resource, const std::string& sub,
             const std::string& user_agent) {
  if (!r.verbs.empty() && !r.verbs.count(verb)) return false;
  if (!r.resources.empty() && !r.resources.count(resource) && !r.resources.count(resource + "/" + sub)) return false;
  if (!r.user_agent.empty() && user_agent.find(r.user_agent) == std::string::npos) return false;
  // A reset after applying needs something applied; a watch is cut with watch-cut.
  if (r.kind == FaultKind::kResetAfter && (verb == "watch" || verb == "get" || verb == "list")) return false;
  if (r.kind == FaultKind::kWatchCut && verb != "watch") return false;
  return r.limit < 0 || r.injected < r.limit;
}

}  // namespace

void FaultInjector::configure(const json& spec) {
  if (!spec.is_object()) throw bad_request("the fault configuration must be a JSON object");
  std::vector<FaultRule> rules;
  if (spec.contains("rules")) {
    if (!spec["rules"].is_array()) throw bad_request("rules must be a list");
    for (std::size_t i = 0; i < spec["rules"].size(); ++i) {
      rules.push_back(parse_rule(spec["rules"][i], "rules[" + std::to_string(i) + "]"));
    }
  }
  std::uint64_t seed = 1;
  if (spec.contains("seed")) {
    if (!spec["seed"].is_number_unsigned()) throw bad_request("seed must be a non-negative integer");
    seed = spec["seed"].get<std::uint64_t>();
  }
  std::lock_guard<std::mutex> lock(mu_);
  rules_ = std::move(rules);
  seed_ = seed;
  rng_.seed(seed);
}

void FaultInjector::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.clear();
}

json FaultInjector::describe() const {
  std::lock_guard<std::mutex> lock(mu_);
  json rules = json::array();
  for (const auto& r : rules_) {
    rules.push_back({{"fault", r.name},
                     {"verbs", r.verbs},
                     {"resources", r.resources},
                     {"userAgent", r.user_agent},
                     {"fraction", r.fraction},
                     {"injected", r.injected}});
  }
  json injected = json::object();
  for (const auto& kv : injected_) injected[kv.first] = kv.second;
  return {{"seed", seed_}, {"rules", rules}, {"considered", considered_}, {"injected", injected}};
}

FaultDecision FaultInjector::pick(const std::string& verb, const std::string& resource, const std::string& subresource,
                                  const std::string& user_agent) {
  std::lock_guard<std::mutex> lock(mu_);
  bool matched = false;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (auto& r : rules_) {
    if (!matches(r, verb, resource, subresource, user_agent)) continue;
    matched = true;
    if (coin(rng_) >= r.fraction) continue;
    ++r.injected;
    ++injected_[r.name];
    ++considered_;
    return {r.kind, r.name, r.delay_s, r.retry_after_s, r.cut_after_events};
  }
  if (matched) ++considered_;
  return {};
}

ApiError fault_error(const FaultDecision& d) {
  switch (d.kind) {
    case FaultKind::kUnavailable:
      return ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request");
    case FaultKind::kTooManyRequests:
      return ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                      json{{"retryAfterSeconds", std::max(d.retry_after_s, 0)}});
    default:
      return internal_error("kubesim: injected fault");
  }
}

bool WatchCutResponder::write_chunk(const std::string& data) {
  if (cut_) return false;
  if (left_ > 0 || data.size() < 2) {
    --left_;
    return inner_.write_chunk(data);
  }
  inner_.write_chunk(data.substr(0, data.size() / 2));
  inner_.reset_connection();
  cut_ = true;
  return false;
}

void ApiServer::serve_with_fault(Ctx& c, const FaultDecision& f) {
  c.fault = f.name;
  switch (f.kind) {
    case FaultKind::kInternalError:
    case FaultKind::kUnavailable:
    case FaultKind::kTooManyRequests: {
      HeaderList headers;
      if (f.retry_after_s >= 0) headers.emplace_back("Retry-After", std::to_string(f.retry_after_s));
      const ApiError e = fault_error(f);
      send_json(c, e.code(), e.status(), headers);
      return;
    }
    case FaultKind::kResetBefore:
      c.res.reset_connection();
      return;
    case FaultKind::kSlow:
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long long>(f.delay_s * 1000)));
      dispatch(c);
      return;
    case FaultKind::kResetAfter: {
      DiscardingResponder swallow;
      dispatch_via(c, swallow);
      c.res.reset_connection();
      return;
    }
    case FaultKind::kWatchCut: {
      WatchCutResponder cutter(c.res, f.cut_after_events);
      dispatch_via(c, cutter);
      return;
    }
    case FaultKind::kNone:
      dispatch(c);
      return;
  }
}

void ApiServer::dispatch_via(Ctx& c, HttpResponder& res) {
  Ctx inner{c.req, res, c.info, c.user, c.impersonator, 0, false, c.fault};
  try {
    dispatch(inner);
  } catch (const ApiError& e) {
    if (!res.answered()) send_error(inner, e);
  } catch (const std::exception& e) {
    if (!res.answered()) send_error(inner, internal_error(e.what()));
  }
  c.info = inner.info;  // e.g. the name of a created object, for the audit log
  c.code = inner.code;
  c.logged = inner.logged;  // a watch is audited when it starts
}

void ApiServer::serve_faults_admin(Ctx& c) {
  const std::string& m = c.req.method;
  if (m == "GET") {
    send_json(c, 200, faults_.describe());
    return;
  }
  if (m == "DELETE") {
    faults_.clear();
    send_json(c, 200, faults_.describe());
    return;
  }
  if (m == "PUT" || m == "POST") {
    json spec = json::parse(c.req.body, nullptr, false);
    if (spec.is_discarded()) throw bad_request("the fault configuration is not valid JSON");
    faults_.configure(spec);
    send_json(c, 200, faults_.describe());
    return;
  }
  send_error(c, ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
}

}  // namespace kubesim
