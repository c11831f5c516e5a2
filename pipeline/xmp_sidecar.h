#pragma once
// XMP sidecars for `tandem tag --xmp`: IMG.jpg gets IMG.jpg.xmp beside it
// (the naming darktable and digiKam use) with the tags as keywords in
// dc:subject, which photo managers show and search. The photo itself is
// never opened for writing.
//
// A sidecar may already exist (a photo manager's, or tandem's from an earlier
// run): everything in it is kept, and so are the user's own keywords. tandem
// records the keywords it added in its own property (Xmp.tandem.keywords,
// namespace kTandemXmpNamespace) and replaces only those on a later run. A
// keyword the user already had is the user's; tandem does not claim it.
//
// Thread-safe: calls from several threads are serialized (exiv2's XMP
// toolkit has global state). Do not call after main() returns.
#include <span>
#include <string>
#include <vector>

#include "pipeline/detection.h"

namespace tandem::pipeline {

inline constexpr const char* kTandemXmpNamespace = "http://ns.tandem.invalid/xmp/1.0/";

// "IMG.jpg" -> "IMG.jpg.xmp".
std::string xmp_sidecar_path(const std::string& image_path);

// Writes (or updates) the sidecar of `image_path`, replacing it atomically.
// `keywords` are tandem's tags for the photo, best first; `model_id` is
// recorded as Xmp.tandem.model; `faces` (with the photo's upright `width`
// and `height`) become regions. Throws Error naming the sidecar if an
// existing one cannot be parsed (it is then left as it is) or on I/O errors.
// Face regions as the Metadata Working Group's region schema has them
// (mwg-rs:Regions, Type Face, Area centre and size as fractions of the
// upright photo, Name for a named person): what digiKam, Lightroom and
// darktable read. Named people are also keywords (dc:subject "Alice") and
// digiKam tags (digiKam:TagsList "People/Alice"). Regions tandem did not
// write (a photo manager's) are kept; tandem's own, recorded in
// Xmp.tandem.regions, are replaced.
struct XmpFaceRegion {
  Box box;           // pixels of the upright photo
  std::string name;  // empty: an unnamed person
};

void write_xmp_sidecar(const std::string& image_path, std::span<const std::string> keywords,
                       const std::string& model_id, std::span<const XmpFaceRegion> faces = {},
                       int width = 0, int height = 0);

}  // namespace tandem::pipeline
