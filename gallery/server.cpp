#include "gallery/server.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "gallery/catalog_view.h"
#include "gallery/fifo_gate.h"
#include "gallery/photo_files.h"
#include "gallery/web_assets.h"
#include "image/decode.h"
#include "pipeline/catalog.h"

namespace tandem::gallery {

using nlohmann::json;

namespace {

// Nothing the page sends is larger: a name, two ids.
constexpr size_t kMaxBody = 64 * 1024;
// A photo larger than this is not served (the tagger refuses such files too).
constexpr int64_t kMaxPhotoBytes = int64_t(1) << 30;

void send_json(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(json_text(j), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, json{{"error", message}}, status);
}

bool equal_in_constant_time(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0);
  return diff == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A request path naming a parent folder in any spelling, a backslash or a
// NUL is refused before routing, whatever route it would reach.
bool hostile_path(const httplib::Request& req) {
  const std::string raw = lower(req.target.substr(0, req.target.find('?')));
  for (const char* bad : {"..", "%2e", "%2f", "%5c", "%00", "\\"})
    if (raw.find(bad) != std::string::npos) return true;
  return req.path.find("..") != std::string::npos || req.path.find('\0') != std::string::npos;
}

// A Host header's name without its port ("[::1]:8080" -> "[::1]").
std::string host_name(const std::string& host) {
  const size_t colon = host.rfind(':');
  const size_t bracket = host.rfind(']');
  const bool has_port = colon != std::string::npos && (bracket == std::string::npos ? host.find('[') == std::string::npos
                                                                                     : bracket < colon);
  return has_port ? host.substr(0, colon) : host;
}

bool is_page_file(const std::string& path) {
  if (path == "/" || path == "/data.js") return true;
  return path.size() > 1 && path.find('/', 1) == std::string::npos && find_web_asset(path.substr(1)) != nullptr;
}

int64_t id_of(const httplib::Request& req) {
  const std::string& s = req.matches[1];
  check(s.size() <= 18, "id out of range");
  return std::stoll(s);
}

const char* browser_type(image::ImageFormat f) {
  switch (f) {
    case image::ImageFormat::jpeg: return "image/jpeg";
    case image::ImageFormat::png: return "image/png";
    case image::ImageFormat::webp: return "image/webp";
    default: return nullptr;
  }
}

}  // namespace

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

struct GalleryServer::State {
  ServerOptions o;
  httplib::Server http;
  int port = 0;

  // Reads of the catalog run `readers` at once, the others wait their turn.
  std::unique_ptr<FifoGate> reads;
  // One read-only view per read in flight; made on demand, kept.
  std::mutex views_mu;
  std::vector<std::unique_ptr<CatalogView>> idle_views;
  std::string model;  // fixed at start, so every view shows the same photos

  // summary() reads the whole catalog: kept until another connection commits.
  std::mutex summary_mu;
  std::unique_ptr<CatalogView> summary_view;
  int64_t summary_version = -1;
  std::string summary_json;

  std::mutex edit_mu;  // one edit at a time through a writing connection
  std::unique_ptr<PhotoFiles> files;

  class View {
   public:
    explicit View(State& s) : s_(s), pass_(*s.reads) {
      std::lock_guard lock(s_.views_mu);
      if (!s_.idle_views.empty()) {
        v_ = std::move(s_.idle_views.back());
        s_.idle_views.pop_back();
      }
      if (!v_) v_ = std::make_unique<CatalogView>(s_.o.catalog, s_.model);
    }
    ~View() {
      std::lock_guard lock(s_.views_mu);
      s_.idle_views.push_back(std::move(v_));
    }
    CatalogView* operator->() { return v_.get(); }

   private:
    State& s_;
    FifoGate::Pass pass_;  // taken first, let go last
    std::unique_ptr<CatalogView> v_;
  };

  void routes();
  httplib::Server::HandlerResponse guard(const httplib::Request& req, httplib::Response& res);
  void serve_summary(httplib::Response& res);
  void serve_file(const httplib::Request& req, httplib::Response& res, bool thumbnail);
  void edit(const httplib::Request& req, httplib::Response& res, const std::function<void(pipeline::Catalog&, const json&)>& fn);
};

GalleryServer::GalleryServer(ServerOptions o) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.o = std::move(o);
  check(!s.o.bind.empty() && (is_loopback(s.o.bind) || !s.o.token.empty()),
        "serving on " + s.o.bind + " (not loopback) needs --token: anyone who can reach it could read the catalog");
  check(s.o.port >= 0 && s.o.port <= 65535, "--port must be 0..65535");
  check(s.o.threads >= 1 && s.o.threads <= 1024, "--threads must be 1..1024");
  check(s.o.readers >= 0 && s.o.readers <= 256, "--readers must be 0..256");
  // Two reads per core by default: with one, a read waiting on the OS (a
  // page of the file, a stat of a photo) left its core idle, 15% of the
  // CPU under load; with two, 25% more pages/s at a lower p99 (2 cores).
  s.reads = std::make_unique<FifoGate>(
      s.o.readers > 0 ? s.o.readers : 2 * int(std::max(1u, std::thread::hardware_concurrency())));
  // Migrates an older catalog in place (and refuses a newer one or another
  // program's file) before any read-only connection opens it.
  { pipeline::Catalog migrate(s.o.catalog); }
  auto first = std::make_unique<CatalogView>(s.o.catalog, s.o.model);
  s.model = first->model();
  const std::vector<std::string> roots = first->roots();
  s.idle_views.push_back(std::move(first));
  s.summary_view = std::make_unique<CatalogView>(s.o.catalog, s.model);
  s.files = std::make_unique<PhotoFiles>(roots, s.o.catalog, s.o.thumbnail_root);

