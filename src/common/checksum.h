// CRC-32C (Castagnoli), the digest of Saturn's checkpoint manifests: fast
// (the SSE 4.2 instruction where the processor has it, a table otherwise),
// and good at what it is for, catching torn, truncated and bit-flipped
// files (not tampering).
//
//   uint32_t crc = Crc32c(bytes.data(), bytes.size());
//   std::string hex = Crc32cHex(crc);                  // "e3069283"
//   FileDigest d = DigestFile("block-00003.pt");       // size and crc of a file
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace saturn {

// CRC-32C of `size` bytes, continuing from `crc` (0 to start).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// The table-driven CRC-32C alone (what runs without SSE 4.2), for tests.
uint32_t Crc32cPortable(const void* data, size_t size, uint32_t crc = 0);

// Eight lower-case hex digits.
std::string Crc32cHex(uint32_t crc);

struct FileDigest {
  uint64_t size = 0;
  uint32_t crc32c = 0;
};

// Reads a file through and digests it; throws std::runtime_error naming the
// file if it cannot be read.
FileDigest DigestFile(const std::string& path);

}  // namespace saturn
