#pragma once
// `tandem serve`: the gallery's HTTP server over one catalog. The JSON API
// and the page are docs/GALLERY.md; this is who may ask what. Safe by
// default: loopback only unless a token guards it, files only by the
// catalog's row ids and only from within the folders `tag` was given,
// read-only connections unless edits are allowed, bounded requests.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tandem::gallery {

struct ServerOptions {
  std::string catalog;
  std::string model;               // empty: the model with the most files
  std::string bind = "127.0.0.1";  // any other address requires `token`
  int port = 8080;                 // 0: any free port
  std::string token;               // a secret every request must carry
  bool allow_edits = false;        // naming and merging people from the page
  // Connections served at once: a browser keeps several open, and each
  // holds a thread while it stays open.
  int threads = 64;
  // Catalog reads at once, in arrival order (FifoGate); 0: two per core.
  int readers = 0;
  std::string thumbnail_root;      // the freedesktop cache; empty: the default
};

class GalleryServer {
 public:
  // Checks the options and the catalog (migrating an older one in place),
  // then binds; throws Error with the reason when it cannot.
  explicit GalleryServer(ServerOptions o);
  ~GalleryServer();
  GalleryServer(const GalleryServer&) = delete;
  GalleryServer& operator=(const GalleryServer&) = delete;

  int port() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  void run();
  void stop();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Whether `host` names this machine's loopback (127.0.0.0/8, ::1,
// "localhost"), where only local programs can connect.
bool is_loopback(const std::string& host);

}  // namespace tandem::gallery
