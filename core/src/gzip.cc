#include "kubestat/core/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>

#include "kubestat/core/header_values.h"
#include "kubestat/core/log.h"
#include "kubestat/core/str_cat.h"

namespace kubestat {
namespace {

using header_values::EqualsIgnoreCase;
using header_values::ParseQvalue;
using header_values::TrimOws;

// zlib counts bytes in 32-bit uInt; larger buffers are fed in pieces of this size.
constexpr size_t kMaxZlibPiece = size_t{1} << 30;
// windowBits for a gzip wrapper (and only gzip) around a 32 KiB window.
constexpr int kGzipWindowBits = 15 + 16;

// The weight of one Accept-Encoding element's parameters ("; q=0.5"), in thousandths;
// 0 when a q parameter is malformed.
int WeightOf(std::string_view params) {
  int weight = 1000;
  while (!params.empty()) {
    const size_t semicolon = params.find(';');
    const std::string_view param = TrimOws(params.substr(0, semicolon));
    params =
        semicolon == std::string_view::npos ? std::string_view() : params.substr(semicolon + 1);
    const size_t equals = param.find('=');
    if (equals == std::string_view::npos) continue;
    if (!EqualsIgnoreCase(TrimOws(param.substr(0, equals)), "q")) continue;
    weight = ParseQvalue(TrimOws(param.substr(equals + 1))).value_or(0);
  }
  return weight;
}

// zlib failing with valid arguments "should never happen": a bug, so the process stops.
void CheckZlib(bool ok, const char* call, int rc) {
  if (ok) return;
  KLOG(ERROR) << "zlib " << call << " failed with " << rc;
  std::abort();
}

// Feeds bytes to a zlib stream in pieces its 32-bit counts can hold.
class ZlibInput {
 public:
  explicit ZlibInput(std::string_view data)
      : next_(reinterpret_cast<const Bytef*>(data.data())), left_(data.size()) {}
  // Gives `zs` the next piece once it has used up the previous one.
  void Refill(z_stream& zs) {
    if (zs.avail_in != 0 || left_ == 0) return;
    const size_t piece = std::min(left_, kMaxZlibPiece);
    zs.next_in = const_cast<Bytef*>(next_);  // zlib's API is not const-correct; it only reads
    zs.avail_in = static_cast<uInt>(piece);
    next_ += piece;
    left_ -= piece;
  }
  // Bytes not yet given to the stream.
  size_t left() const { return left_; }

 private:
  const Bytef* next_;
  size_t left_;
};

// Ends a zlib stream when it leaves scope.
struct DeflateStream {
  z_stream zs{};
  ~DeflateStream() { deflateEnd(&zs); }
};
struct InflateStream {
  z_stream zs{};
  ~InflateStream() { inflateEnd(&zs); }
};

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  std::optional<int> gzip_weight;
  std::optional<int> any_weight;
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    const std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    const size_t semicolon = element.find(';');
    const std::string_view coding = TrimOws(element.substr(0, semicolon));
    const std::string_view params =
        semicolon == std::string_view::npos ? std::string_view() : element.substr(semicolon + 1);
    if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
      gzip_weight = std::max(gzip_weight.value_or(0), WeightOf(params));
    } else if (coding == "*") {
      any_weight = std::max(any_weight.value_or(0), WeightOf(params));
    }
  }
  if (gzip_weight) return *gzip_weight > 0;
  return any_weight.value_or(0) > 0;
}

std::string GzipCompress(std::string_view data, int level) {
  level = std::clamp(level, 1, 9);
  DeflateStream stream;
  z_stream& zs = stream.zs;
  const int init = deflateInit2(&zs, level, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY);
  if (init == Z_MEM_ERROR) throw std::bad_alloc();
  CheckZlib(init == Z_OK, "deflateInit2", init);

  std::string out(deflateBound(&zs, data.size()), '\0');
  ZlibInput input(data);
  size_t out_used = 0;
  while (true) {
    input.Refill(zs);
    if (out_used == out.size()) out.resize(out.size() * 2 + 64);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_used);
    zs.avail_out = static_cast<uInt>(std::min(out.size() - out_used, kMaxZlibPiece));
    const uInt offered = zs.avail_out;
    const int rc = deflate(&zs, input.left() == 0 ? Z_FINISH : Z_NO_FLUSH);
    out_used += offered - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    CheckZlib(rc == Z_OK || rc == Z_BUF_ERROR, "deflate", rc);
  }
  out.resize(out_used);
  return out;
}

absl::StatusOr<std::string> GzipDecompress(std::string_view data, size_t max_bytes) {
  if (data.size() < 2 || static_cast<uint8_t>(data[0]) != 0x1f ||
      static_cast<uint8_t>(data[1]) != 0x8b) {
    return absl::InvalidArgumentError("not gzip data (no 1f 8b magic number)");
  }
  InflateStream stream;
  z_stream& zs = stream.zs;
  const int init = inflateInit2(&zs, kGzipWindowBits);
  if (init == Z_MEM_ERROR) throw std::bad_alloc();
  CheckZlib(init == Z_OK, "inflateInit2", init);

  constexpr size_t kOutPiece = size_t{64} * 1024;
  std::string out;
  ZlibInput input(data);
  while (true) {
    input.Refill(zs);
    const size_t used = out.size();
    // One byte past the cap is room enough to see an overflow.
    const size_t room = max_bytes - used >= kOutPiece ? kOutPiece : max_bytes - used + 1;
    out.resize(used + room);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(used + room - zs.avail_out);
    if (out.size() > max_bytes) {
      return absl::ResourceExhaustedError(
          StrCat("gzip data decompresses to more than ", max_bytes, " bytes"));
    }
    if (rc == Z_STREAM_END) {
      const size_t rest = zs.avail_in + input.left();
      if (rest == 0) return out;
      // Another member may follow (the input is contiguous, so next_in reads on past a
      // piece); anything else is trailing garbage.
      const Bytef* next = zs.next_in;
      if (rest < 2 || next[0] != 0x1f || next[1] != 0x8b) {
        return absl::InvalidArgumentError(StrCat(rest, " trailing bytes after the gzip data"));
      }
      const int reset = inflateReset(&zs);
      CheckZlib(reset == Z_OK, "inflateReset", reset);
      continue;
    }
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_STREAM_ERROR) {
      return absl::InvalidArgumentError(
          StrCat("corrupt gzip data: ", zs.msg != nullptr ? zs.msg : "inflate failed"));
    }
    // Z_OK or Z_BUF_ERROR: with every input byte used and room left for output, the stream
    // stopped short of its end (a Z_BUF_ERROR made no progress, so it always left room).
    if (zs.avail_in == 0 && input.left() == 0 && zs.avail_out != 0) {
      return absl::InvalidArgumentError("truncated gzip data");
    }
  }
}

}  // namespace kubestat
