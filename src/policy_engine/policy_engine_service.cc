#include "policy_engine/policy_engine_service.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "core/guard.h"
#include "core/strings.h"
#include "http_server/content_negotiation.h"
#include "http_server/query.h"
#include "policy_engine/openapi.h"
#include "policy_engine/svg_cache.h"
#include "reports/report_intake.h"
#include "service/http_names.h"
#include "service/responses.h"
#include "signing/answer_signer.h"

namespace cincinnati::server {

namespace {

// Unsigned answers carry the generation lines all the same (signing/answer_signer.h).
PolicyEngineOptions WithSigner(PolicyEngineOptions options) {
  if (!options.signer) options.signer = AnswerSigner::Unsigned();
  return options;
}

}  // namespace

PolicyEngineService::PolicyEngineService(TransformChain chain, PolicyEngineOptions options, std::string git_commit)
    : chain_(std::move(chain)),
      options_(WithSigner(std::move(options))),
      signatures_(options_.signatures_dir.empty()
                      ? std::nullopt
                      : std::make_optional<SignatureFiles>(options_.signatures_dir, options_.path_prefix)),
      openapi_(OpenApiDocument(options_.path_prefix, options_.mandatory_client_parameters)),
      incoming_requests_(metrics_.AddCounter("graph_incoming_requests_total", "Graph requests", {"uri_path"})),
      serve_duration_(metrics_.AddHistogram("graph_serve_duration_seconds", "Seconds spent answering a graph request",
                                            {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 5.0}).Get()),
      response_errors_(metrics_.AddCounter("graph_response_errors_total", "Error responses", {"code", "kind"})),
      adoption_(AdoptionOptions{.store = options_.adoption_store}),
      svgs_(std::make_unique<SvgCache>()),
      answers_(options_, chain_, metrics_, response_errors_),
      feed_(options_, chain_, answers_, metrics_),
      edge_checks_(options_, answers_, feed_, metrics_),
      lookups_(options_, metrics_) {
  metrics_.AddCounter("build_info", "Build information", {"git_commit"}).With({std::move(git_commit)}).Increment();
  graph_requests_ = &incoming_requests_.With({options_.path_prefix + "/graph"});
  v1_graph_requests_ = &incoming_requests_.With({options_.path_prefix + "/v1/graph"});
}

PolicyEngineService::~PolicyEngineService() { Stop(); }

void PolicyEngineService::SetGraph(std::shared_ptr<const Graph> graph, uint64_t generation, int64_t fresh_as_of,
                                   std::string content) {
  feed_.SetGraph(std::move(graph), generation, fresh_as_of, std::move(content));
}

void PolicyEngineService::Stop() {
  feed_.Stop();
  lookups_.Stop();
}

Response PolicyEngineService::InternalError(const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (FailureCause(status.message()) != FailureCause(last_internal_error_)) {
      spdlog::error("policy engine: {}", status.message());
      last_internal_error_ = status.message();
    }
  }
  return ErrorResponse(ErrorDocument::Of("failed_plugin_execution", status.message()), response_errors_);
}

void PolicyEngineService::ServeForwarded(const Request& request, const std::string& content_type,
                                         const Parameters& params, Respond respond) {
  // The answer may come on a fetch thread after this request object is gone.
  feed_.Forward(ForwardedQueryOf(params, options_.mandatory_client_parameters),
                [this, copy = request, content_type, params, respond = std::move(respond)](const ForwardedAnswer& a) {
                  if (a.view) {
                    Response r = ViewResponse(*a.view, copy, content_type);
                    answers_.AddHeaders(r, *a.view, params, a.source);
                    return respond(std::move(r));
                  }
                  respond(ErrorResponse(*a.error, response_errors_));
                });
}

std::optional<Response> PolicyEngineService::WithCluster(const Request& request, const std::optional<std::string>& id,
                                                         const Respond& respond, const Sighting* sighting,
                                                         ClusterLookups::ClusterAnswer answer) {
  if (!id) return answer(std::nullopt);
  if (std::optional<directory::DirectoryAnswer> quick = lookups_.Quick(*id)) return answer(quick);
  // Waits for the directory off the I/O threads; the request object may be gone then.
  // A poll answered later is seen when it is answered (a sighting wraps only this path).
  lookups_.Later(*id, WithCors(request, sighting ? sighting->Wrap(respond) : respond), std::move(answer),
                 [this](const Status& status) { return InternalError(status); });
  return std::nullopt;
}

