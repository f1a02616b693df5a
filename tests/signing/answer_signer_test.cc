// AnswerSigner (signing/answer_signer.h): the head lines of graph answers, made once per
// distinct (answer, query, generation, freshness) and shared; what they carry verifies,
// what is asked often survives a flood of distinct queries, and without keys only the
// generation lines are sent.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/answer_signature.h"
#include "signing/answer_signer.h"
#include "signing_util.h"

namespace cincinnati::server {
namespace {

constexpr char kBody[] = R"({"version":1,"nodes":[],"edges":[],"conditionalEdges":[]})";

// The value of header `name` in `lines` ("Name: value\r\n" each), or nullopt.
std::optional<std::string> HeaderIn(std::string_view lines, std::string_view name) {
  size_t start = 0;
  while (start < lines.size()) {
    const size_t end = lines.find("\r\n", start);
    if (end == std::string::npos) return std::nullopt;  // every line must end in CRLF
    std::string_view line(lines.data() + start, end - start);
    if (line.substr(0, name.size()) == name && line.substr(name.size(), 2) == ": ") return std::string(line.substr(name.size() + 2));
    start = end + 2;
  }
  return std::nullopt;
}

class AnswerSignerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto key = SigningKey::FromPem(testing::NewSigningKeyPem());
    ASSERT_TRUE(key.ok()) << key.status().message();
    auto pub = PublicKey::FromPem((*key)->PublicPem());
    ASSERT_TRUE(pub.ok());
    trusted_.Add(*pub);
    signer_ = std::make_unique<AnswerSigner>(std::vector<std::shared_ptr<const SigningKey>>{*key}, std::chrono::seconds(3600));
  }
  std::shared_ptr<const std::string_view> Lines(const View& view, const AnswerScope& scope, uint64_t generation = 7, int64_t fresh = 1000) {
    AnswerSigner::Lines lines = signer_->HeadLines(view, scope, {generation, fresh, 0, false}, 1010);
    EXPECT_TRUE(lines.error.ok()) << lines.error.message();
    return lines.text;
  }
  View view_{kBody};
  TrustedKeys trusted_;
  std::unique_ptr<AnswerSigner> signer_;
};

TEST_F(AnswerSignerTest, TheLinesCarryAGenerationAFreshnessAndASignatureThatVerifies) {
  const AnswerScope scope{"stable-4.13", "amd64", "4.13.1", "some-id"};
  auto lines = Lines(view_, scope);
  ASSERT_TRUE(lines);
  EXPECT_EQ(HeaderIn(*lines, "Cincinnati-Graph-Generation"), "7");
  EXPECT_EQ(HeaderIn(*lines, "Cincinnati-Graph-Fresh"), "1000");
  const std::optional<std::string> signature = HeaderIn(*lines, kSignatureHeader);
  ASSERT_TRUE(signature);
  EXPECT_EQ(std::count(lines->begin(), lines->end(), '\n'), 3) << "three lines, no line break inside a value";
  const SignatureCheck check = CheckAnswerSignature(&*signature, kBody, scope, trusted_, 1020, 0);
  EXPECT_EQ(check.verdict, SignatureVerdict::kAccepted) << check.message;
  EXPECT_EQ(check.facts.generation, 7u);
  EXPECT_EQ(check.facts.expires, 1000 + 3600) << "valid from the source's freshness, not from the request";
  EXPECT_EQ(CheckAnswerSignature(&*signature, kBody, {"stable-4.14", "amd64", "4.13.1", ""}, trusted_, 1020, 0).verdict,
            SignatureVerdict::kInvalid);
}

TEST_F(AnswerSignerTest, EachDistinctAnswerAndQueryIsSignedOnceAndShared) {
  const AnswerScope scope{"stable-4.13", "amd64", "4.13.1", ""};
  auto first = Lines(view_, scope);
  auto again = Lines(view_, {"stable-4.13", "amd64", "4.13.1", "another-cluster"});  // the id is not bound: the same lines
  EXPECT_EQ(first.get(), again.get()) << "kept and shared, not made again";
  EXPECT_EQ(signer_->signed_count(), 1u);
  EXPECT_NE(Lines(view_, {"stable-4.13", "amd64", "4.13.2", ""}).get(), first.get()) << "another version";
  EXPECT_NE(Lines(view_, scope, 8).get(), first.get()) << "another generation";
  EXPECT_NE(Lines(view_, scope, 7, 1001).get(), first.get()) << "another freshness";
  View other(R"({"version":1,"nodes":[],"edges":[]})");
  EXPECT_NE(Lines(other, scope).get(), first.get()) << "other bytes";
  EXPECT_EQ(signer_->signed_count(), 5u);
  AnswerSigner::Lines per_cluster = signer_->HeadLines(view_, {"stable-4.13", "amd64", "4.13.1", "a-cluster"}, {7, 1000, 0, true}, 1010);
  EXPECT_NE(per_cluster.text.get(), first.get()) << "an answer for one cluster alone binds its id";
  EXPECT_NE(HeaderIn(*per_cluster.text, kSignatureHeader)->find("scope=cluster"), std::string::npos);
}

