#include "pipeline/thumbnails.h"

#include <fcntl.h>
#include <nettle/md5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/error.h"
#include "image/decode.h"
#include "image/png_decoder.h"
#include "image/png_encoder.h"
#include "image/resize.h"
#include "pipeline/catalog.h"
#include "pipeline/sql.h"

namespace tandem::pipeline {

namespace {

// Larger than any 256-pixel PNG; a bigger file is not a thumbnail.
constexpr int64_t kMaxThumbnailBytes = 4 << 20;

// The sizes the standard names (the longer side, in pixels), largest first:
// each is made from the one before, not from the whole decode again.
constexpr std::pair<const char*, int> kFlavors[] = {{"large", kLargeThumbnailSide},
                                                    {"normal", kLargeThumbnailSide / 2}};

// `pixels` fitted into side x side, never enlarged.
image::Image fitted(const image::Image& pixels, int side) {
  const double scale = std::min(1.0, double(side) / double(std::max(pixels.width, pixels.height)));
  const int w = std::max(1, int(pixels.width * scale + 0.5)), h = std::max(1, int(pixels.height * scale + 0.5));
  if (w == pixels.width && h == pixels.height) return pixels;  // the GPU fitted it already
  return image::resize_image(pixels, w, h, image::ResampleFilter::bilinear);
}

// GLib's unreserved set for paths (gconvert.c's UNSAFE_PATH): what
// g_filename_to_uri leaves as it is.
bool unreserved_in_path(unsigned char c) {
  if (std::isalnum(c) && c < 0x80) return true;
  return std::strchr("!$&'()*+,-./:=@_~", c) != nullptr && c != 0;
}

// mkdir -p with mode 0700 for what it creates (the standard's rule); 0, or
// the errno of the folder that cannot be had.
int make_private_dirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p(dir);
  std::filesystem::path built;
  for (const auto& part : p) {
    built /= part;
    if (std::filesystem::is_directory(built, ec)) continue;
    if (::mkdir(built.c_str(), 0700) != 0 && errno != EEXIST) return errno;
  }
  return std::filesystem::is_directory(p, ec) ? 0 : ENOTDIR;
}

// Writes `bytes` to `path` through a temporary file in the same folder and
// a rename, mode 0600, so a reader never sees half a PNG; 0, or the errno
// of the step that failed (the temporary file is gone then).
int write_private_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tandem-" + std::to_string(::getpid()) + "-" +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  int err = 0;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += size_t(n);
  }
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) ::unlink(tmp.c_str());
  return err;
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return (ec ? std::filesystem::path(path) : p).lexically_normal().string();
}

}  // namespace

std::string file_uri(const std::string& absolute_path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (unsigned char c : absolute_path) {
    if (unreserved_in_path(c)) {
      uri.push_back(char(c));
    } else {
      uri.push_back('%');
      uri.push_back(kHex[c >> 4]);
      uri.push_back(kHex[c & 15]);
    }
  }
  return uri;
}

std::string md5_hex(const std::string& text) {
  md5_ctx ctx;
  md5_init(&ctx);
  md5_update(&ctx, text.size(), reinterpret_cast<const uint8_t*>(text.data()));
  uint8_t digest[MD5_DIGEST_SIZE];
  md5_digest(&ctx, sizeof digest, digest);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : digest) out += {kHex[b >> 4], kHex[b & 15]};
  return out;
}

namespace {

// The standard's name for the thumbnail of the file at `uri`.
std::string thumbnail_file_name(const std::string& uri) { return md5_hex(uri) + ".png"; }

}  // namespace

std::string default_thumbnail_root() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/thumbnails";
  const char* home = std::getenv("HOME");
  return std::string(home && home[0] ? home : "/tmp") + "/.cache/thumbnails";
}

std::string catalog_thumbnail_folder(const std::string& catalog) {
  if (!sql::is_postgres_url(catalog)) return catalog + ".thumbnails";
  const std::string cache = std::filesystem::path(default_thumbnail_root()).parent_path().string();
  return cache + "/tandem/catalog-" + md5_hex(catalog) + ".thumbnails";
}

ThumbnailStore::ThumbnailStore(std::string root, std::string fallback)
    : root_(std::move(root)), fallback_(std::move(fallback)) {}

struct ThumbnailStore::Thumb {
  const char* flavor;
  image::Image pixels;
};

