#pragma once

// kubesim serves HTTPS with the node runtime's server (tests/nodeagent/runtime/http_server.hpp,
// its one home, shared with the node agent's log endpoint).

#include "runtime/http_server.hpp"

namespace kubesim {

using noderuntime::HeaderList;
using noderuntime::HttpHandler;
using noderuntime::HttpRequest;
using noderuntime::HttpResponder;
using noderuntime::HttpsServer;

}  // namespace kubesim
