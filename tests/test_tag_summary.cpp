// The end-of-run verdict of `tandem tag`: which stage limited the run, and
// advice that fits the run (the figures are the H200 host's detector run of
// 3,500 photos, decode-bound by the progressive files its JPEG engines refuse).
#include <gtest/gtest.h>

#include "pipeline/tag_summary.h"

using namespace tandem::pipeline;

namespace {

TagStats decode_bound_gpu_run(int gpu_decoders, int64_t refused) {
  TagStats s;
  s.files = s.tagged = 3500;
  s.batches = 28;
  s.decoders = 16;
  s.gpu_decoders = gpu_decoders;
  s.gpu_refused = refused;
  s.wall_s = 13.1;
  s.time.decode = 182.7;
  s.time.infer = 2.8;
  s.time.batch_wait = 8.5;
  return s;
}

TEST(TagSummary, DecodeBoundGpuRunNamesTheFilesTheEnginesRefused) {
  TagStats s = decode_bound_gpu_run(2, 824);
  diagnose(s, {false, true});
  EXPECT_EQ(s.limiting_stage, "decode");
  EXPECT_NE(s.verdict.find("824 files the GPU's JPEG engines refuse"), std::string::npos) << s.verdict;
}

TEST(TagSummary, DecodeBoundWithoutGpuDecodersSuggestsThem) {
  TagStats s = decode_bound_gpu_run(0, 0);
  diagnose(s, {false, true});
  EXPECT_NE(s.verdict.find("--nvjpeg"), std::string::npos) << s.verdict;
}

TEST(TagSummary, InferenceBoundFp16RunDoesNotSuggestFp16) {
  TagStats s = decode_bound_gpu_run(2, 0);
  s.time.decode = 10;
  s.time.infer = 12;
  diagnose(s, {false, true});
  EXPECT_EQ(s.limiting_stage, "inference");
  EXPECT_EQ(s.verdict.find("fp16"), std::string::npos) << s.verdict;
  diagnose(s, {false, false});
  EXPECT_NE(s.verdict.find("--precision fp16"), std::string::npos) << s.verdict;
}

}  // namespace

// The face line says where the face crops came from: on a GPU (the H100 run
// of the corpus with people) the engines' decode, the CPU decoders' own or
// a region decode; on a CPU, the decode for the network or a region decode.
TEST(TagSummary, FaceLineCountsWhereTheCropsCameFrom) {
  TagStats s = decode_bound_gpu_run(2, 752);
  s.time.faces = 22.5, s.time.faces_wait = 3.2;
  s.faces.from_kept = 1529, s.faces.decoded = 331, s.faces.from_decode = 12;
  s.faces.crops_s = 15.0, s.faces.networks_s = 2.5, s.faces.device_wait_s = 1.5;
  diagnose(s, {false, true});
  const std::string gpu = format_summary(s, 0, 0);
  EXPECT_NE(
      gpu.find("photos with faces: 1529 cut from the GPU's decode, 331 decoded again, 12 cut from "
               "the CPU decoders' decode"),
      std::string::npos)
      << gpu;
  s.gpu_decoders = 0, s.faces.from_kept = 0, s.faces.decoded = 1848;
  const std::string cpu = format_summary(s, 0, 0);
  EXPECT_NE(
      cpu.find(
          "faces: 22.5 s (waiting for a batch 3.2 s; crops 15.0 s, networks 2.5 s, waiting for the "
          "device 1.5 s)"),
      std::string::npos)
      << cpu;
  EXPECT_EQ(cpu.find("cut from the GPU"), std::string::npos) << cpu;
  EXPECT_NE(
      cpu.find("photos with faces: 12 cut from the decode for the network, 1848 decoded again"),
      std::string::npos)
      << cpu;
}

// The GPU decoders' line splits their busy time, so a run shows what held
// the engines back (the figures: an H100 host's default tag run).
TEST(TagSummary, GpuLineSaysWhereTheEngineThreadsTimeWent) {
  TagStats s = decode_bound_gpu_run(2, 219);
  s.gpu_decoded = 2375;
  s.time.gpu_decode = 18.2;
  s.time.gpu.on_gpu = 11.0, s.time.gpu.read_wait = 0.4, s.time.gpu.slot_wait = 5.9,
  s.time.gpu.thumbnail_wait = 0.3;
  diagnose(s, {false, true});
  const std::string text = format_summary(s, 0, 0);
  EXPECT_NE(text.find("GPU JPEG decoders (2): 2375 images (68%), 219 files handed to the CPU "
                      "decoders; 18.2 s busy "
                      "(decoding on the GPU 11.0 s; waiting for files read ahead 0.4 s, for batch "
                      "slots 5.9 s, for "
                      "the thumbnail writers 0.3 s)"),
            std::string::npos)
      << text;
}