// The lookup's steps taken ahead (PrefetchSet, PrefetchEntry) find what HeadLines finds on its own:
// the same kept lines, for a new answer and for a kept one, and per cluster too.
TEST_F(AnswerSignerTest, ALookupTakenAheadFindsTheSameKeptLines) {
  const AnswerScope scope{"stable-4.13", "amd64", "4.13.1", "a-cluster"};
  for (const bool per_cluster : {false, true}) {
    const AnswerSource source{7, 1000, 0, per_cluster};
    const AnswerSigner::Lookup ahead = signer_->PrefetchSet(view_, scope, source);
    signer_->PrefetchEntry(ahead);  // nothing kept yet: a hint that finds nothing
    AnswerSigner::Lines made = signer_->HeadLines(view_, scope, source, 1010, &ahead);
    ASSERT_TRUE(made.error.ok()) << made.error.message();
    const AnswerSigner::Lookup again = signer_->PrefetchSet(view_, scope, source);
    signer_->PrefetchEntry(again);
    EXPECT_EQ(signer_->HeadLines(view_, scope, source, 1010, &again).text.get(), made.text.get()) << "kept under the lookup's hash";
    EXPECT_EQ(signer_->HeadLines(view_, scope, source, 1010).text.get(), made.text.get()) << "and found without it";
  }
  EXPECT_EQ(signer_->signed_count(), 2u) << "once per cluster-bound or not";
  // A lookup made for other arguments: the lines are still those of the arguments given.
  const AnswerSigner::Lookup other = signer_->PrefetchSet(view_, {"stable-4.13", "amd64", "4.13.2", ""}, {7, 1000, 0, false});
  AnswerSigner::Lines mismatched = signer_->HeadLines(view_, scope, {7, 1000, 0, false}, 1010, &other);
  ASSERT_TRUE(mismatched.text);
  EXPECT_EQ(*mismatched.text, *signer_->HeadLines(view_, scope, {7, 1000, 0, false}, 1010).text);
}

TEST_F(AnswerSignerTest, WhatIsAskedOftenSurvivesAFloodOfDistinctQueries) {
  const AnswerScope popular{"stable-4.13", "amd64", "4.13.1", ""};
  Lines(view_, popular);
  std::vector<std::string> channels;
  for (int i = 0; i < 40000; ++i) channels.push_back("flood-" + std::to_string(i));  // about 2.5 times the capacity
  for (int i = 0; i < 40000; ++i) {
    Lines(view_, {channels[i], "amd64", "", ""});
    if (i % 64 == 0) Lines(view_, popular);
  }
  EXPECT_EQ(signer_->signed_count(), 40001u) << "the popular answer was signed once";
  // Where an entry lands is the hash's (randomly seeded) choice, so the flood's oldest
  // are evicted almost all, not each: about 20 newer ones follow each into its set of 7.
  const uint64_t before = signer_->signed_count();
  for (int i = 0; i < 256; ++i) Lines(view_, {channels[static_cast<size_t>(i)], "amd64", "", ""});
  EXPECT_GE(signer_->signed_count(), before + 240) << "the oldest of the flood were evicted";
}

TEST_F(AnswerSignerTest, AnUpstreamsExpiryCapsTheSignatureAndOddQueriesAreNotKept) {
  const AnswerScope scope{"stable-4.13", "amd64", "4.13.1", ""};
  AnswerSigner::Lines capped = signer_->HeadLines(view_, scope, {7, 1000, 2000, false}, 1010);
  const std::optional<std::string> signature = HeaderIn(*capped.text, kSignatureHeader);
  ASSERT_TRUE(signature);
  const SignatureCheck check = CheckAnswerSignature(&*signature, kBody, scope, trusted_, 1020, 0);
  EXPECT_EQ(check.verdict, SignatureVerdict::kAccepted) << check.message;
  EXPECT_EQ(check.facts.expires, 2000) << "never valid longer than the upstream's own signature";
  const std::string odd_version(AnswerSigner::kMaxKeptScope, '1');
  const uint64_t before = signer_->signed_count();
  Lines(view_, {"stable-4.13", "amd64", odd_version, ""});
  Lines(view_, {"stable-4.13", "amd64", odd_version, ""});
  EXPECT_EQ(signer_->signed_count(), before + 2) << "signed for each request, never kept";
  // An ETag longer than the entry holds (View::etag() never is): signed, not kept.
  auto document = std::make_shared<const http_server::PiecedDocument>(kBody, std::vector<std::string>{});
  const View long_etag(std::string(80, 'a'), document, {});
  Lines(long_etag, scope);
  Lines(long_etag, scope);
  EXPECT_EQ(signer_->signed_count(), before + 4);
}

