#pragma once
// Exports of catalog records (`tandem tag --jsonl F --csv F`), each written
// atomically: a reader sees the previous export or the whole new one.
//   JSONL: one object per file and line: path, model, ok, error_kind and
//          error (when !ok), tags [{label, score}] (then "person:NAME" for
//          each named person in the photo, scored by their best face),
//          objects [{label, score, box: [x1, y1, x2, y2]}] (a detector's;
//          [] otherwise), faces [{score, box, age, gender_score, person (id
//          or null), name (or null)}], size,
//          width, height, decode_ms, infer_ms, mtime_ns, content_hash.
//   CSV:   RFC 4180 (quoted where needed, CRLF line ends), a header row, one
//          row per file; tags as "label:score;label:score" (with the
//          person:NAME tags), objects (the
//          column after tags) as "label:score:x1:y1:x2:y2;..." (a label may
//          hold spaces: its last five ':' fields are the numbers).
// Scores and box corners (pixels of the upright full-size photo) are written
// in the fewest digits that read back as the same float.
// Paths are bytes on Linux: JSONL (which must be UTF-8) shows an invalid
// UTF-8 byte as U+FFFD; CSV keeps the bytes.
#include <span>
#include <string>

#include "pipeline/catalog.h"

namespace tandem::pipeline {

std::string format_jsonl(std::span<const FileRecord> records);
std::string format_csv(std::span<const FileRecord> records);

// Throw Error naming `path` when it cannot be written.
void write_jsonl(const std::string& path, std::span<const FileRecord> records);
void write_csv(const std::string& path, std::span<const FileRecord> records);

}  // namespace tandem::pipeline
