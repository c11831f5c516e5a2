// XMP sidecars: tandem merges its keywords and face regions into whatever
// sidecar a photo manager left beside the photo (exiv2 parses it), keeping
// the rest. The input is that existing sidecar.
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "pipeline/xmp_sidecar.h"

using namespace tandem;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const uint8_t not_read[] = {0xff, 0xd8, 0xff, 0xd9};  // a sidecar's photo must exist; its bytes are not read
  fuzz::write_scratch("photo.jpg", not_read);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string photo = (fuzz::scratch_dir() / "photo.jpg").string();
  fuzz::write_scratch("photo.jpg.xmp", {data, size});
  const std::vector<std::string> keywords = {"dog", "bicycle", "person:Alice"};
  const pipeline::XmpFaceRegion faces[] = {{{10.f, 20.f, 110.f, 140.f}, "Alice"}, {{200.f, 30.f, 260.f, 100.f}, ""}};
  fuzz::rejecting_bad_input([&] { pipeline::write_xmp_sidecar(photo, keywords, "centernet", faces, 640, 480); });
  return 0;
}
