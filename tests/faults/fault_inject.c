// LD_PRELOAD shim that injects file-system faults into one process, so a
// test can see what the program does when its disk fills up, fails, the
// process dies mid-write, or a photo changes while it is read.
//
//   TANDEM_FAULT=ACTION:BYTES:REGEX   REGEX: POSIX extended, searched in the path
//   TANDEM_FAULT_LOG=FILE             one line per injected fault (so a test
//                                     knows the fault happened)
//   TANDEM_FAULT_WITH=FILE            the new content for rewrite and replace
//
// Write actions count the bytes written to matching files (all of them
// together); the write that passes BYTES is cut there, then:
//   enospc, eio   it and every later write or fsync to a matching file fails
//                 with that errno, as a full or failing disk does;
//   kill          the process SIGKILLs itself, leaving the cut file behind.
// Two more leave the writes alone:
//   syncfail      fsync/fdatasync of a matching file fail with EIO once BYTES
//                 were written to matching files (writeback failing later);
//   count         nothing fails; the total is logged at exit ("count N"), to
//                 place a fault part way through the same run.
// Read actions act once, just before the first read from a matching file
// that reaches past BYTES (so a peek at a file's first bytes does not set
// them off, the read of the whole file does):
//   truncate      the file is cut to BYTES;
//   rewrite       the file is overwritten in place with TANDEM_FAULT_WITH's
//                 content (a sync tool or an editor saving over it);
//   replace       a copy of TANDEM_FAULT_WITH is renamed over the file (an
//                 editor's safe save): the reader keeps the old inode.
//
// Paths come from /proc/self/fd, so files opened by any means (open, fopen,
// SQLite's VFS) are covered. stdio is interposed at its own entry points
// because glibc's fwrite/fread reach the kernel without the public symbols.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum action {
  NONE,
  ENOSPC_FAULT,
  EIO_FAULT,
  KILL_FAULT,
  SYNCFAIL_FAULT,
  COUNT_ONLY,
  TRUNCATE_FAULT,
  REWRITE_FAULT,
  REPLACE_FAULT
};

static enum action g_action = NONE;
static long long g_limit;
static regex_t g_pattern;
static long long g_written;  // bytes written to matching files, atomically updated
static int g_tripped;        // a write passed the limit / the read action ran

static ssize_t (*real_write)(int, const void*, size_t);
static ssize_t (*real_pwrite)(int, const void*, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void*, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec*, int);
static ssize_t (*real_pwritev)(int, const struct iovec*, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static size_t (*real_fwrite)(const void*, size_t, size_t, FILE*);
static ssize_t (*real_read)(int, void*, size_t);
static ssize_t (*real_pread)(int, void*, size_t, off_t);
static ssize_t (*real_pread64)(int, void*, size_t, off64_t);
static size_t (*real_fread)(void*, size_t, size_t, FILE*);
static size_t (*real_fread_chk)(void*, size_t, size_t, size_t, FILE*);

#define RESOLVE(name, sym) name = dlsym(RTLD_NEXT, sym)

__attribute__((constructor)) static void fault_init(void) {
  RESOLVE(real_write, "write");
  RESOLVE(real_pwrite, "pwrite");
  RESOLVE(real_pwrite64, "pwrite64");
  RESOLVE(real_writev, "writev");
  RESOLVE(real_pwritev, "pwritev");
  RESOLVE(real_fsync, "fsync");
  RESOLVE(real_fdatasync, "fdatasync");
  RESOLVE(real_fwrite, "fwrite");
  RESOLVE(real_read, "read");
  RESOLVE(real_pread, "pread");
  RESOLVE(real_pread64, "pread64");
  RESOLVE(real_fread, "fread");
  RESOLVE(real_fread_chk, "__fread_chk");
  const char* spec = getenv("TANDEM_FAULT");
  if (!spec || !*spec) return;
  static const struct {
    const char* name;
    enum action action;
  } kNames[] = {{"enospc", ENOSPC_FAULT},     {"eio", EIO_FAULT},           {"kill", KILL_FAULT},
                {"syncfail", SYNCFAIL_FAULT}, {"count", COUNT_ONLY},        {"truncate", TRUNCATE_FAULT},
                {"rewrite", REWRITE_FAULT},   {"replace", REPLACE_FAULT}};
  const char* c1 = strchr(spec, ':');
  const char* c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  for (size_t i = 0; c2 && i < sizeof kNames / sizeof kNames[0]; ++i)
    if (strlen(kNames[i].name) == (size_t)(c1 - spec) && strncmp(spec, kNames[i].name, (size_t)(c1 - spec)) == 0)
      g_action = kNames[i].action;
  // A malformed spec must not pass for "no fault happened".
  if (g_action == NONE || regcomp(&g_pattern, c2 + 1, REG_EXTENDED | REG_NOSUB) != 0) {
    fprintf(stderr, "fault_inject: bad TANDEM_FAULT '%s' (ACTION:BYTES:REGEX)\n", spec);
    _exit(125);
  }
  g_limit = atoll(c1 + 1);
}

static int path_of(int fd, char* out, size_t size) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, size - 1);
  if (n < 0) return 0;
  out[n] = '\0';
  return 1;
}

