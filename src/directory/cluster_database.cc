#include "directory/cluster_database.h"


#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <simdjson.h>

#include "core/csv.h"
#include "core/hotfix_rule.h"
#include "core/json.h"
#include "core/strings.h"
#include "directory/cluster_json.h"
#include "env/file_system.h"
#include "sqlite/database.h"

namespace cincinnati::directory {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS clusters (id TEXT PRIMARY KEY, customer TEXT NOT NULL, labels TEXT NOT NULL)";

}  // namespace

std::string NormalizeClusterId(std::string_view id) {
  std::string out(TrimWhitespace(id));
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Status ValidateClusterRecord(const ClusterRecord& r) {
  if (r.id.empty() || r.id.find_first_of(" \t\r\n,") != std::string::npos) {
    return Status::InvalidArgument(fmt::format("cluster id '{}' is empty or has blanks or commas", r.id));
  }
  if (!r.cluster.customer.empty() && !IsHotfixToken(r.cluster.customer)) {
    return Status::InvalidArgument(
        fmt::format("cluster {}: customer '{}' is not valid (use letters, digits and ._:@/+-)", r.id, r.cluster.customer));
  }
  for (const auto& [k, v] : r.cluster.labels) {
    if (!IsHotfixToken(k) || (!v.empty() && !IsHotfixToken(v))) {
      return Status::InvalidArgument(
          fmt::format("cluster {}: label '{}={}' is not valid (use letters, digits and ._:@/+-)", r.id, k, v));
    }
  }
  return Status::OK();
}

// ---- writer ----

Result<std::unique_ptr<ClusterDatabase>> ClusterDatabase::Open(const std::string& path, bool create) {
  if (!create && !env::DefaultFileSystem().Exists(path)) {
    return Status::NotFound(fmt::format("cluster database {} does not exist (add a cluster or import to create it)", path));
  }
  sqlite::Database::Options options;
  options.access = create ? sqlite::Database::Options::Access::kCreate : sqlite::Database::Options::Access::kReadWrite;
  // A rollback journal, not WAL: every commit changes the file itself, which is how the
  // policy engine's reader sees that its cached answers are stale.
  options.durable = false;
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db, sqlite::Database::Open(path, "cluster database " + path, options));
  CINCINNATI_RETURN_IF_ERROR(db->Exec(kSchema));
  return std::unique_ptr<ClusterDatabase>(new ClusterDatabase(std::move(db), path));
}

ClusterDatabase::ClusterDatabase(std::unique_ptr<sqlite::Database> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}

ClusterDatabase::~ClusterDatabase() = default;

Status ClusterDatabase::Put(const ClusterRecord& input, PutMode mode) {
  ClusterRecord r = input;
  r.id = NormalizeClusterId(r.id);
  CINCINNATI_RETURN_IF_ERROR(ValidateClusterRecord(r));
  const char* sql = mode == PutMode::kInsert   ? "INSERT INTO clusters (customer, labels, id) VALUES (?, ?, ?)"
                    : mode == PutMode::kUpdate ? "UPDATE clusters SET customer = ?, labels = ? WHERE id = ?"
                                               : "INSERT OR REPLACE INTO clusters (customer, labels, id) VALUES (?, ?, ?)";
  CINCINNATI_ASSIGN_OR_RETURN(sqlite::Statement put, db_->Prepare(sql));
  put.Bind(1, r.cluster.customer).Bind(2, LabelsToJson(r.cluster.labels)).Bind(3, r.id);
  if (Status s = put.Run(); !s.ok()) {
    if (s.code() == Status::Code::kConflict) return Status::Conflict(fmt::format("cluster {} already exists (use `update`)", r.id));
    return s;
  }
  if (mode == PutMode::kUpdate && db_->changes() == 0) {
    return Status::NotFound(fmt::format("cluster {} is not in {} (use `add`)", r.id, path_));
  }
  return Status::OK();
}

Status ClusterDatabase::Remove(const std::string& id) {
  CINCINNATI_ASSIGN_OR_RETURN(sqlite::Statement remove, db_->Prepare("DELETE FROM clusters WHERE id = ?"));
  CINCINNATI_RETURN_IF_ERROR(remove.Bind(1, NormalizeClusterId(id)).Run());
  if (db_->changes() == 0) return Status::NotFound(fmt::format("cluster {} is not in {}", NormalizeClusterId(id), path_));
  return Status::OK();
}

Result<std::vector<ClusterRecord>> ClusterDatabase::Select(const char* where, const std::string& value) const {
  CINCINNATI_ASSIGN_OR_RETURN(sqlite::Statement rows,
                              db_->Prepare(fmt::format("SELECT id, customer, labels FROM clusters{} ORDER BY id", where)));
  if (*where) rows.Bind(1, value);
  std::vector<ClusterRecord> out;
  simdjson::dom::parser parser;
  for (;;) {
    CINCINNATI_ASSIGN_OR_RETURN(const bool row, rows.Step());
    if (!row) return out;
    ClusterRecord r{rows.Text(0), {rows.Text(1), {}}};
    simdjson::padded_string labels(rows.Text(2));
    simdjson::dom::element element;
    if (parser.parse(labels).get(element)) return Status::InvalidArgument(fmt::format("{}: cluster {}: bad labels", path_, r.id));
    CINCINNATI_ASSIGN_OR_RETURN(r.cluster.labels, LabelsFromJson(element, "cluster " + r.id));
    out.push_back(std::move(r));
  }
}

