package main

import (
	"net/http/httptest"
	"testing"
)

func TestRequestInfo(t *testing.T) {
	cases := []struct {
		method, url                     string
		verb, group, ns, res, sub, name string
		resource                        bool
	}{
		{"GET", "/api/v1/namespaces/ns/pods", "list", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/ns/pods/p", "get", "", "ns", "pods", "", "p", true},
		{"HEAD", "/api/v1/namespaces/ns/pods/p", "get", "", "ns", "pods", "", "p", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5", "watch", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=1", "watch", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=", "watch", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=false", "list", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=0", "list", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/watch/namespaces/ns/pods", "watch", "", "ns", "pods", "", "", true},
		{"GET", "/api/v1/watch/namespaces/ns/pods/p", "watch", "", "ns", "pods", "", "p", true},
		{"GET", "/api/v1/pods", "list", "", "", "pods", "", "", true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3Dp", "watch", "", "ns", "pods", "", "p", true},
		{"GET", "/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn,metadata.name%3D%3Dp", "list", "", "ns", "pods", "", "p", true},
		{"GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", "get", "", "ns", "pods", "log", "p", true},
		{"POST", "/api/v1/namespaces/ns/pods", "create", "", "ns", "pods", "", "", true},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", "create", "", "ns", "serviceaccounts", "token", "sa", true},
		{"PUT", "/apis/trainbench.dev/v1alpha1/namespaces/ns/benchmarkjobs/j/status", "update", "trainbench.dev", "ns", "benchmarkjobs", "status", "j", true},
		{"PATCH", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", "patch", "coordination.k8s.io", "ns", "leases", "", "l", true},
		{"DELETE", "/api/v1/namespaces/ns/configmaps/c", "delete", "", "ns", "configmaps", "", "c", true},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "deletecollection", "", "ns", "configmaps", "", "", true},
		{"DELETE", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dc", "deletecollection", "", "ns", "configmaps", "", "", true},
		// Namespaces themselves, and their subresources.
		{"GET", "/api/v1/namespaces", "list", "", "", "namespaces", "", "", true},
		{"GET", "/api/v1/namespaces/ns", "get", "", "ns", "namespaces", "", "ns", true},
		{"PUT", "/api/v1/namespaces/ns/status", "update", "", "ns", "namespaces", "status", "ns", true},
		{"PUT", "/api/v1/namespaces/ns/finalize", "update", "", "ns", "namespaces", "finalize", "ns", true},
		{"GET", "/api/v1/nodes/n/proxy/metrics", "get", "", "", "nodes", "proxy", "n", true},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/p", "proxy", "", "ns", "pods", "", "p", true},
		// Not resource requests: discovery, health, version, OpenAPI.
		{"GET", "/api", "get", "", "", "", "", "", false},
		{"GET", "/api/v1", "get", "", "", "", "", "", false},
		{"GET", "/apis", "get", "", "", "", "", "", false},
		{"GET", "/apis/apps", "get", "", "", "", "", "", false},
		{"GET", "/apis/apps/v1", "get", "", "", "", "", "", false},
		{"GET", "/healthz", "get", "", "", "", "", "", false},
		{"GET", "/readyz?verbose", "get", "", "", "", "", "", false},
		{"GET", "/livez", "get", "", "", "", "", "", false},
		{"GET", "/version", "get", "", "", "", "", "", false},
		{"GET", "/openapi/v3/apis/apps/v1", "get", "", "", "", "", "", false},
		{"POST", "/openapi/v2", "post", "", "", "", "", "", false},
	}
	for _, c := range cases {
		got := newRequestInfo(httptest.NewRequest(c.method, c.url, nil))
		want := requestInfo{resourceRequest: c.resource, verb: c.verb, apiGroup: c.group, namespace: c.ns,
			resource: c.res, subresource: c.sub, name: c.name}
		got.apiVersion = ""
		if got != want {
			t.Errorf("%s %s: %+v, want %+v", c.method, c.url, got, want)
		}
	}
}
