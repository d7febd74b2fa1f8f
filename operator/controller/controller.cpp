#include "operator/controller/controller.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <iostream>
#include <thread>

#include "kube/errors.hpp"
#include "kube/retry.hpp"
#include "operator/controller/cache_transforms.hpp"
#include "operator/controller/kueue_workload.hpp"
#include "operator/controller/manifests.hpp"
#include "operator/controller/naming.hpp"
#include "telemetry/http_get.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

kube::ResourceType kueue_workloads() { return {"kueue.x-k8s.io", "v1beta2", "workloads", true, "Workload"}; }

const kube::ResourceType& type_of(const std::string& resource) {
  static const std::map<std::string, kube::ResourceType> types = {
      {"pods", kube::resources::pods()},
      {"services", kube::resources::services()},
      {"configmaps", kube::resources::config_maps()},
      {"serviceaccounts", kube::resources::service_accounts()},
      {"roles", kube::resources::roles()},
      {"rolebindings", kube::resources::role_bindings()},
      {"events", kube::resources::events()},
      {"benchmarkjobs", kube::resources::benchmark_jobs()},
      {"workloads", kueue_workloads()},
  };
  return types.at(resource);
}

/// The WorkloadPriorityClass `name`'s value, or nullopt (not found, or not readable: the
/// Workload is then made without a priority, and the operator says why).
std::optional<int> workload_priority(const kube::Client& client, const std::string& name) {
  try {
    const auto cls = client.try_get({"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", false, "WorkloadPriorityClass"},
                                    "", name);
    if (cls && cls->contains("value") && (*cls)["value"].is_number_integer()) return (*cls)["value"].get<int>();
    std::cerr << "trainbench-operator: WorkloadPriorityClass " << name << " not found: Workload without a priority\n";
  } catch (const kube::ApiError& e) {
    if (kube::is_transient(e)) throw;
    std::cerr << "trainbench-operator: WorkloadPriorityClass " << name << ": " << e.what() << "\n";
  }
  return std::nullopt;
}

std::string managed_selector() { return std::string("app.kubernetes.io/managed-by=") + kManagedBy; }

/// The IP of the job's master pod that runs now and is not being deleted ("" when none).
std::string running_master_ip(const std::vector<json>& pods) {
  for (const auto& p : pods) {
    const json& md = p.at("metadata");
    if (md.value("labels", json::object()).value(kRoleLabel, "") != "master" || md.contains("deletionTimestamp")) {
      continue;
    }
    const json st = p.value("status", json::object());
    if (st.value("phase", "") == "Running" && !st.value("podIP", "").empty()) return st.value("podIP", "");
  }
  return "";
}

}  // namespace

std::optional<RunProgressSample> poll_master_progress(const std::string& pod_ip) {
  const auto reply = telemetry::http_get(pod_ip, kMasterProgressPort, "/progress", std::chrono::seconds(1));
  if (!reply || reply->status != 200) return std::nullopt;
  try {
    return run_progress_sample_from_json(json::parse(reply->body));
  } catch (const std::exception&) {
    return std::nullopt;  // not (yet) a sample: no progress this time
  }
}