// Never an expired signature: once the source's last word is older than the validity
// (or the upstream's own signature has expired), the answer goes unsigned and says why,
// even where a signature was kept from before.
TEST_F(AnswerSignerTest, AnAnswerWhoseSignatureWouldHaveExpiredIsNotSigned) {
  const AnswerScope scope{"stable-4.13", "amd64", "4.13.1", ""};
  ASSERT_TRUE(HeaderIn(*Lines(view_, scope), kSignatureHeader)) << "kept, fresh";
  const uint64_t made = signer_->signed_count();
  for (int64_t now : {1000 + 3600, 1000 + 7200}) {
    AnswerSigner::Lines late = signer_->HeadLines(view_, scope, {7, 1000, 0, false}, now);
    EXPECT_TRUE(late.error.ok());
    EXPECT_FALSE(HeaderIn(*late.text, kSignatureHeader)) << "at " << now << ": " << *late.text;
    EXPECT_EQ(HeaderIn(*late.text, kSignatureWithheldHeader), "expired=4600; fresh=1000");
    EXPECT_EQ(HeaderIn(*late.text, "Cincinnati-Graph-Generation"), "7");
  }
  AnswerSigner::Lines upstream_expired = signer_->HeadLines(view_, scope, {7, 1000, 1500, false}, 1500);
  EXPECT_EQ(HeaderIn(*upstream_expired.text, kSignatureWithheldHeader), "expired=1500; fresh=1000");
  EXPECT_EQ(signer_->signed_count(), made) << "nothing signed";
  EXPECT_EQ(signer_->withheld_count(), 3u);
}

// What a policy engine does for per-cluster answers assembled from pieces: a new View
// per request, whose ETag names its bytes. The signer keys on the ETag's digits (a hash
// already) and compares the rest: ETags that share their first 16 digits but not the
// last are told apart. Each distinct answer is signed once and then served, the same
// shared lines, to every request that gets it; a new generation or freshness signs again.
TEST_F(AnswerSignerTest, AssembledAnswersAreSignedOncePerEtagAndTheirWholeEtagIsCompared) {
  auto document = std::make_shared<const http_server::PiecedDocument>(
      R"({"version":1,"nodes":[],"edges":[)", std::vector<std::string>{"[0,1]", ",", "[1,2]", "]}"});
  const std::vector<std::vector<uint32_t>> selections = {{3}, {0, 3}, {2, 3}, {0, 1, 2, 3}};
  const std::string prefix = "0123456789abcdef";  // shared by every ETag: only the rest tells them apart
  auto answer = [&](size_t n) {
    return View(prefix + fmt::format("{:016x}", n), document, selections[n]);
  };
  const AnswerScope scope{"stable-4.13", "amd64", "4.13.1", ""};
  std::map<size_t, std::shared_ptr<const std::string_view>> lines_of;
  std::mt19937_64 random(5);
  for (int request = 0; request < 400; ++request) {
    const size_t n = random() % selections.size();
    const View view = answer(n);  // a new View, as the view cache makes for each request
    auto lines = Lines(view, {"stable-4.13", "amd64", "4.13.1", fmt::format("cluster-{}", request)});
    auto [kept, first] = lines_of.emplace(n, lines);
    if (first) {
      const std::optional<std::string> signature = HeaderIn(*lines, kSignatureHeader);
      ASSERT_TRUE(signature);
      const SignatureCheck check = CheckAnswerSignature(&*signature, *view.body(), scope, trusted_, 1020, 0);
      EXPECT_EQ(check.verdict, SignatureVerdict::kAccepted) << "answer " << n << ": " << check.message;
    } else {
      EXPECT_EQ(lines.get(), kept->second.get()) << "request " << request << ": answer " << n << " served as kept";
    }
  }
  EXPECT_EQ(lines_of.size(), selections.size());
  EXPECT_EQ(signer_->signed_count(), selections.size()) << "each distinct answer signed once";
  for (size_t n = 0; n < selections.size(); ++n) {
    auto renewed = Lines(answer(n), scope, 7, 1001);
    EXPECT_NE(renewed.get(), lines_of[n].get()) << "a new freshness is signed again";
    EXPECT_EQ(HeaderIn(*renewed, "Cincinnati-Graph-Fresh"), "1001");
    EXPECT_EQ(HeaderIn(*Lines(answer(n), scope, 8, 1001), "Cincinnati-Graph-Generation"), "8") << "a new generation too";
    EXPECT_EQ(Lines(answer(n), scope, 8, 1001).get(), Lines(answer(n), scope, 8, 1001).get()) << "then kept";
  }
  EXPECT_EQ(signer_->signed_count(), 3 * selections.size());
}

