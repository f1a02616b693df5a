// The agent's state: JSON values and merge patch (RFC 7386), the ClusterVersion
// document, and the crash-safe object store.
#include <gtest/gtest.h>

#include "agent/agent.h"
#include "agent/cluster_version.h"
#include "agent/component_objects.h"
#include "agent/object_store.h"
#include "agent/state_salvage.h"
#include "kube/json_value.h"
#include "test_util.h"

namespace cincinnati::agent {

using kube::MergePatch;
using kube::ParseJson;
using kube::WriteJson;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::SetMember;
using kube::ItemsOf;
namespace {

namespace fs = std::filesystem;

JsonValue Json(std::string_view text) {
  auto v = ParseJson(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status().ToString();
  return v.ok() ? *v : JsonValue();
}

TEST(JsonValueTest, RoundTripsKeepingOrderAndNumberText) {
  const std::string text = R"({"b":1,"a":[true,null,"x\n",1.50,-12345678901234],"c":{}})";
  JsonValue v = Json(text);
  EXPECT_EQ(WriteJson(v), R"({"b":1,"a":[true,null,"x\n",1.5,-12345678901234],"c":{}})");
  EXPECT_EQ(IntegerOf(*FindMember(v, "b")), 1);
  EXPECT_FALSE(IntegerOf(ItemsOf(*FindMember(v, "a"))[3]).has_value());
  EXPECT_EQ(WriteJson(Json(R"({"a":[1]})"), 2), "{\n  \"a\": [\n    1\n  ]\n}");
}

TEST(JsonValueTest, KeepsOrderAndTheNumberFormsItHasAlwaysWritten) {
  // A removed member leaves the others in their places.
  EXPECT_EQ(WriteJson(MergePatch(Json(R"({"a":1,"b":2,"c":3})"), Json(R"({"a":null})"))), R"({"b":2,"c":3})");
  // Doubles in their shortest form with a point (never Boost's "1E0"); integers as written.
  EXPECT_EQ(WriteJson(Json("[1.0,0.25,1E2,18446744073709551615,-7]")), "[1.0,0.25,100.0,18446744073709551615,-7]");
  EXPECT_EQ(WriteJsonFixed(Json(R"({"share":1.0,"n":3})"), 4), R"({"share":1.0000,"n":3})");
  EXPECT_EQ(TextOf(Json("30")), "30");
  EXPECT_EQ(TextOf(Json("true")), "");
}

TEST(JsonValueTest, BadInputIsAnError) {
  EXPECT_FALSE(ParseJson("{").ok());
  EXPECT_FALSE(ParseJson("").ok());
  EXPECT_FALSE(ParseJson(std::string(100, '[') + std::string(100, ']')).ok());
  auto big = ParseJson(std::string(100, ' ') + "1", 10);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("exceeds the limit"), std::string::npos);
}

TEST(JsonValueTest, MergePatchFollowsRfc7386) {
  // The examples of RFC 7386, section 3.
  JsonValue target = Json(R"({"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"})");
  JsonValue patch = Json(R"({"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]})");
  EXPECT_EQ(MergePatch(target, patch),
            Json(R"({"title":"Hello!","author":{"givenName":"John"},"tags":["example"],"content":"This will be unchanged","phoneNumber":"+01-123-456-7890"})"));
  EXPECT_EQ(MergePatch(Json(R"({"a":"b"})"), Json(R"({"a":"c"})")), Json(R"({"a":"c"})"));
  EXPECT_EQ(MergePatch(Json(R"({"a":"b"})"), Json(R"({"a":null})")), Json(R"({})"));
  EXPECT_EQ(MergePatch(Json(R"({"a":[{"b":"c"}]})"), Json(R"({"a":[1]})")), Json(R"({"a":[1]})"));
  EXPECT_EQ(MergePatch(Json(R"(["a","b"])"), Json(R"(["c","d"])")), Json(R"(["c","d"])"));
  EXPECT_EQ(MergePatch(Json(R"({"a":"foo"})"), Json("null")), Json("null"));
  EXPECT_EQ(MergePatch(Json(R"({"e":null})"), Json(R"({"a":1})")), Json(R"({"e":null,"a":1})"));
  EXPECT_EQ(MergePatch(Json("[1,2]"), Json(R"({"a":"b","c":null})")), Json(R"({"a":"b"})"));
  EXPECT_EQ(MergePatch(Json("{}"), Json(R"({"a":{"bb":{"ccc":null}}})")), Json(R"({"a":{"bb":{}}})"));
}