Controller::Controller(std::shared_ptr<const kube::Client> client, ControllerOptions options)
    : client_(std::move(client)),
      options_(std::move(options)),
      metrics_(options_.metrics ? options_.metrics : std::make_shared<ControllerMetrics>()),
      queue_(std::chrono::milliseconds(100), std::chrono::seconds(60), options_.clock) {
  if (!options_.poll_progress) options_.poll_progress = poll_master_progress;
  kube::ReflectorHandlers job_handlers;
  auto job_changed = [this](const json& o) {
    const std::string key = kube::object_key(o);
    own_.observe_job(key, o["metadata"].value("resourceVersion", ""));
    queue_.add(key);
    enqueue_waiting_on(o);
  };
  job_handlers.on_add = job_changed;
  job_handlers.on_update = [job_changed](const json&, const json& o) { job_changed(o); };
  job_handlers.on_delete = [this](const json& o) {
    const std::string key = kube::object_key(o);
    queue_.forget(key);
    own_.forget(key);
    std::lock_guard<std::mutex> lock(progress_mutex_);
    progress_polls_.erase(key);
  };
  job_handlers.on_error = [](const std::string& m) { std::cerr << "trainbench-operator: jobs watch: " << m << "\n"; };
  jobs_ = std::make_unique<kube::Reflector>(client_, kube::resources::benchmark_jobs(), options_.watch_namespace,
                                            kube::ReflectorOptions{}, job_handlers);

  auto owned = [this](const kube::ResourceType& type, std::function<json(json)> transform) {
    kube::ReflectorHandlers h;
    h.on_add = [this](const json& o) { enqueue_owner(o); };
    h.on_update = [this](const json&, const json& o) { enqueue_owner(o); };
    h.on_delete = [this](const json& o) { enqueue_owner(o); };
    h.on_error = [plural = type.plural](const std::string& m) {
      std::cerr << "trainbench-operator: " << plural << " watch: " << m << "\n";
    };
    kube::ReflectorOptions ro;
    ro.label_selector = managed_selector();
    ro.transform = std::move(transform);  // the caches keep only what reconcile reads
    return std::make_unique<kube::Reflector>(client_, type, options_.watch_namespace, ro, h);
  };
  pods_ = owned(kube::resources::pods(), slim_pod);
  configmaps_ = owned(kube::resources::config_maps(), slim_config_map);
  services_ = owned(kube::resources::services(), slim_object);
  accounts_ = owned(kube::resources::service_accounts(), slim_object);
  roles_ = owned(kube::resources::roles(), slim_object);
  bindings_ = owned(kube::resources::role_bindings(), slim_object);
  if (options_.kueue) workloads_ = owned(kueue_workloads(), slim_workload);
  if (options_.node_lost_after.count() > 0) {
    kube::ReflectorHandlers h;
    h.on_add = [this](const json& o) { enqueue_jobs_on_node(o); };
    h.on_update = [this](const json&, const json& o) { enqueue_jobs_on_node(o); };
    h.on_delete = [this](const json& o) { enqueue_jobs_on_node(o); };
    h.on_error = [](const std::string& m) { std::cerr << "trainbench-operator: nodes watch: " << m << "\n"; };
    kube::ReflectorOptions ro;
    ro.transform = slim_node;
    nodes_ =
        std::make_unique<kube::Reflector>(client_, kube::ResourceType{"", "v1", "nodes", false, "Node"}, "", ro, h);
  }
}

std::vector<kube::Reflector*> Controller::reflectors() const {
  std::vector<kube::Reflector*> all = {pods_.get(),  configmaps_.get(), services_.get(), accounts_.get(),
                                       roles_.get(), bindings_.get(),   jobs_.get()};
  if (nodes_) all.insert(all.begin(), nodes_.get());
  if (workloads_) all.insert(all.begin(), workloads_.get());
  return all;
}

void Controller::enqueue_jobs_on_node(const json& node) {
  const std::string name = node.at("metadata").value("name", "");
  for (const auto& pod : pods_->cache()->list()) {
    if (pod.value("spec", json::object()).value("nodeName", "") == name) enqueue_owner(pod);
  }
}

void Controller::enqueue_waiting_on(const json& job) {
  const json& md = job.at("metadata");
  const std::string ns = md.value("namespace", ""), name = md.value("name", "");
  for (const auto& other : jobs_->cache()->list()) {
    if (other.at("metadata").value("namespace", "") != ns) continue;
    const auto ref = baseline_to_look_up(other);
    if (ref && ref->kind == BaselineRef::Kind::kBenchmarkJob && ref->name == name) queue_.add(kube::object_key(other));
  }
}

ObservedBaseline Controller::read_baseline(const json& job) const {
  ObservedBaseline found;
  const auto ref = baseline_to_look_up(job);
  if (!ref) return found;
  found.looked_up = true;
  const std::string ns = job.at("metadata").value("namespace", "default");
  if (ref->kind == BaselineRef::Kind::kBenchmarkJob) {
    found.object = jobs_->cache()->get(ns, ref->name);
    return found;
  }
  // A user's ConfigMap is in no informer (they watch the operator's own objects): one read,
  // made only while the job's Regressed condition is undecided.
  try {
    found.object = client_->try_get(kube::resources::config_maps(), ns, ref->name);
  } catch (const kube::ApiError& e) {
    if (kube::is_transient(e)) throw;  // the reconcile fails and is retried with backoff
    found.error = e.what();            // e.g. 403: said in the condition
  }
  return found;
}

std::map<std::string, NodeTrouble> Controller::unready_nodes(const std::vector<json>& pods) const {
  std::map<std::string, NodeTrouble> out;
  if (!nodes_) return out;
  for (const auto& pod : pods) {
    const std::string name = pod.value("spec", json::object()).value("nodeName", "");
    if (name.empty() || out.count(name)) continue;
    const auto node = nodes_->cache()->get("", name);
    if (!node) continue;
    for (const auto& c : node->value("status", json::object()).value("conditions", json::array())) {
      if (c.value("type", "") != "Ready" || c.value("status", "") == "True") continue;
      const auto since = parse_time(c.value("lastTransitionTime", ""));
      if (since) out[name] = {c.value("status", ""), c.value("reason", ""), c.value("message", ""), *since};
    }
  }
  return out;
}

