// CRC32C (Castagnoli) implementations behind terse::crc32c() (frame.h).
// Both follow the zlib convention: crc32c(0, data, n) is the standard CRC
// (crc32c("123456789") == 0xE3069283) and a result can be passed back as the
// crc argument to continue over more data.  Exposed separately so that tests
// can check that the hardware and software paths agree.
#pragma once

#include <cstddef>
#include <cstdint>

namespace terse {

// Table-driven (slicing-by-8), any CPU.
uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len);

// SSE4.2 crc32 instruction, three interleaved streams; only call when
// crc32c_hw_available() says so.
uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len);
bool crc32c_hw_available();

}  // namespace terse
