#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "builder/pipeline.h"
#include "cli/commands.h"
#include "core/error_document.h"
#include "core/graph_json.h"
#include "core/graph_records.h"
#include "core/strings.h"
#include "env/clock.h"
#include "graph-data/file_reader.h"
#include "graph-data/time_format.h"
#include "policy/arch_filter.h"
#include "policy/channel_filter.h"
#include "policy/phased_rollout.h"

namespace cincinnati::cli {

CLI::Validator ErrorClassList() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        for (std::string_view item : Split(value, ',')) {
          auto c = graphdata::ParseErrorClass(TrimWhitespace(item));
          if (!c.ok()) return std::string(c.status().message());
        }
        return {};
      },
      "");
}

Result<int64_t> InstantOrNow(const std::string& at) {
  if (at.empty()) return env::UnixSeconds(env::RealClock());
  auto t = graphdata::ParseDateTime(at);
  if (!t.ok()) return t.status().WithContext("--at");
  return *t;
}

CLI::Validator InstantValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto t = graphdata::ParseDateTime(value);
        return t.ok() ? std::string() : t.status().message();
      },
      "");
}

CLI::Validator UnsignedValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        return digits ? std::string() : "'" + value + "' is not a non-negative integer";
      },
      "");
}

Result<Graph> BuildLocalInputs(const std::string& releases, const std::string& graph_data) {
  LocalBuildOptions options;
  options.releases = releases;
  options.graph_data = graph_data;
  TransformContext build;
  return BuildLocalGraph(options, build);
}

void PrintDiagnostics(const Diagnostics& diagnostics, bool include_info) {
  for (const Diagnostic& d : diagnostics.items()) {
    const char* label = d.severity == Diagnostic::Severity::kError     ? "error"
                        : d.severity == Diagnostic::Severity::kWarning ? "warning"
                                                                       : "info";
    if (d.severity == Diagnostic::Severity::kInfo && !include_info) continue;
    if (d.location.empty()) {
      std::cerr << label << ": " << d.message << '\n';
    } else {
      std::cerr << label << ": " << d.location << ": " << d.message << '\n';
    }
  }
}

namespace {

struct BuildArgs {
  std::string releases;
  std::string registry, registry_repository;
  std::string graph_data, graph_data_image, graph_data_git, graph_data_cache, graph_data_public_keys, graph_data_signatures;
  std::vector<std::string> disallowed;
  std::string key_prefix = std::string(kDefaultKeyPrefix);
  std::string default_arch = "amd64";
  std::string repository = "localhost/openshift/release";
  bool node_remove = false;
  bool quiet = false;
};

int RunBuild(const BuildArgs& args) {
  LocalBuildOptions options;
  options.releases = args.releases;
  if (!args.registry.empty()) {
    RegistrySourceSettings r;
    r.registry = args.registry;
    r.repository = args.registry_repository;
    options.registry = r;
  } else if (args.releases.empty()) {
    std::cerr << "error: give --releases or --registry\n";
    return 2;
  }
  // The services' graph-data sources, from the same flags.
  Settings sources;
  const std::pair<const char*, const std::string*> given[] = {
      {"graph_data", &args.graph_data},
      {"graph_data_image", &args.graph_data_image},
      {"graph_data_git", &args.graph_data_git},
      {"graph_data_cache", &args.graph_data_cache},
      {"graph_data_public_keys", &args.graph_data_public_keys},
      {"graph_data_signatures", &args.graph_data_signatures}};
  for (const auto& [key, value] : given) {
    if (!value->empty()) sources.Set(key, *value);
  }
  if (args.graph_data.empty() && args.graph_data_image.empty() && args.graph_data_git.empty()) {
    std::cerr << "error: give --graph-data, --graph-data-image or --graph-data-git\n";
    return 2;
  }
  if (Status st = SetGraphDataSources(sources, options); !st.ok()) {
    std::cerr << "error: " << st.message() << '\n';
    return 2;
  }
  // A one-off build serves no /graph-data: no tarball of a local directory (the
  // services keep one; writing it here cost a third of the command's time).
  options.graph_data_tarball_directory.clear();
  options.release_options.default_arch = args.default_arch;
  options.release_options.repository = args.repository;
  options.secondary_metadata.key_prefix = args.key_prefix;
  options.edge_add_remove.key_prefix = args.key_prefix;
  options.node_remove = args.node_remove;
  for (const std::string& name : args.disallowed) {
    auto c = graphdata::ParseErrorClass(name);
    if (!c.ok()) {
      std::cerr << "error: --disallowed-errors: " << c.status().message() << '\n';
      return 2;
    }
    options.secondary_metadata.disallowed_errors.insert(*c);
  }
  TransformContext context;
  auto graph = BuildLocalGraph(options, context);
  if (!args.quiet) PrintDiagnostics(context.diagnostics, false);
  if (!graph.ok()) {
    std::cerr << "error: " << graph.status().message() << '\n';
    return 1;
  }
  std::cout << WriteServedGraphJson(*graph, nullptr, {args.key_prefix}) << '\n';  // what the graph builder serves
  // The process ends right after: its memory goes with it, not freed node by node
  // (a few percent of the command). A global keeps it reachable for leak checkers.
  [[maybe_unused]] static const Graph* finished_graph = new Graph(std::move(graph).value());
  return 0;
}

struct FilterArgs {
  std::optional<std::string> channel;
  std::optional<std::string> arch;
  std::string file;
};

int RunFilter(const FilterArgs& args) {
  std::string text;
  if (args.file.empty() || args.file == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto read = graphdata::ReadFileToString(args.file);
    if (!read.ok()) {
      std::cerr << "error: " << read.status().message() << '\n';
      return 1;
    }
    text = std::move(read).value();
  }
  auto graph = ReadGraphJson(text);
  if (!graph.ok()) {
    std::cerr << "error: " << (args.file.empty() ? "<stdin>" : args.file) << ": " << graph.status().message() << '\n';
    return 1;
  }
  TransformContext context;
  if (args.channel) context.parameters.emplace("channel", *args.channel);
  if (args.arch) context.parameters.emplace("arch", *args.arch);
  TransformChain chain;
  chain.push_back(std::make_unique<policy::ChannelFilter>());
  chain.push_back(std::make_unique<policy::ArchFilter>());
  TakeGraphRecords(*graph);  // a policy engine never passes a graph builder's records on
  auto view = RunChain(chain, std::move(graph).value(), context);
  if (!view.ok()) {
    ErrorDocument doc = ErrorDocument::FromStatus(view.status());
    std::cerr << "error: " << doc.kind << ": " << doc.value << '\n';
    return 1;
  }
  std::cout << WriteGraphJson(*view, {.schema_version = 1}) << '\n';
  return 0;
}

}  // namespace

