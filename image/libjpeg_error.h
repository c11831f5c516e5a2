#pragma once
// libjpeg's error reporting for the decoders that use its own API
// (jpeg_scan_decoder.cpp, region_decode.cpp): libjpeg reports an error by
// calling error_exit, which must not return, so it jumps back to the
// decoder's setjmp (no C++ object may live between the two); a warning
// (corrupt data, level -1) becomes an error unless the caller accepts them.
// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>
#include <csetjmp>

#include <jpeglib.h>

namespace tandem::image {

struct LibjpegError {
  jpeg_error_mgr mgr;  // first: libjpeg's err pointer is this struct's address
  std::jmp_buf jump;
  bool stop_on_warning = true;
  bool warning = false;  // the failure was a warning made an error
  bool refused = false;  // the file is hostile: no other decoder should try it
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] inline void libjpeg_on_error(j_common_ptr c) {
  auto* e = reinterpret_cast<LibjpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

inline void libjpeg_on_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<LibjpegError*>(c->err);
  if (e->stop_on_warning) {
    e->warning = true;
    libjpeg_on_error(c);
  }
  ++c->err->num_warnings;
}

// Points `cinfo`'s error handling at `e`.
inline void use_libjpeg_error(jpeg_decompress_struct& cinfo, LibjpegError& e) {
  cinfo.err = jpeg_std_error(&e.mgr);
  e.mgr.error_exit = libjpeg_on_error;
  e.mgr.emit_message = libjpeg_on_message;
}

}  // namespace tandem::image
