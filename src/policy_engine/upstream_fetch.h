// FetchUpstream: one GET of a policy engine's upstream (a graph builder or another
// policy engine), read and classified.
//
// The body is parsed as Cincinnati JSON and must pass CheckServable; a graph builder's
// document and a policy engine's versioned view both come back as `graph` (the graph's
// is_served_view() tells them apart). A 4xx error document is the upstream's answer to
// the query (`answer_error`, passed through to clients); anything else that is not a
// graph is a failure (`failure`: the upstream's own 5xx document, or
// failed_upstream_fetch / failed_json_in naming the cause). With `known_body_hash`, a
// body identical to the last one is neither parsed nor checked (`unchanged`); its
// signature, when the options ask for one, always is.
// Counts every fetch in `requests` and every failure in `errors`. Thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

#include "core/error_document.h"
#include "core/graph.h"
#include "core/graph_records.h"
#include "core/status.h"
#include "http_server/metrics.h"
#include "policy_engine/upstream_state.h"
#include "service/http_names.h"
#include "signing/upstream_trust.h"

namespace cincinnati::server {

struct UpstreamAnswer {
  std::optional<Graph> graph;
  bool unchanged = false;
  std::string body_hash;  // set when the caller passed a known hash
  // The upstream's Cincinnati-Graph-Generation and -Fresh (0: none sent); when its
  // signatures are checked, the signed ones (none from an unsigned answer).
  uint64_t generation = 0;
  int64_t fresh = 0;
  int64_t not_after = 0;     // the signature's expiry (0: not checked)
  bool per_cluster = false;  // the upstream made it for the query's cluster alone
  std::optional<ErrorDocument> answer_error;
  std::optional<ErrorDocument> failure;
  // What this answer says about the upstream, for the state machine.
  FetchOutcome Outcome() const;
};

struct UpstreamFetchOptions {
  std::chrono::milliseconds timeout{30000};
  Counter* requests = nullptr;
  Counter* errors = nullptr;
  const std::string* known_body_hash = nullptr;
  size_t max_body_bytes = 64u << 20;  // a larger body is a failure naming the setting
  std::stop_token stop{};             // the service is stopping
  // Signed answers (signing/upstream_trust.h): checked for `scope` (the query the fetch asks,
  // empty for the graph) at `now` (Unix seconds); `in_turn` for the shared graph's fetch
  // (rollback is checked when its bytes changed). A refused answer is a failure; a taken
  // signed one gives its signed generation, freshness and expiry. 4xx error documents
  // are never signed: callers that check signatures decide what they may change.
  UpstreamTrust* trust = nullptr;
  AnswerScope scope{};
  int64_t now = 0;
  bool in_turn = false;
  // An unsigned answer's plain Cincinnati-Graph-Generation more than kMaxGenerationLead
  // ahead of `now` is a failure: set when the caller signs with it (a checker downstream
  // would refuse the number, and every later one would look rolled back).
  bool bound_plain_generation = false;
};

UpstreamAnswer FetchUpstream(const std::string& url, const UpstreamFetchOptions& options);

// The graph builder's records of what it removed (core/graph_records.h), asked for on
// the graph's own URL by their media type, for a graph of at most `max_nodes` nodes.
// nullopt when the upstream keeps none (406 from a reference graph builder, 404, 415, or
// a graph where the records were asked for); an error for anything to ask again (no
// answer, another status, an empty body, a document that cannot be read). Not counted
// in the options' counters: the graph's fetch is the one that tells the upstream's health.
Result<std::optional<GraphRecords>> FetchGraphRecords(const std::string& url, size_t max_nodes,
                                                      const UpstreamFetchOptions& options);

}  // namespace cincinnati::server
