/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of Kafka's v2 batches.
 *
 * Two implementations with the same results (tests/unit/protocol/test_crc32c.py holds both to google_crc32c):
 * - "sse4.2": x86-64's crc32 instruction, chosen at run time when the CPU has it (a function compiled for SSE4.2
 *   by a target attribute, so the package still builds for and runs on any x86-64). The instruction's latency is
 *   three times its throughput, so long buffers are read as three interleaved streams whose CRCs are joined by
 *   "shifting" one over the other's length: a CRC is linear, and appending n zero bytes to a register is a
 *   multiplication by x^(8n) modulo the polynomial, tabulated per byte of the register for three stream lengths.
 * - "software": slicing-by-8 tables, portable C (any compiler, any byte order); ARM's CRC instructions are not used.
 *
 * Nothing here calls Python: callers may run it with the GIL released.
 */
#include "_crc32c.h"

#include <string.h>

#define POLY 0x82F63B78u

static uint32_t slice[8][256]; /* slice[k][b]: byte b followed by k zero bytes */

static uint32_t (*extend_impl)(uint32_t, const unsigned char *, size_t) = crc32c_extend_software;

/* a * b modulo the polynomial, both in the reflected representation (bit 31 is x^0); a is not 0. */
static uint32_t
multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0) {
                break;
            }
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

/* x^(8n) modulo the polynomial: the operator that appends n zero bytes to a CRC register. */
static uint32_t
zeros_operator(uint64_t n)
{
    uint32_t p = 1u << 31;  /* x^0 */
    uint32_t sq = 1u << 30; /* x^1, squared each step: x^(2^i) */
    for (uint64_t e = 8 * n; e != 0; e >>= 1) {
        if (e & 1) {
            p = multmodp(sq, p);
        }
        sq = multmodp(sq, sq);
    }
    return p;
}

/* table[k][b] = op * (b << 8k): the operator applied to a register one byte at a time. */
static void
build_shift(uint32_t table[4][256], uint64_t n)
{
    uint32_t op = zeros_operator(n);
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) {
            table[k][b] = multmodp(op, b << (8 * k));
        }
    }
}

static inline uint32_t
le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

uint32_t
crc32c_extend_software(uint32_t crc, const unsigned char *p, size_t len)
{
    uint32_t c = ~crc;
    while (len >= 8) {
        uint32_t lo = le32(p) ^ c, hi = le32(p + 4);
        c = slice[7][lo & 0xFF] ^ slice[6][(lo >> 8) & 0xFF] ^ slice[5][(lo >> 16) & 0xFF] ^ slice[4][lo >> 24] ^
            slice[3][hi & 0xFF] ^ slice[2][(hi >> 8) & 0xFF] ^ slice[1][(hi >> 16) & 0xFF] ^ slice[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) {
        c = (c >> 8) ^ slice[0][(c ^ *p++) & 0xFF];
    }
    return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

#define SSE42
#define LONG_BLOCK 8192
#define MID_BLOCK 1024
#define SHORT_BLOCK 128

static uint32_t shift_long[4][256];  /* appends LONG_BLOCK zero bytes */
static uint32_t shift_mid[4][256];   /* appends MID_BLOCK zero bytes */
static uint32_t shift_short[4][256]; /* appends SHORT_BLOCK zero bytes */

static inline uint32_t
shift(uint32_t table[4][256], uint32_t c)
{
    return table[0][c & 0xFF] ^ table[1][(c >> 8) & 0xFF] ^ table[2][(c >> 16) & 0xFF] ^ table[3][c >> 24];
}

static inline uint64_t
load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Three streams of `block` bytes at once while 3 * block bytes are left; the register continues in c0. */
#define STREAMS(block, table)                                                                                         \
    while (len >= 3 * (size_t)(block)) {                                                                              \
        uint64_t c1 = 0, c2 = 0;                                                                                      \
        const unsigned char *end = p + (block);                                                                       \
        do {                                                                                                          \
            c0 = _mm_crc32_u64(c0, load64(p));                                                                        \
            c1 = _mm_crc32_u64(c1, load64(p + (block)));                                                              \
            c2 = _mm_crc32_u64(c2, load64(p + 2 * (block)));                                                          \
            p += 8;                                                                                                   \
        } while (p < end);                                                                                            \
        c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c1;                                                               \
        c0 = shift(table, (uint32_t)c0) ^ (uint32_t)c2;                                                               \
        p += 2 * (size_t)(block);                                                                                     \
        len -= 3 * (size_t)(block);                                                                                   \
    }

__attribute__((target("sse4.2"))) static uint32_t
extend_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c0 = ~crc;
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        len--;
    }
    STREAMS(LONG_BLOCK, shift_long)
    STREAMS(MID_BLOCK, shift_mid)
    STREAMS(SHORT_BLOCK, shift_short)
    while (len >= 8) {
        c0 = _mm_crc32_u64(c0, load64(p));
        p += 8;
        len -= 8;
    }
    while (len > 0) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        len--;
    }
    return ~(uint32_t)c0;
}
#endif

const char *
crc32c_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++) {
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        }
        slice[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++) {
        for (int k = 1; k < 8; k++) {
            slice[k][b] = (slice[k - 1][b] >> 8) ^ slice[0][slice[k - 1][b] & 0xFF];
        }
    }
#ifdef SSE42
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        build_shift(shift_long, LONG_BLOCK);
        build_shift(shift_mid, MID_BLOCK);
        build_shift(shift_short, SHORT_BLOCK);
        extend_impl = extend_sse42;
        return "sse4.2";
    }
#endif
    return "software";
}

uint32_t
crc32c_extend(uint32_t crc, const unsigned char *data, size_t len)
{
    return extend_impl(crc, data, len);
}