Controller::~Controller() { queue_.shut_down(); }

void Controller::enqueue_owner(const json& obj) {
  const json& md = obj.at("metadata");
  const std::string job = md.value("labels", json::object()).value(kJobLabel, "");
  if (!job.empty()) queue_.add(md.value("namespace", "default") + "/" + job);
}

std::vector<json> Controller::job_objects(const kube::Reflector& r, const std::string& ns,
                                         const std::string& job) const {
  std::vector<json> out = r.cache()->list_matching({{kJobLabel, job}});
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const json& o) { return o["metadata"].value("namespace", "") != ns; }),
            out.end());
  return out;
}

bool Controller::exists(const kube::Reflector& r, const std::string& key, const std::string& resource,
                        const std::string& ns, const std::string& name, OwnWrites::Clock::time_point now) {
  std::vector<json> have;
  if (auto o = r.cache()->get(ns, name)) have.push_back(std::move(*o));
  for (const auto& o : own_.overlay(key, resource, std::move(have), now)) {
    if (o["metadata"].value("name", "") == name) return true;
  }
  return false;
}

std::optional<RunProgressSample> Controller::progress_of(const std::string& key, const std::vector<json>& pods) {
  const std::string ip = options_.progress_interval.count() > 0 ? running_master_ip(pods) : "";
  std::unique_lock<std::mutex> lock(progress_mutex_);
  if (ip.empty()) {
    progress_polls_.erase(key);
    return std::nullopt;
  }
  const auto now = options_.clock->now();
  const auto it = progress_polls_.find(key);
  if (it != progress_polls_.end() && it->second.pod_ip == ip && now - it->second.at < options_.progress_interval) {
    return it->second.sample;
  }
  lock.unlock();  // the poll waits up to its deadline; other keys' reconciles go on
  ProgressPoll poll{ip, now, options_.poll_progress(ip)};
  lock.lock();
  return (progress_polls_[key] = std::move(poll)).sample;
}

void Controller::reconcile_key(const std::string& key) {
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool done = false;
  try {
    done = reconcile_once(key);
  } catch (...) {
    metrics_->reconciled(ControllerMetrics::Outcome::kError, seconds());
    throw;
  }
  metrics_->reconciled(done ? ControllerMetrics::Outcome::kSuccess : ControllerMetrics::Outcome::kRequeue, seconds());
}

bool Controller::reconcile_once(const std::string& key) {
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  const auto now = options_.clock->now();
  // Everything is read from the informers' caches, with the operator's own recent writes laid
  // over them (own_writes.hpp); the API is read only when the cache seems to have lost a write.
  std::optional<json> job = jobs_->cache()->get(ns, name);
  if (!job) {
    own_.forget(key);
    return true;  // deleted: garbage collection removes what it owned
  }
  switch (own_.job_freshness(key, (*job)["metadata"].value("resourceVersion", ""), now)) {
    case OwnWrites::Freshness::kCurrent:
      break;
    case OwnWrites::Freshness::kWaiting:
      queue_.add_after(key, std::chrono::seconds(1));  // the watch event will usually come first
      return true;
    case OwnWrites::Freshness::kExpired:
      job = client_->try_get(kube::resources::benchmark_jobs(), ns, name);
      if (!job) return true;
      break;
  }
  Observed o;
  o.job = std::move(*job);
  o.pods = own_.overlay(key, "pods", job_objects(*pods_, ns, name), now);
  o.configmaps = own_.overlay(key, "configmaps", job_objects(*configmaps_, ns, name), now);
  o.services = own_.overlay(key, "services", job_objects(*services_, ns, name), now);
  o.reporter_service_account = exists(*accounts_, key, "serviceaccounts", ns, reporter_name(name), now);
  o.reporter_role = exists(*roles_, key, "roles", ns, reporter_name(name), now);
  o.reporter_role_binding = exists(*bindings_, key, "rolebindings", ns, reporter_name(name), now);
  o.baseline = read_baseline(o.job);
  o.progress = progress_of(key, o.pods);
  o.progress_interval = options_.progress_interval;
  o.kueue = options_.kueue;
  o.worker_images = options_.worker_images;
  if (o.kueue) observe_workload(key, ns, name, now, o);
  o.now = Clock::now();
  const Decision d = reconcile(o, {unready_nodes(o.pods), options_.node_lost_after});
  const std::string version = o.job["metadata"].value("resourceVersion", "");
  try {
    execute_all(key, ns, version, d.actions);
  } catch (const kube::ConflictError&) {
    // The job changed since this reconcile read it (its status write carries the version it
    // read): decide again on the new one.
    queue_.add_rate_limited(key);
    return false;
  }
  // Counted only now that the status recording the transition is written (a conflict above
  // would decide, and emit, again).
  for (const auto& a : d.actions) {
    if (a.verb == Action::Verb::Event) metrics_->transition(a.body.value("reason", ""));
  }
  queue_.forget(key);
  if (d.requeue_after) queue_.add_after(key, *d.requeue_after);
  // A delete of ours the caches have not shown yet: look again once overlay() stops hiding it.
  if (const auto expire = own_.unconfirmed_deletes_expire(key)) {
    queue_.add_after(key, std::chrono::ceil<std::chrono::milliseconds>(*expire - options_.clock->now()) +
                              std::chrono::milliseconds(100));
  }
  return true;
}