// Queries that share an answer (unknown channels all get the empty graph, a fleet's
// versions share their channel's) each get their own signature and keep it.
TEST_F(AnswerSignerTest, QueriesThatShareAnAnswerKeepTheirOwnLines) {
  std::vector<std::shared_ptr<const std::string_view>> first;
  for (int round = 0; round < 2; ++round) {
    for (int v = 0; v < 200; ++v) {
      const std::string version = fmt::format("4.13.{}", v);
      auto lines = Lines(view_, {"stable-4.13", "amd64", version, ""});
      if (round == 0) {
        first.push_back(lines);
        const std::optional<std::string> signature = HeaderIn(*lines, kSignatureHeader);
        ASSERT_TRUE(signature);
        const SignatureCheck check = CheckAnswerSignature(&*signature, kBody,
                                                          {"stable-4.13", "amd64", version, ""}, trusted_, 1020, 0);
        EXPECT_EQ(check.verdict, SignatureVerdict::kAccepted) << version << ": " << check.message;
      } else {
        EXPECT_EQ(lines.get(), first[static_cast<size_t>(v)].get()) << version;
      }
    }
  }
  EXPECT_EQ(signer_->signed_count(), 200u);
}

// Many threads asking the same few queries get the one kept copy of each.
TEST_F(AnswerSignerTest, ThreadsShareTheKeptLines) {
  std::vector<std::shared_ptr<const std::string_view>> kept;
  for (int v = 0; v < 8; ++v) kept.push_back(Lines(view_, {"stable-4.13", "amd64", fmt::format("4.13.{}", v), ""}));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        const int v = i % 8;
        AnswerSigner::Lines lines = signer_->HeadLines(view_, {"stable-4.13", "amd64", fmt::format("4.13.{}", v), ""}, {7, 1000, 0, false}, 1010);
        if (lines.text.get() != kept[static_cast<size_t>(v)].get()) mismatches.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(signer_->signed_count(), 8u);
}

TEST(AnswerSignerUnsignedTest, WithoutKeysOnlyTheGenerationLinesAreSent) {
  const std::shared_ptr<AnswerSigner> unsigned_signer = AnswerSigner::Unsigned();
  AnswerSigner& signer = *unsigned_signer;
  EXPECT_FALSE(signer.signing());
  View view(kBody);
  AnswerSigner::Lines lines = signer.HeadLines(view, {"stable-4.13", "amd64", "", ""}, {12, 34, 0, false}, 40);
  ASSERT_TRUE(lines.error.ok());
  EXPECT_EQ(*lines.text, "Cincinnati-Graph-Generation: 12\r\nCincinnati-Graph-Fresh: 34\r\n");
  EXPECT_EQ(signer.HeadLines(view, {"stable-4.14", "amd64", "", ""}, {12, 34, 0, false}, 41).text.get(), lines.text.get())
      << "one copy for every answer of a generation";
  EXPECT_EQ(*signer.HeadLines(view, {}, {13, 34, 0, false}, 41).text, GenerationLines(13, 34));
  // No sets to prefetch: the steps ahead do nothing, and the lines are the same.
  const AnswerSigner::Lookup ahead = signer.PrefetchSet(view, {"stable-4.13", "amd64", "", ""}, {12, 34, 0, false});
  signer.PrefetchEntry(ahead);
  EXPECT_EQ(*signer.HeadLines(view, {"stable-4.13", "amd64", "", ""}, {12, 34, 0, false}, 41, &ahead).text, GenerationLines(12, 34));
  EXPECT_EQ(signer.signed_count(), 0u);
}

}  // namespace
}  // namespace cincinnati::server
