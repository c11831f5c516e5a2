// Resizing and classification preprocessing against PIL and torchvision
// (Debian's python3-pil 9.4 and python3-torchvision 0.14 via /usr/bin/python3),
// fed the very image we decoded (written losslessly as PPM/PGM).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "image/decode.h"
#include "image/preprocess.h"
#include "image/resize.h"
#include "image_test_util.h"

using namespace tandem;
using namespace tandem::image;
using namespace tandem::image::testing;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string name;
  Image img;
  PreprocessConfig cfg;
};

std::string filter_name(ResampleFilter f) {
  return f == ResampleFilter::bilinear ? "BILINEAR" : "BICUBIC";
}

// Writes each case's image as <name>.pnm and has torchvision produce
// <name>.f32: Compose([Resize(r, interp), CenterCrop(c), ToTensor(),
// Normalize(mean, std)]) on Image.open(pnm).convert("RGB"), float32 CHW.
bool torchvision_reference(const fs::path& dir, const std::vector<Case>& cases) {
  std::string code =
      "from PIL import Image\nimport numpy as np\nimport torchvision.transforms as T\n"
      "from torchvision.transforms import InterpolationMode as IM\n"
      "def run(path, r, c, interp, mean, std):\n"
      "    t = T.Compose([T.Resize(r, interpolation=getattr(IM, interp)), T.CenterCrop(c),"
      " T.ToTensor(), T.Normalize(mean, std)])\n"
      "    x = t(Image.open(path).convert('RGB'))\n"
      "    x.numpy().astype(np.float32).tofile(path[:-4] + '.f32')\n";
  for (const auto& c : cases) {
    const fs::path pnm = dir / (c.name + ".pnm");
    write_pnm(pnm, c.img);
    char args[256];
    std::snprintf(args, sizeof args, ", %d, %d, '%s', [%.9g, %.9g, %.9g], [%.9g, %.9g, %.9g])\n",
                  c.cfg.resize, c.cfg.crop, filter_name(c.cfg.filter).c_str(), c.cfg.mean[0],
                  c.cfg.mean[1], c.cfg.mean[2], c.cfg.std[0], c.cfg.std[1], c.cfg.std[2]);
    code += "run('" + pnm.string() + "'" + args;
  }
  return run_python(dir, code);
}

}  // namespace

// Hand-checked against torchvision's formulas: long = int(256 * long / short);
// offset = int(round((size - crop) / 2)) with Python rounding halves to even.
TEST(Preprocess, SizesAndCropOffsetsFollowTorchvision) {
  EXPECT_EQ(shorter_side_size(768, 576, 256).width, 341);  // 341.33
  EXPECT_EQ(shorter_side_size(352, 448, 256).height, 325);  // 325.8
  EXPECT_EQ(shorter_side_size(352, 448, 256).width, 256);
  EXPECT_EQ(shorter_side_size(500, 500, 256).height, 256);
  EXPECT_EQ(shorter_side_size(300, 7, 256).width, 10971);  // 10971.43
  EXPECT_EQ(center_crop_offset(341, 224), 58);  // round(58.5) = 58
  EXPECT_EQ(center_crop_offset(343, 224), 60);  // round(59.5) = 60
  EXPECT_EQ(center_crop_offset(325, 224), 50);  // round(50.5) = 50
  EXPECT_EQ(center_crop_offset(256, 224), 16);
  EXPECT_EQ(center_crop_offset(224, 224), 0);
}

// Reference: PIL Image.resize((w, h), BILINEAR / BICUBIC) on the same pixels,
// which our resampler reproduces in integer arithmetic. Tolerance 0.
TEST(Resize, MatchesPilExactly) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const Image src = decode_image_file(photo_path("dog"));
  write_pnm(dir / "dog.pnm", src);
  const std::vector<std::array<int, 2>> sizes = {{123, 77}, {1000, 700}, {768, 100}, {1, 1}, {769, 576}};
  std::string code = "from PIL import Image\nim = Image.open('" + (dir / "dog.pnm").string() + "')\n";
  for (const auto& s : sizes) {
    for (const char* f : {"BILINEAR", "BICUBIC"}) {
      const std::string out = (dir / (std::to_string(s[0]) + "x" + std::to_string(s[1]) + f)).string();
      code += "open('" + out + "', 'wb').write(im.resize((" + std::to_string(s[0]) + ", " +
              std::to_string(s[1]) + "), Image." + f + ").tobytes())\n";
    }
  }
  ASSERT_TRUE(run_python(dir, code));
  for (const auto& s : sizes) {
    for (ResampleFilter f : {ResampleFilter::bilinear, ResampleFilter::bicubic}) {
      const Image ours = resize_image(src, s[0], s[1], f);
      const auto ref = read_bytes(dir / (std::to_string(s[0]) + "x" + std::to_string(s[1]) + filter_name(f)));
      ASSERT_EQ(ref.size(), ours.bytes());
      EXPECT_EQ(max_abs_diff(ours.data(), ref.data(), ref.size()), 0)
          << s[0] << "x" << s[1] << " " << filter_name(f);
    }
  }
}

