#include "pipeline/xmp_sidecar.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <filesystem>
#include <mutex>
#include <vector>

// exiv2 0.27's headers still name std::auto_ptr (deprecated in C++11).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <exiv2/error.hpp>
#include <exiv2/properties.hpp>
#include <exiv2/value.hpp>
#include <exiv2/xmp_exiv2.hpp>
#pragma GCC diagnostic pop

#include "core/error.h"
#include "formats/file_bytes.h"

namespace tandem::pipeline {

namespace {

constexpr const char* kSubject = "Xmp.dc.subject";
constexpr const char* kTandemKeywords = "Xmp.tandem.keywords";
constexpr const char* kTandemModel = "Xmp.tandem.model";
constexpr const char* kTandemRegions = "Xmp.tandem.regions";
constexpr const char* kTandemPeople = "Xmp.tandem.people";
constexpr const char* kDigikamTags = "Xmp.digiKam.TagsList";
constexpr const char* kRegions = "Xmp.mwg-rs.Regions";
constexpr const char* kRegionList = "Xmp.mwg-rs.Regions/mwg-rs:RegionList";

// A sidecar is a few KB; anything this large is not one to parse.
constexpr uint64_t kMaxSidecarBytes = uint64_t(16) << 20;

// exiv2 logs why a parse failed instead of returning it; its log handler
// collects the messages here, per thread, for the Error tandem throws.
thread_local std::string exiv2_log;

void collect_exiv2_log(int, const char* message) {
  std::string m = message ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  if (!m.empty()) exiv2_log += (exiv2_log.empty() ? "" : "; ") + m;
}

// What exiv2's own sidecar writer puts before the packet.
constexpr const char* kXmlDeclaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

// exiv2's XMP toolkit (Adobe's XMP SDK inside libexiv2) keeps global state
// and is not thread-safe: XmpParser::initialize must run once before any use
// and is itself unsafe to call concurrently; namespace registration then
// takes the lock function handed to initialize; terminate frees the toolkit.
// This one object does all of that: built on first use (a function-local
// static, so concurrent first calls are safe), torn down at exit, and its
// `work` mutex serializes every parse and encode tandem does, so the toolkit
// never sees two of tandem's threads at once.
class XmpToolkit {
 public:
  static XmpToolkit& get() {
    static XmpToolkit toolkit;
    return toolkit;
  }
  std::mutex work;

 private:
  XmpToolkit() {
    if (!Exiv2::XmpParser::initialize(&XmpToolkit::lock_unlock, &registry_))
      throw Error("exiv2: cannot initialize the XMP toolkit");
    Exiv2::XmpProperties::registerNs(kTandemXmpNamespace, "tandem");
    // tandem reports failures itself, one line per file, exiv2's reason in it.
    Exiv2::LogMsg::setHandler(&collect_exiv2_log);
  }
  ~XmpToolkit() { Exiv2::XmpParser::terminate(); }

