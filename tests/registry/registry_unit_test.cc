#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "registry/client.h"
#include "registry/credentials.h"
#include "registry/manifest.h"
#include "registry/layer.h"
#include "registry/reference.h"

namespace cincinnati::registry {
namespace {

// Dockercfg lookups, from the most specific key; malformed "auth" is a named error
// (fuzzing found "====" made the decoder size its output negative).
TEST(DockerCredentialsTest, MostSpecificKeyAndMalformedAuth) {
  auto loc = ParseRepositoryLocation("quay.io", "openshift-release-dev/ocp-release").value();
  auto found = FindDockerCredentials(
      R"({"auths":{"quay.io":{"auth":"YTpi"},"quay.io/openshift-release-dev":{"auth":"dXNlcjpwYXNz"}}})", loc, "cfg");
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->username, "user");
  EXPECT_EQ(found->password, "pass");
  for (const char* auth : {"====", "YTpi===", "!!!!", "YWJj"}) {
    auto bad = FindDockerCredentials(std::string(R"({"auths":{"quay.io":{"auth":")") + auth + R"("}}})", loc, "cfg");
    ASSERT_FALSE(bad.ok()) << auth;
    EXPECT_TRUE(bad.status().message().find("base64") != std::string::npos ||
                bad.status().message().find("user:password") != std::string::npos) << bad.status().message();
  }
  EXPECT_FALSE(FindDockerCredentials("{\"auths\":", loc, "cfg").ok());
  EXPECT_TRUE(FindDockerCredentials("{}", loc, "cfg")->empty());
}

// What a registry sends, parsed without I/O: the scrape reads the last list entry.
TEST(ManifestParseTest, ImageManifestListAndTags) {
  auto image = ParseImageManifest(
      R"({"config":{"digest":"sha256:c","size":7},"layers":[{"digest":"sha256:bottom","size":-1},)"
      R"({"digest":"sha256:top","size":42},{"size":1}]})");
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->config, (Descriptor{"sha256:c", 7}));
  EXPECT_EQ(image->layers_top_first, (std::vector<Descriptor>{{"sha256:top", 42}, {"sha256:bottom", std::nullopt}}));
  EXPECT_EQ(ParseImageManifest(R"({"layers":[]})").status().message(), "manifest has no config digest");
  auto one = ParseManifestList(R"({"manifests":[{"digest":"sha256:a","platform":{"architecture":"arm64"}}]})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->arch, "arm64");
  auto many = ParseManifestList(R"({"manifests":[{"digest":"sha256:a"},{"digest":"sha256:b"}]})");
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->digest, "sha256:b");
  EXPECT_EQ(many->arch, "multi");
  EXPECT_EQ(ParseManifestList(R"({"manifests":[]})").status().message(), "manifest list has no entries");
  EXPECT_EQ(ParseTagList(R"({"tags":["a",1,"b"]})").value(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ParseTagList(R"({"tags":null})")->empty());
  EXPECT_FALSE(ParseTagList("<html>").ok());
  EXPECT_EQ(ParseTokenResponse(R"({"access_token":"t"})").value(), "t");
  EXPECT_FALSE(ParseTokenResponse(R"({"token":5})").ok());
}

// The reference's registry URL parsing table (from its unit tests): hosts x schemes x ports x paths.
TEST(RepositoryLocationTest, ReferenceTable) {
  for (const char* host : {"127.0.0.1", "localhost", "quay.io", "sat-r220-02.lab.eng.rdu2.redhat.com"}) {
    for (const char* scheme : {"", "http://", "https://"}) {
      for (const char* port : {"", ":8080"}) {
        for (const char* path : {"", "/", "/ns1/ns2"}) {
          std::string registry = std::string(scheme) + host + port + path;
          auto loc = ParseRepositoryLocation(registry, "repo");
          ASSERT_TRUE(loc.ok()) << registry;
          std::string host_port = std::string(host) + port;
          bool insecure = std::string(scheme) == "http://";
          EXPECT_EQ(loc->insecure, insecure) << registry;
          EXPECT_EQ(loc->host_port, host_port) << registry;  // pull specs carry no scheme
          EXPECT_EQ(loc->PullSpecPrefix().find("://"), std::string::npos) << registry;
          EXPECT_EQ(loc->base_url, (insecure ? "http://" : "https://") + host_port) << registry;
          EXPECT_EQ(loc->repository, std::string(path) == "/ns1/ns2" ? "ns1/ns2/repo" : "repo") << registry;
        }
      }
    }
  }
  EXPECT_FALSE(ParseRepositoryLocation("ftp://quay.io", "repo").ok());
  EXPECT_EQ(ParseRepositoryLocation("quay.io", "openshift-release-dev/ocp-release")->PullSpecPrefix(),
            "quay.io/openshift-release-dev/ocp-release");
}

TEST(ImageReferenceTest, TagsDigestsAndPorts) {
  auto a = ParseImageReference("http://127.0.0.1:5000/ns/release:4.1.0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->location.host_port, "127.0.0.1:5000");
  EXPECT_TRUE(a->location.insecure);
  EXPECT_EQ(a->location.base_url, "http://127.0.0.1:5000");
  EXPECT_EQ(a->location.repository, "ns/release");
  EXPECT_EQ(a->tag, "4.1.0");
  EXPECT_EQ(a->reference(), "4.1.0");
  auto b = ParseImageReference("quay.io/openshift-release-dev/ocp-release@sha256:abc");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->digest, "sha256:abc");
  EXPECT_TRUE(b->tag.empty());
  auto c = ParseImageReference("localhost:5000/repo");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->tag.empty());
  EXPECT_EQ(c->location.host_port, "localhost:5000");
  EXPECT_FALSE(ParseImageReference("no-slash").ok());
}

TEST(LayerTest, RoundTripAndDeterminism) {
  auto layer = MakeLayer({{"release-manifests/release-metadata", "{\"a\":1}"}, {"release-manifests/x.yaml", "x: 1"}});
  ASSERT_TRUE(layer.ok());
  auto again = MakeLayer({{"release-manifests/release-metadata", "{\"a\":1}"}, {"release-manifests/x.yaml", "x: 1"}});
  EXPECT_EQ(layer->gzip, again->gzip);  // same bytes, same digest
  EXPECT_EQ(layer->diff_id.rfind("sha256:", 0), 0u);
  auto file = ReadFileFromLayer(layer->gzip, "./release-manifests//release-metadata");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(file->has_value());
  EXPECT_EQ(**file, "{\"a\":1}");
  auto missing = ReadFileFromLayer(layer->gzip, "release-manifests/other");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  EXPECT_FALSE(ReadFileFromLayer("definitely not gzip", "a").ok());
  EXPECT_FALSE(ReadFileFromLayer(layer->gzip.substr(0, layer->gzip.size() / 2), "release-manifests/x.yaml").ok());
}

TEST(LayerTest, ExtractAppliesWhiteoutsAllowListAndRefusesEscapes) {
  namespace fs = std::filesystem;
  auto lower = MakeLayer({{"channels/a.yaml", "a"}, {"channels/b.yaml", "b"}, {"README.md", "no"}, {"version", "1.0.0"}});
  auto upper = MakeLayer({{"channels/.wh.a.yaml", ""}, {"channels/.wh..wh..opq", ""}, {"version", "1.1.0"}});
  ASSERT_TRUE(lower.ok() && upper.ok());
  fs::path dest = fs::temp_directory_path() / ("cincinnati-extract-" + std::to_string(::getpid()));
  fs::remove_all(dest);
  auto keep = [](const std::string& path, bool) { return path != "README.md"; };
  ASSERT_TRUE(ExtractLayer(lower->gzip, dest.string(), keep).ok());
  ASSERT_TRUE(ExtractLayer(upper->gzip, dest.string(), keep).ok());
  EXPECT_FALSE(fs::exists(dest / "channels/a.yaml"));  // whited out by the upper layer
  EXPECT_TRUE(fs::exists(dest / "channels/b.yaml"));   // the opaque marker is ignored, as upstream
  EXPECT_FALSE(fs::exists(dest / "README.md"));        // not allow-listed
  auto entries = DirectoryEntries(dest.string());
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[1].path, "version");
  EXPECT_EQ((*entries)[1].content, "1.1.0");
  auto escape = MakeLayer({{"../outside", "x"}});
  ASSERT_TRUE(escape.ok());
  EXPECT_FALSE(ExtractLayer(escape->gzip, dest.string(), keep).ok());
  EXPECT_FALSE(fs::exists(dest.parent_path() / "outside"));
  fs::remove_all(dest);
}

