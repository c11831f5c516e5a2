// With TANDEM_PROFILE 0 the macros are empty: they record nothing and do not
// evaluate their arguments, even while a session runs. Reference: a call
// counter that must stay 0 and an empty collected trace.
#undef TANDEM_PROFILE
#define TANDEM_PROFILE 0

#include <gtest/gtest.h>

#include "profile/tracer.h"

namespace profile = tandem::profile;

namespace {

int g_evaluated = 0;
int evaluate() { return ++g_evaluated; }

TEST(ProfileCompiledOut, MacrosRecordAndEvaluateNothing) {
  profile::start();
  {
    TANDEM_ZONE("compiled out");
    TANDEM_ZONE_CAT("compiled out", "cat");
    TANDEM_COUNTER("compiled out", evaluate());
    TANDEM_THREAD_NAME("compiled-out-thread");
  }
  profile::stop();
  EXPECT_EQ(g_evaluated, 0);
  EXPECT_TRUE(profile::collect().tracks.empty());
}

}  // namespace
