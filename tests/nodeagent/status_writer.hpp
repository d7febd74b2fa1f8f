#pragma once

// Pod statuses written as a kubelet's status manager writes them: the latest state of each pod
// (earlier ones are never written after it), as a strategic merge PATCH of pods/NAME/status
// carrying metadata.uid (so it never lands on a new pod of the same name), from a thread of its
// own; failures are retried a second later, a pod that is gone is forgotten. A pod whose
// containers are done and whose deletion was asked for is then deleted for good (grace 0, uid
// precondition), after its last status, and that too is retried until it is done: an API server
// that is down for a while (restarting) must not leave a pod Terminating for ever.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"
#include "runtime/pod_status.hpp"

namespace nodeagent {

namespace kube = trainbench::kube;

class StatusWriter {
 public:
  /// `cached_pod(ns, name)`: the pod as last seen (its status is the base the report is laid on).
  using PodLookup = std::function<std::optional<nlohmann::json>(const std::string& ns, const std::string& name)>;

  StatusWriter(std::shared_ptr<const kube::Client> client, PodLookup cached_pod);
  ~StatusWriter() { stop(); }
  StatusWriter(const StatusWriter&) = delete;
  StatusWriter& operator=(const StatusWriter&) = delete;

  void start();
  /// Stops the thread (what is pending is not written). Idempotent.
  void stop();
  /// Writes nothing more (a lost node).
  void silence();

  void update(const std::string& ns, const std::string& name, const std::string& uid,
              const noderuntime::PodStatusReport& report);
  /// Deletes the pod for good once its pending status is written (nothing of it runs here any
  /// more); retried until the API server answers.
  void finish(const std::string& ns, const std::string& name, const std::string& uid);

 private:
  struct Pending {
    std::string ns, name, uid;
    std::optional<noderuntime::PodStatusReport> report;  ///< nullopt: none to write
    std::uint64_t seq = 0;
    bool finish = false;  ///< then delete it (grace 0)
  };
  void loop();
  /// False when it is to be tried again (what was done is dropped from `p`).
  bool write(Pending& p);
  bool write_status(const Pending& p);
  bool remove(const Pending& p);
  /// `p` failed: it goes back to the queue, under whatever came for the pod meanwhile.
  void requeue(Pending&& p);
  static void report(const Pending& p, const std::string& what);

  std::shared_ptr<const kube::Client> client_;
  PodLookup cached_pod_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Pending> pending_;  // uid -> the latest unwritten status
  std::uint64_t next_seq_ = 1;
  bool stopping_ = false;
  bool silenced_ = false;
  std::mutex write_mu_;                             // one write at a time
  std::map<std::string, std::uint64_t> written_;  // uid -> seq of the last status written
  std::thread thread_;
};

}  // namespace nodeagent
