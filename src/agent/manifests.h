// The manifests of a release payload: reading them, deciding which
// apply to this cluster, and the order the agent applies them in.
//
// Loading: `manifests/` then `release-manifests/`, each in lexical file order, `.yaml`,
// `.yml` and `.json` files, every document of a file in order (strict YAML, see
// graph-data/yaml_document.h). `manifests/` files are templated first: the payload may
// use `{{.ReleaseImage}}`, `{{.ClusterProfile}}` and `{{index .Images "NAME"}}`; any
// other action is an error, as is a document that is not an object with `kind` and
// `metadata.name`. `release-manifests/release-metadata` and `image-references` are
// the payload's own documents, not manifests.
//
// Inclusion (the CVO's annotations): `include.release.openshift.io/<profile>` must be
// "true"; `exclude.release.openshift.io/<id>: "true"` excludes when the agent has that
// id; `release.openshift.io/feature-set` must list the cluster's feature set
// ("Default" when none); `release.openshift.io/major-version` must list the payload's
// major version. Feature gates and capabilities are all enabled here.
//
// Order for an update: run levels (`0000_<NN>_<component>_...` file names) strictly in
// order; inside a run level, components in parallel and one component's manifests in
// sequence; a `batch/v1 Job` is never reordered or run alongside anything. The agent's
// own manifests (`0000_00_cluster-version-operator_*`) therefore come first.
//
// Total: never throws; errors name the file (and document index).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "kube/json_value.h"

namespace cincinnati::agent {

using kube::JsonValue;

inline constexpr std::string_view kDefaultClusterProfile = "self-managed-high-availability";
inline constexpr std::string_view kSelfComponent = "cluster-version-operator";

struct Manifest {
  std::string file;  // relative to the payload root: "manifests/0000_50_ingress_01-co.yaml"
  size_t document = 0;  // index within the file
  JsonValue object;
  std::string api_version, kind, name, ns;
  // From the file name: run level ("00".."99") and component; empty when the name has none.
  std::string run_level, component;

  std::string Describe() const;  // "ClusterOperator ingress (manifests/...yaml#0)"
};

struct ManifestContext {
  std::string release_image;
  std::string profile = std::string(kDefaultClusterProfile);
  std::string exclude_id;  // empty: no exclude annotation applies
  std::string feature_set = "Default";
  std::map<std::string, std::string> images;  // image-references: name -> pull spec
  uint64_t major_version = 0;                 // the payload's
};

// Every manifest of the payload unpacked at `payload_dir`, included or not.
Result<std::vector<Manifest>> LoadManifests(const std::string& payload_dir, const ManifestContext& context);

// Why `manifest` is left out for this cluster, or nullopt when it applies.
std::optional<std::string> ExclusionReason(const Manifest& manifest, const ManifestContext& context);

// One step of an update: the components of one run level, each a list of indexes into
// the manifest list, applied in order; components run in parallel.
struct ApplyGroup {
  std::string run_level;
  std::vector<std::pair<std::string, std::vector<size_t>>> components;  // (component, manifests)
};

// The groups, in the order they are applied (only manifests that are included).
std::vector<ApplyGroup> PlanUpdate(const std::vector<Manifest>& manifests, const std::vector<bool>& included);

}  // namespace cincinnati::agent
