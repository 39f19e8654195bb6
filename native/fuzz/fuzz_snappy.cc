// libFuzzer target: the snappy framing decoder (stream identifier, compressed and uncompressed
// frames with masked CRC-32C, padding and skippable frames).
//
// Input: a framed snappy stream. Whatever decodes must survive a round trip through the encoder.
#include <cstddef>
#include <cstdint>

#include "byte_buffer.h"
#include "round_trip.h"
#include "snappy_frame.h"

using namespace edl::recordio;  // NOLINT

namespace {

// Keeps runs fast and memory small; the limit itself is exercised too.
constexpr uint64_t kFuzzMaxOut = uint64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteBuffer out;
  const Status s = SnappyFrameDecode(data, size, out, kFuzzMaxOut);
  if (!s.ok()) {
    if (out.size() > kFuzzMaxOut) __builtin_trap();
    return 0;
  }
  ByteBuffer encoded;
  if (!SnappyFrameEncode(out.data(), out.size(), encoded)) return 0;
  edl::fuzz::CheckRedecodes(encoded, out, kFuzzMaxOut, SnappyFrameDecode);
  return 0;
}
