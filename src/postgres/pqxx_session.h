// The half of PostgresSession (postgres_session.h) that uses libpqxx, built as a module
// of its own, libcincinnati_pqxx.so, that the executable opens the first time a session
// is made. Why: libpqxx links libpq, which links Kerberos, LDAP, SASL and GnuTLS;
// loaded at start they cost every process of the executable about 3 ms, and most
// commands never open a database.
//
// The boundary: NewPqxxSession (looked up by kNewPqxxSessionSymbol) makes a
// SessionBackend, which does what PostgresSession's contract says (the call watchdog,
// reconnection after a failure, libpqxx's exceptions turned into Status). Objects of
// the project's types (std::string, Status, std::function) cross it: the module and the
// executable are built together, by one compiler, from one tree, and
// kPqxxSessionInterface changes whenever this header does, so a stale module is
// refused rather than misread.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "postgres/postgres_session.h"

namespace cincinnati::postgres {

class SessionBackend {
 public:
  virtual ~SessionBackend() = default;
  virtual Result<PgResult> Exec(const std::string& sql, const std::vector<std::string>& params) = 0;
  virtual Status Transaction(const std::vector<std::pair<std::string, std::vector<std::string>>>& statements) = 0;
  virtual Status InTransaction(const std::function<Status(PostgresTransaction&)>& work) = 0;
  virtual void Close() = 0;
  virtual bool connected() const = 0;
};

inline constexpr int kPqxxSessionInterface = 1;
inline constexpr char kNewPqxxSessionSymbol[] = "cincinnati_new_pqxx_session";
inline constexpr char kPqxxModuleFile[] = "libcincinnati_pqxx.so";

// nullptr when `interface` is not the module's kPqxxSessionInterface.
using NewPqxxSession = SessionBackend* (*)(int interface, const std::string& conninfo, const std::string& setup,
                                           const std::string& name, std::chrono::milliseconds deadline);

}  // namespace cincinnati::postgres
