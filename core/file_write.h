#pragma once
// Replacing a file so that nobody sees half of it: every layer that writes
// a result file (checkpoints, sidecars, exports, profiles) goes through it.
#include <functional>
#include <ostream>
#include <string>

namespace tandem {

// Replaces `path` with `bytes` so that a reader (or a crash) sees either the
// old file or the whole new one, never a part: writes a hidden temp file in the
// same folder, fsyncs it, renames it over `path`. A process killed before the
// rename leaves that temp file (.NAME.tandem-PID-N.tmp) behind, never a
// truncated `path`. New files get 0666 less the umask. Throws Error naming
// `path` and the reason (strerror) on any failure (the temp file is removed).
void write_file_atomically(const std::string& path, const std::string& bytes);
// The same for content too large to hold as one string (a trace of
// millions of events): `write` streams it into the temp file.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace tandem
