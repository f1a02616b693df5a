#include "entries.h"

#include "policy_chain.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "agent/available_updates.h"
#include "agent/cluster_version.h"
#include "agent/json_value.h"
#include "agent/promql.h"
#include "agent/update_graph.h"
#include "builder/edge_add_remove.h"
#include "core/diagnostics.h"
#include "core/graph_check.h"
#include "core/graph_json.h"
#include "core/hotfix_rule.h"
#include "core/internal_metadata.h"
#include "core/release_metadata.h"
#include "core/semver.h"
#include "graph-data/documents.h"
#include "graph-data/graph_data.h"
#include "graph-data/hotfix.h"
#include "graph-data/managing_file.h"
#include "graph-data/time_format.h"
#include "graph-data/yaml_scalar.h"
#include "directory/cluster_database.h"
#include "registry/credentials.h"
#include "registry/layer.h"
#include "registry/manifest.h"
#include "registry/reference.h"
#include "server/content_negotiation.h"
#include "server/query.h"
#include "operator/agent_client.h"
#include "operator/alertmanager.h"
#include "operator/operator_config.h"
#include "operator/prometheus_alerts.h"
#include "operator/upgrade_config.h"

namespace cincinnati::fuzz {
namespace {

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
  (void)CheckServable(*graph);
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
  (void)server::ParseQuery(text);
  (void)server::QueryHasKey(text, "channel");
  if (auto decoded = server::PercentDecode(text); decoded.ok()) FUZZ_CHECK(decoded->size() <= text.size(), "decoding shrinks");
  std::string header(text);
  (void)server::NegotiateContentType(&header, {"application/json", "application/vnd.redhat.cincinnati.v1+json"});
  (void)server::AcceptsGzip(&header);
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

// An update service's answer as the agent reads it (C4), and what it computes from it
// for each node taken as the current version (C5); the same bytes as a Prometheus answer.
int AgentGraph(const uint8_t* data, size_t size) {
  (void)agent::ReadInstantQueryAnswer(Text(data, size));
  auto graph = agent::ParseUpdateGraph(Text(data, size));
  if (!graph.ok()) return 0;
  // The CVO lists an update once per edge (a duplicated edge twice), so edges bound it;
  // a multi-arch migration adds the running version's own multi payload.
  size_t conditional_edges = 0;
  for (const auto& set : graph->conditional_edges) conditional_edges += set.edges.size();
  size_t tried = 0;
  for (const auto& node : graph->nodes) {
    if (++tried > 8) break;
    for (bool multi : {false, true}) {
      auto updates = agent::ComputeAvailableUpdates(*graph, {node.version, multi, !multi}, "stable");
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
  auto value = agent::ParseJson(Text(data, size));
  if (!value.ok()) return 0;
  auto again = agent::ParseJson(agent::WriteJson(*value));
  FUZZ_CHECK(again.ok(), "written JSON parses");
  FUZZ_CHECK(*again == *value, "JSON round-trips");
  (void)agent::MergePatch(*value, *value);
  (void)agent::MergePatch(agent::JsonValue::Object(), *value);
  if (const agent::JsonValue* spec = value->Find("spec")) (void)agent::SpecFromJson(*spec);
  auto cv = agent::FromJson(*value);
  if (!cv.ok()) return 0;
  auto reread = agent::FromJson(agent::ToJson(*cv));
  FUZZ_CHECK(reread.ok(), "a written ClusterVersion reads back");
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
    {"upgrade_config", UpgradeConfigYaml},
    {"operator_answers", OperatorAnswers},
};

}  // namespace

std::span<const NamedEntry> Entries() { return kEntries; }

}  // namespace cincinnati::fuzz
