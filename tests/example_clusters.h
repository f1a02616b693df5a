// The ocp-4x example's cluster directory (examples/ocp-4x/clusters.csv) for service
// tests: acme's cluster is entitled to the example's hotfix, globex's is not.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "directory/cluster_database.h"
#include "test_util.h"

namespace cincinnati::testing {

inline const std::string kAcmeCluster = "0b4f6b0e-6f62-4a3c-9f3e-1d2c3b4a5f60";    // customer acme: sees the hotfix
inline const std::string kGlobexCluster = "7c9e6679-7425-40de-944b-e07fc1f90ae7";  // does not

// `dir`/clusters.db holding the example's clusters; its path.
inline std::string ImportExampleClusters(const std::filesystem::path& dir) {
  const std::string db = (dir / "clusters.db").string();
  auto opened = directory::ClusterDatabase::Open(db, true);
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  auto records = directory::ParseClusterCsv(ReadFile(Examples() / "ocp-4x" / "clusters.csv"));
  EXPECT_TRUE(records.ok()) << records.status().message();
  if (opened.ok() && records.ok()) {
    EXPECT_TRUE((*opened)->Import(*records, true).ok());
  }
  return db;
}

}  // namespace cincinnati::testing
