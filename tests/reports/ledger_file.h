// A fixture for the report ledger's tests: a SQLite ledger in a temporary directory,
// opened (and opened again, for a reopen) by Open().
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "reports/report_ledger.h"
#include "test_util.h"

namespace cincinnati::testing {

class LedgerFileTest : public ::testing::Test {
 protected:
  std::unique_ptr<reports::ReportLedger> Open() {
    auto ledger = reports::ReportLedger::Open((dir_ / "reports.db").string());
    EXPECT_TRUE(ledger.ok()) << ledger.status().message();
    return ledger.ok() ? std::move(*ledger) : nullptr;
  }
  TempDir dir_;
};

}  // namespace cincinnati::testing
