// XMP sidecars, read back with the exiv2 command-line tool (the reference):
// keywords land in Xmp.dc.subject, a user's keywords and other properties
// survive tandem's rewrites, the photo is never touched.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"
#include "pipeline/xmp_sidecar.h"
#include "temp_dir.h"

using namespace tandem;
using namespace tandem::pipeline;
using tandem::testing::capture_command;
using tandem::testing::shell_quote;
using tandem::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const char* kDarknetDog = "/usr/share/darknet/data/dog.jpg";

// exiv2's reading of one property: its values, comma-separated.
std::string exiv2_value(const std::string& file, const std::string& key) {
  int status = 0;
  std::string out = capture_command("exiv2 -q -K " + key + " -Pv " + shell_quote(file), &status);
  EXPECT_TRUE(status == 0 || out.empty()) << key;
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// What darktable writes for a photo the user rated and gave two keywords.
const char* kDarktableSidecar = R"(<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:darktable="http://darktable.sf.net/"
   xmp:Rating="4"
   darktable:xmp_version="5">
   <dc:subject>
    <rdf:Bag>
     <rdf:li>holiday</rdf:li>
     <rdf:li>dog</rdf:li>
    </rdf:Bag>
   </dc:subject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
)";

}  // namespace

TEST(XmpSidecar, NewSidecarHoldsTheKeywordsAndThePhotoIsUntouched) {
  if (!fs::exists(kDarknetDog)) GTEST_SKIP() << "darknet sample photos not installed";
  TempDir dir("xmp");
  std::string photo = dir.file("IMG 1, \"dog\".jpg");
  fs::copy_file(kDarknetDog, photo);
  struct stat before {};
  ASSERT_EQ(::stat(photo.c_str(), &before), 0);
  std::string bytes = read_all(photo);

  std::vector<std::string> keywords = {"dog", "bicycle", "traffic light", "café"};
  write_xmp_sidecar(photo, keywords, "centernet");
  std::string sidecar = xmp_sidecar_path(photo);
  EXPECT_EQ(sidecar, photo + ".xmp");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.dc.subject"), "dog, bicycle, traffic light, café\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.tandem.keywords"), "dog, bicycle, traffic light, café\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.tandem.model"), "centernet\n");

  EXPECT_EQ(read_all(photo), bytes);
  struct stat after {};
  ASSERT_EQ(::stat(photo.c_str(), &after), 0);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(files_in(dir.path()), (std::vector<std::string>{"IMG 1, \"dog\".jpg", "IMG 1, \"dog\".jpg.xmp"}));
}

TEST(XmpSidecar, RewritesReplaceOnlyTandemsKeywords) {
  TempDir dir("xmp");
  std::string photo = dir.write("a.jpg", "not decoded: tandem never reads the photo here");
  std::string sidecar = dir.write("a.jpg.xmp", kDarktableSidecar);

  // "dog" was the user's before tandem found one: it stays the user's.
  write_xmp_sidecar(photo, std::vector<std::string>{"dog", "person"}, "centernet");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.dc.subject"), "holiday, dog, person\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.tandem.keywords"), "person\n");

  // The user adds a keyword with another tool, then tandem re-tags.
  int status = 0;
  capture_command("exiv2 -M'set Xmp.dc.subject XmpBag beach' mo " + shell_quote(sidecar), &status);
  ASSERT_EQ(status, 0);
  write_xmp_sidecar(photo, std::vector<std::string>{"cat", "cat", ""}, "mobilenet");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.dc.subject"), "holiday, dog, beach, cat\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.tandem.keywords"), "cat\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.tandem.model"), "mobilenet\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.xmp.Rating"), "4\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.darktable.xmp_version"), "5\n");

  write_xmp_sidecar(photo, {}, "mobilenet");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.dc.subject"), "holiday, dog, beach\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.tandem.keywords"), "");
  EXPECT_EQ(read_all(photo), "not decoded: tandem never reads the photo here");
}

TEST(XmpSidecar, UnreadableSidecarIsLeftAsItIs) {
  TempDir dir("xmp");
  std::string photo = dir.write("b.jpg", "photo");
  std::string broken = "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF><unclosed>";
  std::string sidecar = dir.write("b.jpg.xmp", broken);
  try {
    write_xmp_sidecar(photo, std::vector<std::string>{"dog"}, "centernet");
    ADD_FAILURE() << "a broken sidecar was overwritten";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(sidecar), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot parse the existing XMP sidecar"), std::string::npos);
  }
  EXPECT_EQ(read_all(sidecar), broken);
  EXPECT_THROW(write_xmp_sidecar(dir.file("missing.jpg"), std::vector<std::string>{"dog"}, "m"), Error);
  EXPECT_FALSE(fs::exists(dir.file("missing.jpg.xmp")));
}

