#include "entries.h"

#include "policy_chain.h"

#include "gunzip.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/cluster_version.h"
#include "agent/object_store.h"
#include "agent/promql.h"
#include "agent/update_retriever.h"
#include "builder/edge_add_remove.h"
#include "core/answer_signature.h"
#include "core/diagnostics.h"
#include "core/graph_check.h"
#include "core/graph_json.h"
#include "core/graph_records.h"
#include "core/hotfix_rule.h"
#include "core/internal_metadata.h"
#include "core/release_metadata.h"
#include "core/semver.h"
#include "core/sha256.h"
#include "core/update_report.h"
#include "directory/cluster_database.h"
#include "graph-data/documents.h"
#include "graph-data/graph_data.h"
#include "graph-data/hotfix.h"
#include "graph-data/managing_file.h"
#include "graph-data/time_format.h"
#include "graph-data/yaml_scalar.h"
#include "graph_client/available_updates.h"
#include "graph_client/update_graph.h"
#include "kube/json_value.h"
#include "operator/agent_client.h"
#include "operator/alertmanager.h"
#include "operator/operator_config.h"
#include "operator/prometheus_alerts.h"
#include "operator/upgrade_config.h"
#include "registry/credentials.h"
#include "registry/layer.h"
#include "registry/manifest.h"
#include "registry/reference.h"
#include "http_server/content_negotiation.h"
#include "http_server/pieced_document.h"
#include "http_server/query.h"

// Allocation counters, defined by the libFuzzer targets (target.cc) and absent from the
// regression test: the live bytes, the peak since the last reset, and the reset.
extern "C" long long cincinnati_fuzz_allocated_bytes() __attribute__((weak));
extern "C" long long cincinnati_fuzz_peak_bytes() __attribute__((weak));
extern "C" long long cincinnati_fuzz_reset_peak() __attribute__((weak));

