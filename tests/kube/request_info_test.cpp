// classify_request: the verb and resource the API server (its RBAC and audit) would see.
#include "kube/request_info.hpp"

#include <gtest/gtest.h>

namespace {

using trainbench::kube::classify_request;

void expect(const std::string& method, const std::string& path, const std::string& query, const std::string& verb,
            const std::string& resource) {
  const auto info = classify_request(method, path, query);
  EXPECT_EQ(info.verb, verb) << method << " " << path << "?" << query;
  EXPECT_EQ(info.resource, resource) << method << " " << path << "?" << query;
}

TEST(RequestInfo, ResourceVerbsAsTheApiServerNamesThem) {
  expect("GET", "/api/v1/namespaces/default/pods", "labelSelector=a%3Db", "list", "pods");
  expect("GET", "/api/v1/pods", "", "list", "pods");
  expect("GET", "/api/v1/namespaces/default/pods", "watch=true&resourceVersion=5", "watch", "pods");
  expect("GET", "/api/v1/watch/namespaces/default/pods", "", "watch", "pods");
  expect("GET", "/api/v1/namespaces/default/pods/p-0", "", "get", "pods");
  expect("GET", "/api/v1/namespaces/default/pods/p-0/log", "", "get", "pods/log");
  expect("POST", "/api/v1/namespaces/default/pods", "", "create", "pods");
  expect("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/op", "", "update", "leases");
  expect("PATCH", "/apis/trainbench.dev/v1alpha1/namespaces/ns/benchmarkjobs/j/status", "", "patch",
         "benchmarkjobs/status");
  expect("DELETE", "/api/v1/namespaces/default/pods/p-0", "", "delete", "pods");
  expect("DELETE", "/api/v1/namespaces/default/pods", "labelSelector=x", "deletecollection", "pods");
  expect("POST", "/api/v1/namespaces/default/serviceaccounts/sa/token", "", "create", "serviceaccounts/token");
}

TEST(RequestInfo, NamespacesThemselves) {
  expect("GET", "/api/v1/namespaces", "", "list", "namespaces");
  expect("GET", "/api/v1/namespaces/default", "", "get", "namespaces");
  expect("PUT", "/api/v1/namespaces/default/status", "", "update", "namespaces/status");
}

TEST(RequestInfo, NonResourcePathsUseTheHttpMethod) {
  expect("GET", "/version", "", "get", "");
  expect("GET", "/apis", "", "get", "");
  expect("GET", "/apis/trainbench.dev/v1alpha1", "", "get", "");
  expect("GET", "/api/v1", "", "get", "");
  expect("GET", "/healthz", "", "get", "");
}

}  // namespace
