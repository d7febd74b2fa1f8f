#include "operator/controller/controller.hpp"

#include <iostream>
#include <thread>

#include "operator/controller/naming.hpp"
#include "operator/kube/errors.hpp"

namespace trainbench::op {
namespace {

using nlohmann::json;

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
  };
  return types.at(resource);
}

std::vector<json> items(const json& list) {
  std::vector<json> out;
  for (const auto& i : list.value("items", json::array())) out.push_back(i);
  return out;
}

std::string managed_selector() { return std::string("app.kubernetes.io/managed-by=") + kManagedBy; }

}  // namespace

Controller::Controller(std::shared_ptr<const kube::Client> client, ControllerOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  kube::ReflectorHandlers job_handlers;
  job_handlers.on_add = [this](const json& o) { queue_.add(kube::object_key(o)); };
  job_handlers.on_update = [this](const json&, const json& o) { queue_.add(kube::object_key(o)); };
  job_handlers.on_delete = [this](const json& o) { queue_.forget(kube::object_key(o)); };
  job_handlers.on_error = [](const std::string& m) { std::cerr << "trainbench-operator: jobs watch: " << m << "\n"; };
  jobs_ = std::make_unique<kube::Reflector>(client_, kube::resources::benchmark_jobs(), options_.watch_namespace,
                                            kube::ReflectorOptions{}, job_handlers);

  auto owned = [this](const kube::ResourceType& type) {
    kube::ReflectorHandlers h;
    h.on_add = [this](const json& o) { enqueue_owner(o); };
    h.on_update = [this](const json&, const json& o) { enqueue_owner(o); };
    h.on_delete = [this](const json& o) { enqueue_owner(o); };
    h.on_error = [plural = type.plural](const std::string& m) {
      std::cerr << "trainbench-operator: " << plural << " watch: " << m << "\n";
    };
    kube::ReflectorOptions ro;
    ro.label_selector = managed_selector();
    return std::make_unique<kube::Reflector>(client_, type, options_.watch_namespace, ro, h);
  };
  pods_ = owned(kube::resources::pods());
  configmaps_ = owned(kube::resources::config_maps());
  services_ = owned(kube::resources::services());
  accounts_ = owned(kube::resources::service_accounts());
  roles_ = owned(kube::resources::roles());
  bindings_ = owned(kube::resources::role_bindings());
}

Controller::~Controller() { queue_.shut_down(); }

void Controller::enqueue_owner(const json& obj) {
  const json& md = obj.at("metadata");
  const std::string job = md.value("labels", json::object()).value(kJobLabel, "");
  if (!job.empty()) queue_.add(md.value("namespace", "default") + "/" + job);
}

bool Controller::cached(const kube::Reflector& r, const std::string& ns, const std::string& name) const {
  return r.cache()->get(ns, name).has_value();
}

void Controller::reconcile_key(const std::string& key) {
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  Observed o;
  auto job = client_->try_get(kube::resources::benchmark_jobs(), ns, name);
  if (!job) return;  // deleted: garbage collection removes what it owned
  o.job = *job;
  kube::ListOptions by_job;
  by_job.label_selector = std::string(kJobLabel) + "=" + name + "," + managed_selector();
  o.pods = items(client_->list(kube::resources::pods(), ns, by_job));
  o.configmaps = items(client_->list(kube::resources::config_maps(), ns, by_job));
  o.services = services_->cache()->list_matching({{kJobLabel, name}});
  o.services.erase(std::remove_if(o.services.begin(), o.services.end(),
                                  [&](const json& s) { return s["metadata"].value("namespace", "") != ns; }),
                   o.services.end());
  o.reporter_service_account = cached(*accounts_, ns, reporter_name(name));
  o.reporter_role = cached(*roles_, ns, reporter_name(name));
  o.reporter_role_binding = cached(*bindings_, ns, reporter_name(name));
  o.now = Clock::now();
  const Decision d = reconcile(o);
  for (const auto& a : d.actions) execute(ns, a);
  queue_.forget(key);
  if (d.requeue_after) queue_.add_after(key, *d.requeue_after);
}

void Controller::execute(const std::string& ns, const Action& a) {
  const kube::ResourceType& type = type_of(a.resource);
  switch (a.verb) {
    case Action::Verb::Create:
      try {
        client_->create(type, ns, a.body);
      } catch (const kube::ConflictError&) {
        // AlreadyExists: an earlier reconcile or operator made it (names are deterministic).
      }
      return;
    case Action::Verb::Delete:
      try {
        kube::DeleteOptions opts;
        opts.propagation_policy = "Background";
        client_->remove(type, ns, a.name, opts);
      } catch (const kube::NotFoundError&) {
      }
      return;
    case Action::Verb::PatchStatus:
      try {
        client_->patch_status(type, ns, a.name, a.body);
      } catch (const kube::NotFoundError&) {
      }
      return;
    case Action::Verb::Event:
      try {
        client_->create(type, ns, a.body);
      } catch (const kube::KubeError& e) {
        std::cerr << "trainbench-operator: event not recorded: " << e.what() << "\n";  // best effort
      }
      return;
  }
}

void Controller::run(const std::atomic<bool>& stop) {
  for (auto* r : {jobs_.get(), pods_.get(), configmaps_.get(), services_.get(), accounts_.get(), roles_.get(),
                  bindings_.get()}) {
    r->start();
  }
  for (auto* r : {services_.get(), accounts_.get(), roles_.get(), bindings_.get(), jobs_.get()}) {
    while (!stop && !r->wait_for_sync(std::chrono::milliseconds(200))) {
    }
  }
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
  for (auto* r : {jobs_.get(), pods_.get(), configmaps_.get(), services_.get(), accounts_.get(), roles_.get(),
                  bindings_.get()}) {
    r->stop();
  }
}

}  // namespace trainbench::op
