#include "runtime/pod_run.hpp"

#include "runtime/process.hpp"

namespace noderuntime {

namespace {

std::string str(const json& o, const std::string& path) {
  const json* v = json_path(o, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

}  // namespace

RunPtr make_pod_run(const json& pod, const std::string& pods_dir, const std::string& ip, const std::string& host_ip) {
  auto run = std::make_shared<PodRun>();
  run->ns = str(pod, "metadata.namespace");
  run->name = str(pod, "metadata.name");
  run->uid = str(pod, "metadata.uid");
  run->labels = pod["metadata"].value("labels", json::object());
  run->node = str(pod, "spec.nodeName");
  run->restart_policy = pod["spec"].value("restartPolicy", "Always");
  run->ip = ip;
  run->host_ip = host_ip;
  run->start_time = now_rfc3339();
  run->dir = pods_dir + "/" + run->ns + "_" + run->name + "_" + run->uid;
  run->initialized = true;
  for (const char* list : {"initContainers", "containers"}) {
    for (const auto& c : pod["spec"].value(list, json::array())) {
      ContainerRun cr;
      cr.name = c.value("name", "");
      cr.init = std::string(list) == "initContainers";
      cr.spec = c;
      cr.log_path = run->dir + "/" + cr.name + ".log";
      cr.term_path = run->dir + "/" + cr.name + ".termination-log";
      if (cr.init) {
        cr.state = {{"waiting", {{"reason", "PodInitializing"}}}};
        run->initialized = false;
      }
      run->containers.push_back(cr);
    }
  }
  return run;
}

std::string container_id(const PodRun& run, const std::string& container) {
  return run.runtime + "://" + run.uid + "-" + container;
}

std::string container_log_path(PodRun& run, const std::string& container) {
  std::lock_guard<std::mutex> lock(run.mu);
  for (const auto& c : run.containers) {
    if ((container.empty() && !c.init) || c.name == container) return c.has_log && !run.fake ? c.log_path : "";
  }
  return "";
}

bool container_finished(PodRun& run, const std::string& container) {
  std::lock_guard<std::mutex> lock(run.mu);
  for (const auto& c : run.containers) {
    if ((container.empty() && !c.init) || c.name == container) return c.finished || (!c.running && run.stopping);
  }
  return true;
}

bool container_running(PodRun& run, const std::string& container) {
  std::lock_guard<std::mutex> lock(run.mu);
  for (const auto& c : run.containers) {
    if ((container.empty() && !c.init) || c.name == container) return c.running;
  }
  return false;
}

void freeze_containers(PodRun& run) {
  std::lock_guard<std::mutex> lock(run.mu);
  for (const auto& c : run.containers) {
    if (c.running && c.pid > 0) freeze_tree(c.pid);
  }
}

}  // namespace noderuntime
