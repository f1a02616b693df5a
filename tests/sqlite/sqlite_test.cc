// The stores' SQLite wrapper: statements, checked errors, the project's pragmas.
#include <gtest/gtest.h>

#include "sqlite/database.h"
#include "test_util.h"

namespace cincinnati::sqlite {
namespace {

using testing::TempDir;

std::unique_ptr<Database> OpenIn(const TempDir& dir, Database::Options options = {}) {
  auto db = Database::Open((dir / "test.db").string(), "test store", options);
  EXPECT_TRUE(db.ok()) << db.status().message();
  return std::move(db).value();
}

TEST(SqliteTest, BindsStepsAndReadsColumns) {
  TempDir dir;
  auto db = OpenIn(dir);
  ASSERT_TRUE(db->Exec("CREATE TABLE t(k TEXT PRIMARY KEY, n INTEGER, x REAL, maybe TEXT)").ok());
  auto insert = db->Prepare("INSERT INTO t(k, n, x) VALUES(?1, ?2, ?3)");
  ASSERT_TRUE(insert.ok()) << insert.status().message();
  ASSERT_TRUE(insert->Bind(1, std::string("a\0b", 3)).Bind(2, int64_t{1} << 40).BindReal(3, 0.25).Run().ok());
  EXPECT_EQ(db->changes(), 1);
  insert->Reset();
  ASSERT_TRUE(insert->Bind(1, "c").Bind(2, int64_t{-3}).BindReal(3, 2).Run().ok());

  auto rows = db->Prepare("SELECT k, n, x, maybe FROM t ORDER BY k");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->columns(), 4);
  std::vector<std::string> keys;
  ASSERT_TRUE(rows->ForEachRow([&] {
    keys.push_back(rows->Text(0));
    EXPECT_EQ(rows->Text(3), "");  // NULL
  }).ok());
  ASSERT_EQ(keys, (std::vector<std::string>{std::string("a\0b", 3), "c"}));  // text keeps its NUL

  auto one = db->Prepare("SELECT n, x FROM t WHERE k = ?1");
  ASSERT_TRUE(one.ok());
  auto row = one->Bind(1, "c").Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(one->Integer(0), -3);
  EXPECT_EQ(one->Real(1), 2.0);
  auto end = one->Step();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

TEST(SqliteTest, ErrorsNameTheStoreAndAConstraintIsAConflict) {
  TempDir dir;
  auto db = OpenIn(dir);
  ASSERT_TRUE(db->Exec("CREATE TABLE t(k TEXT PRIMARY KEY)").ok());
  auto bad = db->Prepare("SELECT nothing FROM nowhere");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kIoError);
  EXPECT_EQ(bad.status().message().rfind("test store: ", 0), 0u) << bad.status().message();
  auto insert = db->Prepare("INSERT INTO t(k) VALUES(?1)");
  ASSERT_TRUE(insert->Bind(1, "a").Run().ok());
  insert->Reset();
  const Status again = insert->Bind(1, "a").Run();
  EXPECT_EQ(again.code(), Status::Code::kConflict) << again.message();
  auto select = db->Prepare("SELECT k FROM t");
  EXPECT_EQ(select->Run().code(), Status::Code::kInternal);  // a row where none was expected
  EXPECT_EQ(Database::Open((dir / "missing" / "x.db").string(), "test store", {}).status().code(), Status::Code::kIoError);
}

TEST(SqliteTest, AFailureRollsTheTransactionBack) {
  TempDir dir;
  auto db = OpenIn(dir);
  ASSERT_TRUE(db->Exec("CREATE TABLE t(k TEXT PRIMARY KEY)").ok());
  ASSERT_TRUE(db->Begin().ok());
  ASSERT_TRUE(db->Exec("INSERT INTO t(k) VALUES('a')").ok());
  const Status failed = db->Failure("insert a row");
  EXPECT_EQ(failed.code(), Status::Code::kIoError);
  EXPECT_EQ(failed.message().rfind("test store: insert a row: ", 0), 0u) << failed.message();
  auto count = db->Prepare("SELECT count(*) FROM t");
  ASSERT_TRUE(count->Step().ok());
  EXPECT_EQ(count->Integer(0), 0);
  db->Rollback();  // none open: nothing happens
  ASSERT_TRUE(db->Begin().ok());
  ASSERT_TRUE(db->Exec("INSERT INTO t(k) VALUES('b')").ok());
  ASSERT_TRUE(db->Commit().ok());
}

TEST(SqliteTest, DurableStoresUseWalAndOthersTheirJournal) {
  TempDir dir;
  {
    auto durable = OpenIn(dir);
    auto mode = durable->Prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode->Step().ok());
    EXPECT_EQ(mode->Text(0), "wal");
    auto sync = durable->Prepare("PRAGMA synchronous");
    ASSERT_TRUE(sync->Step().ok());
    EXPECT_EQ(sync->Integer(0), 2);  // FULL
  }
  TempDir other;
  auto plain = OpenIn(other, {.durable = false});
  auto mode = plain->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode->Step().ok());
  EXPECT_EQ(mode->Text(0), "delete");
  ASSERT_TRUE(plain->Exec("CREATE TABLE t(k TEXT)").ok());
  auto reader = Database::Open((other / "test.db").string(), "reader", {.access = Database::Options::Access::kReadOnly, .durable = false});
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_FALSE((*reader)->Exec("INSERT INTO t(k) VALUES('x')").ok());
}

}  // namespace
}  // namespace cincinnati::sqlite
