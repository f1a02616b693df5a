// Signed graph answers, the agent's half, continued: what the lists show
// after a refusal (as the CVO's cache policy says: kept on a poll, gone after a change of
// query or a day; what 24 hours do is shown on the retriever itself, in this process, on
// a manual clock), key rotation without a gap, and the key flags checked at start.
#include "agent_signature_fixture.h"

namespace cincinnati::agent_signature {
namespace {
using kube::TextOf;

// As the CVO drops its cached lists when a fetch after a change of channel fails, a
// refused answer after a channel change leaves none shown, not the old channel's.
TEST_F(AgentSignatureTest, AfterAChannelChangeARefusedAnswerShowsNoUpdates) {
  upstream_.Serve(Signed(kGraphA, 5, {first_}));
  auto agent = StartAgent();
  const std::string lists = Lists(Accepted(*agent));
  // Unsigned from an upstream that signed: refused in the old channel too, the lists kept.
  const Answer stripped{kGraphB, std::nullopt};
  ExpectRefused(*agent, stripped, "SignatureMissing", lists, "signed the answers taken from it before");

  JsonValue cv = Patched(*agent, R"({"channel":"fast-4.13"})", upstream_, stripped, "channel=fast-4.13");
  const JsonValue& retrieved = Retrieved(cv);
  EXPECT_EQ(TextOf(At(retrieved, {"status"})), "False");
  EXPECT_EQ(TextOf(At(retrieved, {"reason"})), "SignatureMissing");
  EXPECT_TRUE(AvailableVersions(cv).empty()) << Lists(cv);
  EXPECT_FALSE(testing::ListsVersion(cv, "conditionalUpdates", "4.13.2")) << Lists(cv);
  // Nor after a restart.
  agent->Kill();
  agent = StartAgent();
  cv = Fetched(*agent, stripped);
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"reason"})), "SignatureMissing");
  EXPECT_TRUE(AvailableVersions(cv).empty()) << Lists(cv);

  cv = Fetched(*agent, Signed(kGraphA, 7, {first_}, RealNow() - 60, RealNow() + 3600, "fast-4.13"));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(AvailableVersions(cv), (std::vector<std::string>{"4.13.0", "4.12.4"}));
}

// The retriever's policy for refusals, on a manual clock (the agent's is injected):
// within a day of the last answer taken and for the same query the lists stay, also at
// the first fetch after a restart; past a day, after a change, or for lists of an
// unknown or another query, they go. Any other failure of the first fetch drops them.
TEST_F(AgentSignatureTest, RefusalsFollowTheCachePolicy) {
  env::ManualClock clock{std::chrono::system_clock::now()};
  auto clock_now = [&] { return std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count(); };
  agent::FileObjectStore store(state_ / "unit");
  auto keys = env::LoadTrustedKeys(trusted_.path().string());
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  agent::AnswerTrust trust(store, *keys, /*require=*/false);
  agent::HttpGraphFetcher fetcher({}, 10s);
  auto retriever = [&] {
    return std::make_unique<agent::UpdateRetriever>(
        fetcher, [](const std::vector<agent::MatchingRule>&) -> Result<bool> { return true; }, clock,
        agent::RetrieverSettings{.poll_interval = 3min, .max_age = 24h, .kept = {}, .trust = &trust});
  };
  const agent::GraphRequestInputs inputs{upstream_.url(), "d5f1fb9d-5d29-4bb9-8fe3-4d26b7fd7a2a", "amd64", "4.12.3", kChannel};
  agent::GraphRequestInputs fast = inputs;
  fast.channel = "fast-4.13";
  const Answer unsigned_a{kGraphA, std::nullopt};  // refused: this upstream signed before
  auto taken = [&](agent::UpdateRetriever& r) {
    upstream_.Serve(Signed(kGraphA, 5, {first_}, clock_now() - 60, clock_now() + 3600));
    const agent::RetrievedUpdates got = r.Run(inputs);
    EXPECT_EQ(got.retrieved.status, "True") << got.retrieved.message;
    EXPECT_EQ(got.available.size(), 2u);
    upstream_.Serve(unsigned_a);
    return got;
  };
  auto refused = [&](agent::UpdateRetriever& r, const agent::GraphRequestInputs& in) {
    const agent::RetrievedUpdates got = r.Run(in);
    EXPECT_TRUE(got.fetched);
    EXPECT_EQ(got.retrieved.reason, "SignatureMissing") << got.retrieved.message;
    return got.available.size() + got.conditional.size();
  };

  auto r = retriever();
  taken(*r);
  clock.Advance(4min);
  EXPECT_EQ(refused(*r, inputs), 3u) << "a poll's refusal keeps them";
  clock.Advance(23h);
  EXPECT_EQ(refused(*r, inputs), 3u) << "within a day";
  clock.Advance(2h);
  EXPECT_EQ(refused(*r, inputs), 0u) << "past a day";
  clock.Advance(4min);
  taken(*r);
  clock.Advance(5s);
  EXPECT_EQ(refused(*r, fast), 0u) << "after a channel change";

  // Restarts: a new retriever seeded with what the agent saved.
  clock.Advance(4min);
  const agent::RetrievedUpdates saved = taken(*retriever());
  ASSERT_TRUE(saved.origin);
  auto restarted = [&](std::optional<agent::ListsOrigin> origin) {
    auto fresh = retriever();
    fresh->Seed(saved.available, saved.conditional, std::move(origin));
    return fresh;
  };
  clock.Advance(1h);
  EXPECT_EQ(refused(*restarted(saved.origin), inputs), 3u) << "the same query, an hour later";
  EXPECT_EQ(refused(*restarted(saved.origin), fast), 0u) << "another channel than the lists'";
  EXPECT_EQ(refused(*restarted(std::nullopt), inputs), 0u) << "lists of an unknown query";
  upstream_.Serve(Signed("{not json", 6, {first_}, clock_now() - 60, clock_now() + 3600));
  const agent::RetrievedUpdates invalid = restarted(saved.origin)->Run(inputs);
  EXPECT_EQ(invalid.retrieved.reason, "ResponseInvalid");
  EXPECT_TRUE(invalid.available.empty() && invalid.conditional.empty()) << "any other failure drops them";
  upstream_.Serve(unsigned_a);
  clock.Advance(24h);
  EXPECT_EQ(refused(*restarted(saved.origin), inputs), 0u) << "lists over a day old";
}