ClusterVersion Sample() {
  ClusterVersion cv;
  cv.creation_timestamp = "2026-11-24T10:00:00Z";
  cv.uid = "0b4a7b0e-94a4-4a59-9a5e-0c6a0e3b1c2d";
  cv.spec.cluster_id = "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a";
  cv.spec.channel = "stable-4.13";
  cv.spec.upstream = "http://127.0.0.1:8081/api/upgrades_info/graph";
  cv.spec.desired_update = DesiredUpdate{"4.13.0", "", false, ""};
  cv.status.desired = {"4.12.3", "quay.io/ocp@sha256:3", "https://example.com/4.12.3", {"stable-4.13"}, false};
  cv.status.history.push_back({"Completed", "2026-11-24T10:00:00Z", "2026-11-24T10:05:00Z", "4.12.3", "quay.io/ocp@sha256:3", false, ""});
  cv.status.available_updates = {{"4.12.4", "quay.io/ocp@sha256:4", "", {}, false}};
  cv.status.conditional_updates.push_back(
      {{"4.13.2", "quay.io/ocp@sha256:132", "", {}, false},
       {{"https://x", "R", "m", {{"PromQL", std::string("up == 0")}}}},
       {{"Recommended", "False", "R", "m https://x", "2026-11-24T10:06:00Z"}}});
  cv.SetCondition({"RetrievedUpdates", "True", "", "", "2026-11-24T10:06:00Z"});
  return cv;
}

