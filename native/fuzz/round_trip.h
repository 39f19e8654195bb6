// What the codec fuzz targets (gzip, snappy) check of every input that decodes: re-encoded, it
// decodes again to the same bytes. Traps otherwise, so that libFuzzer keeps the input.
#ifndef EDL_FUZZ_ROUND_TRIP_H_
#define EDL_FUZZ_ROUND_TRIP_H_

#include <cstdint>
#include <cstring>

#include "byte_buffer.h"

namespace edl::fuzz {

// `decode(data, size, out, max_out)` must decode `encoded` to exactly `decoded`.
template <typename Decode>
void CheckRedecodes(const recordio::ByteBuffer& encoded, const recordio::ByteBuffer& decoded,
                    uint64_t max_out, Decode decode) {
  recordio::ByteBuffer again;
  if (!decode(encoded.data(), encoded.size(), again, max_out).ok()) __builtin_trap();
  if (again.size() != decoded.size()) __builtin_trap();
  if (decoded.size() > 0 && std::memcmp(again.data(), decoded.data(), decoded.size()) != 0) {
    __builtin_trap();
  }
}

}  // namespace edl::fuzz

#endif  // EDL_FUZZ_ROUND_TRIP_H_
