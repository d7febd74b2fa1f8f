package main

// What the API server makes of a request (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go,
// NewRequestInfo, ported): whether it is a resource request, its verb (GET on a collection is
// list, watch=true or a /watch/ path is watch, DELETE on a collection is deletecollection),
// resource, subresource, namespace and name. Discovery (/api, /apis/G/V), /healthz, /livez,
// /readyz, /version and /openapi are not resource requests.

import (
	"net/http"
	"strings"
)

type requestInfo struct {
	resourceRequest bool
	verb            string
	apiGroup        string
	apiVersion      string
	namespace       string
	resource        string
	subresource     string
	name            string
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func newRequestInfo(r *http.Request) requestInfo {
	info := requestInfo{verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	if parts[0] == "apis" {
		if len(parts) < 4 {
			return info
		}
		info.apiGroup = parts[1]
		parts = parts[1:]
	}
	parts = parts[1:]
	info.resourceRequest = true
	info.apiVersion = parts[0]
	parts = parts[1:]

	if parts[0] == "watch" || parts[0] == "proxy" {
		if len(parts) < 2 { // the API server refuses it; nothing to name
			return info
		}
		info.verb = parts[0]
		parts = parts[1:]
	} else {
		switch r.Method {
		case http.MethodPost:
			info.verb = "create"
		case http.MethodGet, http.MethodHead:
			info.verb = "get"
		case http.MethodPut:
			info.verb = "update"
		case http.MethodPatch:
			info.verb = "patch"
		case http.MethodDelete:
			info.verb = "delete"
		default:
			info.verb = ""
		}
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			info.namespace = parts[1]
			if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
				parts = parts[2:]
			}
		}
	}
	if len(parts) >= 3 && info.verb != "proxy" {
		info.subresource = parts[2]
	}
	if len(parts) >= 2 {
		info.name = parts[1]
	}
	info.resource = parts[0]

	if info.name == "" && info.verb == "get" {
		q := r.URL.Query()
		info.verb = "list"
		if w, ok := q["watch"]; ok && len(w) > 0 && w[0] != "0" && !strings.EqualFold(w[0], "false") {
			info.verb = "watch"
		}
		if fs, ok := q["fieldSelector"]; ok && len(fs) > 0 {
			info.name = exactName(fs[0])
		}
	}
	if info.name == "" && info.verb == "delete" {
		info.verb = "deletecollection"
	}
	return info
}

// exactName: the name a field selector requires (metadata.name=N or ==N), if it is a valid path
// segment, as fields.Selector.RequiresExactMatch and IsPathSegmentName.
func exactName(selector string) string {
	for _, term := range strings.Split(selector, ",") {
		var v string
		switch {
		case strings.HasPrefix(term, "metadata.name=="):
			v = strings.TrimPrefix(term, "metadata.name==")
		case strings.HasPrefix(term, "metadata.name="):
			v = strings.TrimPrefix(term, "metadata.name=")
		default:
			continue
		}
		if v == "." || v == ".." || strings.ContainsAny(v, "/%") {
			return ""
		}
		return v
	}
	return ""
}
