// Writes seed corpora for the fuzzers: small valid RecordIO files made by the real writer (every
// compressor, several chunk sizes, empty, short, repetitive and binary records), their chunks,
// their snappy and gzip payloads, and snappy/gzip streams of assorted inputs. Each seed is small
// (at most kMaxSeed bytes) so that the fuzzers run thousands of executions per second.
//
// Usage: make_seeds OUT_DIR   (writes OUT_DIR/{chunk,index,snappy,gzip}/*; OUT_DIR must exist)
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "byte_buffer.h"
#include "format.h"
#include "gzip.h"
#include "snappy_frame.h"
#include "writer.h"

using namespace edl::recordio;  // NOLINT

namespace {

constexpr size_t kMaxSeed = 4096;
using Bytes = std::vector<uint8_t>;

int failures = 0;

void Save(const std::string& dir, const std::string& name, uint8_t mode, const Bytes& body,
          bool with_mode) {
  Bytes all;
  if (with_mode) all.push_back(mode);
  all.insert(all.end(), body.begin(), body.end());
  if (all.size() > kMaxSeed) all.resize(kMaxSeed);
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(reinterpret_cast<const char*>(all.data()), static_cast<std::streamsize>(all.size()));
  if (!out) ++failures;
}

Bytes FromBuffer(const ByteBuffer& b) { return Bytes(b.data(), b.data() + b.size()); }

std::vector<std::vector<std::string>> RecordSets() {
  std::vector<std::vector<std::string>> sets;
  sets.push_back({"", "", ""});
  sets.push_back({"hello", "world", "a", "", "RecordIO"});
  std::vector<std::string> lengths;
  for (int n = 0; n < 40; n += 3) lengths.push_back(std::string(static_cast<size_t>(n), 'x'));
  sets.push_back(lengths);
  std::vector<std::string> text;
  for (int i = 0; i < 12; ++i) text.push_back("the quick brown fox " + std::to_string(i * 7919));
  sets.push_back(text);
  std::string binary;
  for (int i = 0; i < 256; ++i) binary.push_back(static_cast<char>(i));
  sets.push_back({binary, binary.substr(0, 17)});
  return sets;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const std::string root = argv[1];
  const std::string tmp = root + "/.seed.rio";
  const auto sets = RecordSets();
  const Compressor compressors[] = {Compressor::kNone, Compressor::kSnappy, Compressor::kGzip};
  int file_no = 0;
  for (const Compressor c : compressors) {
    for (const uint64_t chunk_bytes : {uint64_t{16}, uint64_t{64}, uint64_t{1024}}) {
      for (size_t set = 0; set < sets.size(); ++set) {
        WriterOptions o;
        o.compressor = c;
        o.max_chunk_bytes = chunk_bytes;
        o.gzip_level = set % 2 == 0 ? 6 : 1;
        auto w = Writer::Create(tmp, o);
        if (!w.ok()) return 1;
        for (const auto& r : sets[set]) {
          if (!w.value()->Write(reinterpret_cast<const uint8_t*>(r.data()), r.size()).ok())
            return 1;
        }
        if (!w.value()->Close().ok()) return 1;
        std::ifstream in(tmp, std::ios::binary);
        const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const std::string name = "w" + std::to_string(file_no++);
        // The index target: the whole file, then the file cut inside its last chunk and inside a
        // header (mode 1 recomputes CRCs, mode 0 keeps them).
        Save(root + "/index", name, 1, file, true);
        Save(root + "/index", name + "-crc", 0, file, true);
        if (file.size() > kHeaderSize + 3) {
          Save(root + "/index", name + "-cut", 1, Bytes(file.begin(), file.end() - 3), true);
        }
        // Each chunk for the chunk target; its payload for the snappy and gzip targets.
        size_t off = 0;
        int chunk_no = 0;
        while (file.size() - off >= kHeaderSize && chunk_no < 4) {
          const ChunkHeader h = ParseHeader(file.data() + off);
          const size_t end = off + kHeaderSize + h.compressed_size;
          if (end > file.size()) break;
          const Bytes chunk(file.begin() + static_cast<std::ptrdiff_t>(off),
                            file.begin() + static_cast<std::ptrdiff_t>(end));
          const std::string cname = name + "-c" + std::to_string(chunk_no++);
          Save(root + "/chunk", cname, 1, chunk, true);
          const Bytes payload(chunk.begin() + kHeaderSize, chunk.end());
          if (c == Compressor::kSnappy) Save(root + "/snappy", cname, 0, payload, false);
          if (c == Compressor::kGzip) Save(root + "/gzip", cname, 0, payload, false);
          off = end;
        }
      }
    }
  }
  std::remove(tmp.c_str());
  // Streams of assorted inputs straight from the encoders: stored and compressed snappy frames,
  // gzip at every kind of level (0 stores, 1 is fast, 12 is best).
  int stream_no = 0;
  for (const auto& set : sets) {
    std::string joined;
    for (const auto& r : set) joined += r;
    for (int copies : {1, 8}) {
      std::string input;
      for (int i = 0; i < copies; ++i) input += joined;
      const auto* p = reinterpret_cast<const uint8_t*>(input.data());
      ByteBuffer snappy;
      if (SnappyFrameEncode(p, input.size(), snappy)) {
        Save(root + "/snappy", "s" + std::to_string(stream_no), 0, FromBuffer(snappy), false);
      }
      for (int level : {0, 1, 12}) {
        GzipEncoder encoder(level);
        ByteBuffer gz;
        if (encoder.Encode(p, input.size(), gz)) {
          Save(root + "/gzip", "g" + std::to_string(stream_no) + "-" + std::to_string(level), 0,
               FromBuffer(gz), false);
        }
      }
      ++stream_no;
    }
  }
  return failures == 0 ? 0 : 1;
}
