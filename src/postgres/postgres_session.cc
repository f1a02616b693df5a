#include "postgres/postgres_session.h"

#include <fmt/format.h>

#include <pqxx/pqxx>

namespace cincinnati::postgres {
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

PgResult Rows(const pqxx::result& r) {
  PgResult out;
  out.affected = r.affected_rows();
  for (const auto& row : r) {
    std::vector<std::string> cells;
    for (const auto& field : row) cells.emplace_back(field.is_null() ? "" : field.c_str());
    out.rows.push_back(std::move(cells));
  }
  return out;
}

}  // namespace

struct PostgresSession::Impl {
  std::string conninfo, setup, name;
  std::unique_ptr<pqxx::connection> conn;

  template <class Work>
  Status With(Work&& work) {
    try {
      if (!conn || !conn->is_open()) {
        conn.reset();
        auto c = std::make_unique<pqxx::connection>(conninfo);
        if (!setup.empty()) {
          pqxx::nontransaction t(*c);
          t.exec(setup);
          t.commit();
        }
        conn = std::move(c);
      }
      work(*conn);
      return Status::OK();
    } catch (const pqxx::broken_connection& e) {
      conn.reset();
      return Status::IoError(fmt::format("{}: connection lost: {}", name, Trimmed(e.what())));
    } catch (const std::exception& e) {
      if (conn && !conn->is_open()) conn.reset();
      return Status::IoError(fmt::format("{}: {}", name, Trimmed(e.what())));
    }
  }
};

PostgresSession::PostgresSession(std::string conninfo, std::string setup, std::string name)
    : impl_(std::make_unique<Impl>(Impl{std::move(conninfo), std::move(setup), std::move(name), nullptr})) {}

PostgresSession::~PostgresSession() = default;

Result<PgResult> PostgresSession::Exec(const std::string& sql, const std::vector<std::string>& params) {
  PgResult out;
  CINCINNATI_RETURN_IF_ERROR(impl_->With([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    out = Rows(t.exec_params(sql, pqxx::prepare::make_dynamic_params(params)));
  }));
  return out;
}

Status PostgresSession::Transaction(const std::vector<std::pair<std::string, std::vector<std::string>>>& statements) {
  return impl_->With([&](pqxx::connection& c) {
    pqxx::work t(c);
    for (const auto& [sql, params] : statements) t.exec_params(sql, pqxx::prepare::make_dynamic_params(params));
    t.commit();
  });
}

void PostgresSession::Close() { impl_->conn.reset(); }

bool PostgresSession::connected() const {
  try {
    return impl_->conn && impl_->conn->is_open();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace cincinnati::postgres