TEST(ClusterVersionTest, WritesTheConfigV1ShapeAndReadsItBack) {
  ClusterVersion cv = Sample();
  JsonValue json = ToJson(cv);
  EXPECT_EQ(TextOf(*FindMember(json, "apiVersion")), "config.openshift.io/v1");
  EXPECT_EQ(TextOf(*FindMember(json, "kind")), "ClusterVersion");
  EXPECT_EQ(TextOf(*FindMember(*FindMember(json, "spec"), "clusterID")), cv.spec.cluster_id);
  EXPECT_EQ(TextOf(*FindMember(*FindMember(*FindMember(json, "spec"), "desiredUpdate"), "version")), "4.13.0");
  const JsonValue* status = FindMember(json, "status");
  EXPECT_EQ(TextOf(*FindMember(ItemsOf(*FindMember(*status, "history"))[0], "state")), "Completed");
  EXPECT_EQ(TextOf(*FindMember(*FindMember(ItemsOf(*FindMember(ItemsOf(*FindMember(ItemsOf(*FindMember(*status, "conditionalUpdates"))[0],
                                                                                       "risks"))[0],
                                                             "matchingRules"))[0],
                                          "promql"),
                              "promql")),
            "up == 0");

  auto back = FromJson(Json(WriteJson(json)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec, cv.spec);
  EXPECT_EQ(WriteJson(ToJson(*back)), WriteJson(json));

  // No updates: availableUpdates is null, as the operator writes it.
  cv.status.available_updates.clear();
  EXPECT_TRUE(FindMember(*FindMember(ToJson(cv), "status"), "availableUpdates")->is_null());
}

TEST(ClusterVersionTest, ConditionsKeepTheirTransitionTimeWhileUnchanged) {
  ClusterVersion cv = Sample();
  cv.SetCondition({"RetrievedUpdates", "True", "", "", "2026-11-24T11:00:00Z"});
  EXPECT_EQ(cv.FindCondition("RetrievedUpdates")->last_transition_time, "2026-11-24T10:06:00Z");
  cv.SetCondition({"RetrievedUpdates", "False", "RemoteFailed", "down", "2026-11-24T11:00:00Z"});
  EXPECT_EQ(cv.FindCondition("RetrievedUpdates")->last_transition_time, "2026-11-24T11:00:00Z");
  EXPECT_EQ(cv.status.conditions.size(), 1u);
}

TEST(ClusterVersionTest, BadSpecsNameTheField) {
  struct Case {
    std::string spec, message;
  };
  const std::string id = R"("clusterID":"d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a")";
  std::vector<Case> cases = {
      {R"({"clusterID":"nope"})", "spec.clusterID: Invalid value: \"nope\""},
      {R"({"clusterID":"d5f1fb9d-5d29-1bb9-8fe3-4d26b7fd7a2a"})", "spec.clusterID"},
      {"{" + id + R"(,"channel":5})", "spec.channel: must be a string"},
      {"{" + id + R"(,"desiredUpdate":{"version":"4.13","force":false}})", "spec.desiredUpdate.version: Invalid value"},
      {"{" + id + R"(,"desiredUpdate":{"force":true}})", "spec.desiredUpdate: Invalid value: at least one of"},
      {"{" + id + R"(,"desiredUpdate":{"version":"4.13.0","force":"yes"}})", "spec.desiredUpdate.force: must be a boolean"},
      {"{" + id + R"(,"desiredUpdate":{"image":"x","archtecture":"Multi"}})", "spec.desiredUpdate.archtecture: unknown field"},
      {"{" + id + R"(,"desiredUpdate":{"architecture":"arm64"}})", "spec.desiredUpdate.architecture: Unsupported value"},
      {"{" + id + R"(,"upstream":"ftp://x/graph"})", "spec.upstream: Invalid value"},
      {"{" + id + R"(,"signatureStores":[{"url":"gopher://x"}]})", "spec.signatureStores[0].url: Invalid value"},
      {"{" + id + R"(,"signatureStores":[{"uri":"https://x"}]})", "spec.signatureStores[0].uri: unknown field"},
      {"{" + id + R"(,"chanel":"stable-4.13"})", "spec.chanel: unknown field"},
      {"[]", "spec: must be an object"},
  };
  for (const auto& c : cases) {
    auto spec = SpecFromJson(Json(c.spec));
    ASSERT_FALSE(spec.ok()) << c.spec;
    EXPECT_EQ(spec.status().message().rfind(c.message, 0), 0u) << c.spec << " -> " << spec.status().message();
  }
  EXPECT_TRUE(SpecFromJson(Json("{" + id + R"(,"desiredUpdate":{"architecture":"Multi"}})")).ok());
}

TEST(ClusterVersionTest, APeersDocumentIsReadByTypesAndItsUnknownFieldsAreIgnored) {
  // What a newer agent might serve: fields this one does not know, a cluster id it would
  // refuse in its own state. The operator reads it as a Kubernetes client would.
  const std::string document = R"({"spec":{"clusterID":"not-a-uuid","channel":"stable-4.13","capabilities":{}},
    "status":{"history":[{"state":"Completed","version":"4.12.3","image":"i","startedTime":"t","acceptedRisks":"",
    "verified":false,"completionMode":"x"}],"capabilities":{},"desired":{"version":"4.12.3","image":"i"}}})";
  EXPECT_FALSE(FromJson(Json(document)).ok());  // the agent's own state is read strictly
  auto peer = FromJson(Json(document), config_api::ReadAs::kPeer);
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  EXPECT_EQ(peer->spec.channel, "stable-4.13");
  EXPECT_EQ(peer->status.history.at(0).version, "4.12.3");
  // Types still count, named by their path; a missing spec is an empty one.
  auto wrong = FromJson(Json(R"({"spec":{"channel":5}})"), config_api::ReadAs::kPeer);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(), "spec.channel: must be a string");
  auto history = FromJson(Json(R"({"status":{"history":[{"version":1}]}})"), config_api::ReadAs::kPeer);
  ASSERT_FALSE(history.ok());
  EXPECT_EQ(history.status().message(), "status.history[0].version: must be a string");
  EXPECT_TRUE(FromJson(Json(R"({"status":{}})"), config_api::ReadAs::kPeer).ok());
}

TEST(ObjectStoreTest, PutGetListSurviveAndNamesStayInside) {
  testing::TempDir dir;
  {
    FileObjectStore store(dir.path());
    auto missing = store.Get("clusterversions", "version");
    ASSERT_TRUE(missing.ok());
    EXPECT_FALSE(missing->has_value());
    ASSERT_TRUE(store.Put("clusterversions", "version", ToJson(Sample())).ok());
    ASSERT_TRUE(store.Put("clusteroperators", "etcd", Json(R"({"a":1})")).ok());
    ASSERT_TRUE(store.Put("clusteroperators", "dns", Json(R"({"a":2})")).ok());
  }
  // A writer that crashed between its write and its rename left a temporary file.
  testing::WriteFile(dir.path() / "clusteroperators" / "dns.json.tmp-99999", "{\"half");
  FileObjectStore store(dir.path());
  auto cv = store.Get("clusterversions", "version");
  ASSERT_TRUE(cv.ok() && cv->has_value());
  EXPECT_EQ(WriteJson(**cv), WriteJson(ToJson(Sample())));
  EXPECT_EQ(*store.List("clusteroperators"), (std::vector<std::string>{"dns", "etcd"}));
  EXPECT_EQ(store.Get("clusteroperators", "dns")->value(), Json(R"({"a":2})"));
  ASSERT_TRUE(store.Put("clusteroperators", "dns", Json(R"({"a":3})")).ok());
  EXPECT_FALSE(fs::exists(dir.path() / "clusteroperators" / "dns.json.tmp-99999"));

  for (const char* bad : {"../x", "a/b", "", "UPPER", "-x", "x-", "a..b"}) {
    EXPECT_FALSE(store.Put("clusteroperators", bad, JsonValue()).ok()) << bad;
    EXPECT_FALSE(store.Get("clusteroperators", bad).ok()) << bad;
  }
  testing::WriteFile(dir.path() / "clusteroperators" / "broken.json", "{");
  auto broken = store.Get("clusteroperators", "broken");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.json"), std::string::npos) << broken.status().message();
}

// What an older agent left too large to read, or a person broke: the agent opens with
// every part it can read (the cluster keeps its identity and history) and writes the
// state back whole.
TEST(StateSalvageTest, AClusterVersionTooLargeOrBrokenOpensWithWhatCanBeRead) {
  testing::TempDir dir;
  ClusterVersion cv = Sample();
  Release update = cv.status.available_updates[0];
  update.url = "https://example.com/" + std::string(4000, 'u');
  cv.status.available_updates.assign(5000, update);  // about 20 MiB: over the store's 16 MiB
  const std::string big = WriteJson(ToJson(cv), 2);
  ASSERT_GT(big.size(), kMaxObjectBytes);
  testing::WriteFile(dir / "clusterversions" / "version.json", big);

  auto store = std::make_shared<FileObjectStore>(dir.path());
  auto refused = store->Get("clusterversions", "version");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kTooLarge) << refused.status().message();

  auto salvaged = SalvageClusterVersion((dir / "clusterversions" / "version.json").string());
  ASSERT_TRUE(salvaged.ok()) << salvaged.status().message();
  EXPECT_EQ(salvaged->cv.spec, cv.spec);
  EXPECT_EQ(salvaged->cv.status.history.size(), 1u);
  EXPECT_TRUE(salvaged->cv.status.available_updates.empty());
  EXPECT_EQ(salvaged->dropped.size(), 2u);  // availableUpdates and conditionalUpdates
  EXPECT_NE(salvaged->dropped[0].find("status.availableUpdates"), std::string::npos);

  AgentOptions options;
  options.initial_upstream = "http://127.0.0.1:1/graph";
  auto agent = Agent::Open(store, options);
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  EXPECT_EQ(*FindMember(*FindMember((*agent)->ClusterVersionJson(), "spec"), "clusterID"), JsonValue(cv.spec.cluster_id));
  EXPECT_LT(fs::file_size(dir / "clusterversions" / "version.json"), size_t{64} << 10) << "written back whole";

  // A status member of the wrong shape is dropped alone.
  JsonValue doc = ToJson(Sample());
  JsonValue status = *FindMember(doc, "status");
  SetMember(status, "history", JsonValue("not a list"));
  SetMember(doc, "status", status);
  testing::WriteFile(dir / "clusterversions" / "version.json", WriteJson(doc));
  auto partial = SalvageClusterVersion((dir / "clusterversions" / "version.json").string());
  ASSERT_TRUE(partial.ok()) << partial.status().message();
  EXPECT_TRUE(partial->cv.status.history.empty());
  EXPECT_EQ(partial->cv.status.desired, Sample().status.desired);
  EXPECT_FALSE(partial->dropped.empty());

  // No readable spec: nothing to salvage (the caller sets the file aside).
  testing::WriteFile(dir / "clusterversions" / "version.json", R"({"spec": {"clusterID": 7}, "status": {}})");
  EXPECT_FALSE(SalvageClusterVersion((dir / "clusterversions" / "version.json").string()).ok());
}

