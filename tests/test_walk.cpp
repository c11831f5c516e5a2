// The input walk over a scratch tree built here: nested folders, links,
// loops, broken and unreadable entries, files whose name lies about their
// content. References: the tree as built (paths, sizes, mtimes set with
// utimensat) and the formats' magic numbers (JPEG/PNG from real files:
// darknet's photos and a MATE background; WebP/HEIF headers as their
// specifications lay them out).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "image_test_util.h"
#include "pipeline/walk.h"

using namespace tandem::pipeline;
using tandem::image::testing::photo_path;
using tandem::image::testing::ScratchDir;
using tandem::image::testing::write_bytes;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPngPhoto = "/usr/share/backgrounds/mate/abstract/Spring.png";

void write_text(const fs::path& p, const std::string& s) { write_bytes(p, s.data(), s.size()); }

void set_mtime(const fs::path& p, int64_t sec, int64_t nsec) {
  const struct timespec times[2] = {{sec, nsec}, {sec, nsec}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0) << p;
}

std::vector<std::string> paths_of(const WalkResult& r) {
  std::vector<std::string> v;
  for (const auto& f : r.files) v.push_back(f.path);
  return v;
}

const WalkedFile* find_file(const WalkResult& r, const std::string& path) {
  for (const auto& f : r.files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::string reason_for(const WalkResult& r, const std::string& path) {
  for (const auto& p : r.problems) {
    if (p.path == path) return p.reason;
  }
  return "(no problem reported)";
}

// True when this process reads files whatever their permissions (root, or
// CAP_DAC_OVERRIDE in a container): then "permission denied" cannot happen.
bool permissions_bypassed(const fs::path& locked) { return ::access(locked.c_str(), R_OK) == 0; }

}  // namespace

TEST(Walk, NestedTreeSortedWithKindsSizesAndMtimes) {
  const ScratchDir scratch;
  const fs::path root = scratch.path / "photos";
  fs::create_directories(root / "2021" / "summer" / "beach");
  fs::create_directories(root / "2020");
  fs::copy_file(photo_path("dog"), root / "2021" / "summer" / "beach" / "dog.jpg");
  fs::copy_file(photo_path("eagle"), root / "2020" / "IMG_10.JPG");
  fs::copy_file(photo_path("kite"), root / "2020" / "IMG_9.jpeg");
  fs::copy_file(kPngPhoto, root / "2021" / "really_png.jpg");  // wrong extension
  write_bytes(root / "2021" / "still.webp", "RIFF\x24\x00\x00\x00WEBPVP8 ", 16);
  write_bytes(root / "2021" / "phone.heic", "\0\0\0\x18" "ftypheic\0\0\0\0", 16);
  write_bytes(root / "2021" / "zero.jpg", "", 0);
  write_text(root / "notes.txt", "shot list\n");
  set_mtime(root / "2020" / "IMG_10.JPG", 1'600'000'000, 123'456'789);

  const WalkResult r = walk({root.string()});
  const std::string p = root.string() + "/";
  const std::vector<std::string> want = {
      p + "2020/IMG_10.JPG",  p + "2020/IMG_9.jpeg",  p + "2021/phone.heic",
      p + "2021/really_png.jpg", p + "2021/still.webp", p + "2021/summer/beach/dog.jpg",
      p + "2021/zero.jpg",    p + "notes.txt"};
  EXPECT_EQ(paths_of(r), want);
  EXPECT_TRUE(r.problems.empty()) << r.problems[0].path << ": " << r.problems[0].reason;
  EXPECT_TRUE(r.duplicates.empty());

  const WalkedFile* eagle = find_file(r, p + "2020/IMG_10.JPG");
  ASSERT_NE(eagle, nullptr);
  EXPECT_EQ(eagle->kind, FileKind::jpeg);
  EXPECT_EQ(eagle->size, int64_t(fs::file_size(photo_path("eagle"))));
  EXPECT_EQ(eagle->mtime_ns, 1'600'000'000'123'456'789);
  EXPECT_EQ(find_file(r, p + "2021/really_png.jpg")->kind, FileKind::png);
  EXPECT_EQ(find_file(r, p + "2021/still.webp")->kind, FileKind::webp);
  EXPECT_EQ(find_file(r, p + "2021/phone.heic")->kind, FileKind::heif);
  EXPECT_EQ(find_file(r, p + "2021/zero.jpg")->kind, FileKind::empty);
  EXPECT_EQ(find_file(r, p + "2021/zero.jpg")->size, 0);
  EXPECT_EQ(find_file(r, p + "notes.txt")->kind, FileKind::other);
  EXPECT_FALSE(find_file(r, p + "notes.txt")->is_image());
  EXPECT_TRUE(find_file(r, p + "2021/phone.heic")->is_image());
  EXPECT_STREQ(kind_name(FileKind::webp), "webp");

  // The same tree walked again gives the same list; a trailing slash on the
  // root does not double it in the paths.
  EXPECT_EQ(paths_of(walk({root.string()})), want);
  EXPECT_EQ(paths_of(walk({root.string() + "/"})), want);
}

TEST(Walk, LinksLoopsAndBrokenEntriesAreReportedNotFatal) {
  const ScratchDir scratch;
  const fs::path root = scratch.path / "tree";
  fs::create_directories(root / "a" / "b");
  fs::create_directories(scratch.path / "outside");
  fs::copy_file(photo_path("dog"), root / "a" / "dog.jpg");
  fs::copy_file(photo_path("horses"), scratch.path / "outside" / "horses.jpg");
  fs::create_directory_symlink("..", root / "a" / "b" / "up");             // loop to an ancestor
  fs::create_directory_symlink("../../../outside", root / "a" / "b" / "ext");  // outside the root: walked
  fs::create_symlink("dog.jpg", root / "a" / "z_link_to_dog.jpg");          // same file again
  fs::create_hard_link(root / "a" / "dog.jpg", root / "a" / "hard.jpg");    // same inode, another name
  fs::create_symlink("nowhere.jpg", root / "broken.jpg");
  fs::create_symlink("self", root / "self");  // a link to itself: ELOOP
  ASSERT_EQ(::mkfifo((root / "pipe").c_str(), 0600), 0);

  const WalkResult r = walk({root.string(), (scratch.path / "missing").string(), root.string() + "/a"});
  const std::string p = root.string() + "/";
  // hard.jpg sorts before z_link_to_dog.jpg but after dog.jpg: dog.jpg is kept.
  EXPECT_EQ(paths_of(r), (std::vector<std::string>{p + "a/b/ext/horses.jpg", p + "a/dog.jpg"}));
  ASSERT_EQ(r.duplicates.size(), 3u);
  EXPECT_EQ(r.duplicates[0].path, p + "a/hard.jpg");
  EXPECT_EQ(r.duplicates[0].same_as, p + "a/dog.jpg");
  EXPECT_EQ(r.duplicates[1].path, p + "a/z_link_to_dog.jpg");
  EXPECT_EQ(r.duplicates[2].path, p + "a");  // the third root: a folder already walked
  EXPECT_EQ(r.duplicates[2].same_as, p + "a");

  EXPECT_NE(reason_for(r, p + "a/b/up").find("symlink loop: leads back to " + p + "a"), std::string::npos)
      << reason_for(r, p + "a/b/up");
  EXPECT_NE(reason_for(r, p + "broken.jpg").find("broken symbolic link"), std::string::npos);
  EXPECT_NE(reason_for(r, p + "self").find("symlink loop"), std::string::npos);
  EXPECT_NE(reason_for(r, p + "pipe").find("not a regular file (a named pipe)"), std::string::npos);
  EXPECT_EQ(reason_for(r, (scratch.path / "missing").string()), "not found");
  EXPECT_EQ(r.problems.size(), 5u);
}

TEST(Walk, FileRootsAndEmptyRoot) {
  const ScratchDir scratch;
  fs::copy_file(photo_path("person"), scratch.path / "one.jpg");
  const WalkResult r = walk({(scratch.path / "one.jpg").string(), ""});
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].path, (scratch.path / "one.jpg").string());
  EXPECT_EQ(r.files[0].kind, FileKind::jpeg);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].reason.find("not found"), std::string::npos);
}