static int matches(int fd, char* path, size_t size) {
  return g_action != NONE && fd >= 0 && path_of(fd, path, size) && regexec(&g_pattern, path, 0, NULL, 0) == 0;
}

static void note(const char* what, const char* path) {
  const char* log = getenv("TANDEM_FAULT_LOG");
  if (!log) return;
  int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[PATH_MAX + 128];
  int n = snprintf(line, sizeof line, "%s %lld %s\n", what, g_limit, path);
  if (n > 0) real_write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  close(fd);
}

__attribute__((destructor)) static void fault_report(void) {
  if (g_action != COUNT_ONLY) return;
  char total[32];
  snprintf(total, sizeof total, "%lld", __atomic_load_n(&g_written, __ATOMIC_SEQ_CST));
  note("count", total);
}

static int fault_errno(void) { return g_action == EIO_FAULT ? EIO : ENOSPC; }

static int cuts_writes(void) { return g_action == ENOSPC_FAULT || g_action == EIO_FAULT || g_action == KILL_FAULT; }

static int counts_writes(void) { return cuts_writes() || g_action == SYNCFAIL_FAULT || g_action == COUNT_ONLY; }

// How many of `n` bytes bound for `fd` may be written: n when the fault does
// not concern it, fewer (possibly 0) once the limit is reached; -1 with errno
// set when the write must fail outright.
static ssize_t allowed(int fd, size_t n, char* path, size_t path_size) {
  if (!counts_writes() || !matches(fd, path, path_size)) return (ssize_t)n;
  long long before = __atomic_fetch_add(&g_written, (long long)n, __ATOMIC_SEQ_CST);
  if (!cuts_writes() || before + (long long)n <= g_limit) return (ssize_t)n;
  long long room = before < g_limit ? g_limit - before : 0;
  if (!__atomic_exchange_n(&g_tripped, 1, __ATOMIC_SEQ_CST))
    note(g_action == KILL_FAULT ? "kill" : g_action == EIO_FAULT ? "eio" : "enospc", path);
  if (room > 0 || g_action == KILL_FAULT) return (ssize_t)room;
  errno = fault_errno();
  return -1;
}

// After a cut write: the kill, or a short count as the kernel returns one.
static ssize_t finish_cut(ssize_t done) {
  if (g_action == KILL_FAULT) kill(getpid(), SIGKILL);
  if (done == 0) {
    errno = fault_errno();
    return -1;
  }
  return done;
}

ssize_t write(int fd, const void* buf, size_t n) {
  char path[PATH_MAX];
  ssize_t ok = allowed(fd, n, path, sizeof path);
  if (ok < 0) return -1;
  if ((size_t)ok == n) return real_write(fd, buf, n);
  return finish_cut(ok ? real_write(fd, buf, (size_t)ok) : 0);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  char path[PATH_MAX];
  ssize_t ok = allowed(fd, n, path, sizeof path);
  if (ok < 0) return -1;
  if ((size_t)ok == n) return real_pwrite(fd, buf, n, off);
  return finish_cut(ok ? real_pwrite(fd, buf, (size_t)ok, off) : 0);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  char path[PATH_MAX];
  ssize_t ok = allowed(fd, n, path, sizeof path);
  if (ok < 0) return -1;
  if ((size_t)ok == n) return real_pwrite64(fd, buf, n, off);
  return finish_cut(ok ? real_pwrite64(fd, buf, (size_t)ok, off) : 0);
}

// The first `room` bytes of an iovec array, in `out` (at most 64 entries).
static int cut_iov(const struct iovec* iov, int count, size_t room, struct iovec* out) {
  int k = 0;
  for (int i = 0; i < count && room > 0 && k < 64; ++i, ++k) {
    out[k] = iov[i];
    if (out[k].iov_len > room) out[k].iov_len = room;
    room -= out[k].iov_len;
  }
  return k;
}

