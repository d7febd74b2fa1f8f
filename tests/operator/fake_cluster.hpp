#pragma once

// An in-memory API server for the Controller's tests, served by kubetest::FakeApiServer: lists
// of any collection, from objects the test seeds or the Controller created; watches that stay
// open and send nothing (the Controller sees its own writes through own_writes.hpp, not through
// events); and the writes the Controller makes (create, delete, delete collection, status
// patch), each carried out and answered as the API server does unless the test scripted the
// answer. Label selectors are equality terms only ("a=b,c=d"), as the Controller writes them.

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_api_server.hpp"

namespace trainbench::op::test {

class FakeCluster {
 public:
  /// One write request and the status it was answered with.
  struct Write {
    std::string method;  ///< POST, DELETE, PATCH
    std::string resource;
    std::string name;  ///< empty for a collection delete
    int status = 0;
  };

  /// Stores an object of `resource` (a plural: "pods", "benchmarkjobs").
  void seed(const std::string& resource, nlohmann::json object);
  /// The next `method` request on `resource` is answered with `status` (a Status with `reason`)
  /// and not carried out. Scripted answers for the same request are used in order.
  void fail_next(const std::string& method, const std::string& resource, int status, const std::string& reason);
  std::optional<nlohmann::json> get(const std::string& resource, const std::string& ns, const std::string& name) const;
  /// Every write so far, in order.
  std::vector<Write> writes() const;
  /// The writes `method` on `resource` so far.
  std::size_t count(const std::string& method, const std::string& resource) const;

  kubetest::FakeApiServer::Handler handler();

 private:
  struct Target {
    std::string ns, resource, name, subresource;
  };
  static Target target_of(const std::string& path);
  void serve(const kubetest::FakeRequest& req, kubetest::FakeConnection& c);
  /// The answer to one request; false for a watch (the handler then keeps its stream open).
  bool answer(const kubetest::FakeRequest& req, const Target& t, int& status, nlohmann::json& body);
  /// The stored object `t` names; nullptr, with a 404 answer in status and body, when none.
  nlohmann::json* find_locked(const Target& t, int& status, nlohmann::json& body);
  void get_or_remove(const Target& t, bool remove, int& status, nlohmann::json& body);
  void create(const Target& t, nlohmann::json object, int& status, nlohmann::json& body);
  void remove_collection(const Target& t, const std::string& selector, int& status, nlohmann::json& body);
  void patch_status(const Target& t, const nlohmann::json& patch, int& status, nlohmann::json& body);
  std::string key(const std::string& ns, const std::string& name) const { return ns + "/" + name; }

  mutable std::mutex mutex_;
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;     ///< resource -> ns/name -> object
  std::map<std::string, std::deque<std::pair<int, std::string>>> scripted_;  ///< "METHOD resource"
  std::vector<Write> writes_;
  long version_ = 100;
};

}  // namespace trainbench::op::test