// Needs a process that permissions apply to; as root (or with
// CAP_DAC_OVERRIDE) it is skipped, since nothing is unreadable then.
TEST(Walk, UnreadableFolderAndFileAreReported) {
  const ScratchDir scratch;
  const fs::path root = scratch.path / "tree";
  fs::create_directories(root / "locked");
  fs::copy_file(photo_path("dog"), root / "locked" / "hidden.jpg");
  fs::copy_file(photo_path("dog"), root / "secret.jpg");
  fs::copy_file(photo_path("kite"), root / "visible.jpg");
  fs::permissions(root / "locked", fs::perms::none);
  fs::permissions(root / "secret.jpg", fs::perms::none);
  const bool bypassed = permissions_bypassed(root / "secret.jpg");
  const WalkResult r = walk({root.string()});
  fs::permissions(root / "locked", fs::perms::owner_all);  // so the scratch folder can be removed
  if (bypassed) GTEST_SKIP() << "this process reads files whatever their permissions (root?)";

  const std::string p = root.string() + "/";
  EXPECT_EQ(paths_of(r), std::vector<std::string>{p + "visible.jpg"});
  EXPECT_EQ(reason_for(r, p + "locked"), "permission denied");
  EXPECT_EQ(reason_for(r, p + "secret.jpg"), "permission denied");
}
