// The pieces of the freedesktop thumbnail layout (pipeline/thumbnails.h):
// MD5 against RFC 1321's test suite, and PNG encoding read back by the PNG
// decoder. tests/thumbnails/check_thumbnails.py checks the whole against
// GLib's URIs and Pillow.
#include <gtest/gtest.h>

#include "core/error.h"
#include "image/decode.h"
#include "image/png_encoder.h"
#include "pipeline/thumbnails.h"

using namespace tandem;

TEST(Thumbnails, Md5IsRfc1321s) {
  EXPECT_EQ(pipeline::md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(pipeline::md5_hex("a"), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(pipeline::md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(pipeline::md5_hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(pipeline::md5_hex("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
  EXPECT_EQ(pipeline::md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
            "57edf4a22be3c955ac49da2e2107b67a");
}

TEST(Thumbnails, UriEscapesWhatGlibEscapes) {
  EXPECT_EQ(pipeline::file_uri("/home/a/IMG 1#2%3;4?.jpg"), "file:///home/a/IMG%201%232%253%3B4%3F.jpg");
  EXPECT_EQ(pipeline::file_uri("/x/!$&'()*+,-.:=@_~"), "file:///x/!$&'()*+,-.:=@_~");
  EXPECT_EQ(pipeline::file_uri("/x/\xc3\xa9\xe9"), "file:///x/%C3%A9%E9");
}

TEST(Thumbnails, PngRoundTripsThroughTheDecoder) {
  image::Image img(5, 3, 3);
  for (size_t i = 0; i < img.bytes(); ++i) img.data()[i] = uint8_t(i * 17);
  const std::vector<uint8_t> png = image::encode_png(img, {{"Thumb::URI", "file:///x.jpg"}, {"Thumb::MTime", "7"}});
  const image::Image back = image::decode_image(png);
  ASSERT_EQ(back.width, 5);
  ASSERT_EQ(back.height, 3);
  for (size_t i = 0; i < img.bytes(); ++i) EXPECT_EQ(back.data()[i], img.data()[i]) << i;
  EXPECT_NE(std::string(png.begin(), png.end()).find("Thumb::URI"), std::string::npos);
  EXPECT_THROW(image::encode_png(img, {{"", "empty key"}}), Error);
  EXPECT_THROW(image::encode_png(image::Image{}), Error);
}
