#include "postgres/postgres_session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <iostream>

#include "postgres_server.h"

namespace cincinnati::postgres {
namespace {

TEST(RedactedConninfoTest, APasswordNeverShows) {
  EXPECT_EQ(RedactedConninfo("postgresql://cincinnati:s3cret@db.example:5432/reports?sslmode=require"),
            "postgresql://cincinnati:***@db.example:5432/reports?sslmode=require");
  EXPECT_EQ(RedactedConninfo("postgres://u:p@h/d"), "postgres://u:***@h/d");
  EXPECT_EQ(RedactedConninfo("host=db user=u password=s3cret dbname=r"), "host=db user=u password=*** dbname=r");
  EXPECT_EQ(RedactedConninfo("postgresql:///r?host=/run/pg&password=s3cret&user=u"), "postgresql:///r?host=/run/pg&password=***&user=u");
}

TEST(RedactedConninfoTest, KeywordValuesWithSpacesOrQuotesAreHiddenWhole) {
  EXPECT_EQ(RedactedConninfo("host=db password = hunter2 dbname=r"), "host=db password = *** dbname=r");
  EXPECT_EQ(RedactedConninfo("host=db password='correct horse' dbname=r"), "host=db password=*** dbname=r");
  EXPECT_EQ(RedactedConninfo("password='it\\'s here' user=u"), "password=*** user=u");
  EXPECT_EQ(RedactedConninfo("password='unterminated"), "password=***");
}

TEST(RedactedConninfoTest, WhatHasNoPasswordIsKept) {
  EXPECT_EQ(RedactedConninfo("postgresql://u@h/d"), "postgresql://u@h/d");
  EXPECT_EQ(RedactedConninfo("postgresql:///d?host=/tmp"), "postgresql:///d?host=/tmp");
  EXPECT_EQ(RedactedConninfo(""), "");
}

using namespace std::chrono_literals;

// A server that holds its connections open and answers nothing (SIGSTOPped, over a Unix
// socket where no keepalive or user timeout applies): a call fails once the session's
// deadline passes, not never; once the server runs again, the next call reconnects.
TEST(PostgresSessionTest, ACallToAStoppedServerFailsAtItsDeadlineAndTheNextOneReconnects) {
  cincinnati::testing::PostgresServer pg;
  ASSERT_TRUE(pg.ready()) << pg.log();
  constexpr auto kDeadline = 1500ms;
  const std::string conninfo = WithClientLimits(pg.url(), "deadline-test");
  PostgresSession single(conninfo, "SET statement_timeout = 30000", "single", kDeadline);
  PostgresSession transactions(conninfo, "SET statement_timeout = 30000", "transactions", kDeadline);
  // Within the deadline, a slow statement is answered.
  ASSERT_TRUE(single.Exec("SELECT pg_sleep(0.3)").ok());
  ASSERT_TRUE(transactions.Exec("SELECT 1").ok());
  ASSERT_GT(pg.Freeze(), 2);  // the postmaster and at least the two sessions' backends

  auto timed = [](const char* what, const std::function<Status()>& call) {
    const auto start = std::chrono::steady_clock::now();
    Status failed = call();
    const auto took = std::chrono::steady_clock::now() - start;
    std::cerr << what << " on a stopped server failed after " << std::chrono::duration<double>(took).count() << " s: " << failed.message()
              << "\n";
    EXPECT_FALSE(failed.ok()) << what;
    EXPECT_LT(took, 60s) << what;  // a safety net: the figure measured is printed
    return std::make_pair(failed, took);
  };
  auto [exec_failed, exec_took] = timed("Exec", [&] { return single.Exec("SELECT 1").status(); });
  EXPECT_GE(exec_took, kDeadline);
  EXPECT_NE(exec_failed.message().find("no answer within 1500 ms"), std::string::npos) << exec_failed.message();
  EXPECT_FALSE(single.connected());
  auto [tx_failed, tx_took] = timed("InTransaction", [&] {
    return transactions.InTransaction([](PostgresTransaction& tx) { return tx.Exec("SELECT 1").status(); });
  });
  EXPECT_GE(tx_took, kDeadline);
  EXPECT_FALSE(transactions.connected());
  // No connection now: opening one is bounded by connect_timeout (5 s).
  auto [connect_failed, connect_took] = timed("a new connection", [&] { return single.Exec("SELECT 1").status(); });
  EXPECT_LT(connect_took, 30s);

  ASSERT_GT(pg.Thaw(), 1);
  auto again = single.Exec("SELECT 41 + 1");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->rows, (std::vector<std::vector<std::string>>{{"42"}}));
  EXPECT_TRUE(single.connected());
  EXPECT_TRUE(transactions.InTransaction([](PostgresTransaction& tx) { return tx.Exec("SELECT 1").status(); }).ok());
}

}  // namespace
}  // namespace cincinnati::postgres
