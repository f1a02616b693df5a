// Kubernetes `Status` documents: how the agent's and the operator's APIs say what went
// wrong, as the Kubernetes API server does ({"kind":"Status","apiVersion":"v1",
// "status":"Failure","message":...,"reason":...,"details":...,"code":...}), so that
// `oc`-style clients read them.
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <string>
#include <string_view>

#include "http_server/http_types.h"

namespace cincinnati::kube {

// A Status document for an error. With `kind`, details names the object (`name`, group
// config.openshift.io); with `field`, details.causes names it, with `cause` (or the
// message) as its message.
std::string StatusDocument(int code, std::string_view reason, std::string_view message, std::string_view kind = "",
                           std::string_view name = "", std::string_view field = "", std::string_view cause = "");

// The answers the HTTP server gives itself (400, 413, 431) as Status documents
// (http_server::HttpServer::SetErrorResponse).
http_server::Response ServerErrorResponse(int status, std::string_view message);

}  // namespace cincinnati::kube
