#include "formats/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>
#include <optional>
#include <variant>

#include "formats/file_bytes.h"

namespace tandem {

static_assert(std::endian::native == std::endian::little,
              ".npy data is read as little-endian without byte swaps");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// numpy itself refuses headers over 10000 bytes by default; allow more, but
// never an amount that a corrupt length field could make huge.
constexpr size_t kMaxHeaderBytes = size_t(1) << 20;

struct NpyType {
  const char* descr;  // without the byte-order character
  DType dtype;        // what tandem stores
  size_t file_size;   // bytes per element in the file
};

constexpr NpyType kTypes[] = {
    {"f4", DType::f32, 4}, {"f2", DType::f16, 2},  {"f8", DType::f64, 8},
    {"i1", DType::i8, 1},  {"u1", DType::u8, 1},   {"i4", DType::i32, 4},
    {"i8", DType::i64, 8}, {"b1", DType::boolean, 1}, {"i2", DType::i32, 2},
    {"u2", DType::i32, 2}, {"u4", DType::i64, 4},
};

using HeaderValue = std::variant<std::string, bool, Shape>;

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only strings, True/False and tuples of non-negative ints are accepted.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  std::map<std::string, HeaderValue> parse() {
    std::map<std::string, HeaderValue> dict;
    expect('{');
    while (!peek_is('}')) {
      std::string key = parse_string();
      expect(':');
      if (!dict.emplace(key, parse_value()).second) fail("key '" + key + "' repeated");
      if (!peek_is(',')) break;
      ++pos_;
    }
    expect('}');
    skip_ws();
    if (pos_ != s_.size()) fail("text after the closing brace");
    return dict;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error("bad .npy header at byte " + std::to_string(pos_) + ": " + why,
                {path_, "", "", ""});
  }
  void skip_ws() { while (pos_ < s_.size() && std::isspace(uint8_t(s_[pos_]))) ++pos_; }
  bool peek_is(char c) { skip_ws(); return pos_ < s_.size() && s_[pos_] == c; }
  void expect(char c) {
    if (!peek_is(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string parse_string() {
    skip_ws();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos || end - pos_ > 64) fail("unterminated or overlong string");
    std::string v = s_.substr(pos_, end - pos_);
    if (v.find('\\') != std::string::npos) fail("escapes are not supported");
    pos_ = end + 1;
    return v;
  }

  int64_t parse_int() {
    skip_ws();
    int64_t v = 0;
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(uint8_t(s_[pos_]))) {
      if (v > (INT64_MAX - 9) / 10) fail("extent too large");
      v = v * 10 + (s_[pos_++] - '0');
    }
    if (pos_ == start) fail("expected a non-negative integer");
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    return v;
  }

  Shape parse_tuple() {
    expect('(');
    Shape shape;
    while (!peek_is(')')) {
      if (shape.size() >= 64) fail("more than 64 dimensions");
      shape.push_back(parse_int());
      if (!peek_is(',')) break;
      ++pos_;
    }
    expect(')');
    return shape;
  }

  HeaderValue parse_value() {
    skip_ws();
    if (s_.compare(pos_, 4, "True") == 0) { pos_ += 4; return true; }
    if (s_.compare(pos_, 5, "False") == 0) { pos_ += 5; return false; }
    if (peek_is('(')) return parse_tuple();
    return parse_string();
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

const NpyType& find_type(const std::string& descr, const ErrorContext& ctx) {
  check(descr.size() == 3, "unsupported .npy dtype '" + descr + "'", ctx);
  check(descr[0] != '>', "big-endian .npy data ('" + descr + "') is not supported", ctx);
  for (const NpyType& t : kTypes) {
    if (descr.compare(1, 2, t.descr) != 0) continue;
    bool order_ok = descr[0] == '<' || (t.file_size == 1 && descr[0] == '|');
    check(order_ok, "unsupported .npy dtype '" + descr + "'", ctx);
    return t;
  }
  throw Error("unsupported .npy dtype '" + descr + "'", ctx);
}

template <typename T>
const T& header_field(const std::map<std::string, HeaderValue>& h, const std::string& key,
                      const ErrorContext& ctx) {
  auto it = h.find(key);
  check(it != h.end(), ".npy header lacks '" + key + "'", ctx);
  const T* v = std::get_if<T>(&it->second);
  check(v != nullptr, ".npy header field '" + key + "' has the wrong type", ctx);
  return *v;
}


void copy_data(const NpyType& type, const char* src, Tensor& t) {
  int64_t n = t.numel();
  std::string d = type.descr;
  if (d == "i2") widen<int16_t>(src, t.data<int32_t>(), n);
  else if (d == "u2") widen<uint16_t>(src, t.data<int32_t>(), n);
  else if (d == "u4") widen<uint32_t>(src, t.data<int64_t>(), n);
  else if (d == "b1") {
    auto* out = static_cast<uint8_t*>(t.raw());
    for (int64_t i = 0; i < n; ++i) out[i] = src[i] != 0;
  } else if (t.bytes()) {
    std::memcpy(t.raw(), src, t.bytes());
  }
}

const char* npy_descr(DType t) {
  switch (t) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::f64: return "<f8";
    case DType::i8: return "|i1";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::boolean: return "|b1";
    case DType::bf16: return nullptr;
  }
  return nullptr;
}

// (2, 3), (5,) or () as Python writes them.
std::string python_tuple(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  r += s.size() == 1 ? ",)" : ")";
  return r;
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& path) {
  const ErrorContext ctx{path, "", "", ""};
  check(bytes.size() >= kMagicLen + 4 && bytes.compare(0, kMagicLen, kMagic) == 0,
        "not a .npy file (bad magic)", ctx);
  uint8_t major = uint8_t(bytes[6]);
  check(major >= 1 && major <= 3, "unsupported .npy version " + std::to_string(major), ctx);
  size_t prefix = major == 1 ? 10 : 12;
  check(bytes.size() >= prefix, "truncated .npy header", ctx);
  uint64_t header_len = uint8_t(bytes[8]) | uint64_t(uint8_t(bytes[9])) << 8;
  if (major > 1)
    header_len |= uint64_t(uint8_t(bytes[10])) << 16 | uint64_t(uint8_t(bytes[11])) << 24;
  check(header_len <= kMaxHeaderBytes && header_len <= bytes.size() - prefix,
        "truncated or oversized .npy header (" + std::to_string(header_len) + " bytes)", ctx);
  std::string text = bytes.substr(prefix, size_t(header_len));
  auto header = HeaderParser(text, path).parse();
  const std::string& descr = header_field<std::string>(header, "descr", ctx);
  bool fortran_order = header_field<bool>(header, "fortran_order", ctx);
  Shape shape = header_field<Shape>(header, "shape", ctx);
  check(header.size() == 3, ".npy header has keys other than descr, fortran_order, shape", ctx);
  const NpyType& type = find_type(descr, ctx);
  check(!fortran_order,
        "fortran_order .npy arrays are not supported; save with np.ascontiguousarray", ctx);
  int64_t n = 1;
  const int64_t limit =
      int64_t(kMaxTensorFileBytes / std::max(type.file_size, dtype_size(type.dtype)));
  for (int64_t d : shape) {
    check(d == 0 || n <= limit / d, ".npy shape " + shape_str(shape) + " is over 16 GiB", ctx);
    n *= d;
  }
  uint64_t data_bytes = uint64_t(n) * type.file_size;
  uint64_t have = bytes.size() - prefix - header_len;
  check(have >= data_bytes, ".npy data has " + std::to_string(have) + " bytes but shape " +
                                shape_str(shape) + " needs " + std::to_string(data_bytes), ctx);
  Tensor t = Tensor::empty(type.dtype, shape);
  copy_data(type, bytes.data() + prefix + header_len, t);
  return t;
}

Tensor read_npy(const std::string& path) {
  return parse_npy(read_file_bytes(path, kMaxTensorFileBytes + kMaxHeaderBytes + 16), path);
}

std::string encode_npy(const Tensor& t) {
  check(t.defined() && t.device().is_cpu() && t.layout() == Layout::plain,
        "only plain-layout host tensors can be saved as .npy, not " + t.desc().str());
  const char* descr = npy_descr(t.dtype());
  check(descr != nullptr, "dtype " + std::string(dtype_name(t.dtype())) + " has no NumPy equivalent");
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                     python_tuple(t.shape()) + ", }";
  // Pad with spaces and a final newline so the data starts 64-byte aligned,
  // as numpy does; versions differ only in the length field's width.
  size_t prefix = 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 65535) {
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += char(prefix == 10 ? 1 : 2);
  out += char(0);
  for (size_t i = 0; i < prefix - 8; ++i) out += char((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.bytes());
  return out;
}

void write_npy(const std::string& path, const Tensor& t) {
  try {
    write_file_bytes(path, encode_npy(t));
  } catch (const Error& e) {
    throw e.with_context({path, "", "", ""});
  }
}

}  // namespace tandem