// The rotation procedure: trust the new key next to the old one, sign with both, then
// with the new one only, then stop trusting the old one. No answer is refused on the
// way; once the old key is no longer trusted, what only it signs is.
TEST_F(AgentSignatureTest, KeysRotateWithoutAGap) {
  const auto second = MakeKey(trusted_.path(), "second");
  upstream_.Serve(Signed(kGraphA, 1, {first_}));
  auto agent = StartAgent();
  Accepted(*agent);
  for (const Answer& answer : {Signed(kGraphB, 2, {first_, second}), Signed(kGraphA, 3, {second}),
                               Signed(kGraphB, 4, {second})}) {
    const JsonValue cv = Fetched(*agent, answer);
    EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True") << kube::WriteJson(Retrieved(cv));
  }
  const std::string metrics = Get(agent->url("/metrics")).body;
  for (const char* refusal : {"SignatureMissing", "SignatureMalformed", "SignatureUnknownKey", "SignatureInvalid",
                              "SignatureExpired", "SignatureRolledBack"}) {
    EXPECT_EQ(testing::MetricValue(metrics, std::string("cincinnati_agent_answer_signatures_total{result=\"") + refusal + "\"}"), 0)
        << refusal;
  }
  EXPECT_EQ(agent->Stop(), 0);
  fs::remove(trusted_ / "first.pem");
  agent = StartAgent();
  const JsonValue cv = Fetched(*agent, Signed(kGraphB, 4, {second}));
  EXPECT_EQ(TextOf(At(Retrieved(cv), {"status"})), "True");
  EXPECT_EQ(AvailableVersions(cv).size(), 3u);
  ExpectRefused(*agent, Signed(kGraphA, 5, {first_}), "SignatureUnknownKey", Lists(cv), "none of them a trusted key");
}

// Bad key flags stop the agent at start, saying why; --help says what each flag does.
TEST_F(AgentSignatureTest, KeyFlagsAreCheckedAtStart) {
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {CINCINNATI_BINARY, "agent", "--state-dir", (state_ / "agent").string(),
                                     "--release-document",
                                     (testing::Examples() / "ocp-4x/releases/4.12.3-amd64.json").string(), "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess process(argv);
    EXPECT_TRUE(WaitFor([&] { return !process.running(); }, 20s)) << process.log();
    EXPECT_EQ(process.Stop(), 1) << process.log();
    return process.log();
  };
  EXPECT_NE(run({"--upstream.require-signature"}).find("--upstream.require-signature needs --upstream.public-keys"),
            std::string::npos);
  testing::TempDir empty;
  EXPECT_NE(run({"--upstream.public-keys", empty.path().string()}).find("no *.pem public key"), std::string::npos);
  testing::WriteFile(empty / "broken.pem", "not a key\n");
  EXPECT_NE(run({"--upstream.public-keys", empty.path().string()}).find("broken.pem"), std::string::npos);
  EXPECT_NE(run({"--upstream.public-keys", (empty / "nowhere").string()}).find("--upstream.public-keys"), std::string::npos);

  ChildProcess help({CINCINNATI_BINARY, "agent", "--help"});
  ASSERT_TRUE(WaitFor([&] { return !help.running(); }, 20s));
  const std::string text = help.log();
  EXPECT_NE(text.find("--upstream.public-keys DIR"), std::string::npos) << text;
  EXPECT_NE(text.find("--upstream.require-signature"), std::string::npos) << text;
  EXPECT_NE(text.find("SignatureMissing"), std::string::npos) << text;
}

}  // namespace
}  // namespace cincinnati::agent_signature
