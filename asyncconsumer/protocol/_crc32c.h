/* CRC-32C (Castagnoli), as Kafka's v2 batches carry it: _crc32c.c, used by _v2records_c.c. No Python API: the
 * functions touch only the bytes they are given, so callers may run them with the GIL released. */
#ifndef ASYNCCONSUMER_CRC32C_H
#define ASYNCCONSUMER_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Builds the tables and picks the implementation once (module init, GIL held); returns its name:
 * "sse4.2" (x86-64's crc32 instruction, found at run time) or "software" (slicing-by-8). */
const char *crc32c_init(void);

/* The CRC-32C of data[0:len] continuing from crc, a previous result (0 to start): google_crc32c.extend's
 * contract, so results chain over chunks. */
uint32_t crc32c_extend(uint32_t crc, const unsigned char *data, size_t len);

/* The same by the portable tables whatever the CPU has (the tests hold both to google_crc32c). */
uint32_t crc32c_extend_software(uint32_t crc, const unsigned char *data, size_t len);

#endif