std::optional<Response> PolicyEngineService::ServeShared(const Request& request, const std::string& content_type,
                                                         Parameters params, const Respond& respond, const Sighting* sighting) {
  auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const policy::HotfixIndex> hotfixes = answers_.hotfixes();
  std::optional<std::string> id = lookups_.LookupFor(params, hotfixes.get());
  return WithCluster(request, id, respond, sighting,
                     [this, copy = request, content_type, params = std::move(params), hotfixes,
                      start](const std::optional<directory::DirectoryAnswer>& cluster) {
                       ClusterEntitlements entitlements =
                           cluster ? lookups_.Entitle(*cluster, *hotfixes, params) : ClusterEntitlements{};
                       std::optional<Response> r = answers_.Answer(copy, content_type, params, entitlements);
                       if (!r) r = ErrorResponse(feed_.NoGraphError(), response_errors_);
                       serve_duration_.Observe(
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
                       return std::move(*r);
                     });
}

std::optional<Response> PolicyEngineService::Route(const Request& request, const Respond& respond) {
  const std::string& path = request.path;
  const std::string& prefix = options_.path_prefix;
  if (signatures_) {
    if (auto answer = signatures_->Handle(request, response_errors_)) return answer;
  }
  if (path == prefix + "/openapi" || path == prefix + "/v1/openapi") {
    return Response::Text(200, openapi_, "application/json");
  }
  if (options_.extra_routes) {
    if (auto answer = options_.extra_routes(request)) return answer;
  }
  if (options_.reports && path == prefix + "/v1/reports") {
    options_.reports->Handle(request, WithCors(request, respond));
    return std::nullopt;
  }
  if (options_.web_ui) {
    if (auto answer = ServeUi(request)) return answer;
  }
  if (path == prefix + "/v1/path" || path == prefix + "/v1/explain") {
    return ServeInsight(request, path == prefix + "/v1/path", respond);
  }
  if (path != prefix + "/graph" && path != prefix + "/v1/graph") return Response::Empty(404);
  return RouteGraph(request, respond);
}

std::optional<Response> PolicyEngineService::RouteGraph(const Request& request, const Respond& respond) {
  if (request.method != "GET" && request.method != "HEAD") return Response::Empty(405);
  (request.path == options_.path_prefix + "/graph" ? graph_requests_ : v1_graph_requests_)->Increment();
  auto content_type = NegotiateContentType(request.Header("Accept"), {std::string(kCincinnatiV1)});
  if (!content_type) return ErrorResponse(ErrorDocument::Of("invalid_content_type"), response_errors_);
  // Decoded once; every later step reads these parameters.
  auto params = ParseQuery(request.query);
  if (!params.ok()) {
    // The reference reports missing parameters before anything else.
    if (auto missing = MissingParameters(request.query, options_.mandatory_client_parameters)) {
      return ErrorResponse(*missing, response_errors_);
    }
    return ErrorResponse(ErrorDocument::FromStatus(params.status()), response_errors_);
  }
  if (auto missing = MissingParameters(*params, options_.mandatory_client_parameters)) {
    return ErrorResponse(*missing, response_errors_);
  }
  // Who polls at which version (a report is accepted only from them): recorded once the
  // poll is answered, so that a failed poll is no sighting.
  std::optional<Sighting> sighting = SightingOf(request, *params);
  if (!ServesSharedGraph(feed_.state())) {
    Respond forwarded = WithCors(request, respond);
    ServeForwarded(request, *content_type, *params, sighting ? sighting->Wrap(std::move(forwarded)) : std::move(forwarded));
    return std::nullopt;
  }
  std::optional<Response> answer = ServeShared(request, *content_type, std::move(params).value(), respond,
                                               sighting ? &*sighting : nullptr);
  if (answer && sighting) sighting->Saw(*answer);
  return answer;
}

std::optional<PolicyEngineService::Sighting> PolicyEngineService::SightingOf(const Request& request, const Parameters& params) {
  if (!options_.reports) return std::nullopt;
  auto id = params.find("id"), version = params.find("version");
  if (id == params.end() || version == params.end()) return std::nullopt;
  const std::string* receipt = request.Header(kPollReceiptHeader);
  return Sighting{options_.reports.get(), &adoption_, id->second, version->second,
                  receipt ? std::make_optional(*receipt) : std::nullopt};
}

void PolicyEngineService::Sighting::Saw(Response& answer) const {
  if (answer.status == 200 || answer.status == 304) {
    const int64_t now = intake->SawPoll(id, version);
    adoption->MaybeSample(intake->sightings(), now);
    if (receipt) {
      // "" for an id or version no receipt is kept for: no header then.
      std::string next = intake->receipts().Next(*receipt, id, version, now);
      if (!next.empty()) answer.headers[std::string(kPollReceiptHeader)] = std::move(next);
    }
  }
}

Respond PolicyEngineService::Sighting::Wrap(Respond respond) const {
  return [seen = *this, respond = std::move(respond)](Response answer) {
    seen.Saw(answer);
    respond(std::move(answer));
  };
}

void PolicyEngineService::HandleMain(const Request& request, Respond respond) {
  Response preflight;
  if (HandleCors(request, preflight)) return respond(std::move(preflight));
  // Answered here in the common case; the asynchronous paths hand `respond` on (with
  // the CORS headers to add) before anything can throw.
  std::optional<Response> answer;
  Status st = Guarded("request", [&] {
    answer = Route(request, respond);
    return Status::OK();
  });
  if (!st.ok()) answer = InternalError(st.WithContext(request.target));
  if (!answer) return;
  AddCorsHeaders(request, *answer);
  respond(std::move(*answer));
}

Response PolicyEngineService::HandleStatus(const Request& request) {
  if (request.path == "/livez") return Response::Empty(200);
  if (request.path == "/readyz") return Response::Empty(feed_.ready() ? 200 : 503);
  if (request.path == "/metrics") {
    answers_.UpdateMetrics();
    feed_.UpdateMetrics();
    return Response::Text(200, metrics_.Render(), kMetricsContentType);
  }
  return Response::Empty(404);
}

}  // namespace cincinnati::server
