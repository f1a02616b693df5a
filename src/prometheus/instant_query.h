// The Prometheus (or Thanos) instant-query client that the agent's PromQL risks and the
// operator's health gate share: GET {url}/api/v1/query?query=..., with a bearer token
// read from a file on every query when one is configured (kube::ReadTokenFile), extra
// CA certificates from a directory, a timeout, and a stop token that ends a query in
// flight within about a second.
//
// An answer Prometheus gave is read whatever its HTTP status (it answers a bad query or
// a timeout with a JSON error document and a 4xx or 503); anything else is an error.
// The wording of errors is the cluster-version operator's, for its PromQL conditions
// (pkg/clusterconditions/promql in openshift/cluster-version-operator): "executing
// PromQL query: ...", "invalid PromQL result type is X, not vector".
//
// Thread-safe (no shared state); never throws; an answer is capped at 4 MiB.
#pragma once

#include <chrono>
#include <map>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cincinnati::prometheus {

struct Settings {
  std::string url;         // e.g. http://127.0.0.1:9090 (nothing appended but /api/v1/query)
  std::string token_file;  // empty: no Authorization header
  std::string ca_path;     // empty: system roots only
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  std::stop_token stop{};
};

// One series of an instant vector: its labels and its value as Prometheus wrote it.
struct Sample {
  std::map<std::string, std::string> labels;
  std::string value;
};

// The instant vector `query` evaluates to now.
Result<std::vector<Sample>> InstantQuery(const Settings& settings, std::string_view query);

// The samples of a /api/v1/query answer, which must be a successful instant vector
// (exposed for tests and fuzzing).
Result<std::vector<Sample>> ReadInstantVector(std::string_view body);

}  // namespace cincinnati::prometheus
