// Signed graph answers, the agent's half: real `cincinnati agent` processes
// with --upstream.public-keys against a graph server on 127.0.0.1 that serves what the
// test says (agent_signature_fixture.h). Every refusal says its reason in
// RetrievedUpdates and leaves the lists the agent shows as they were; a rolled-back
// generation is refused also after kill -9; an upstream that signed must keep signing.
// Every wait is for an event: the upstream served the new answer, then a retrieval pass
// finished.
#include "agent_signature_fixture.h"

namespace cincinnati::agent_signature {
namespace {
using kube::TextOf;
using kube::ItemsOf;

TEST_F(AgentSignatureTest, ASignedAnswerIsTakenAndItsGenerationKept) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const JsonValue cv = Accepted(*agent);
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.4"}));
  EXPECT_EQ(TextOf(At(ItemsOf(At(cv, {"status", "conditionalUpdates"})).at(0), {"release", "version"})), "4.13.2");
  EXPECT_EQ(upstream_.last_query().find("arch=amd64&channel=stable-4.13"), 0u) << upstream_.last_query();
  EXPECT_TRUE(upstream_.gzipped()) << "checked on the bytes after content decoding";
  EXPECT_GE(Signatures(*agent, "accepted"), 1);
  EXPECT_EQ(Signatures(*agent, "SignatureInvalid"), 0);
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 5);
  EXPECT_EQ(RecordedGeneration(), 5);
}

TEST_F(AgentSignatureTest, ForgedStaleAndUnknownAnswersAreRefusedAndChangeNothing) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  const auto stranger = MakeKey(keys_ / "untrusted", "stranger");
  Answer tampered = Signed(kGraphA, 5, {first_});
  tampered.body = kGraphB;  // another answer under A's signature
  ExpectRefused(*agent, tampered, "SignatureInvalid", lists, "does not match this answer to channel stable-4.13");
  ExpectRefused(*agent, Signed(kGraphB, 6, {first_}, RealNow() - 60, RealNow() + 3600, "fast-4.13"), "SignatureInvalid",
                lists, "to channel stable-4.13, arch amd64, version 4.12.3");
  ExpectRefused(*agent, Signed(kGraphB, 6, {stranger}), "SignatureUnknownKey", lists, "none of them a trusted key");
  ExpectRefused(*agent, Signed(kGraphB, 6, {first_}, RealNow() - 7200, RealNow() - 3600), "SignatureExpired", lists,
                "expired");
  ExpectRefused(*agent, {kGraphB, "v=1; generation=6; nonsense"}, "SignatureMalformed", lists, "signature header");
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 5) << "no refusal raises it";

  const JsonValue cv = Fetched(*agent, Signed(kGraphB, 6, {first_}));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.5", "4.12.4"}));
}

// Without --upstream.public-keys nothing is checked, whatever an answer carries.
TEST_F(AgentSignatureTest, WithoutTrustedKeysNothingIsChecked) {
  upstream_.Serve({kGraphA, "v=1; generation=6; nonsense"});
  auto agent = StartAgent({}, /*with_keys=*/false);
  EXPECT_EQ(AvailableVersions(Accepted(*agent)).size(), 2u);
  const JsonValue cv = Fetched(*agent, Signed(kGraphB, 1, {first_}, RealNow() - 7200, RealNow() - 3600));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True") << "an expired signature is not even read";
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  EXPECT_EQ(Get(agent->url("/metrics")).body.find("cincinnati_agent_answer_signatures_total"), std::string::npos);
  EXPECT_FALSE(fs::exists(state_ / "agent" / "agentstate" / "answer-signatures.json"));
}

