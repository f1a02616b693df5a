// env::SharedLibrary and OpenModule: a library opened on first use gives its symbols,
// and one that cannot be opened says which, with the package that provides it.
#include "env/shared_library.h"

#include <gtest/gtest.h>

#include <string>

namespace cincinnati::env {
namespace {

TEST(SharedLibraryTest, OpensOnFirstUseAndFindsASymbol) {
  static SharedLibrary zlib("libz.so.1", "zlib1g");
  EXPECT_FALSE(zlib.opened());
  Result<void*> version = zlib.Find("zlibVersion");
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_TRUE(zlib.opened());
  const auto zlib_version = reinterpret_cast<const char* (*)()>(*version);
  EXPECT_EQ(std::string(zlib_version()).substr(0, 2), "1.");
  Result<void*> missing = zlib.Find("no_such_function_in_zlib");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("libz.so.1 has no no_such_function_in_zlib"), std::string::npos)
      << missing.status().message();
}

TEST(SharedLibraryTest, ALibraryThatCannotBeOpenedNamesItselfAndItsPackage) {
  static SharedLibrary absent("libcincinnati-absent.so.7", "cincinnati-absent7");
  Result<void*> found = absent.Find("anything");
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("cannot load libcincinnati-absent.so.7 (Debian package cincinnati-absent7"),
            std::string::npos)
      << found.status().message();
  EXPECT_FALSE(absent.opened());
}

// A function of such a library has no error of its own to return: the process says
// why and ends with status 1 (a broken installation), instead of calling through null.
TEST(SharedLibraryDeathTest, RequireOfAMissingLibraryEndsTheProcessSayingWhy) {
  static SharedLibrary absent("libcincinnati-absent.so.7", "cincinnati-absent7");
  EXPECT_EXIT(absent.Require("anything"), testing::ExitedWithCode(1),
              "broken installation: cannot load libcincinnati-absent.so.7 \\(Debian package cincinnati-absent7");
}

TEST(SharedLibraryTest, OpenModuleTriesEveryPathInOrderAndNamesThemAll) {
  Result<void*> none = OpenModule({"/nonexistent/a/libx.so", "/nonexistent/b/libx.so"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("/nonexistent/a/libx.so"), std::string::npos) << none.status().message();
  EXPECT_NE(none.status().message().find("/nonexistent/b/libx.so"), std::string::npos) << none.status().message();
  Result<void*> zlib = OpenModule({"/nonexistent/a/libz.so.1", "libz.so.1"});
  ASSERT_TRUE(zlib.ok()) << zlib.status().ToString();
  EXPECT_TRUE(FindSymbol(*zlib, "zlibVersion", "libz.so.1").ok());
  EXPECT_FALSE(FindSymbol(*zlib, "no_such_symbol", "libz.so.1").ok());
}

}  // namespace
}  // namespace cincinnati::env