static size_t iov_total(const struct iovec* iov, int count) {
  size_t n = 0;
  for (int i = 0; i < count; ++i) n += iov[i].iov_len;
  return n;
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  char path[PATH_MAX];
  size_t n = iov_total(iov, count);
  ssize_t ok = allowed(fd, n, path, sizeof path);
  if (ok < 0) return -1;
  if ((size_t)ok == n) return real_writev(fd, iov, count);
  struct iovec cut[64];
  int k = cut_iov(iov, count, (size_t)ok, cut);
  return finish_cut(k ? real_writev(fd, cut, k) : 0);
}

ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t off) {
  char path[PATH_MAX];
  size_t n = iov_total(iov, count);
  ssize_t ok = allowed(fd, n, path, sizeof path);
  if (ok < 0) return -1;
  if ((size_t)ok == n) return real_pwritev(fd, iov, count, off);
  struct iovec cut[64];
  int k = cut_iov(iov, count, (size_t)ok, cut);
  return finish_cut(k ? real_pwritev(fd, cut, k, off) : 0);
}

size_t fwrite(const void* buf, size_t size, size_t count, FILE* f) {
  char path[PATH_MAX];
  if (size == 0 || count == 0) return real_fwrite(buf, size, count, f);
  ssize_t ok = allowed(fileno(f), size * count, path, sizeof path);
  if (ok < 0) return 0;
  if ((size_t)ok == size * count) return real_fwrite(buf, size, count, f);
  size_t done = real_fwrite(buf, 1, (size_t)ok, f);
  fflush(f);
  if (finish_cut((ssize_t)done) < 0) return 0;
  return done / size;
}

// A failing disk also fails the flush of what the page cache took.
static int sync_fault(int fd) {
  char path[PATH_MAX];
  if (g_action == SYNCFAIL_FAULT) {
    if (__atomic_load_n(&g_written, __ATOMIC_SEQ_CST) < g_limit || !matches(fd, path, sizeof path)) return 0;
    if (!__atomic_exchange_n(&g_tripped, 1, __ATOMIC_SEQ_CST)) note("syncfail", path);
    errno = EIO;
    return -1;
  }
  if (!cuts_writes() || !__atomic_load_n(&g_tripped, __ATOMIC_SEQ_CST) || !matches(fd, path, sizeof path))
    return 0;
  errno = fault_errno();
  return -1;
}

int fsync(int fd) { return sync_fault(fd) ? -1 : real_fsync(fd); }
int fdatasync(int fd) { return sync_fault(fd) ? -1 : real_fdatasync(fd); }

// The read actions, once, before the first read of a matching file from
// `offset` (-1: the fd's own) for `n` bytes that reaches past the limit.
static void before_read(int fd, long long offset, size_t n) {
  char path[PATH_MAX];
  if ((g_action != TRUNCATE_FAULT && g_action != REWRITE_FAULT && g_action != REPLACE_FAULT) ||
      __atomic_load_n(&g_tripped, __ATOMIC_SEQ_CST))
    return;
  int saved = errno;
  if (offset < 0) offset = lseek(fd, 0, SEEK_CUR);
  if (offset < 0 || offset + (long long)n <= g_limit || !matches(fd, path, sizeof path) ||
      __atomic_exchange_n(&g_tripped, 1, __ATOMIC_SEQ_CST)) {
    errno = saved;
    return;
  }
  if (g_action == TRUNCATE_FAULT) {
    if (truncate(path, g_limit) == 0) note("truncate", path);
  } else {
    char fresh[PATH_MAX + 16];
    snprintf(fresh, sizeof fresh, "%s.fault-new", path);
    const char* target = g_action == REWRITE_FAULT ? path : fresh;
    const char* with = getenv("TANDEM_FAULT_WITH");
    int in = with ? open(with, O_RDONLY | O_CLOEXEC) : -1;
    int out = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    char chunk[65536];
    ssize_t got;
    while (in >= 0 && out >= 0 && (got = real_read(in, chunk, sizeof chunk)) > 0) real_write(out, chunk, (size_t)got);
    int done = in >= 0 && out >= 0;
    if (in >= 0) close(in);
    if (out >= 0) close(out);
    if (done && g_action == REPLACE_FAULT) done = rename(fresh, path) == 0;
    if (done) note(g_action == REWRITE_FAULT ? "rewrite" : "replace", path);
  }
  errno = saved;
}

ssize_t read(int fd, void* buf, size_t n) {
  before_read(fd, -1, n);
  return real_read(fd, buf, n);
}

ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  before_read(fd, off, n);
  return real_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  before_read(fd, off, n);
  return real_pread64(fd, buf, n, off);
}

// What stdio buffered past its position is already in memory; the stream's
// position stands in for the fd's.
size_t fread(void* buf, size_t size, size_t count, FILE* f) {
  before_read(fileno(f), ftello(f), size * count);
  return real_fread(buf, size, count, f);
}

size_t __fread_chk(void* buf, size_t buflen, size_t size, size_t count, FILE* f) {
  before_read(fileno(f), ftello(f), size * count);
  return real_fread_chk(buf, buflen, size, count, f);
}