namespace cincinnati::fuzz {
namespace {
using kube::JsonObject;
using kube::FindMember;

// A broken promise: report it and abort so libFuzzer (or the test) records the input.
#define FUZZ_CHECK(cond, what)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "fuzz property violated: %s (%s)\n", what, #cond);       \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

std::string_view Text(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

int SemVer(const uint8_t* data, size_t size) {
  auto v = Version::Parse(Text(data, size));
  if (!v.ok()) return 0;
  // What parses prints back to itself, and compares equal to its reparse.
  std::string printed = v->ToString();
  auto again = Version::Parse(printed);
  FUZZ_CHECK(again.ok(), "a printed version parses");
  FUZZ_CHECK(again->SameIncludingBuild(*v), "a version round-trips");
  FUZZ_CHECK(again->ToString() == printed, "printing is stable");
  FUZZ_CHECK(v->Compare(*again) == 0, "precedence is reflexive");
  return 0;
}

int GraphJson(const uint8_t* data, size_t size) {
  auto graph = ReadGraphJson(Text(data, size));
  if (!graph.ok()) return 0;
  // What was read writes back, and reads back to the same document.
  std::string written = WriteGraphJson(*graph);
  auto reread = ReadGraphJson(written);
  FUZZ_CHECK(reread.ok(), "a written graph reads back");
  FUZZ_CHECK(WriteGraphJson(*reread) == written, "writing is stable");
  if (CheckServable(*graph).ok()) {
    // A servable graph's records of removed edges travel apart and read back whole.
    Graph served = *graph;
    GraphRecords records = TakeGraphRecords(served);
    records.graph_sha256 = Sha256Hex(WriteGraphJson(served));
    auto records_again = ReadGraphRecordsJson(WriteGraphRecordsJson(records));
    FUZZ_CHECK(records_again.ok(), "a servable graph's records read back");
    FUZZ_CHECK(records_again->nodes == records.nodes, "records read back the same");
    FUZZ_CHECK(!HasExplanationKeys(served), "no record stays in the served graph");
  }
  // The records' reader is total on any text.
  if (auto records = ReadGraphRecordsJson(Text(data, size)); records.ok()) {
    FUZZ_CHECK(ReadGraphRecordsJson(WriteGraphRecordsJson(*records)).ok(), "read records write back");
  }
  // The metadata drives the edge-add-remove step (lists, regexes, SemVer): whatever it
  // makes of hostile metadata must still be a graph that writes and reads back.
  TransformContext context;
  auto edited = EdgeAddRemove().Apply(std::move(graph).value(), context);
  if (edited.ok()) FUZZ_CHECK(ReadGraphJson(WriteGraphJson(*edited)).ok(), "an edited graph reads back");
  for (const Node& node : reread->nodes()) {
    for (const auto& [key, value] : node.metadata) {
      if (key.ends_with(kHotfixRulesSuffix)) (void)DecodeHotfixRules(value);
      if (key.ends_with(kBlockedBySuffix)) {
        // What decodes encodes back to the same records.
        auto records = DecodeBlockRecords(value);
        if (records.ok()) {
          std::string again;
          for (const BlockRecord& r : *records) again += (again.empty() ? "" : ";") + EncodeBlockRecord(r);
          auto reread = DecodeBlockRecords(again);
          FUZZ_CHECK(reread.ok() && *reread == *records, "block records round-trip");
        }
      }
      if (key.ends_with(kRemovedPreviousSuffix)) (void)DecodeRemovedEdges(value);
    }
  }
  return 0;
}

int ReleaseMetadataDocument(const uint8_t* data, size_t size) {
  (void)ParseReleaseMetadata(Text(data, size));
  return 0;
}

int GraphDataYaml(const uint8_t* data, size_t size) {
  auto doc = graphdata::ParseYaml(std::string(Text(data, size)));
  if (!doc.ok()) return 0;
  // One document, every decoder: channels, blocked edges (plain and conditional, with
  // their RE2 patterns), 2.x managing files and hotfixes.
  if (auto channel = graphdata::DecodeChannel(*doc); channel.ok()) (void)graphdata::ValidateChannelTarget(*channel);
  if (auto block = graphdata::DecodeUnconditionalBlock(*doc); block.ok()) (void)graphdata::ValidateRegex(block->from);
  (void)graphdata::DecodeConditionalBlock(*doc);
  (void)graphdata::DecodeManagingFile(*doc);
  if (auto hotfix = graphdata::DecodeHotfix(*doc, "fuzz"); hotfix.ok()) {
    auto decoded = DecodeHotfixRules(EncodeHotfixRule(hotfix->rule));
    FUZZ_CHECK(decoded.ok() && decoded->size() == 1 && (*decoded)[0] == hotfix->rule,
               "a validated hotfix rule round-trips");
  }
  return 0;
}

int RawMetadataJson(const uint8_t* data, size_t size) {
  Diagnostics diagnostics;
  (void)graphdata::DecodeRawMetadata(std::string(Text(data, size)), diagnostics);
  return 0;
}

int TimeFormat(const uint8_t* data, size_t size) {
  (void)graphdata::ParseDuration(Text(data, size));
  (void)graphdata::ParseDateTime(Text(data, size));
  return 0;
}

int HttpQuery(const uint8_t* data, size_t size) {
  std::string_view text = Text(data, size);
  (void)http_server::ParseQuery(text);
  (void)http_server::QueryHasKey(text, "channel");
  if (auto decoded = http_server::PercentDecode(text); decoded.ok()) FUZZ_CHECK(decoded->size() <= text.size(), "decoding shrinks");
  std::string header(text);
  (void)http_server::NegotiateContentType(&header, {"application/json", "application/vnd.redhat.cincinnati.v1+json"});
  (void)http_server::AcceptsGzip(&header);
  return 0;
}

int RegistryManifest(const uint8_t* data, size_t size) {
  std::string_view text = Text(data, size);
  (void)registry::ParseImageManifest(text);
  if (auto list = registry::ParseManifestList(text); list.ok()) {
    FUZZ_CHECK(!list->entry_digests.empty() && list->entry_digests.back() == list->digest, "the last entry is chosen");
  }
  (void)registry::ParseImageConfigArch(text);
  (void)registry::ParseTagList(text);
  (void)registry::ParseTokenResponse(text);
  (void)registry::ParseImageReference(text);
  return 0;
}

int TarGzLayer(const uint8_t* data, size_t size) {
  (void)registry::ReadFileFromLayer(std::string(Text(data, size)), "release-manifests/release-metadata");
  return 0;
}

int DockerConfig(const uint8_t* data, size_t size) {
  for (const char* registry : {"quay.io", "docker.io", "127.0.0.1:5000"}) {
    auto location = registry::ParseRepositoryLocation(registry, "openshift-release-dev/ocp-release");
    if (location.ok()) (void)registry::FindDockerCredentials(Text(data, size), *location, "config.json");
  }
  return 0;
}

int ClusterDirectory(const uint8_t* data, size_t size) {
  std::string text(Text(data, size));
  (void)directory::ParseClusterCsv(text);
  (void)directory::ParseClusterJson(text);
  return 0;
}

// An update service's answer as the agent reads it, and what it computes from it for each
// node taken as the current version (its updates); the same bytes as a Prometheus answer.
int AgentGraph(const uint8_t* data, size_t size) {
  (void)agent::ReadInstantQueryAnswer(Text(data, size));
  auto graph = graph_client::ParseUpdateGraph(Text(data, size));
  if (!graph.ok()) return 0;
  // The CVO lists an update once per edge (a duplicated edge twice), so edges bound it;
  // a multi-arch migration adds the running version's own multi payload.
  size_t conditional_edges = 0;
  for (const auto& set : graph->conditional_edges) conditional_edges += set.edges.size();
  size_t tried = 0;
  for (const auto& node : graph->nodes) {
    if (++tried > 8) break;
    for (bool multi : {false, true}) {
      auto updates = graph_client::ComputeAvailableUpdates(*graph, {node.version, multi, !multi}, "stable");
      if (!updates.ok()) continue;
      FUZZ_CHECK(updates.updates.recommended.size() <= graph->edges.size() + 1, "no more updates than edges (+ a migration)");
      FUZZ_CHECK(updates.updates.conditional.size() <= conditional_edges, "no more conditional updates than conditional edges");
    }
  }
  return 0;
}

// The agent's API bodies and its persisted state: JSON that parses prints back to an
// equal value; a merge patch applies to anything; a ClusterVersion that reads writes
// back to one that reads again.
int AgentJson(const uint8_t* data, size_t size) {
  auto value = kube::ParseJson(Text(data, size));
  if (!value.ok()) return 0;
  auto again = kube::ParseJson(kube::WriteJson(*value));
  FUZZ_CHECK(again.ok(), "written JSON parses");
  FUZZ_CHECK(*again == *value, "JSON round-trips");
  (void)kube::MergePatch(*value, *value);
  (void)kube::MergePatch(kube::JsonValue(JsonObject()), *value);
  if (const kube::JsonValue* spec = FindMember(*value, "spec")) (void)agent::SpecFromJson(*spec);
  auto cv = agent::FromJson(*value);
  if (!cv.ok()) return 0;
  auto reread = agent::FromJson(agent::ToJson(*cv));
  FUZZ_CHECK(reread.ok(), "a written ClusterVersion reads back");
  return 0;
}

// A whole update-service answer as the agent takes it: fetched (a stand-in fetcher hands
// over the bytes), read, its updates computed and risks evaluated, kept in a
// ClusterVersion, persisted as the object store writes it and read back. Properties:
// what is persisted always reads back and fits the store; no more updates are kept than
// the limits allow; and, where the target counts allocations (target.cc), the work
// allocates at most 16 bytes per byte of the answer plus 64 MiB (simdjson's DOM
// reserves about 13 per byte for a dense answer; everything kept is bounded apart).
int AgentAnswer(const uint8_t* data, size_t size) {
  class Fetcher : public agent::GraphFetcher {
   public:
    explicit Fetcher(std::string body) : body_(std::move(body)) {}
    agent::GraphAnswer Fetch(const std::string&, const std::string*) override {
      agent::GraphAnswer answer;
      answer.status = 200;
      answer.status_line = "200 OK";
      answer.body = body_;
      return answer;
    }

   private:
    std::string body_;
  };
  const long long before = cincinnati_fuzz_allocated_bytes ? cincinnati_fuzz_reset_peak() : 0;
  Fetcher fetcher{std::string(Text(data, size))};
  int evaluations = 0;
  auto match = [&](const std::vector<graph_client::MatchingRule>& rules) -> Result<bool> {
    // Alternate verdicts and failures, so every Recommended shape is kept and persisted.
    if (rules.empty()) return false;
    switch (evaluations++ % 3) {
      case 0: return true;
      case 1: return false;
      default: return Status::Internal("evaluation failed: " + std::string(Text(data, std::min<size_t>(size, 2000))));
    }
  };
  env::ManualClock clock(std::chrono::system_clock::time_point(std::chrono::hours(500000)));
  agent::UpdateRetriever retriever(fetcher, match, clock);
  // The cluster runs the answer's first release (when it has one), so that fixtures and
  // mutations alike offer updates.
  std::string current = "4.1.0";
  if (auto graph = graph_client::ParseUpdateGraph(Text(data, size)); graph.ok() && !graph->nodes.empty()) {
    current = graph->nodes.front().version.ToString();
  }
  graph_client::GraphRequestInputs inputs{"http://updates.example.com/graph", "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a", "amd64",
                                   current, "stable-4.1"};
  agent::RetrievedUpdates got = retriever.Run(inputs);
  const graph_client::KeptLimits limits;
  FUZZ_CHECK(got.available.size() + got.conditional.size() <= limits.max_updates, "no more updates than the limit");

  agent::ClusterVersion cv;
  cv.spec.cluster_id = inputs.cluster_id;
  cv.spec.channel = inputs.channel;
  cv.status.desired.version = inputs.version;
  cv.status.available_updates = got.available;
  cv.status.conditional_updates = got.conditional;
  cv.SetCondition(got.retrieved);
  const std::string persisted = kube::WriteJson(agent::ToJson(cv), 2) + "\n";
  FUZZ_CHECK(persisted.size() <= agent::kMaxObjectBytes, "the state fits the store");
  auto text = kube::ParseJson(persisted, agent::kMaxObjectBytes);
  FUZZ_CHECK(text.ok(), "the persisted state parses");
  auto back = agent::FromJson(*text);
  FUZZ_CHECK(back.ok(), "the persisted state reads back");
  FUZZ_CHECK(back->status.available_updates == cv.status.available_updates, "the updates read back unchanged");
  if (cincinnati_fuzz_allocated_bytes) {
    const long long peak = cincinnati_fuzz_peak_bytes() - before;
    FUZZ_CHECK(peak <= static_cast<long long>(16 * size + (size_t{64} << 20)), "memory bounded by 16 x the answer + 64 MiB");
  }
  return 0;
}

// The upgrade operator's documents: an UpgradeConfig that reads writes back to an equal
// one; the same bytes as the operator's settings and as a fleet file.
int UpgradeConfigYaml(const uint8_t* data, size_t size) {
  const std::string text(Text(data, size));
  (void)upgrade::ParseOperatorConfig(text, "fuzz");
  (void)upgrade::ParseFleet(text, "fuzz");
  auto config = upgrade::ParseUpgradeConfigYaml(text, "fuzz");
  if (!config.ok()) return 0;
  auto again = upgrade::UpgradeConfigFromJson(upgrade::ToJson(*config), "again");
  FUZZ_CHECK(again.ok(), "a written UpgradeConfig reads back");
  FUZZ_CHECK(*again == *config, "an UpgradeConfig round-trips");
  return 0;
}

// What the operator's peers answer: an agent's ClusterVersion and ClusterOperatorList,
// Alertmanager's silences, Prometheus' ALERTS.
int OperatorAnswers(const uint8_t* data, size_t size) {
  const std::string_view text = Text(data, size);
  (void)upgrade::ReadAgentSnapshot(text, R"({"items":[]})");
  (void)upgrade::ReadAgentSnapshot(text, text);
  (void)upgrade::ReadSilences(text);
  (void)upgrade::ReadFiringAlerts(text);
  return 0;
}

// A head and pieces cut from the input at 0xff bytes, joined in the order the last
// part's bytes name: the plain document is the concatenation, and its gzip member
// inflates to exactly that, whatever the bytes (all 256 values, skewed or not).
int PiecedDocumentEntry(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0xff && parts.size() < 64) {
      parts.emplace_back();
    } else {
      parts.back().push_back(static_cast<char>(data[i]));
    }
  }
  const std::string order = parts.size() > 2 ? parts.back() : std::string("\x00\x01\x00");
  std::string head = parts.front();
  std::vector<std::string> pieces(parts.begin() + 1, parts.end() - (parts.size() > 2 ? 1 : 0));
  if (pieces.empty()) pieces.push_back("");
  http_server::PiecedDocument doc(head, pieces);
  std::vector<uint32_t> ids;
  std::string expected = head;
  for (unsigned char c : order) {
    ids.push_back(c % pieces.size());
    expected += pieces[ids.back()];
  }
  const std::string plain = doc.Plain(ids);
  FUZZ_CHECK(plain == expected, "the plain document is the head and the pieces named");
  FUZZ_CHECK(Gunzip(doc.Gzip(ids)) == plain, "the gzip member inflates to the plain document");
  return 0;
}

// An agent's update report: decoding is total, and what decodes encodes to
// a document that decodes to the same report.
int UpdateReportDocument(const uint8_t* data, size_t size) {
  auto report = DecodeUpdateReport(Text(data, size));
  if (!report.ok()) return 0;
  FUZZ_CHECK(ValidateUpdateReport(*report).ok(), "a decoded report is valid");
  auto again = DecodeUpdateReport(EncodeUpdateReport(*report));
  FUZZ_CHECK(again.ok() && *again == *report, "a report survives encoding");
  return 0;
}

// A signed answer: the header's first line, the body the rest. Checking any
// header against any body is total and says why; what is signed for these bytes
// verifies, and a byte changed does not.
const std::shared_ptr<const SigningKey>& FuzzKey() {
  static const std::shared_ptr<const SigningKey> key = [] {
    const unsigned char seed[32] = {7};  // a fixed key: runs replay alike
    EVP_PKEY* pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed, sizeof seed);
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PrivateKey(bio, pkey, nullptr, nullptr, 0, nullptr, nullptr);
    char* pem = nullptr;
    const long n = BIO_get_mem_data(bio, &pem);
    auto made = SigningKey::FromPem(std::string_view(pem, static_cast<size_t>(n)));
    BIO_free(bio);
    EVP_PKEY_free(pkey);
    if (!made.ok()) std::abort();
    return *made;
  }();
  return key;
}