void Controller::execute_all(const std::string& key, const std::string& ns, const std::string& job_version,
                             const std::vector<Action>& actions) {
  std::vector<const Action*> creates;  // consecutive pod creates: a run's gang
  for (std::size_t i = 0; i <= actions.size(); ++i) {
    if (i < actions.size() && actions[i].verb == Action::Verb::Create && actions[i].resource == "pods") {
      creates.push_back(&actions[i]);
      continue;
    }
    if (!creates.empty()) create_pods(key, ns, creates);
    creates.clear();
    if (i < actions.size()) execute(key, ns, job_version, actions[i]);
  }
}

void Controller::create_pods(const std::string& key, const std::string& ns, const std::vector<const Action*>& creates) {
  const std::size_t most = static_cast<std::size_t>(std::max(1, options_.pod_create_parallelism));
  std::size_t done = 0;
  for (std::size_t batch = 1; done < creates.size(); batch = std::min(2 * batch, most)) {
    const std::size_t n = std::min({batch, most, creates.size() - done});
    std::vector<std::future<void>> running;
    for (std::size_t i = 0; i < n; ++i) {
      const Action* a = creates[done + i];
      running.push_back(std::async(std::launch::async, [this, &key, &ns, a] { execute(key, ns, "", *a); }));
    }
    std::exception_ptr failed;
    for (auto& f : running) {
      try {
        f.get();
      } catch (...) {
        if (!failed) failed = std::current_exception();
      }
    }
    if (failed) std::rethrow_exception(failed);  // the rest is not tried: the reconcile fails
    done += n;
  }
}

void Controller::observe_workload(const std::string& key, const std::string& ns, const std::string& name,
                                  OwnWrites::Clock::time_point now, Observed& o) {
  const auto workloads = own_.overlay(key, "workloads", job_objects(*workloads_, ns, name), now);
  if (!workloads.empty()) {
    o.workload = workloads.front();
    return;
  }
  const auto& md = o.job.at("metadata");
  const std::string cls = md.value("labels", json::object()).value(kPriorityClassLabel, "");
  if (!cls.empty() && !queue_name_of(o.job).empty()) o.workload_priority = workload_priority(*client_, cls);
}

