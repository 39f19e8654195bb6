// libFuzzer target: the gzip decoder (RFC 1952 members through libdeflate, several members in a
// row, header flags, CRC-32 and ISIZE trailers).
//
// Input: gzip bytes. Whatever decodes must be a whole member (>= 18 bytes) and survive a round
// trip through the encoder.
#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "gzip.h"
#include "round_trip.h"

using namespace edl::recordio;  // NOLINT

namespace {

// Small, so that a member whose ISIZE trailer lies does not make every run allocate megabytes
// (the decoder trusts ISIZE up to the deflate ratio cap); the limit itself is exercised too.
constexpr uint64_t kFuzzMaxOut = uint64_t{64} << 10;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteBuffer out;
  const Status s = GzipDecode(data, size, out, kFuzzMaxOut);
  if (!s.ok()) {
    if (out.size() > kFuzzMaxOut) __builtin_trap();
    return 0;
  }
  if (size < 18) __builtin_trap();  // a header and a trailer at least
  static GzipEncoder encoder(1);
  ByteBuffer encoded;
  if (!encoder.Encode(out.data(), out.size(), encoded)) return 0;
  edl::fuzz::CheckRedecodes(encoded, out, kFuzzMaxOut, GzipDecode);
  return 0;
}