// A genuine but older answer (a replay from before the service moved on) is refused,
// also by an agent killed (-9) and started again.
TEST_F(AgentSignatureTest, ARolledBackGenerationIsRefusedAlsoAfterARestart) {
  const Answer older = Signed(kGraphA, 5, {first_});
  upstream_.Serve(Signed(kGraphB, 6, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  ASSERT_EQ(AvailableVersions(Cv(*agent)).size(), 3u);
  ExpectRefused(*agent, older, "SignatureRolledBack", lists, "older than generation 6");

  agent->Kill();
  agent = StartAgent();
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 6) << "read back from the state directory";
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_signature_record_set_aside"), 0);
  // Fetched anew by this process, and refused: the lists of the last answer taken stay.
  ExpectRefused(*agent, older, "SignatureRolledBack", lists, "older than generation 6");

  // The same generation again is fine (a service that has not moved on), and so is a newer one.
  JsonValue cv = Fetched(*agent, Signed(kGraphA, 6, {first_}));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
  cv = Fetched(*agent, Signed(kGraphB, 7, {first_}));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_generation"), 7);
  EXPECT_EQ(RecordedGeneration(), 7);

  // Pointed at another update service, which numbers its graphs its own way: counting
  // starts again there, and the first one's count is kept.
  GraphUpstream other;
  cv = Patched(*agent, R"({"upstream":")" + other.url() + R"("})", other, Signed(kGraphA, 2, {first_}), "channel=");
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True") << kube::WriteJson(cv, 2);
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
  EXPECT_EQ(RecordedGeneration(other.url()), 2);
  EXPECT_EQ(RecordedGeneration(), 7);
}

// From an update service that never signed, an unsigned answer is used unless
// signatures are required.
TEST_F(AgentSignatureTest, AnUnsignedAnswerIsUsedUnlessSignaturesAreRequired) {
  upstream_.Serve({kGraphA, std::nullopt});
  auto agent = StartAgent();
  Accepted(*agent);
  JsonValue cv = Fetched(*agent, {kGraphB, std::nullopt});
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  AfterAPass(*agent);
  AfterAPass(*agent);
  EXPECT_GE(Signatures(*agent, "unsigned"), 2);
  EXPECT_EQ(testing::Count(agent->log(), "answer is not signed"), 1u) << "logged once, not at every poll";
  const std::string lists = Lists(cv);

  EXPECT_EQ(agent->Stop(), 0);
  agent = StartAgent({"--upstream.require-signature"});
  ExpectRefused(*agent, {kGraphA, std::nullopt}, "SignatureMissing", lists, "--upstream.require-signature requires one");
  cv = Fetched(*agent, Signed(kGraphA, 6, {first_}));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 2u);
}

// Trust on first use: once an update service's signed answer was taken, an unsigned
// one from it is a stripped signature and refused, also by an agent killed (-9) and
// started again, while another update service that never signed is used as before.
// Deleting the record (the agent stopped) forgets it, as the message says.
TEST_F(AgentSignatureTest, AnUpstreamThatSignedMustKeepSigning) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  ASSERT_EQ(RecordedGeneration(), 5);
  const Answer unsigned_b{kGraphB, std::nullopt};
  ExpectRefused(*agent, unsigned_b, "SignatureMissing", lists, "signed the answers taken from it before (generation 5)");
  EXPECT_NE(TextOf(At(Retrieved(Cv(*agent)), {"message"})).find(RecordPath().string()), std::string::npos)
      << "says which file to delete";
  EXPECT_EQ(Signatures(*agent, "unsigned"), 0);

  agent->Kill();
  agent = StartAgent();
  ExpectRefused(*agent, unsigned_b, "SignatureMissing", lists, "signed the answers taken from it before");

  // Another upstream that never signed: its unsigned answers are used.
  GraphUpstream other;
  JsonValue cv = Patched(*agent, R"({"upstream":")" + other.url() + R"("})", other, unsigned_b, "channel=");
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True") << kube::WriteJson(Retrieved(cv));
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  EXPECT_EQ(RecordedGeneration(other.url()), -1) << "an unsigned answer records nothing";
  // Back to the first: still refused, and since the upstream changed, the other's
  // updates are not shown.
  cv = Patched(*agent, R"({"upstream":")" + upstream_.url() + R"("})", upstream_, unsigned_b, "channel=");
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"reason"})), "SignatureMissing") << kube::WriteJson(Retrieved(cv));
  EXPECT_EQ(AvailableVersions(cv).size(), 0u) << Lists(cv);
  EXPECT_FALSE(testing::ListsVersion(cv, "conditionalUpdates", "4.13.2")) << Lists(cv);

  // The way back the message names: the agent stopped, the record deleted.
  EXPECT_EQ(agent->Stop(), 0);
  ASSERT_TRUE(fs::remove(RecordPath()));
  agent = StartAgent();
  cv = Accepted(*agent);
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  EXPECT_GE(Signatures(*agent, "unsigned"), 1);

  // A record that cannot be read is set aside, and /metrics says so.
  EXPECT_EQ(agent->Stop(), 0);
  testing::WriteFile(RecordPath(), "{\"upstreams\": [");
  agent = StartAgent();
  EXPECT_EQ(Metric(*agent, "cincinnati_agent_answer_signature_record_set_aside"), 1);
  EXPECT_FALSE(fs::exists(RecordPath()));
}

}  // namespace
}  // namespace cincinnati::agent_signature