// Reference: torchvision.transforms on PIL (see torchvision_reference) of the
// same decoded image: full-scale photos, DCT-scaled decodes, gray, an
// upscale, and other configs. Measured max |diff| is 0 (the u8 resize is
// PIL-exact and the normalisation table repeats torch's float32 x/255,
// (x - mean) / std); tolerance 1e-6 allows for a different float division
// rounding in some torch build, far below one u8 step (1/255/0.225 = 0.017).
TEST(Preprocess, MatchesTorchvision) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  std::vector<Case> cases;
  for (const auto& name : kDarknetPhotos) cases.push_back({name, decode_image_file(photo_path(name)), {}});
  cases.push_back({"kite_dct", decode_image_file(photo_path("kite"), 256, 256), {}});  // 3/8: 507x338
  cases.push_back({"gray", decode_image_file(photo_path("eagle")), {}});
  {  // one channel: the mean of the eagle's RGB
    Image& g = cases.back().img;
    Image gray(g.width, g.height, 1);
    for (size_t i = 0; i < size_t(g.width) * size_t(g.height); ++i)
      gray.data()[i] = uint8_t((g.data()[3 * i] + g.data()[3 * i + 1] + g.data()[3 * i + 2]) / 3);
    g = gray;
  }
  cases.push_back({"upscale", decode_image_file(photo_path("scream"), 40, 40), {}});  // 44x56
  PreprocessConfig bicubic;
  bicubic.resize = 232, bicubic.filter = ResampleFilter::bicubic;
  cases.push_back({"bicubic", decode_image_file(photo_path("horses")), bicubic});
  PreprocessConfig odd;
  odd.resize = 299, odd.crop = 299, odd.mean = {0.5f, 0.5f, 0.5f}, odd.std = {0.5f, 0.5f, 0.5f};
  cases.push_back({"inception", decode_image_file(photo_path("giraffe")), odd});
  ASSERT_TRUE(torchvision_reference(dir, cases));

  for (const auto& c : cases) {
    Preprocessor pre(c.cfg);
    std::vector<float> ours(pre.output_size());
    pre.run(c.img, ours);
    const auto ref_bytes = read_bytes(dir / (c.name + ".f32"));
    ASSERT_EQ(ref_bytes.size(), ours.size() * sizeof(float)) << c.name;
    const float* ref = reinterpret_cast<const float*>(ref_bytes.data());
    double max_diff = 0;
    for (size_t i = 0; i < ours.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(ours[i] - ref[i])));
    std::printf("%-10s %4dx%-4d -> %d: max |ours - torchvision| = %g\n", c.name.c_str(), c.img.width,
                c.img.height, c.cfg.crop, max_diff);
    EXPECT_LE(max_diff, 1e-6) << c.name;
  }
}

// One Preprocessor reused across sizes gives the same result as a fresh one
// (weights cache keyed correctly), and writes only its batch slot.
TEST(Preprocess, ReusedScratchAndBatchSlot) {
  const Image a = decode_image_file(photo_path("dog"));
  const Image b = decode_image_file(photo_path("person"));
  Preprocessor shared;
  const size_t n = shared.output_size();
  std::vector<float> batch(3 * n, -1234.0f);
  shared.run(a, std::span<float>(batch).subspan(0, n));
  shared.run(b, std::span<float>(batch).subspan(n, n));
  shared.run(a, std::span<float>(batch).subspan(n, n));  // back to a's size: weights rebuilt
  std::vector<float> fresh(n);
  Preprocessor(PreprocessConfig{}).run(a, fresh);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(batch[i], fresh[i]) << i;
    ASSERT_EQ(batch[n + i], fresh[i]) << i;
    ASSERT_EQ(batch[2 * n + i], -1234.0f) << i;
  }
}

TEST(Preprocess, RejectsBadConfigAndBuffers) {
  PreprocessConfig c;
  c.crop = 300;  // > resize 256
  EXPECT_THROW(Preprocessor{c}, Error);
  c = {};
  c.std[1] = 0;
  EXPECT_THROW(Preprocessor{c}, Error);
  Preprocessor pre;
  std::vector<float> small(pre.output_size() - 1);
  const Image img = decode_image_file(photo_path("dog"), 64, 64);
  EXPECT_THROW(pre.run(img, small), Error);
  EXPECT_THROW(pre.run(Image{}, small), Error);
  EXPECT_THROW(Preprocessor{stretch_config(0, 512)}, Error);
  EXPECT_THROW(Preprocessor{stretch_config(512, 20000)}, Error);
  c = stretch_config(512, 512);
  c.std[0] = 0;  // unused: raw values
  EXPECT_NO_THROW(Preprocessor{c});
  c.normalize = true;
  EXPECT_THROW(Preprocessor{c}, Error);
}

