// Raw graph construction: releases in, the graph builder's graph out.
//
// Every release becomes a concrete node (version with its architecture as build
// metadata). Then, per release, each `previous` entry P (with the release's build)
// gives P -> release and each `next` entry N gives release -> N; a version named but
// not released becomes an abstract node. Two releases with one version string but
// different manifest digests fail the build; the same digest twice is deduplicated.
// Any cycle fails the build, naming the versions on it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/metadata_keys.h"
#include "core/release_metadata.h"
#include "core/semver.h"

namespace cincinnati {

struct Release {
  Version version;  // build metadata is exactly the architecture
  std::string payload;
  Metadata metadata;
  std::vector<Version> previous;
  std::vector<Version> next;
};

// Applies what the scraper does to a parsed document once read: the manifest digest and
// arch go into metadata, the version's build metadata becomes exactly the arch.
Release MakeRelease(ReleaseMetadata document, std::string_view arch, std::string_view digest,
                    std::string payload, std::string_view manifestref_key = kManifestRefKey);

Result<Graph> BuildRawGraph(const std::vector<Release>& releases,
                            std::string_view manifestref_key = kManifestRefKey);
// The same, moving each release's payload and metadata into its node.
Result<Graph> BuildRawGraph(std::vector<Release>&& releases,
                            std::string_view manifestref_key = kManifestRefKey);

}  // namespace cincinnati