  static void lock_unlock(void* mutex, bool lock) {
    auto* m = static_cast<std::mutex*>(mutex);
    lock ? m->lock() : m->unlock();
  }
  std::mutex registry_;  // exiv2 locks it while registering namespaces
};

std::vector<std::string> bag_values(Exiv2::XmpData& data, const char* key) {
  std::vector<std::string> out;
  auto it = data.findKey(Exiv2::XmpKey(key));
  if (it == data.end()) return out;
  for (long i = 0; i < it->count(); ++i) out.push_back(it->toString(i));
  return out;
}

void set_value(Exiv2::XmpData& data, const char* key, const Exiv2::Value* value) {
  auto it = data.findKey(Exiv2::XmpKey(key));
  if (it != data.end()) data.erase(it);
  if (value) data.add(Exiv2::XmpKey(key), value);
}

// An empty bag is left out rather than written as an empty element.
void set_bag(Exiv2::XmpData& data, const char* key, const std::vector<std::string>& values) {
  Exiv2::XmpArrayValue bag(Exiv2::xmpBag);
  for (const std::string& v : values) bag.read(v);
  set_value(data, key, values.empty() ? nullptr : &bag);
}

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

// The existing sidecar's properties; empty when there is none.
Exiv2::XmpData read_sidecar(const std::string& sidecar) {
  Exiv2::XmpData data;
  if (!std::filesystem::exists(sidecar)) return data;
  std::string packet = read_file_bytes(sidecar, kMaxSidecarBytes);
  check(Exiv2::XmpParser::decode(data, packet) == 0,
        "cannot parse the existing XMP sidecar (left as it is)" +
            (exiv2_log.empty() ? "" : ": " + exiv2_log),
        ErrorContext{sidecar, "", "", ""});
  return data;
}

// Replaces tandem's earlier keywords in dc:subject with `keywords`, keeping
// the user's (those tandem did not add) first, in their order.
void update_keywords(Exiv2::XmpData& data, std::span<const std::string> keywords) {
  std::vector<std::string> previous = bag_values(data, kTandemKeywords);
  std::vector<std::string> subject;
  for (std::string& k : bag_values(data, kSubject))
    if (!contains(previous, k)) subject.push_back(std::move(k));
  std::vector<std::string> added;
  for (const std::string& k : keywords)
    if (!k.empty() && !contains(subject, k) && !contains(added, k)) added.push_back(k);
  subject.insert(subject.end(), added.begin(), added.end());
  set_bag(data, kSubject, subject);
  set_bag(data, kTandemKeywords, added);
}

// One region of the list: "<list>[i]/mwg-rs:<field>" and its Area's fields.
std::string region_key(long i, const std::string& field) {
  return std::string(kRegionList) + "[" + std::to_string(i) + "]/" + field;
}

// A region's identity for tandem: its area as written, "x,y,w,h".
std::string area_text(Exiv2::XmpData& data, long i) {
  std::string out;
  for (const char* f : {"stArea:x", "stArea:y", "stArea:w", "stArea:h"}) {
    auto it = data.findKey(Exiv2::XmpKey(region_key(i, std::string("mwg-rs:Area/") + f)));
    out += (out.empty() ? "" : ",") + (it == data.end() ? std::string() : it->toString());
  }
  return out;
}

struct Region {
  std::vector<std::pair<std::string, std::string>> fields;  // key suffix after [i]/, value
};

// The regions already in the sidecar, tandem's earlier ones left out.
std::vector<Region> foreign_regions(Exiv2::XmpData& data) {
  const std::vector<std::string> ours = bag_values(data, kTandemRegions);
  std::vector<Region> out;
  for (long i = 1;; ++i) {
    const std::string prefix = std::string(kRegionList) + "[" + std::to_string(i) + "]/";
    Region r;
    for (const Exiv2::Xmpdatum& d : data)
      if (d.key().rfind(prefix, 0) == 0) r.fields.push_back({d.key().substr(prefix.size()), d.toString()});
    if (r.fields.empty()) break;
    if (!contains(ours, area_text(data, i))) out.push_back(std::move(r));
  }
  return out;
}

void erase_prefix(Exiv2::XmpData& data, const std::string& prefix) {
  for (auto it = data.begin(); it != data.end();)
    it = it->key().rfind(prefix, 0) == 0 ? data.erase(it) : std::next(it);
}

std::string fraction(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}

void add_struct(Exiv2::XmpData& data, const std::string& key) {
  Exiv2::XmpTextValue v;
  v.setXmpStruct();
  data.add(Exiv2::XmpKey(key), &v);
}

// Rewrites mwg-rs:Regions: the foreign regions as they were, then tandem's.
void update_regions(Exiv2::XmpData& data, std::span<const XmpFaceRegion> faces, int width, int height) {
  std::vector<Region> keep = foreign_regions(data);
  std::vector<std::string> ours;
  if (keep.empty() && (faces.empty() || width <= 0 || height <= 0)) {
    if (!bag_values(data, kTandemRegions).empty()) erase_prefix(data, kRegions);
    set_bag(data, kTandemRegions, {});
    return;
  }
  erase_prefix(data, kRegions);
  add_struct(data, kRegions);
  if (width > 0 && height > 0 && !faces.empty()) {
    add_struct(data, std::string(kRegions) + "/mwg-rs:AppliedToDimensions");
    data[std::string(kRegions) + "/mwg-rs:AppliedToDimensions/stDim:w"] = std::to_string(width);
    data[std::string(kRegions) + "/mwg-rs:AppliedToDimensions/stDim:h"] = std::to_string(height);
    data[std::string(kRegions) + "/mwg-rs:AppliedToDimensions/stDim:unit"] = "pixel";
  }
  Exiv2::XmpTextValue list;
  list.setXmpArrayType(Exiv2::XmpValue::xaBag);
  data.add(Exiv2::XmpKey(kRegionList), &list);
  long i = 0;
  for (const Region& r : keep) {
    ++i;
    add_struct(data, region_key(i, "").substr(0, region_key(i, "").size() - 1));
    for (const auto& [suffix, value] : r.fields) {
      if (suffix == "mwg-rs:Area") {
        add_struct(data, region_key(i, suffix));
        continue;
      }
      data[region_key(i, suffix)] = value;
    }
  }
  if (width > 0 && height > 0)
    for (const XmpFaceRegion& f : faces) {
      ++i;
      const double w = (f.box.x2 - f.box.x1) / width, h = (f.box.y2 - f.box.y1) / height;
      const double x = (f.box.x1 + f.box.x2) / 2 / width, y = (f.box.y1 + f.box.y2) / 2 / height;
      add_struct(data, region_key(i, "").substr(0, region_key(i, "").size() - 1));
      data[region_key(i, "mwg-rs:Type")] = "Face";
      if (!f.name.empty()) data[region_key(i, "mwg-rs:Name")] = f.name;
      add_struct(data, region_key(i, "mwg-rs:Area"));
      data[region_key(i, "mwg-rs:Area/stArea:x")] = fraction(x);
      data[region_key(i, "mwg-rs:Area/stArea:y")] = fraction(y);
      data[region_key(i, "mwg-rs:Area/stArea:w")] = fraction(w);
      data[region_key(i, "mwg-rs:Area/stArea:h")] = fraction(h);
      data[region_key(i, "mwg-rs:Area/stArea:unit")] = "normalized";
      ours.push_back(area_text(data, i));
    }
  set_bag(data, kTandemRegions, ours);
}

// digiKam's hierarchical tags: "People/NAME" for the named people, tandem's
// earlier ones replaced, the user's kept.
void update_people_tags(Exiv2::XmpData& data, std::span<const XmpFaceRegion> faces) {
  std::vector<std::string> previous = bag_values(data, kTandemPeople), tags, added;
  for (std::string& t : bag_values(data, kDigikamTags))
    if (!contains(previous, t)) tags.push_back(std::move(t));
  for (const XmpFaceRegion& f : faces) {
    const std::string t = "People/" + f.name;
    if (!f.name.empty() && !contains(tags, t) && !contains(added, t)) added.push_back(t);
  }
  tags.insert(tags.end(), added.begin(), added.end());
  Exiv2::XmpArrayValue seq(Exiv2::xmpSeq);
  for (const std::string& t : tags) seq.read(t);
  set_value(data, kDigikamTags, tags.empty() ? nullptr : &seq);
  set_bag(data, kTandemPeople, added);
}

}  // namespace

std::string xmp_sidecar_path(const std::string& image_path) { return image_path + ".xmp"; }

void write_xmp_sidecar(const std::string& image_path, std::span<const std::string> keywords,
                       const std::string& model_id, std::span<const XmpFaceRegion> faces, int width,
                       int height) {
  std::string sidecar = xmp_sidecar_path(image_path);
  check(std::filesystem::is_regular_file(image_path), "no such photo for an XMP sidecar",
        ErrorContext{image_path, "", "", ""});
  XmpToolkit& toolkit = XmpToolkit::get();
  std::lock_guard<std::mutex> lock(toolkit.work);
  exiv2_log.clear();
  try {
    Exiv2::XmpData data = read_sidecar(sidecar);
    std::vector<std::string> words(keywords.begin(), keywords.end());
    for (const XmpFaceRegion& f : faces)
      if (!f.name.empty()) words.push_back(f.name);
    update_keywords(data, words);
    update_regions(data, faces, width, height);
    update_people_tags(data, faces);
    Exiv2::XmpTextValue model(model_id);
    set_value(data, kTandemModel, &model);
    std::string packet;
    int rc = Exiv2::XmpParser::encode(
        packet, data, Exiv2::XmpParser::omitPacketWrapper | Exiv2::XmpParser::useCompactFormat);
    check(rc == 0, "exiv2 cannot encode the XMP sidecar (code " + std::to_string(rc) + ")",
          ErrorContext{sidecar, "", "", ""});
    write_file_atomically(sidecar, kXmlDeclaration + packet);
  } catch (const Exiv2::AnyError& e) {
    throw Error(std::string("exiv2: ") + e.what(), ErrorContext{sidecar, "", "", ""});
  }
}

}  // namespace tandem::pipeline