Result<std::vector<ClusterRecord>> ClusterDatabase::List(const std::string& customer) const {
  return Select(customer.empty() ? "" : " WHERE customer = ?", customer);
}

Result<std::optional<ClusterRecord>> ClusterDatabase::Get(const std::string& id) const {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<ClusterRecord> found, Select(" WHERE id = ?", NormalizeClusterId(id)));
  if (found.empty()) return std::optional<ClusterRecord>();
  return std::optional<ClusterRecord>(std::move(found.front()));
}

Status ClusterDatabase::Import(const std::vector<ClusterRecord>& records, bool replace_all) {
  for (const ClusterRecord& r : records) {
    ClusterRecord n = r;
    n.id = NormalizeClusterId(n.id);
    CINCINNATI_RETURN_IF_ERROR(ValidateClusterRecord(n));
  }
  CINCINNATI_RETURN_IF_ERROR(db_->Begin());
  Status st = replace_all ? db_->Exec("DELETE FROM clusters") : Status::OK();
  for (size_t i = 0; st.ok() && i < records.size(); ++i) st = Put(records[i], PutMode::kUpsert);
  if (!st.ok()) {
    db_->Rollback();
    return st;
  }
  return db_->Commit();
}

// ---- files ----

namespace {

// Ids are case-insensitive: "A1" and "a1" are one cluster.
std::string LowerCase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Result<std::vector<ClusterRecord>> ParseClusterCsv(const std::string& text) {
  CINCINNATI_ASSIGN_OR_RETURN(std::vector<CsvRecord> rows, ReadCsv(text));
  std::vector<ClusterRecord> out;
  std::map<std::string, size_t> first_line;  // id -> the line it was first on
  for (const CsvRecord& row : rows) {
    const std::vector<std::string>& fields = row.fields;
    bool blank = true;
    for (const std::string& f : fields) blank = blank && TrimWhitespace(f).empty();
    if (blank) continue;
    if (row.line == 1 && TrimWhitespace(fields[0]) == "id") continue;  // header
    if (fields.size() < 2 || fields.size() > 3) {
      return Status::InvalidArgument(fmt::format("line {}: expected id,customer,labels", row.line));
    }
    ClusterRecord r{std::string(TrimWhitespace(fields[0])), {std::string(TrimWhitespace(fields[1])), {}}};
    if (fields.size() == 3) {
      for (std::string_view pair : Split(fields[2], ';')) {
        if (TrimWhitespace(pair).empty()) continue;
        size_t eq = pair.find('=');
        if (eq == std::string_view::npos) {
          return Status::InvalidArgument(fmt::format("line {}: label '{}' is not key=value", row.line, pair));
        }
        r.cluster.labels[std::string(TrimWhitespace(pair.substr(0, eq)))] = std::string(TrimWhitespace(pair.substr(eq + 1)));
      }
    }
    if (Status st = ValidateClusterRecord(r); !st.ok()) return st.WithContext(fmt::format("line {}", row.line));
    if (auto [it, added] = first_line.emplace(LowerCase(r.id), row.line); !added) {
      return Status::InvalidArgument(
          fmt::format("line {}: cluster {} is already on line {} (one line per cluster)", row.line, r.id, it->second));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<ClusterRecord>> ParseClusterJson(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc)) {
    return Status::InvalidArgument(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
  }
  simdjson::dom::array array;
  if (doc.get_array().get(array)) return Status::InvalidArgument("expected a JSON array of clusters");
  std::vector<ClusterRecord> out;
  std::map<std::string, size_t> first_index;  // id -> its first index
  size_t i = 0;
  for (simdjson::dom::element item : array) {
    std::string where = fmt::format("[{}]", i++);
    std::string_view id;
    if (item["id"].get_string().get(id)) return Status::InvalidArgument(where + ": 'id' must be a string");
    CINCINNATI_ASSIGN_OR_RETURN(ClusterInfo info, ClusterInfoFromJson(item, where));
    ClusterRecord r{std::string(id), std::move(info)};
    if (Status st = ValidateClusterRecord(r); !st.ok()) return st.WithContext(where);
    if (auto [it, added] = first_index.emplace(LowerCase(r.id), i - 1); !added) {
      return Status::InvalidArgument(fmt::format("{}: cluster {} is already at [{}] (one entry per cluster)", where, r.id,
                                                 it->second));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string WriteClusterCsv(const std::vector<ClusterRecord>& records) {
  std::string out = "id,customer,labels\n";
  for (const ClusterRecord& r : records) {
    std::string labels;
    for (const auto& [k, v] : r.cluster.labels) labels += (labels.empty() ? "" : ";") + k + "=" + v;
    out += CsvField(r.id) + "," + CsvField(r.cluster.customer) + "," + CsvField(labels) + '\n';
  }
  return out;
}

std::string WriteClusterJson(const std::vector<ClusterRecord>& records) {
  // One record a line: the file reads and diffs well.
  std::string out = "[";
  for (size_t i = 0; i < records.size(); ++i) {
    out += i ? ",\n " : "\n ";
    boost::json::object labels;
    for (const auto& [k, v] : records[i].cluster.labels) labels[k] = v;
    out += WriteJson(boost::json::object{
        {"id", records[i].id}, {"customer", records[i].cluster.customer}, {"labels", std::move(labels)}});
  }
  return out + (records.empty() ? "]\n" : "\n]\n");
}

// ---- reader ----

struct SqliteClusterDirectory::Connection {
  std::mutex mu;
  std::unique_ptr<sqlite::Database> db;
  std::optional<sqlite::Statement> lookup;  // goes before db
  uint64_t generation = 0;
  simdjson::dom::parser parser;
  void Close() {
    lookup.reset();
    db.reset();
  }
};

SqliteClusterDirectory::SqliteClusterDirectory(std::string path, size_t connections, size_t max_cached)
    : path_(std::move(path)), max_cached_(max_cached) {
  for (size_t i = 0; i < std::max<size_t>(1, connections); ++i) connections_.push_back(std::make_unique<Connection>());
}

SqliteClusterDirectory::~SqliteClusterDirectory() = default;

DirectoryAnswer SqliteClusterDirectory::Lookup(std::string_view raw_id) {
  std::string id = NormalizeClusterId(raw_id);
  std::optional<Signature> now;
  if (const env::FileInfo st = env::DefaultFileSystem().Stat(path_); st.exists()) {
    now = Signature{st.inode, st.size,
                    static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(st.modified.time_since_epoch()).count())};
    std::shared_lock lock(mu_);
    if (*now == signature_) {
      if (auto it = cache_.find(id); it != cache_.end()) {
        DirectoryAnswer answer = it->second;
        answer.from_cache = true;
        return answer;
      }
    }
  }
  if (now) {
    std::unique_lock lock(mu_);
    if (!(*now == signature_)) {
      if (now->inode != signature_.inode) generation_.fetch_add(1);
      signature_ = *now;
      cache_.clear();
    }
  }
  DirectoryAnswer answer = Query(id);
  // Cached under the signature seen before the query: a change since makes the next
  // lookup see a new signature and drop it.
  if (now && answer.kind != DirectoryAnswer::Kind::kFailed) {
    std::unique_lock lock(mu_);
    if (*now == signature_) {
      if (cache_.size() >= max_cached_) cache_.clear();
      cache_.emplace(id, answer);
    }
  }
  return answer;
}

DirectoryAnswer SqliteClusterDirectory::Query(const std::string& id) {
  Connection& c = *connections_[std::hash<std::thread::id>()(std::this_thread::get_id()) % connections_.size()];
  std::lock_guard<std::mutex> lock(c.mu);
  uint64_t generation = generation_.load();
  if (c.db && c.generation != generation) c.Close();
  if (!c.db) {
    // Read-only and locked by its slot's mutex; a writer holding the file makes a
    // lookup fail fast rather than hold a worker.
    const sqlite::Database::Options options{.access = sqlite::Database::Options::Access::kReadOnly,
                                            .durable = false,
                                            .shared = false,
                                            .busy_timeout = std::chrono::milliseconds(200)};
    auto db = sqlite::Database::Open(path_, "cluster database " + path_, options);
    if (!db.ok()) return DirectoryAnswer::Failed(db.status().message());
    auto lookup = (*db)->Prepare("SELECT customer, labels FROM clusters WHERE id = ?");
    if (!lookup.ok()) return DirectoryAnswer::Failed(lookup.status().message());
    c.db = std::move(db).value();
    c.lookup.emplace(std::move(lookup).value());
    c.generation = generation;
  }
  sqlite::Statement& lookup = *c.lookup;
  lookup.Reset();
  const Result<bool> row = lookup.Bind(1, id).Step();
  if (!row.ok()) {
    c.Close();  // reopen next time
    return DirectoryAnswer::Failed(row.status().message());
  }
  if (!*row) return DirectoryAnswer::Unknown();
  ClusterInfo info{lookup.Text(0), {}};
  simdjson::padded_string labels(lookup.Text(1));
  lookup.Reset();
  simdjson::dom::element element;
  if (c.parser.parse(labels).get(element)) return DirectoryAnswer::Failed(fmt::format("cluster {}: bad labels in {}", id, path_));
  auto parsed = LabelsFromJson(element, "cluster " + id);
  if (!parsed.ok()) return DirectoryAnswer::Failed(parsed.status().message());
  info.labels = std::move(parsed).value();
  return DirectoryAnswer::Found(std::move(info));
}

}  // namespace cincinnati::directory