namespace {

// Odd sizes, a gray image and images smaller than the output (upscaling),
// besides the darknet photos at full size and DCT-scaled.
std::vector<std::pair<std::string, Image>> stretch_inputs() {
  std::vector<std::pair<std::string, Image>> r;
  for (const auto& name : kDarknetPhotos) {
    r.push_back({name, decode_image_file(photo_path(name))});
    r.push_back({name + "_dct", decode_image_file(photo_path(name), 512, 512)});
  }
  const Image eagle = decode_image_file(photo_path("eagle"));
  Image gray(eagle.width, eagle.height, 1);
  for (size_t i = 0; i < size_t(eagle.width) * size_t(eagle.height); ++i)
    gray.data()[i] =
        uint8_t((eagle.data()[3 * i] + eagle.data()[3 * i + 1] + eagle.data()[3 * i + 2]) / 3);
  r.push_back({"gray", gray});
  r.push_back({"upscale", decode_image_file(photo_path("scream"), 40, 40)});
  r.push_back({"odd", resize_image(eagle, 513, 37)});
  r.push_back({"tiny", resize_image(eagle, 1, 2)});
  return r;
}

}  // namespace

// Reference: PIL on the same pixels, the detector's recipe as TF.js apps
// feed the model: np.asarray(Image.open(pnm).convert("RGB").resize((w, h),
// BILINEAR), np.float32), HWC. Full-size and DCT-scaled photos, gray, odd
// sizes, upscales, a non-square output. Tolerance 0: the resize is PIL's
// integer arithmetic and a byte converts to float exactly.
TEST(Preprocess, StretchMatchesPil) {
  const ScratchDir scratch;
  const fs::path& dir = scratch.path;
  const std::vector<std::pair<std::string, Image>> inputs = stretch_inputs();
  const std::vector<std::pair<int, int>> outputs = {{512, 512}, {320, 192}};
  std::string code = "from PIL import Image\nimport numpy as np\n";
  for (const auto& [name, img] : inputs) {
    const fs::path pnm = dir / (name + ".pnm");
    write_pnm(pnm, img);
    for (const auto& [w, h] : outputs)
      code += "np.asarray(Image.open('" + pnm.string() + "').convert('RGB').resize((" +
              std::to_string(w) + ", " + std::to_string(h) +
              "), Image.BILINEAR), np.float32).tofile('" +
              (dir / (name + std::to_string(w) + ".f32")).string() + "')\n";
  }
  ASSERT_TRUE(run_python(dir, code));
  for (const auto& [w, h] : outputs) {
    Preprocessor pre(stretch_config(w, h));
    ASSERT_EQ(pre.output_size(), size_t(w) * size_t(h) * 3);
    for (const auto& [name, img] : inputs) {
      std::vector<float> ours(pre.output_size(), -1.f);
      pre.run(img, ours);
      const auto ref = read_bytes(dir / (name + std::to_string(w) + ".f32"));
      ASSERT_EQ(ref.size(), ours.size() * sizeof(float)) << name;
      EXPECT_EQ(std::memcmp(ref.data(), ours.data(), ref.size()), 0)
          << name << " -> " << w << "x" << h;
    }
  }
}

// Where the window lies: the classifier's center crop of the shorter-side
// resize; the detector's whole stretched image.
TEST(Preprocess, WindowOfEachMode) {
  const PreprocessWindow c = preprocess_window(PreprocessConfig{}, 768, 576);
  EXPECT_EQ(c.resized_width, 341);
  EXPECT_EQ(c.resized_height, 256);
  EXPECT_EQ(c.x0, 58);
  EXPECT_EQ(c.y0, 16);
  const PreprocessWindow d = preprocess_window(stretch_config(512, 384), 4032, 3024);
  EXPECT_EQ(d.resized_width, 512);
  EXPECT_EQ(d.resized_height, 384);
  EXPECT_EQ(d.x0, 0);
  EXPECT_EQ(d.y0, 0);
  const PreprocessConfig det = stretch_config(512, 384);
  EXPECT_EQ(det.output_width(), 512);
  EXPECT_EQ(det.output_height(), 384);
  EXPECT_EQ(det.layout, PixelLayout::interleaved);
  EXPECT_FALSE(det.normalize);
}

// The layouts hold the same values: planes[c][i] == interleaved[i][c].
TEST(Preprocess, PlanesAndInterleavedHoldTheSameValues) {
  const Image img = decode_image_file(photo_path("dog"), 256, 256);
  for (bool normalize : {true, false}) {
    PreprocessConfig planes;
    planes.normalize = normalize;
    PreprocessConfig interleaved = planes;
    interleaved.layout = PixelLayout::interleaved;
    Preprocessor a(planes), b(interleaved);
    std::vector<float> pa(a.output_size()), pb(b.output_size());
    a.run(img, pa);
    b.run(img, pb);
    const size_t n = pa.size() / 3;
    for (size_t i = 0; i < n; ++i) {
      for (size_t c = 0; c < 3; ++c) {
        ASSERT_EQ(pa[c * n + i], pb[i * 3 + c]) << i << " " << c;
      }
    }
    if (!normalize) {
      EXPECT_EQ(pa[0], std::floor(pa[0]));  // raw bytes
    }
  }
}