constexpr AnswerScope kFuzzScope{"stable-4.13", "amd64", "4.13.1", ""};

int AnswerSignature(const uint8_t* data, size_t size) {
  const std::string_view text = Text(data, size);
  const size_t newline = text.find('\n');
  const std::string header(text.substr(0, newline));
  const std::string_view body = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
  static const TrustedKeys trusted = [] {
    TrustedKeys t;
    auto pub = PublicKey::FromPem(FuzzKey()->PublicPem());
    if (!pub.ok()) std::abort();
    t.Add(*pub);
    return t;
  }();
  const SignatureCheck any = CheckAnswerSignature(&header, body, kFuzzScope, trusted, 1000, 5);
  FUZZ_CHECK(any.verdict == SignatureVerdict::kAccepted || !any.message.empty(), "a refusal says why");
  auto made = SignAnswer({FuzzKey()}, {7, 900, 2000}, kFuzzScope, body);
  FUZZ_CHECK(made.ok(), "any body can be signed");
  FUZZ_CHECK(CheckAnswerSignature(&*made, body, kFuzzScope, trusted, 1000, 7).verdict == SignatureVerdict::kAccepted,
             "a signature verifies over the bytes it was made for");
  if (!body.empty()) {
    std::string changed(body);
    changed[changed.size() / 2] ^= 1;
    FUZZ_CHECK(CheckAnswerSignature(&*made, changed, kFuzzScope, trusted, 1000, 7).verdict == SignatureVerdict::kInvalid,
               "a changed byte does not verify");
  }
  return 0;
}

constexpr NamedEntry kEntries[] = {
    {"semver", SemVer},
    {"graph_json", GraphJson},
    {"release_metadata", ReleaseMetadataDocument},
    {"graph_data_yaml", GraphDataYaml},
    {"raw_metadata", RawMetadataJson},
    {"time_format", TimeFormat},
    {"http_query", HttpQuery},
    {"registry_manifest", RegistryManifest},
    {"targz_layer", TarGzLayer},
    {"dockercfg", DockerConfig},
    {"cluster_directory", ClusterDirectory},
    {"policy_chain", PolicyChain},
    {"agent_graph", AgentGraph},
    {"agent_json", AgentJson},
    {"agent_answer", AgentAnswer},
    {"upgrade_config", UpgradeConfigYaml},
    {"operator_answers", OperatorAnswers},
    {"pieced_document", PiecedDocumentEntry},
    {"update_report", UpdateReportDocument},
    {"answer_signature", AnswerSignature},
};

}  // namespace

std::span<const NamedEntry> Entries() { return kEntries; }

}  // namespace cincinnati::fuzz
