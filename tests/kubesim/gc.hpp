#pragma once

// The garbage collector and the namespace controller (kube-controller-manager's roles):
// - an object whose owners (ownerReferences, by uid) are all gone is deleted (background);
//   references to a deleted owner are removed from dependents that still have other owners;
// - an owner deleted with propagationPolicy=Foreground (finalizer foregroundDeletion) stays,
//   with deletionTimestamp, until its dependents are gone, then it is removed;
// - a namespace being deleted has its contents deleted, then goes away.

#include <atomic>
#include <memory>
#include <thread>

#include "api.hpp"

namespace kubesim {

class GarbageCollector {
 public:
  explicit GarbageCollector(Api& api) : api_(api) {}
  ~GarbageCollector() { stop(); }
  GarbageCollector(const GarbageCollector&) = delete;
  GarbageCollector& operator=(const GarbageCollector&) = delete;
  void start();
  void stop();

 private:
  void run();
  void on_event(const WatchEvent& ev);
  void check_dependent(const ObjectRef& ref);
  void check_foreground_owner(const std::string& uid);
  void sweep_namespaces();

  Api& api_;
  std::shared_ptr<Watcher> watcher_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace kubesim
