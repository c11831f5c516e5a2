// `tandem serve CATALOG`: the gallery over a catalog in a browser
// (gallery/server.h, docs/GALLERY.md), until Ctrl-C or SIGTERM.
#include <fmt/core.h>

#include <csignal>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "gallery/server.h"

namespace tandem::cli {

namespace {

int serve(const gallery::ServerOptions& o) {
  // The signals go to a thread that waits for them (blocked here before
  // the server's threads start, so they inherit the mask), which stops the
  // server cleanly: no work in a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  gallery::GalleryServer server(o);
  const std::string host = o.bind.find(':') != std::string::npos ? "[" + o.bind + "]" : o.bind;
  fmt::print("tandem: serving {} at http://{}:{}/{}{}\n", o.catalog, host, server.port(),
             o.token.empty() ? "" : "#token=…", o.allow_edits ? " (edits allowed)" : " (read-only)");
  std::fflush(stdout);
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    server.stop();
  });
  server.run();
  // run() also returns when listening fails; wake the waiter either way.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<gallery::ServerOptions>();
  CLI::App* sub = app.add_subcommand("serve", "Browse a catalog in a web browser: photos, tags, people, places");
  sub->add_option("catalog", o->catalog, "The catalog tag --catalog wrote: a SQLite file or a postgresql:// URL")
      ->required()
      ->check(existing_catalog());
  sub->add_option("--bind", o->bind, "Address to listen on; other than loopback needs --token")->capture_default_str();
  sub->add_option("--port", o->port, "Port (0: any free one)")->capture_default_str();
  sub->add_option("--token", o->token, "A secret every request must carry (open http://HOST:PORT/#token=SECRET)");
  sub->add_flag("--allow-edits", o->allow_edits, "Let the page name and merge people (written to the catalog)");
  sub->add_option("--model", o->model, "The model whose results to show (default: the one with the most files)");
  sub->add_option("--threads", o->threads, "Connections served at once")->capture_default_str();
  sub->add_option("--readers", o->readers,
                  "Catalog reads at once, the others queued in order (0: two per core)")
      ->capture_default_str();
  on_run(sub, [o] { return serve(*o); });
}

}  // namespace tandem::cli