void RegisterGraphCommands(CLI::App& app, int& exit_code) {
  CLI::App* graph = app.add_subcommand("graph", "Build, filter or draw update graphs");
  graph->require_subcommand(1);

  auto build_args = std::make_shared<BuildArgs>();
  CLI::App* build = graph->add_subcommand(
      "build", "Print the graph builder's graph (JSON) for releases plus graph-data");
  build->add_option("--releases", build_args->releases,
                    "Graph JSON file, or directory of release-metadata documents");
  build->add_option("--registry", build_args->registry,
                    "Scrape releases from this registry instead (e.g. quay.io, http://127.0.0.1:5000)");
  build->add_option("--repository", build_args->registry_repository, "Repository of the releases (with --registry)")
      ->default_val("openshift-release-dev/ocp-release");
  build->add_option("--graph-data", build_args->graph_data, "Graph-data directory")->check(CLI::ExistingDirectory);
  build->add_option("--graph-data-image", build_args->graph_data_image,
                    "Graph-data container image (REGISTRY/REPO:TAG) instead of a directory")
      ->type_name("IMAGE");
  build->add_option("--graph-data-git", build_args->graph_data_git,
                    "Graph-data git repository URL[#BRANCH|#COMMIT] instead of a directory")
      ->type_name("URL");
  build->add_option("--graph-data-cache", build_args->graph_data_cache, "Where a graph-data image or clone is kept")
      ->type_name("PATH");
  build->add_option("--graph-data-public-keys", build_args->graph_data_public_keys,
                    "Verify the graph-data image's signature with these keys")
      ->type_name("PATH");
  build->add_option("--graph-data-signatures", build_args->graph_data_signatures,
                    "Signature store (URL or directory) for the graph-data image");
  build->add_option("--disallowed-errors", build_args->disallowed, kDisallowedErrorsHelp)
      ->delimiter(',')
      ->type_name("LIST")
      ->check(ErrorClassList());
  build->add_option("--key-prefix", build_args->key_prefix, "Metadata key prefix")->capture_default_str();
  build->add_option("--default-arch", build_args->default_arch,
                    "Architecture of release documents whose version has no +arch")->capture_default_str();
  build->add_option("--payload-repository", build_args->repository,
                    "Repository named in synthesized payloads of release documents")->capture_default_str();
  build->add_flag("--node-remove", build_args->node_remove, "Also drop releases marked <prefix>.release.remove=true");
  build->add_flag("-q,--quiet", build_args->quiet, "Do not print warnings");
  build->callback([build_args, &exit_code] { exit_code = RunBuild(*build_args); });

  auto filter_args = std::make_shared<FilterArgs>();
  CLI::App* filter = graph->add_subcommand(
      "filter", "Print the policy-engine view (channel, arch) of a graph builder's graph");
  filter->add_option("--channel", filter_args->channel, "Channel to serve (e.g. stable-4.13)");
  filter->add_option("--arch", filter_args->arch, "Architecture (default amd64)");
  filter->add_option("file", filter_args->file, "Graph JSON file (default: standard input)");
  filter->callback([filter_args, &exit_code] { exit_code = RunFilter(*filter_args); });
  AddGraphRender(graph, exit_code);
}

}  // namespace cincinnati::cli