  const int threads = s.o.threads;
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  s.http.set_payload_max_length(kMaxBody);
  // Small answers go out at once, not after Nagle's delayed-ACK wait (44 ms
  // a request on loopback without this).
  s.http.set_tcp_nodelay(true);
  s.http.set_read_timeout(10, 0);
  s.http.set_write_timeout(30, 0);
  int listening = -1;
  s.http.set_socket_options([&listening](socket_t sock) {
    httplib::default_socket_options(sock);
    listening = sock;  // the last one made is the one bound
  });
  s.routes();
  if (s.o.port == 0) {
    s.port = s.http.bind_to_any_port(s.o.bind);
    check(s.port > 0, "cannot listen on " + s.o.bind);
  } else {
    check(s.http.bind_to_port(s.o.bind, s.o.port), fmt::format("cannot listen on {}:{} (in use?)", s.o.bind, s.o.port));
    s.port = s.o.port;
  }
  // httplib listens with a queue of 5 connections: 32 clients connecting at
  // once overflowed it, and each connection dropped waited for TCP to
  // retry (its first page took 200-240 ms). Listening again on the socket
  // widens the queue to the system's limit.
  if (listening >= 0 && ::listen(listening, SOMAXCONN) != 0)
    std::fprintf(stderr,
                 "tandem serve: cannot widen the connection queue (%s); clients connecting at once "
                 "may wait\n",
                 std::strerror(errno));
}

GalleryServer::~GalleryServer() = default;

int GalleryServer::port() const { return s_->port; }

void GalleryServer::run() {
  // The summary reads the whole catalog (a second or more at a million
  // photos): made while the first page loads, not when it asks.
  std::thread warm([this] {
    try {
      httplib::Response ignored;
      s_->serve_summary(ignored);
    } catch (const std::exception&) {
      // The request that asks for it reports the error.
    }
  });
  s_->http.listen_after_bind();
  warm.join();
}

void GalleryServer::stop() { s_->http.stop(); }

httplib::Server::HandlerResponse GalleryServer::State::guard(const httplib::Request& req, httplib::Response& res) {
  using R = httplib::Server::HandlerResponse;
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
                 "connect-src 'self'; frame-ancestors 'none'");
  // cpp-httplib compresses with Brotli at its highest quality when the
  // browser accepts it: 63 ms for app.js against 1.4 ms plain. Offering it
  // gzip alone keeps compression at zlib's speed. (The request is the
  // server's own object; only the handler's view of it is const.)
  if (std::string enc = req.get_header_value("Accept-Encoding"); enc.find("br") != std::string::npos) {
    auto& headers = const_cast<httplib::Request&>(req).headers;
    headers.erase("Accept-Encoding");
    if (enc.find("gzip") != std::string::npos) headers.emplace("Accept-Encoding", "gzip");
  }
  if (hostile_path(req)) {
    send_error(res, 400, "path refused");
    return R::Handled;
  }
  if (is_loopback(o.bind)) {
    // A page on another site can make a browser send requests here under a
    // name that resolves to 127.0.0.1 (DNS rebinding); the Host header
    // still names that site, so only this machine's own names pass.
    if (!is_loopback(host_name(req.get_header_value("Host")))) {
      send_error(res, 403, "Host not allowed");
      return R::Handled;
    }
  }
  // The page's own files hold no data, and a browser asks for them before
  // the page can send the token.
  if (!o.token.empty() && !is_page_file(req.path)) {
    std::string given = req.get_header_value("X-Tandem-Token");
    if (given.empty() && req.has_param("token")) given = req.get_param_value("token");
    if (!equal_in_constant_time(given, o.token)) {
      send_error(res, 401, "token required");
      return R::Handled;
    }
  }
  return R::Unhandled;
}

void GalleryServer::State::serve_summary(httplib::Response& res) {
  std::lock_guard lock(summary_mu);
  const int64_t version = summary_view->data_version();
  if (version != summary_version || summary_json.empty()) {
    json j = summary_view->summary();
    j["edits"] = o.allow_edits;
    j["static"] = false;
    summary_json = json_text(j);
    summary_version = version;
  }
  res.set_content(summary_json, "application/json");
}

