#include <gtest/gtest.h>

#include "core/cache_dir.h"
#include "tests/scoped_env.h"

namespace tandem {
namespace {

using testing::ScopedEnv;

TEST(CacheDir, FromTheEnvironment) {
  {
    ScopedEnv dir("TANDEM_CACHE_DIR", "/somewhere/tandem-cache");
    EXPECT_EQ(cache_dir(), "/somewhere/tandem-cache");
  }
  ScopedEnv no_dir("TANDEM_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg/cache");
    EXPECT_EQ(cache_dir(), "/xdg/cache/tandem");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");  // invalid by the XDG spec: ignored
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(cache_dir(), "/home/someone/.cache/tandem");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    EXPECT_EQ(cache_dir(), "");
  }
}

}  // namespace
}  // namespace tandem