TEST(LayerTest, EmptyDirectoriesTravelWhenKept) {
  namespace fs = std::filesystem;
  auto layer = MakeLayer({{"blocked-edges", "", true},
                          {"channels", "", true},
                          {"channels/a.yaml", "name: a\nversions: []\n"},
                          {"scratch", "", true}});
  ASSERT_TRUE(layer.ok());
  fs::path dest = fs::temp_directory_path() / ("cincinnati-extract-dirs-" + std::to_string(::getpid()));
  fs::remove_all(dest);
  std::vector<std::string> asked_directories;
  auto keep = [&](const std::string& path, bool directory) {
    if (directory) asked_directories.push_back(path);
    return !directory || path != "scratch";
  };
  ASSERT_TRUE(ExtractLayer(layer->gzip, dest.string(), keep).ok());
  EXPECT_EQ(asked_directories, (std::vector<std::string>{"blocked-edges", "channels", "scratch"}));
  EXPECT_TRUE(fs::is_directory(dest / "blocked-edges"));
  EXPECT_TRUE(fs::is_empty(dest / "blocked-edges"));
  EXPECT_TRUE(fs::exists(dest / "channels/a.yaml"));
  EXPECT_FALSE(fs::exists(dest / "scratch"));  // not kept

  // Read back from disk: directories only when asked for, in path order.
  auto files = DirectoryEntries(dest.string());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 1u);
  auto all = DirectoryEntries(dest.string(), true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].path, "blocked-edges");
  EXPECT_TRUE((*all)[0].directory);
  EXPECT_EQ((*all)[2].path, "channels/a.yaml");
  EXPECT_FALSE((*all)[2].directory);

  // A directory entry where a lower layer left a file is an error, not a crash.
  auto clash = MakeLayer({{"version", "1"}});
  auto over = MakeLayer({{"version/x", "", true}});
  ASSERT_TRUE(clash.ok() && over.ok());
  ASSERT_TRUE(ExtractLayer(clash->gzip, dest.string(), keep).ok());
  EXPECT_FALSE(ExtractLayer(over->gzip, dest.string(), keep).ok());
  fs::remove_all(dest);
}

TEST(DigestTest, Verification) {
  EXPECT_EQ(Sha256Digest(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_TRUE(VerifyDigest("", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_FALSE(VerifyDigest("x", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_FALSE(VerifyDigest("", "md5:abc"));
}

}  // namespace
}  // namespace cincinnati::registry
