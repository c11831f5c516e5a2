// `tandem serve`'s request handling, end to end: each input is the bytes a
// client sends over one connection (cpp-httplib parses them; tandem's
// handlers answer), to a server over a small catalog of real files, with
// edits allowed so the people handlers run too. The server runs in this
// process, so a crash or sanitizer report in a handler is the fuzzer's; so
// is an answer with a 5xx status.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "fuzz/fuzz_util.h"
#include "gallery/server.h"
#include "image/png_encoder.h"
#include "pipeline/catalog.h"

using namespace tandem;

namespace {

// Two photos with the same content (a duplicate group), one with a face
// (so a person), tags, objects and camera metadata; and one that failed.
std::string make_catalog() {
  const auto photos = fuzz::scratch_dir() / "photos";
  std::filesystem::create_directories(photos);
  image::Image img(48, 32, 3);
  for (size_t i = 0; i < size_t(48 * 32 * 3); ++i) img.data()[i] = uint8_t(i * 7);
  const std::vector<uint8_t> png = image::encode_png(img);
  std::vector<pipeline::FileRecord> records;
  for (const char* name : {"a.png", "b.png", "bad.png"}) {
    const std::string path = (photos / name).string();
    fuzz::write_scratch(std::string("photos/") + name, png);
    const pipeline::FileStamp stamp = pipeline::file_stamp(path);
    pipeline::FileRecord r;
    r.path = path, r.size = stamp.size, r.mtime_ns = stamp.mtime_ns, r.model_id = "centernet";
    r.content_hash = "00ff00ff00ff00ff";
    r.width = 48, r.height = 32;
    r.tags = {{"dog", 0.9f}, {"person", 0.5f}};
    r.objects = {{"dog", 0.9f, {1, 2, 30, 20}}};
    r.meta.taken_at = "2021-07-04T12:00:00", r.meta.make = "Canon", r.meta.model = "EOS 5D";
    r.meta.latitude = 48.1, r.meta.longitude = 11.5;
    pipeline::FaceRecord face;
    face.score = 0.9f, face.box = {5, 5, 20, 25}, face.descriptor.assign(1024, 0.03125f);
    r.faces = {face};
    records.push_back(r);
  }
  records[2].ok = false, records[2].error_kind = "corrupt", records[2].error = "cut short";
  records[2].tags.clear(), records[2].objects.clear(), records[2].faces.clear();
  const std::string catalog = (fuzz::scratch_dir() / "gallery.sqlite").string();
  pipeline::Catalog c(catalog);
  const std::string roots[] = {photos.string()};
  c.add_roots(roots);
  c.write_and_assign(records);
  return catalog;
}

struct Served {
  std::unique_ptr<gallery::GalleryServer> server;
  std::thread thread;
};

Served& served() {
  static Served* s = [] {
    auto* s = new Served;  // lives as long as the process: the server thread never stops
    gallery::ServerOptions o;
    o.catalog = make_catalog();
    o.port = 0;
    o.allow_edits = true;
    o.threads = 2;
    o.thumbnail_root = (fuzz::scratch_dir() / "thumbnails").string();
    s->server = std::make_unique<gallery::GalleryServer>(o);
    s->thread = std::thread([s] { s->server->run(); });
    return s;
  }();
  return *s;
}

// Sends the request bytes over a fresh connection, closes the sending side
// and returns the answers, read until the server closes.
std::string exchange(std::span<const uint8_t> request) {
  std::string answers;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return answers;
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(served().server->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += size_t(n);
    }
    ::shutdown(fd, SHUT_WR);
    char buf[16384];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) answers.append(buf, size_t(n));
  }
  ::close(fd);
  return answers;
}

// A 5xx answer: the server failed where it should have refused (a 4xx) or
// answered; as much a finding as a crash.
bool has_server_error(const std::string& answers) {
  for (size_t at = answers.find("HTTP/1.1 5"); at != std::string::npos; at = answers.find("HTTP/1.1 5", at + 1))
    if (at == 0 || answers[at - 1] == '\n') return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  served();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string answers = exchange({data, size});
  if (has_server_error(answers)) {
    std::fprintf(stderr, "the server answered with a 5xx status:\n%.2000s\n", answers.c_str());
    std::abort();
  }
  return 0;
}