void ThumbnailStore::write(const std::string& path, int64_t mtime_ns, int64_t size, const image::Image& pixels) {
  check(pixels.width > 0 && pixels.height > 0, "thumbnail of " + path + ": no pixels");
  const std::string uri = file_uri(absolute(path));
  const std::string name = thumbnail_file_name(uri);
  const int full_w = pixels.full_width > 0 ? pixels.full_width : pixels.width;
  const int full_h = pixels.full_height > 0 ? pixels.full_height : pixels.height;
  std::vector<Thumb> thumbs;
  for (const auto& [flavor, side] : kFlavors)
    thumbs.push_back({flavor, fitted(thumbs.empty() ? pixels : thumbs.back().pixels, side)});
  std::string refused;  // why the shared cache did not take it
  if (!fallback_in_use_) {
    try {
      write_all(root_, root_ready_, thumbs, uri, name, mtime_ns, size, full_w, full_h);
      ++written_;
      return;
    } catch (const Error& e) {
      refused = e.what();
      fallback_in_use_ = true;  // the shared cache refused: the fallback folder takes this and the rest
    }
  }
  try {
    write_all(fallback_, fallback_ready_, thumbs, uri, name, mtime_ns, size, full_w, full_h);
  } catch (const Error& e) {
    throw Error("thumbnail of " + path + ": " + e.what() + (refused.empty() ? "" : "; " + refused));
  }
  ++written_;
}

void ThumbnailStore::write_all(const std::string& base, std::atomic<bool>& ready, const std::vector<Thumb>& thumbs,
                               const std::string& uri, const std::string& name, int64_t mtime_ns, int64_t size,
                               int full_w, int full_h) {
  if (!ready) {
    for (const Thumb& t : thumbs)
      if (const int err = make_private_dirs(base + "/" + t.flavor))
        throw Error("cannot create " + base + "/" + t.flavor + ": " + std::strerror(err));
    ready = true;
  }
  for (const Thumb& t : thumbs) {
    const std::string file = base + "/" + t.flavor + "/" + name;
    const std::vector<uint8_t> png =
        image::encode_png(t.pixels, {{"Thumb::URI", uri},
                                     {"Thumb::MTime", std::to_string(mtime_ns / 1000000000)},
                                     {"Thumb::Size", std::to_string(size)},
                                     {"Thumb::Image::Width", std::to_string(full_w)},
                                     {"Thumb::Image::Height", std::to_string(full_h)},
                                     {"Software", "tandem"}},
                          1);
    if (const int err = write_private_file(file, png))
      throw Error("cannot write the thumbnail " + file + ": " + std::strerror(err));
  }
}

std::optional<std::vector<uint8_t>> ThumbnailStore::current(const std::string& path, int64_t mtime_ns,
                                                           bool large) const {
  const std::string uri = file_uri(absolute(path));
  const std::string name = std::string(large ? "large" : "normal") + "/" + thumbnail_file_name(uri);
  const std::string mtime = std::to_string(mtime_ns / 1000000000);
  for (const std::string& base : {root_, fallback_}) {
    std::vector<uint8_t> png;
    try {
      png = image::read_file_bytes(base + "/" + name, kMaxThumbnailBytes);
      bool uri_ok = false, mtime_ok = false;
      for (const auto& [key, value] : image::read_png_text(png, base + "/" + name)) {
        uri_ok = uri_ok || (key == "Thumb::URI" && value == uri);
        mtime_ok = mtime_ok || (key == "Thumb::MTime" && value == mtime);
      }
      if (uri_ok && mtime_ok) return png;
    } catch (const Error&) {
      // Absent, unreadable or not a PNG: not a current thumbnail.
    }
  }
  return std::nullopt;
}

bool ThumbnailStore::has(const std::string& path, int64_t mtime_ns) const {
  const std::string name = thumbnail_file_name(file_uri(absolute(path)));
  const auto written_since = [&](const std::string& file) {
    const std::optional<FileStamp> stamp = file_stamp_if_any(file);
    return stamp && stamp->mtime_ns >= mtime_ns;
  };
  for (const std::string& base : {root_, fallback_}) {
    bool all = true;
    for (const auto& [flavor, side] : kFlavors) all = all && written_since(base + "/" + flavor + "/" + name);
    if (all) return true;
  }
  return false;
}

}  // namespace tandem::pipeline
