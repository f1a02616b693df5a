// The upgrade operator's HTTP API (127.0.0.1:8383 by default, the reference's metrics
// port): /metrics (the reference's gauges), /healthz, /readyz, the UpgradeConfigs
// (GET /apis/upgrade.managed.openshift.io/v1alpha1/upgradeconfigs[/CLUSTER]) and the
// fleet's controls (GET /apis/upgrade.cincinnati.openshift.io/v1/fleet, POST .../fleet/pause
// with an optional {"reason": "..."} body, POST .../fleet/resume). Errors are
// Kubernetes-style Status documents. A bearer token is required when one is configured
// (compared in constant time); POSTs need Content-Type: application/json.
#pragma once

#include <string>

#include "operator/upgrade_operator.h"
#include "http_server/http_types.h"

namespace cincinnati::upgrade {

inline constexpr std::string_view kConfigsPath = "/apis/upgrade.managed.openshift.io/v1alpha1/upgradeconfigs";
inline constexpr std::string_view kFleetPath = "/apis/upgrade.cincinnati.openshift.io/v1/fleet";

http_server::Response HandleOperatorApi(UpgradeOperator& op, const http_server::Request& request, const std::string& token);

}  // namespace cincinnati::upgrade
