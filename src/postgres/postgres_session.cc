#include "postgres/postgres_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "env/process.h"
#include "env/shared_library.h"
#include "postgres/pqxx_session.h"

namespace cincinnati::postgres {
namespace {

// Where the module may be: beside the executable (the build directory, or an install
// that keeps them together), in ../lib/cincinnati of it (an install under a prefix),
// and where this build wrote it (test programs live elsewhere in the build directory).
std::vector<std::string> ModuleCandidates() {
  const std::string self = env::SelfExecutablePath();
  const std::string dir = self.substr(0, self.rfind('/') == std::string::npos ? 0 : self.rfind('/'));
  return {dir + "/" + kPqxxModuleFile, dir + "/../lib/cincinnati/" + kPqxxModuleFile,
          std::string(CINCINNATI_MODULE_DIR) + "/" + kPqxxModuleFile};
}

// The module's factory, looked up once per process.
const Result<NewPqxxSession>& Factory() {
  static const Result<NewPqxxSession> factory = []() -> Result<NewPqxxSession> {
    Result<void*> module = env::OpenModule(ModuleCandidates());
    if (!module.ok()) return module.status();
    Result<void*> symbol = env::FindSymbol(*module, kNewPqxxSessionSymbol, kPqxxModuleFile);
    if (!symbol.ok()) return symbol.status();
    return reinterpret_cast<NewPqxxSession>(*symbol);
  }();
  return factory;
}

}  // namespace

std::string RedactedConninfo(std::string_view conninfo) {
  std::string out(conninfo);
  if (out.rfind("postgresql://", 0) == 0 || out.rfind("postgres://", 0) == 0) {
    // scheme://user:password@host...: the password is between the first ':' after the
    // scheme and the '@' that ends the user part.
    const size_t start = out.find("://") + 3;
    const size_t at = out.find('@', start);
    const size_t slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // password=... as a URL query parameter, or a keyword (spaces around '=' allowed, a
  // value in single quotes with backslash escapes).
  for (size_t at = out.find("password"); at != std::string::npos; at = out.find("password", at + 1)) {
    size_t value = at + 8;
    while (value < out.size() && out[value] == ' ') ++value;
    if (value >= out.size() || out[value] != '=') continue;
    ++value;
    while (value < out.size() && out[value] == ' ') ++value;
    size_t end = value;
    if (end < out.size() && out[end] == '\'') {
      for (++end; end < out.size() && out[end] != '\''; ++end) {
        if (out[end] == '\\') ++end;
      }
      end = std::min(out.size(), end + 1);
    } else {
      while (end < out.size() && out[end] != ' ' && out[end] != '&') ++end;
    }
    out.replace(value, end - value, "***");
  }
  return out;
}

std::string WithClientLimits(const std::string& conninfo, std::string_view application_name) {
  const std::pair<const char*, std::string> limits[] = {
      {"connect_timeout", "5"},  {"keepalives_idle", "5"},     {"keepalives_interval", "2"},
      {"keepalives_count", "2"}, {"tcp_user_timeout", "5000"}, {"application_name", std::string(application_name)}};
  const bool uri = conninfo.starts_with("postgres://") || conninfo.starts_with("postgresql://");
  std::string out = conninfo;
  for (const auto& [key, value] : limits) {
    if (conninfo.find(std::string(key) + "=") != std::string::npos) continue;
    out += uri ? fmt::format("{}{}={}", out.find('?') == std::string::npos ? '?' : '&', key, value) : fmt::format(" {}={}", key, value);
  }
  return out;
}

struct PostgresSession::Impl {
  std::unique_ptr<SessionBackend> backend;
  Status missing;  // why there is no backend: every call fails with it
};

PostgresSession::PostgresSession(std::string conninfo, std::string setup, std::string name, std::chrono::milliseconds deadline)
    : impl_(std::make_unique<Impl>()) {
  const Result<NewPqxxSession>& factory = Factory();
  if (!factory.ok()) {
    impl_->missing = Status::IoError(fmt::format("{}: PostgreSQL is not available: {}", name, factory.status().message()));
    return;
  }
  impl_->backend.reset((*factory)(kPqxxSessionInterface, conninfo, setup, name, deadline));
  if (impl_->backend == nullptr) {
    impl_->missing = Status::IoError(fmt::format("{}: {} was built from another tree than this executable; rebuild both",
                                                 name, kPqxxModuleFile));
  }
}

PostgresSession::~PostgresSession() = default;

Result<PgResult> PostgresSession::Exec(const std::string& sql, const std::vector<std::string>& params) {
  if (!impl_->backend) return impl_->missing;
  return impl_->backend->Exec(sql, params);
}

Status PostgresSession::Transaction(const std::vector<std::pair<std::string, std::vector<std::string>>>& statements) {
  if (!impl_->backend) return impl_->missing;
  return impl_->backend->Transaction(statements);
}

Status PostgresSession::InTransaction(const std::function<Status(PostgresTransaction&)>& work) {
  if (!impl_->backend) return impl_->missing;
  return impl_->backend->InTransaction(work);
}

void PostgresSession::Close() {
  if (impl_->backend) impl_->backend->Close();
}

bool PostgresSession::connected() const { return impl_->backend && impl_->backend->connected(); }

}  // namespace cincinnati::postgres