void Controller::execute(const std::string& key, const std::string& ns, const std::string& job_version,
                         const Action& a) {
  const kube::ResourceType& type = type_of(a.resource);
  const auto now = options_.clock->now();
  switch (a.verb) {
    case Action::Verb::Create:
      try {
        json made = client_->create(type, ns, a.body);
        own_.created(key, a.resource,
                     a.resource == "pods" ? slim_pod(std::move(made))
                     : a.resource == "configmaps" ? slim_config_map(std::move(made))
                                                  : slim_object(std::move(made)),
                     now);
      } catch (const kube::ConflictError&) {
        // AlreadyExists: an earlier reconcile or operator made it (names are deterministic).
      }
      return;
    case Action::Verb::Delete:
    case Action::Verb::ForceDelete:
      try {
        kube::DeleteOptions opts;
        opts.propagation_policy = "Background";
        if (a.verb == Action::Verb::ForceDelete) opts.grace_period_seconds = 0;
        client_->remove(type, ns, a.name, opts);
        own_.deleted(key, a.resource, a.name, now);
      } catch (const kube::NotFoundError&) {
      }
      return;
    case Action::Verb::DeleteCollection: {
      kube::DeleteOptions opts;
      opts.propagation_policy = "Background";
      kube::ListOptions which;
      which.label_selector = a.label_selector;
      client_->remove_collection(type, ns, which, opts);
      for (const auto& name : a.names) own_.deleted(key, a.resource, name, now);
      return;
    }
    case Action::Verb::Patch:
      client_->merge_patch(type, ns, a.name, a.body);
      return;
    case Action::Verb::PatchStatus:
      if (a.resource != "benchmarkjobs") {  // a Workload's: its patch carries its own resourceVersion
        client_->patch_status(type, ns, a.name, a.body);
        return;
      }
      try {
        json patch = a.body;
        // Optimistic concurrency: the status is written only onto the version it was computed from.
        if (!job_version.empty()) patch["metadata"]["resourceVersion"] = job_version;
        const json written = client_->patch_status(type, ns, a.name, patch);
        own_.wrote_status(key, written["metadata"].value("resourceVersion", ""), now);
      } catch (const kube::NotFoundError&) {
      }
      return;
    case Action::Verb::Event:
      try {
        client_->create(type, ns, a.body);
      } catch (const kube::ConflictError&) {
        // AlreadyExists: this transition's Event was recorded by a leader that died before its
        // status write (Event names are per transition, naming.hpp): recorded once, not again.
      } catch (const kube::ApiError& e) {
        // A transient failure (a TransportError is not caught here) fails this reconcile before its
        // status write, and the next records the same Event again (same name: once, whether or
        // not this create landed). So does a 403 for a while (retry_forbidden_event).
        if (kube::is_transient(e)) throw;
        if (dynamic_cast<const kube::ForbiddenError*>(&e) != nullptr &&
            retry_forbidden_event(a.body.value("metadata", json::object()).value("name", ""))) {
          throw;
        }
        std::cerr << "trainbench-operator: event not recorded: " << e.what() << "\n";  // refused: best effort
      }
      return;
  }
}

bool Controller::retry_forbidden_event(const std::string& event_name) {
  constexpr std::chrono::seconds kEventForbiddenGrace{30};
  const auto now = options_.clock->now();
  const std::lock_guard<std::mutex> lock(event_refusals_mutex_);
  // Refusals long past are forgotten (their Events were recorded or skipped since).
  for (auto it = event_refusals_.begin(); it != event_refusals_.end();) {
    it = now - it->second > 2 * kEventForbiddenGrace ? event_refusals_.erase(it) : std::next(it);
  }
  const auto first = event_refusals_.try_emplace(event_name, now).first->second;
  return now - first < kEventForbiddenGrace;
}

ControllerSnapshot Controller::snapshot() const {
  ControllerSnapshot snap;
  snap.queue_depth = queue_.depth();
  snap.synced = synced_;
  for (const auto& job : jobs_->cache()->list()) {
    const std::string phase = job.value("status", json::object()).value("phase", "");
    ++snap.jobs_by_phase[phase.empty() ? "Pending" : phase];
  }
  const std::pair<const char*, const kube::Reflector*> informers[] = {
      {"benchmarkjobs", jobs_.get()}, {"pods", pods_.get()},   {"configmaps", configmaps_.get()},
      {"services", services_.get()},  {"serviceaccounts", accounts_.get()}, {"roles", roles_.get()},
      {"rolebindings", bindings_.get()}};
  for (const auto& [resource, r] : informers) {
    const auto st = r->stats();
    snap.informers[resource] = {st.watches, st.relists_on_gone, r->cache()->size()};
  }
  if (nodes_) {
    const auto st = nodes_->stats();
    snap.informers["nodes"] = {st.watches, st.relists_on_gone, nodes_->cache()->size()};
  }
  return snap;
}

void Controller::run(const std::atomic<bool>& stop) {
  for (auto* r : reflectors()) r->start();
  for (auto* r : reflectors()) {
    // The node informer is not waited for: without it (not yet synced, or no RBAC to read
    // nodes) lost nodes are merely not noticed, and every job still runs.
    if (r == nodes_.get()) continue;
    while (!stop && !r->wait_for_sync(std::chrono::milliseconds(200))) {
    }
  }
  synced_ = !stop;
  std::vector<std::thread> workers;
  for (int i = 0; i < std::max(1, options_.workers); ++i) {
    workers.emplace_back([this] {
      while (auto key = queue_.get()) {
        try {
          reconcile_key(*key);
        } catch (const std::exception& e) {
          std::cerr << "trainbench-operator: reconcile " << *key << ": " << e.what() << "\n";
          queue_.add_rate_limited(*key);
        }
        queue_.done(*key);
      }
    });
  }
  while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  queue_.shut_down();
  for (auto& w : workers) w.join();
  for (auto* r : reflectors()) r->stop();
}

}  // namespace trainbench::op
