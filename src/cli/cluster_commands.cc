// `cincinnati clusters`: manage the embedded cluster directory (a SQLite file) that a
// policy engine reads with --cluster-directory.path.
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "env/file_system.h"
#include "graph-data/file_reader.h"
#include "directory/cluster_database.h"

namespace cincinnati::cli {
namespace {

using directory::ClusterDatabase;
using directory::ClusterRecord;

struct ClusterArgs {
  std::string db = "clusters.db";
  std::string id, customer, file, format, output, customer_filter;
  std::vector<std::string> labels, remove_labels;
  bool clear_labels = false, replace = false, customer_set = false;
};

Status ApplyLabels(const ClusterArgs& a, ClusterRecord& r) {
  if (a.clear_labels) r.cluster.labels.clear();
  for (const std::string& k : a.remove_labels) r.cluster.labels.erase(k);
  for (const std::string& pair : a.labels) {
    size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) return Status::InvalidArgument(fmt::format("--label '{}': expected key=value", pair));
    r.cluster.labels[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return Status::OK();
}

std::string FormatOf(const ClusterArgs& a, const std::string& path) {
  if (!a.format.empty()) return a.format;
  return path.size() >= 5 && path.substr(path.size() - 5) == ".json" ? "json" : "csv";
}

Status Run(const std::string& action, const ClusterArgs& a) {
  bool create = action == "add" || action == "import";
  CINCINNATI_ASSIGN_OR_RETURN(std::unique_ptr<ClusterDatabase> db, ClusterDatabase::Open(a.db, create));
  if (action == "add") {
    ClusterRecord r{a.id, {a.customer, {}}};
    CINCINNATI_RETURN_IF_ERROR(ApplyLabels(a, r));
    CINCINNATI_RETURN_IF_ERROR(db->Put(r, ClusterDatabase::PutMode::kInsert));
    std::cerr << fmt::format("added cluster {} to {}\n", directory::NormalizeClusterId(a.id), a.db);
  } else if (action == "update") {
    CINCINNATI_ASSIGN_OR_RETURN(std::optional<ClusterRecord> existing, db->Get(a.id));
    if (!existing) return Status::NotFound(fmt::format("cluster {} is not in {} (use `add`)", a.id, a.db));
    if (a.customer_set) existing->cluster.customer = a.customer;
    CINCINNATI_RETURN_IF_ERROR(ApplyLabels(a, *existing));
    CINCINNATI_RETURN_IF_ERROR(db->Put(*existing, ClusterDatabase::PutMode::kUpdate));
    std::cerr << fmt::format("updated cluster {}\n", existing->id);
  } else if (action == "remove") {
    CINCINNATI_RETURN_IF_ERROR(db->Remove(a.id));
    std::cerr << fmt::format("removed cluster {}\n", directory::NormalizeClusterId(a.id));
  } else if (action == "list" || action == "export") {
    CINCINNATI_ASSIGN_OR_RETURN(std::vector<ClusterRecord> records, db->List(a.customer_filter));
    std::string format = action == "list" && a.format.empty() ? "csv" : FormatOf(a, a.output);
    if (format != "csv" && format != "json") return Status::InvalidArgument("--format must be csv or json");
    std::string text = format == "json" ? directory::WriteClusterJson(records) : directory::WriteClusterCsv(records);
    if (a.output.empty() || a.output == "-") {
      std::cout << text;
    } else {
      if (Status s = env::WriteFileDurably(a.output, text, env::DefaultFileSystem(), env::kUserFileMode); !s.ok()) {
        return Status::IoError(fmt::format("cannot write {}: {}", a.output, s.message()));
      }
      std::cerr << fmt::format("exported {} clusters to {}\n", records.size(), a.output);
    }
  } else if (action == "import") {
    std::string text;
    if (a.file == "-") {
      std::stringstream in;
      in << std::cin.rdbuf();
      text = in.str();
    } else {
      CINCINNATI_ASSIGN_OR_RETURN(text, graphdata::ReadFileToString(a.file));
    }
    std::string format = FormatOf(a, a.file);
    auto records = format == "json" ? directory::ParseClusterJson(text)
                   : format == "csv" ? directory::ParseClusterCsv(text)
                                     : Result<std::vector<ClusterRecord>>(Status::InvalidArgument("--format must be csv or json"));
    if (!records.ok()) return records.status().WithContext(a.file);
    CINCINNATI_RETURN_IF_ERROR(db->Import(*records, a.replace));
    std::cerr << fmt::format("imported {} clusters into {}{}\n", records->size(), a.db, a.replace ? " (replacing all)" : "");
  }
  return Status::OK();
}

}  // namespace

void RegisterClusterCommands(CLI::App& app, int& exit_code) {
  CLI::App* clusters = app.add_subcommand("clusters", "Manage the embedded cluster directory (customer and labels per cluster id)");
  clusters->require_subcommand(1);
  auto add = [&](const char* name, const char* help, auto configure) {
    auto args = std::make_shared<ClusterArgs>();
    CLI::App* cmd = clusters->add_subcommand(name, help);
    cmd->add_option("--db", args->db, "SQLite file of the directory")->capture_default_str();
    configure(cmd, *args);
    std::string action = name;
    cmd->callback([args, action, &exit_code] {
      Status st = Run(action, *args);
      if (!st.ok()) {
        std::cerr << "error: " << st.message() << '\n';
        exit_code = 1;
      }
    });
  };
  auto labels = [](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("--label", a.labels, "A label key=value (repeatable)");
  };
  add("add", "Add a cluster (creates the file)", [&](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("id", a.id, "Cluster id")->required();
    cmd->add_option("--customer", a.customer, "Customer owning the cluster");
    labels(cmd, a);
  });
  add("update", "Change a cluster's customer or labels", [&](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("id", a.id, "Cluster id")->required();
    cmd->add_option_function<std::string>("--customer", [&a](const std::string& v) { a.customer = v, a.customer_set = true; },
                                          "New customer");
    labels(cmd, a);
    cmd->add_option("--remove-label", a.remove_labels, "Remove this label key (repeatable)");
    cmd->add_flag("--clear-labels", a.clear_labels, "Remove every label first");
  });
  add("remove", "Remove a cluster", [&](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("id", a.id, "Cluster id")->required();
  });
  add("list", "List clusters (CSV, or --format json)", [&](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("--customer", a.customer_filter, "Only this customer's clusters");
    cmd->add_option("--format", a.format, "csv or json");
  });
  add("import", "Add or replace clusters from a CSV (id,customer,labels) or JSON file", [&](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("file", a.file, "File to read (- for stdin)")->required();
    cmd->add_option("--format", a.format, "csv or json (default: from the file name)");
    cmd->add_flag("--replace", a.replace, "Remove every cluster not in the file");
  });
  add("export", "Write every cluster as CSV or JSON", [&](CLI::App* cmd, ClusterArgs& a) {
    cmd->add_option("-o,--output", a.output, "File to write (default: stdout)");
    cmd->add_option("--format", a.format, "csv or json (default: from the file name, else csv)");
  });
}

}  // namespace cincinnati::cli