void GalleryServer::State::serve_file(const httplib::Request& req, httplib::Response& res, bool thumbnail) {
  std::optional<PhotoFile> f = View(*this)->photo_file(id_of(req));
  if (!f) return send_error(res, 404, "no such photo");
  std::string real;
  FileAccess access = files->check(*f, &real);
  if (access == FileAccess::outside_roots) {
    files->set_roots(View(*this)->roots());  // `tag` may have added a folder since
    access = files->check(*f, &real);
  }
  if (access == FileAccess::missing) return send_error(res, 404, "the photo is missing or changed since it was tagged");
  if (access == FileAccess::outside_roots) return send_error(res, 403, "the photo lies outside the catalog's folders");
  if (thumbnail) {
    const std::string size = req.has_param("size") ? req.get_param_value("size") : "normal";
    if (size != "normal" && size != "large") return send_error(res, 400, "size: normal or large");
    std::vector<uint8_t> png;
    try {
      png = files->thumbnail(*f, real, size == "large");
    } catch (const Error& e) {
      return send_error(res, 422, e.what());
    }
    res.set_header("Cache-Control", "private, max-age=3600");
    res.set_content(std::string(png.begin(), png.end()), "image/png");
    return;
  }
  std::vector<uint8_t> bytes = image::read_file_bytes(real, kMaxPhotoBytes);
  const char* type = browser_type(image::sniff_format(bytes));
  if (!type) return send_error(res, 415, "browsers do not show this format; see its large thumbnail");
  res.set_header("Cache-Control", "private, max-age=3600");
  res.set_content(std::string(bytes.begin(), bytes.end()), type);
}

void GalleryServer::State::edit(const httplib::Request& req, httplib::Response& res,
                                const std::function<void(pipeline::Catalog&, const json&)>& fn) {
  if (!o.allow_edits) return send_error(res, 403, "read-only: start tandem serve with --allow-edits");
  // A cross-site form can post text/plain but not application/json without
  // a preflight this server never grants.
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0)
    return send_error(res, 415, "send application/json");
  json body = json::parse(req.body, nullptr, false);
  if (!body.is_object()) return send_error(res, 400, "the body is not a JSON object");
  try {
    std::lock_guard lock(edit_mu);
    pipeline::Catalog c(o.catalog);
    fn(c, body);
  } catch (const json::exception& e) {
    return send_error(res, 400, std::string("bad request: ") + e.what());
  }
  send_json(res, json{{"ok", true}});
}

void GalleryServer::State::routes() {
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return guard(req, res); });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const Error& e) {
      send_error(res, 400, e.what());
    } catch (const std::exception& e) {
      send_error(res, 500, e.what());
    } catch (...) {
      send_error(res, 500, "unknown error");
    }
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) send_error(res, res.status, res.status == 404 ? "not found" : "refused");
  });
  for (const WebAsset& a : web_assets()) {
    const std::string route = std::string(a.name) == "index.html" ? "/" : std::string("/") + a.name;
    http.Get(route, [&a](const httplib::Request&, httplib::Response& res) {
      res.set_content(reinterpret_cast<const char*>(a.data), a.size, a.content_type);
    });
  }
  // The static gallery's data; served, the page asks the API instead.
  http.Get("/data.js", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("// served: the page reads /api\n", "text/javascript; charset=utf-8");
  });
  http.Get("/api/summary", [this](const httplib::Request&, httplib::Response& res) { serve_summary(res); });
  // A view (and its turn at the catalog) is held for the reads alone, not
  // while the answer is written out.
  http.Get("/api/photos", [this](const httplib::Request& req, httplib::Response& res) {
    const PhotoQuery q = parse_photo_query(req.params);
    json page = View(*this)->photos(q);
    send_json(res, page);
  });
  http.Get(R"(/api/photo/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    json p = View(*this)->photo(id_of(req));
    if (p.is_null()) return send_error(res, 404, "no such photo");
    send_json(res, p);
  });
  http.Get("/api/people", [this](const httplib::Request&, httplib::Response& res) {
    json people = View(*this)->people();
    send_json(res, people);
  });
  http.Get("/api/duplicates", [this](const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> after;
    if (req.has_param("cursor") && !req.get_param_value("cursor").empty()) after = req.get_param_value("cursor");
    int limit = 30;
    if (req.has_param("limit")) {
      QueryParams p{{"limit", req.get_param_value("limit")}};
      limit = parse_photo_query(p).limit;
    }
    json groups = View(*this)->duplicates(after, limit);
    send_json(res, groups);
  });
  http.Post(R"(/api/people/(\d+)/name)", [this](const httplib::Request& req, httplib::Response& res) {
    const int64_t id = id_of(req);
    edit(req, res, [id](pipeline::Catalog& c, const json& body) {
      const std::string name = body.at("name").get<std::string>();
      check(name.size() <= 200, "a name of at most 200 bytes");
      c.name_person(id, name);
    });
  });
  http.Post("/api/people/merge", [this](const httplib::Request& req, httplib::Response& res) {
    edit(req, res, [](pipeline::Catalog& c, const json& body) {
      c.merge_people(body.at("into").get<int64_t>(), body.at("from").get<int64_t>());
    });
  });
  http.Get(R"(/thumb/(\d+))", [this](const httplib::Request& req, httplib::Response& res) { serve_file(req, res, true); });
  http.Get(R"(/photo/(\d+))", [this](const httplib::Request& req, httplib::Response& res) { serve_file(req, res, false); });
}

}  // namespace tandem::gallery