TEST(XmpSidecar, ThreadsWriteTheirOwnSidecars) {
  TempDir dir("xmp");
  constexpr int kThreads = 4, kPhotos = 5;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int p = 0; p < kPhotos; ++p) {
        std::string photo = dir.file(fmt::format("t{}_{}.jpg", t, p));
        std::ofstream(photo) << "photo";
        try {
          write_xmp_sidecar(photo, std::vector<std::string>{fmt::format("label{}", t), "shared"}, "m");
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  for (int t = 0; t < kThreads; ++t)
    for (int p = 0; p < kPhotos; ++p)
      EXPECT_EQ(exiv2_value(dir.file(fmt::format("t{}_{}.jpg.xmp", t, p)), "Xmp.dc.subject"),
                fmt::format("label{}, shared\n", t));
}

namespace {

// A face region as digiKam writes one (its own person, Bob), with a keyword.
const char* kDigikamRegionSidecar = R"(<?xml version="1.0" encoding="UTF-8"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/" x:xmptk="XMP Core 4.4.0-Exiv2">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:digiKam="http://www.digikam.org/ns/1.0/"
    xmlns:mwg-rs="http://www.metadataworkinggroup.com/schemas/regions/"
    xmlns:stArea="http://ns.adobe.com/xmp/sType/Area#"
    xmlns:stDim="http://ns.adobe.com/xap/1.0/sType/Dimensions#">
   <dc:subject><rdf:Bag><rdf:li>Bob</rdf:li></rdf:Bag></dc:subject>
   <digiKam:TagsList><rdf:Seq><rdf:li>People/Bob</rdf:li></rdf:Seq></digiKam:TagsList>
   <mwg-rs:Regions rdf:parseType="Resource">
    <mwg-rs:AppliedToDimensions stDim:w="768" stDim:h="576" stDim:unit="pixel"/>
    <mwg-rs:RegionList><rdf:Bag><rdf:li rdf:parseType="Resource">
      <mwg-rs:Type>Face</mwg-rs:Type>
      <mwg-rs:Name>Bob</mwg-rs:Name>
      <mwg-rs:Area stArea:x="0.1" stArea:y="0.2" stArea:w="0.05" stArea:h="0.07" stArea:unit="normalized"/>
    </rdf:li></rdf:Bag></mwg-rs:RegionList>
   </mwg-rs:Regions>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
)";

}  // namespace

// Faces become MWG regions (digiKam's, Lightroom's and darktable's schema),
// named people keywords and digiKam People/ tags; a region digiKam wrote
// stays through tandem's rewrites, and tandem's own are replaced.
TEST(XmpSidecar, FaceRegionsBesideTheUsersOwn) {
  TempDir dir("xmp_regions");
  const std::string photo = dir.file("dog.jpg");
  fs::copy_file(kDarknetDog, photo);
  const std::string sidecar = xmp_sidecar_path(photo);
  std::ofstream(sidecar) << kDigikamRegionSidecar;
  const std::vector<std::string> words = {"dog"};
  const std::vector<XmpFaceRegion> faces = {{{384, 144, 460, 288}, "Alice"}, {{0, 0, 76.8f, 57.6f}, ""}};
  write_xmp_sidecar(photo, words, "centernet", faces, 768, 576);
  const std::string list = "Xmp.mwg-rs.Regions/mwg-rs:RegionList";
  EXPECT_EQ(exiv2_value(sidecar, list + "[1]/mwg-rs:Name"), "Bob\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[1]/mwg-rs:Area/stArea:x"), "0.1\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[2]/mwg-rs:Type"), "Face\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[2]/mwg-rs:Name"), "Alice\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[2]/mwg-rs:Area/stArea:x"), "0.549479\n");  // centre, as MWG has it
  EXPECT_EQ(exiv2_value(sidecar, list + "[2]/mwg-rs:Area/stArea:y"), "0.375000\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[2]/mwg-rs:Area/stArea:w"), "0.098958\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[3]/mwg-rs:Area/stArea:w"), "0.100000\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[3]/mwg-rs:Name"), "");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.mwg-rs.Regions/mwg-rs:AppliedToDimensions/stDim:w"), "768\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.dc.subject"), "Bob, dog, Alice\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.digiKam.TagsList"), "People/Bob, People/Alice\n");
  // Again, Alice's face now unnamed and moved: Bob's region stays, tandem's
  // two are replaced by one, and her name leaves the keywords and tags.
  const std::vector<XmpFaceRegion> later = {{{100, 100, 200, 200}, ""}};
  write_xmp_sidecar(photo, words, "centernet", later, 768, 576);
  EXPECT_EQ(exiv2_value(sidecar, list + "[1]/mwg-rs:Name"), "Bob\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[2]/mwg-rs:Area/stArea:w"), "0.130208\n");
  EXPECT_EQ(exiv2_value(sidecar, list + "[3]/mwg-rs:Type"), "");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.dc.subject"), "Bob, dog\n");
  EXPECT_EQ(exiv2_value(sidecar, "Xmp.digiKam.TagsList"), "People/Bob\n");
}
