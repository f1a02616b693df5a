// The agent's HTTP API, in the shape of the Kubernetes API for the objects it serves:
//   GET   /apis/config.openshift.io/v1/clusterversions/version[?watch=true&resourceVersion=N&timeoutSeconds=T]
//   PATCH /apis/config.openshift.io/v1/clusterversions/version      (JSON merge patch; spec only)
//   GET   /apis/config.openshift.io/v1/clusteroperators[/NAME]
//   PUT   /apis/config.openshift.io/v1/clusteroperators/NAME        (create or replace)
//   PATCH /apis/config.openshift.io/v1/clusteroperators/NAME/status (JSON merge patch of status)
//   GET   /metrics, /healthz, /readyz
// Errors are Kubernetes `Status` documents (kube/status_document.h; reason NotFound, Invalid with the field in
// details.causes, BadRequest, Unauthorized, MethodNotAllowed, UnsupportedMediaType).
// With a non-empty `token`, every request but /healthz and /readyz needs
// "Authorization: Bearer <token>". Thread-safe (the Agent is); never throws.
#pragma once

#include <functional>
#include <string>

#include "agent/agent.h"
#include "agent/cluster_version_watch.h"
#include "http_server/http_types.h"

namespace cincinnati::agent {

http_server::Response HandleAgentApi(Agent& agent, const http_server::Request& request, const std::string& token);

// The same API, with watches of the ClusterVersion (cluster_version_watch.h): a GET of
// it with watch=true, authorized, waits in `watches`; every other request is answered
// at once by HandleAgentApi. A bad resourceVersion or timeoutSeconds is a 400 Status.
void ServeAgentApi(Agent& agent, ClusterVersionWatches& watches, const http_server::Request& request, const std::string& token,
                   std::function<void(http_server::Response)> respond);

}  // namespace cincinnati::agent