// A ClusterOperator is refused when it grows past its limit or breaks the status schema;
// one left unreadable on disk is listed apart and makes Upgradeable False (fails closed).
TEST(ComponentObjectsTest, LimitsAndSchemaAreCheckedAndOneBadObjectBreaksNothing) {
  testing::TempDir dir;
  auto store = std::make_shared<FileObjectStore>(dir.path());
  ComponentObjects components(*store);
  ASSERT_TRUE(components.Put("ingress", Json(R"({"metadata":{"name":"ingress"}})")).ok());
  std::string grown = R"({"status":{"extension":{"junk":")" + std::string(900 * 1024, 'j') + R"("}}})";
  ASSERT_TRUE(components.PatchStatus("ingress", Json(grown)).ok());
  grown = R"({"status":{"extension":{"more":")" + std::string(200 * 1024, 'j') + R"("}}})";
  auto over = components.PatchStatus("ingress", Json(grown));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Status::Code::kTooLarge);
  EXPECT_NE(over.status().message().find("clusteroperators.config.openshift.io \"ingress\""), std::string::npos)
      << over.status().message();
  EXPECT_FALSE(FindMember(*FindMember(*FindMember(components.Get("ingress")->value(), "status"), "extension"), "more")) << "the old object stays";

  struct Case {
    std::string patch, words;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"status":{"conditions":"Available"}})", "status.conditions: Invalid value: must be an array"},
           {R"({"status":{"conditions":[{"type":"Available","status":"Maybe"}]}})", "status.conditions[0].status: Unsupported value"},
           {R"({"status":{"conditions":[{"status":"True"}]}})", "status.conditions[0].type: Required value"},
           {R"({"status":{"versions":[{"name":"operator","version":4}]}})", "status.versions[0].version: Invalid value"},
       }) {
    auto bad = components.PatchStatus("ingress", Json(c.patch));
    ASSERT_FALSE(bad.ok()) << c.patch;
    EXPECT_NE(bad.status().message().find(c.words), std::string::npos) << bad.status().message();
  }

  ASSERT_TRUE(components.Put("dns", Json(R"({"metadata":{"name":"dns"}})")).ok());
  testing::WriteFile(dir / "clusteroperators" / "dns.json", R"({"metadata":{"name":"dns"},"status":{"conditions":"x"}})");
  ComponentList listed = components.ListAll();
  ASSERT_EQ(listed.objects.size(), 1u);
  ASSERT_EQ(listed.unreadable.size(), 1u);
  EXPECT_EQ(listed.unreadable[0].first, "dns");

  testing::WriteFile(dir / "release.json", R"({"kind":"cincinnati-metadata-v0","version":"4.1.0","payload":"r@sha256:)" +
                                               std::string(64, '0') + R"("})");
  AgentOptions options;
  options.release.release_document = (dir / "release.json").string();
  options.initial_upstream = "http://127.0.0.1:1/graph";
  options.poll_interval = std::chrono::hours(1);
  auto agent = Agent::Open(store, options);
  ASSERT_TRUE(agent.ok()) << agent.status().message();
  (void)(*agent)->RunPass();
  const JsonValue cv = (*agent)->ClusterVersionJson();
  const JsonValue* upgradeable = nullptr;
  for (const auto& c : ItemsOf(*FindMember(*FindMember(cv, "status"), "conditions"))) {
    if (TextOf(*FindMember(c, "type")) == "Upgradeable") upgradeable = &c;
  }
  ASSERT_NE(upgradeable, nullptr) << WriteJson(cv, 2);
  EXPECT_EQ(TextOf(*FindMember(*upgradeable, "status")), "False");
  EXPECT_EQ(TextOf(*FindMember(*upgradeable, "reason")), "ClusterOperatorUnreadable");
  EXPECT_NE(TextOf(*FindMember(*upgradeable, "message")).find("dns"), std::string::npos);
}

}  // namespace
}  // namespace cincinnati::agent
