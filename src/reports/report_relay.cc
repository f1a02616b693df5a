#include "reports/report_relay.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>

#include "http/client.h"
#include "reports/report_batches.h"

namespace cincinnati::server {
std::string ReportsUrlFor(const std::string& upstream_url) {
  std::string url = upstream_url.substr(0, upstream_url.find('?'));
  for (std::string_view tail : {"/v1/graph", "/graph"}) {
    if (url.size() >= tail.size() && url.compare(url.size() - tail.size(), tail.size(), tail) == 0) {
      url.resize(url.size() - tail.size());
      break;
    }
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + "/v1/reports";
}

namespace {

// The graph builder's answer for each report of the batch.
Result<std::vector<reports::ReportVerdict>> Forward(const ReportRelayOptions& options, const std::vector<UpdateReport>& batch, std::stop_token stop) {
  std::string body = "[";
  for (const UpdateReport& report : batch) {
    if (body.size() > 1) body += ',';
    body += EncodeUpdateReport(report);
  }
  body += "]";
  http::RequestOptions request;
  request.method = "POST";
  request.body = std::move(body);
  request.headers = {"Content-Type: application/json", "Authorization: Bearer " + options.token};
  request.timeout = options.timeout;
  request.ca_path = options.ca_path;
  request.max_body_bytes = 64 << 10;
  request.stop = stop;
  http::Result got = http::Request(options.url, request);
  if (!got.ok()) {
    return Status::IoError(fmt::format("the graph builder ({}): {}", options.url,
                                       got.error.empty() ? fmt::format("HTTP {}: {}", got.status, got.body.substr(0, 200)) : got.error));
  }
  simdjson::dom::parser parser;
  simdjson::dom::array results;
  if (parser.parse(got.body)["results"].get_array().get(results) || results.size() != batch.size()) {
    return Status::IoError(fmt::format("the graph builder ({}) answered a batch of {} with {}", options.url, batch.size(),
                                       got.body.substr(0, 200)));
  }
  std::vector<reports::ReportVerdict> verdicts;
  for (simdjson::dom::element r : results) {
    std::string_view text;
    if (r.get_string().get(text)) text = "";
    reports::ReportVerdict v;
    if (text == "duplicate") {
      v.kind = reports::ReportVerdict::Kind::kDuplicate;
    } else if (text.starts_with("refused")) {
      v.kind = reports::ReportVerdict::Kind::kRefused;
      v.why = text.size() > 9 ? std::string(text.substr(9, 1024)) : "refused by the graph builder";
    }
    verdicts.push_back(std::move(v));
  }
  return verdicts;
}

}  // namespace

std::shared_ptr<ReportSink> MakeReportRelay(ReportRelayOptions options) {
  return std::make_shared<BatchingSink>(
      [options = std::move(options)](const std::vector<UpdateReport>& batch, std::stop_token stop) {
        auto answers = Forward(options, batch, stop);
        if (!answers.ok()) spdlog::warn("update reports: {}", answers.status().message());
        return answers;
      },
      "too many reports wait for the graph builder");
}

}  // namespace cincinnati::server
