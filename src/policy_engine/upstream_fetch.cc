#include "policy_engine/upstream_fetch.h"
#include "service/http_names.h"

#include <charconv>

#include <fmt/format.h>

#include <algorithm>

#include "core/graph_check.h"
#include "core/graph_json.h"
#include "core/sha256.h"
#include "http/client.h"

namespace cincinnati::server {

namespace {

// A header's number; one that does not parse is as if none were sent.
template <typename Number>
void ReadNumber(const http::Result& r, const char* name, Number& into) {
  if (const std::string* h = r.Header(name)) {
    Number n = 0;
    auto [end, ec] = std::from_chars(h->data(), h->data() + h->size(), n);
    if (ec == std::errc() && end == h->data() + h->size() && n > 0) into = n;
  }
}

}  // namespace

FetchOutcome UpstreamAnswer::Outcome() const {
  if (unchanged) return FetchOutcome::kUnchanged;
  if (graph) return graph->is_served_view() ? FetchOutcome::kPolicyEngineAnswer : FetchOutcome::kGraph;
  if (answer_error && answer_error->kind == "missing_params") return FetchOutcome::kPolicyEngineAnswer;
  return FetchOutcome::kFailed;
}

UpstreamAnswer FetchUpstream(const std::string& url, const UpstreamFetchOptions& options) {
  if (options.requests) options.requests->Increment();
  UpstreamAnswer out;
  auto fail = [&](ErrorDocument doc) {
    if (options.errors) options.errors->Increment();
    out.failure = std::move(doc);
    return out;
  };
  http::Result r = http::Get(url, {.headers = {"Accept: application/json"},
                                  .timeout = options.timeout,
                                  .max_body_bytes = options.max_body_bytes,
                                  .max_body_name = "upstream.cincinnati.max_body_bytes",
                                  .stop = options.stop});
  if (!r.error.empty()) return fail(ErrorDocument::Of("failed_upstream_fetch", r.error));
  if (r.status < 200 || r.status >= 300) {
    auto doc = ErrorDocument::Parse(r.body);
    if (!doc.ok()) return fail(ErrorDocument::Of("failed_upstream_fetch", fmt::format("{} from {}", r.status, url)));
    doc->http_status = static_cast<int>(r.status);
    if (r.status >= 400 && r.status < 500) {
      out.answer_error = std::move(doc).value();
      return out;
    }
    return fail(std::move(doc).value());
  }
  if (options.known_body_hash) out.body_hash = Sha256Hex(r.body);
  const bool unchanged = options.known_body_hash && out.body_hash == *options.known_body_hash;
  if (options.trust) {
    // The same bytes again are never a rollback (signing/upstream_trust.h).
    UpstreamTrust::Verdict verdict =
        options.trust->Check(r.Header(kSignatureHeader), r.body, options.scope, options.now, options.in_turn && !unchanged,
                             r.Header(kSignatureWithheldHeader));
    if (!verdict.taken) return fail(ErrorDocument::Of("failed_upstream_fetch", fmt::format("{} is refused: {}", url, verdict.refusal)));
    // What was signed, never what a plain header may claim; an unsigned answer's claims
    // are not taken at all (the policy engine numbers it itself).
    if (verdict.is_signed) {
      out.generation = verdict.facts.generation;
      out.fresh = verdict.facts.signed_at;
      ReadNumber(r, kFreshHeader, out.fresh);
      out.fresh = std::min(out.fresh, verdict.facts.signed_at);
      out.not_after = verdict.facts.expires;
      out.per_cluster = verdict.facts.per_cluster;
    }
  } else {
    ReadNumber(r, kGenerationHeader, out.generation);
    ReadNumber(r, kFreshHeader, out.fresh);
    // Passed on, and signed here when this engine signs: a number from a clock that is
    // ahead would lock out every checker downstream (signing/graph_generation.h).
    if (options.bound_plain_generation && options.now > 0 &&
        out.generation / 1000 > static_cast<uint64_t>(options.now) + kMaxGenerationLead) {
      return fail(ErrorDocument::Of(
          "failed_upstream_fetch",
          fmt::format("{}: its graph generation {} is {} s ahead of this clock, more than the {} s allowed: its clock is ahead "
                      "(or this one behind)",
                      url, out.generation, out.generation / 1000 - static_cast<uint64_t>(options.now), kMaxGenerationLead)));
    }
    const std::string* signature = r.Header(kSignatureHeader);
    out.per_cluster = signature != nullptr && signature->find("scope=cluster") != std::string::npos;
  }
  if (unchanged) {
    out.unchanged = true;
    return out;
  }
  auto graph = ReadGraphJson(r.body);
  if (graph.ok()) {
    if (Status servable = CheckServable(*graph); !servable.ok()) graph = std::move(servable);
  }
  if (!graph.ok()) return fail(ErrorDocument::Of("failed_json_in", graph.status().message()));
  out.graph = std::move(graph).value();
  return out;
}

Result<std::optional<GraphRecords>> FetchGraphRecords(const std::string& url, size_t max_nodes,
                                                      const UpstreamFetchOptions& options) {
  http::Result r = http::Get(url, {.headers = {"Accept: " + std::string(kGraphRecordsMediaType)},
                                  .timeout = options.timeout,
                                  .max_body_bytes = std::min(options.max_body_bytes, kMaxGraphRecordsBytes),
                                  .max_body_name = "upstream.cincinnati.max_body_bytes",
                                  .stop = options.stop});
  if (!r.error.empty()) return Status::IoError(fmt::format("graph records from {}: {}", url, r.error));
  // A graph builder that keeps none says so: the reference's refuses the media type (406);
  // 404 and 415 are read the same way. Anything else (a 5xx, 429, a builder without a
  // graph yet) is asked again.
  if (r.status == 404 || r.status == 406 || r.status == 415) return std::optional<GraphRecords>();
  if (r.status != 200) return Status::IoError(fmt::format("graph records from {}: HTTP {}", url, r.status));
  const std::string* type = r.Header("Content-Type");
  if (type == nullptr || type->find(kGraphRecordsMediaType) == std::string::npos) {
    if (r.body.empty()) return Status::IoError(fmt::format("graph records from {}: an empty answer", url));
    return std::optional<GraphRecords>();  // an upstream that ignores Accept answered with its graph
  }
  CINCINNATI_ASSIGN_OR_RETURN(GraphRecords records, ReadGraphRecordsJson(r.body, max_nodes));
  return std::optional<GraphRecords>(std::move(records));
}

}  // namespace cincinnati::server
