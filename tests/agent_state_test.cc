// The agent's state: JSON values and merge patch (RFC 7386), the ClusterVersion
// document, and the crash-safe object store.
#include <gtest/gtest.h>

#include "agent/cluster_version.h"
#include "agent/json_value.h"
#include "agent/object_store.h"
#include "test_util.h"

namespace cincinnati::agent {
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
  EXPECT_EQ(v.Find("b")->integer(), 1);
  EXPECT_FALSE(v.Find("a")->items()[3].integer().has_value());
  EXPECT_EQ(WriteJson(Json(R"({"a":[1]})"), 2), "{\n  \"a\": [\n    1\n  ]\n}");
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
  EXPECT_EQ(json.Find("apiVersion")->text(), "config.openshift.io/v1");
  EXPECT_EQ(json.Find("kind")->text(), "ClusterVersion");
  EXPECT_EQ(json.Find("spec")->Find("clusterID")->text(), cv.spec.cluster_id);
  EXPECT_EQ(json.Find("spec")->Find("desiredUpdate")->Find("version")->text(), "4.13.0");
  const JsonValue* status = json.Find("status");
  EXPECT_EQ(status->Find("history")->items()[0].Find("state")->text(), "Completed");
  EXPECT_EQ(status->Find("conditionalUpdates")->items()[0].Find("risks")->items()[0].Find("matchingRules")->items()[0]
                .Find("promql")->Find("promql")->text(),
            "up == 0");

  auto back = FromJson(Json(WriteJson(json)));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec, cv.spec);
  EXPECT_EQ(WriteJson(ToJson(*back)), WriteJson(json));

  // No updates: availableUpdates is null, as the operator writes it.
  cv.status.available_updates.clear();
  EXPECT_TRUE(ToJson(cv).Find("status")->Find("availableUpdates")->is_null());
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

}  // namespace
}  // namespace cincinnati::agent
