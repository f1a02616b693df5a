// The agent's HTTP API, in the shape of the Kubernetes API for the objects it serves:
//   GET   /apis/config.openshift.io/v1/clusterversions/version
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

#include <string>

#include "agent/agent.h"
#include "http_server/http_types.h"

namespace cincinnati::agent {

http_server::Response HandleAgentApi(Agent& agent, const http_server::Request& request, const std::string& token);

}  // namespace cincinnati::agent
