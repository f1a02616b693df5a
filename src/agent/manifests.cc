#include "agent/manifests.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <filesystem>

#include "core/strings.h"
#include "env/file_system.h"
#include "graph-data/file_reader.h"
#include "kube/yaml_json.h"

namespace cincinnati::agent {

using kube::WriteJson;
using kube::JsonArray;
using kube::FindMember;
using kube::TextOf;
namespace {

namespace fs = std::filesystem;
constexpr size_t kMaxManifestBytes = size_t{8} << 20;

// Go-template actions the CVO's payloads use; anything else is refused.
Result<std::string> RenderTemplate(const std::string& text, const ManifestContext& context, const std::string& file) {
  static const RE2 kImage(R"re(index\s+\.Images\s+"([^"]+)")re");
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) return Status::InvalidArgument(fmt::format("{}: an unclosed template action", file));
    out.append(text, pos, open - pos);
    std::string action(TrimWhitespace(std::string_view(text).substr(open + 2, close - open - 2)));
    std::string image;
    if (action == ".ReleaseImage") {
      out += context.release_image;
    } else if (action == ".ClusterProfile") {
      out += context.profile;
    } else if (RE2::FullMatch(action, kImage, &image)) {
      auto it = context.images.find(image);
      if (it == context.images.end()) {
        return Status::InvalidArgument(fmt::format("{}: image \"{}\" is not in image-references", file, image));
      }
      out += it->second;
    } else {
      return Status::InvalidArgument(fmt::format("{}: unsupported template action {{{{{}}}}}", file, action));
    }
    pos = close + 2;
  }
  out.append(text, pos);
  return out;
}

std::string TextAt(const JsonValue& object, std::initializer_list<std::string_view> path) {
  const JsonValue* v = &object;
  for (std::string_view key : path) {
    v = FindMember(*v, key);
    if (!v) return "";
  }
  return v->is_string() ? TextOf(*v) : "";
}

bool ListContains(const std::string& list, std::string_view item) {
  for (std::string_view e : Split(list, ',')) {
    if (TrimWhitespace(e) == item) return true;
  }
  return false;
}

}  // namespace

std::string Manifest::Describe() const {
  return fmt::format("{} {}{} ({}#{})", kind, ns.empty() ? "" : ns + "/", name, file, document);
}

Result<std::vector<Manifest>> LoadManifests(const std::string& payload_dir, const ManifestContext& context) {
  static const RE2 kRunLevel(R"(0000_(\d+)_([a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*?)_.*)");
  std::vector<Manifest> out;
  for (const std::string sub : {"manifests", "release-manifests"}) {
    std::vector<std::string> names;
    auto entries = env::DefaultFileSystem().ListDirectory(fs::path(payload_dir) / sub);
    if (!entries.ok()) return Status::IoError(fmt::format("{}/: {}", sub, entries.status().message()));
    for (const env::DirectoryEntry& entry : *entries) {
      if (entry.type == env::FileType::kRegular) names.push_back(entry.path.filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const std::string ext = fs::path(name).extension().string();
      if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
      const std::string file = sub + "/" + name;
      CINCINNATI_ASSIGN_OR_RETURN(std::string text, env::ReadFile(fs::path(payload_dir) / file, kMaxManifestBytes, file));
      if (sub == "manifests") {
        CINCINNATI_ASSIGN_OR_RETURN(text, RenderTemplate(text, context, file));
      }
      CINCINNATI_ASSIGN_OR_RETURN(JsonArray documents, kube::YamlDocumentsToJson(text, file));
      std::string run_level, component;
      RE2::FullMatch(name, kRunLevel, &run_level, &component);
      for (size_t i = 0; i < documents.size(); ++i) {
        const std::string what = fmt::format("{}#{}", file, i);
        JsonValue object = std::move(documents[i]);
        if (object.is_null()) continue;  // an empty document
        Manifest m{file, i, std::move(object), "", "", "", "", run_level, component};
        if (!m.object.is_object()) return Status::InvalidArgument(what + ": a manifest must be an object");
        m.api_version = TextAt(m.object, {"apiVersion"});
        m.kind = TextAt(m.object, {"kind"});
        m.name = TextAt(m.object, {"metadata", "name"});
        m.ns = TextAt(m.object, {"metadata", "namespace"});
        if (m.kind.empty()) return Status::InvalidArgument(what + ": kind is required");
        if (m.name.empty()) return Status::InvalidArgument(what + ": metadata.name is required");
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

std::optional<std::string> ExclusionReason(const Manifest& manifest, const ManifestContext& context) {
  const JsonValue* metadata = FindMember(manifest.object, "metadata");
  const JsonValue* annotations = metadata ? FindMember(*metadata, "annotations") : nullptr;
  auto annotation = [&](const std::string& key) -> std::optional<std::string> {
    const JsonValue* v = annotations ? FindMember(*annotations, key) : nullptr;
    if (!v) return std::nullopt;
    return v->is_string() ? TextOf(*v) : WriteJson(*v);
  };
  if (!context.exclude_id.empty() && annotation("exclude.release.openshift.io/" + context.exclude_id) == "true") {
    return fmt::format("excluded for {}", context.exclude_id);
  }
  const std::string include = "include.release.openshift.io/" + context.profile;
  if (annotation(include) != "true") return fmt::format("{} is not \"true\"", include);
  if (auto sets = annotation("release.openshift.io/feature-set"); sets && !ListContains(*sets, context.feature_set)) {
    return fmt::format("feature set {} is not in \"{}\"", context.feature_set, *sets);
  }
  if (auto majors = annotation("release.openshift.io/major-version");
      majors && !ListContains(*majors, std::to_string(context.major_version))) {
    return fmt::format("major version {} is not in \"{}\"", context.major_version, *majors);
  }
  return std::nullopt;
}

std::vector<ApplyGroup> PlanUpdate(const std::vector<Manifest>& manifests, const std::vector<bool>& included) {
  std::vector<ApplyGroup> groups;
  bool open = false;  // whether groups.back() may take more manifests
  for (size_t i = 0; i < manifests.size(); ++i) {
    if (i < included.size() && !included[i]) continue;
    const Manifest& m = manifests[i];
    const std::string component = m.component.empty() ? m.file : m.component;
    const bool job = m.kind == "Job" && m.api_version == "batch/v1";
    if (job || m.run_level.empty()) {
      // Alone: nothing runs alongside it, nothing moves across it.
      groups.push_back({m.run_level, {{component, {i}}}});
      open = false;
      continue;
    }
    if (!open || groups.back().run_level != m.run_level) {
      groups.push_back({m.run_level, {}});
      open = true;
    }
    auto& components = groups.back().components;
    auto it = std::find_if(components.begin(), components.end(), [&](const auto& c) { return c.first == component; });
    if (it == components.end()) {
      components.push_back({component, {i}});
    } else {
      it->second.push_back(i);
    }
  }
  return groups;
}

}  // namespace cincinnati::agent
