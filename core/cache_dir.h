#pragma once
// Where tandem keeps what it measured or computed once and reuses across
// runs (cuDNN's algorithm choices, calibrated int8 models).
#include <string>

namespace tandem {

// $TANDEM_CACHE_DIR, else $XDG_CACHE_HOME/tandem (an absolute one: the XDG
// specification makes a relative one invalid), else ~/.cache/tandem; ""
// when none of them is set.
std::string cache_dir();

}  // namespace tandem
