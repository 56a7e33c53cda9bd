/* The records of an uncompressed v2 batch, decoded in C: the compiled twin of _v2records.py.
 *
 * _v2records.py is the specification: the same entry points (fill_records, ColumnSink), the same records, buffers,
 * DecodeError (the very class, imported from it) with the same offset and reason, and the same integer wrapping
 * (offsets and timestamps wrap as 64-bit integers, varints as 32-bit ones). The Hypothesis tests in
 * tests/unit/protocol/test_v2records.py feed both the same batches.
 *
 * A record is first checked whole (every field within its stated size, Java's DefaultRecord.readFrom checks), and
 * only then turned into objects or column bytes: a record is taken whole or not at all. Positions are 64-bit
 * indices compared with the buffer's length before any byte is read; no pointer is formed past the buffer.
 *
 * ColumnSink.fill decodes with the GIL released (the polling thread's decoding then runs beside the background I/O
 * thread): it reserves room for the whole call first, from bounds the batch proves, and the walk and the copies
 * touch only the batch's bytes and the sink's buffers; errors are recorded and raised once the GIL is back.
 * fill_records makes objects, so it keeps the GIL. The module also has crc32c (_crc32c.c).
 *
 * An entry point holds for any argument: each is checked before anything is read (the reference's TypeError or
 * ValueError naming it), and what it keeps while Python code runs (a header pair's __iter__, a finalizer) is its
 * own: append copies the headers into tuples of its own before it borrows their keys' UTF-8, and a sink checks
 * again that no other thread's fill began once such code ran.
 *
 * Plain C99 and the CPython C API (3.11+).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "_crc32c.h"

#define RECORDS_AT 61
#define BASE_OFFSET_AT 0
#define ATTRIBUTES_AT 21
#define STAMPS_AT 27
#define COUNT_AT 57
#define LOG_APPEND_TIME 0x08
#define DATA_MAX 0x7FFFFFFF /* a column's data stays addressable by 32-bit offsets */

static PyObject *DecodeError;    /* asyncconsumer.protocol._v2records.DecodeError */
static PyObject *empty_tuple;    /* the headers of a record without any */
static PyObject *str_append;     /* "append", for an `out` that is not a list */

/* ---- reading ------------------------------------------------------------------------------------------------ */

static inline uint64_t
be_u64(const unsigned char *p)
{
    return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) | ((uint64_t)p[3] << 32) |
           ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) | ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}

static inline uint32_t
be_u32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* Two's complement reinterpretations (the wrapping the reference does with masks). */
static inline int64_t
as_i64(uint64_t v)
{
    int64_t out;
    memcpy(&out, &v, sizeof out);
    return out;
}

static inline int32_t
as_i32(uint32_t v)
{
    int32_t out;
    memcpy(&out, &v, sizeof out);
    return out;
}

enum { VARINT_OK = 0, VARINT_TRUNCATED = 1, VARINT_TOO_LONG = 2 };

/* The raw bits of a varint of at most max_bytes bytes at *pos, never reading at or past end; bits past 64 are
 * dropped (the reference masks them). */
static inline int
read_raw(const unsigned char *buf, int64_t *pos, int64_t end, int max_bytes, uint64_t *raw_out)
{
    int64_t p = *pos;
    if (p < end && buf[p] < 0x80) { /* the common one-byte varint */
        *raw_out = buf[p];
        *pos = p + 1;
        return VARINT_OK;
    }
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end) {
            return VARINT_TRUNCATED;
        }
        unsigned int b = buf[p++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            *raw_out = raw;
            *pos = p;
            return VARINT_OK;
        }
    }
    return VARINT_TOO_LONG;
}

static inline int32_t
zigzag32(uint64_t raw)
{
    uint32_t r = (uint32_t)raw;
    return as_i32((r >> 1) ^ (0u - (r & 1u)));
}

static inline int64_t
zigzag64(uint64_t raw)
{
    return as_i64((raw >> 1) ^ (0u - (raw & 1u)));
}

/* Whether data[0:n] is well-formed UTF-8 (Unicode's table 3-7: no overlong forms, no surrogates, nothing past
 * U+10FFFF), exactly what Python's strict decoder accepts. */
static int
utf8_valid(const unsigned char *s, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        unsigned int c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int64_t need;
        unsigned int lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
        }
        else if (c == 0xE0) {
            need = 2;
            lo = 0xA0;
        }
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
            need = 2;
        }
        else if (c == 0xED) {
            need = 2;
            hi = 0x9F;
        }
        else if (c == 0xF0) {
            need = 3;
            lo = 0x90;
        }
        else if (c >= 0xF1 && c <= 0xF3) {
            need = 3;
        }
        else if (c == 0xF4) {
            need = 3;
            hi = 0x8F;
        }
        else {
            return 0;
        }
        if (need > n - i - 1) {
            return 0;
        }
        unsigned int c1 = s[i + 1];
        if (c1 < lo || c1 > hi) {
            return 0;
        }
        for (int64_t k = 2; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
        }
        i += need + 1;
    }
    return 1;
}

/* A batch's header fields and a cursor over its records. */
typedef struct {
    const unsigned char *buf;
    int64_t len;
    int64_t base_offset;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int log_append;
    int64_t pos;
    int64_t left;
    int64_t expected; /* the offset after the last record read (the first one's, at the start) */
} Cursor;

/* One checked record: where its fields are. */
typedef struct {
    int64_t offset;
    int64_t timestamp;
    int64_t key_at;
    int64_t value_at;
    int32_t key_len;   /* -1: null */
    int32_t value_len; /* -1: null */
    int32_t header_count;
    int64_t headers_at;
    int64_t end; /* the byte after the record */
    int64_t header_key_bytes;
    int64_t header_value_bytes;
} Record;

/* Raises DecodeError(offset, reason); steals reason. Always returns -1. */
static int
decode_error_past(int64_t offset, int past_every_offset, PyObject *reason)
{
    if (reason == NULL) {
        return -1;
    }
    PyObject *exc = past_every_offset
                        ? PyObject_CallFunction(DecodeError, "KO", (unsigned long long)INT64_MAX + 1u, reason)
                        : PyObject_CallFunction(DecodeError, "LO", (long long)offset, reason);
    Py_DECREF(reason);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return -1;
}

static int
decode_error(int64_t offset, PyObject *reason)
{
    return decode_error_past(offset, 0, reason);
}

/* A malformed record, as found: the walk records what was wrong and the caller raises it (with the GIL: the walk
 * may run without it). */
typedef enum {
    BAD_NEGATIVE_SIZE,  /* n: the size */
    BAD_TRUNCATED,      /* - */
    BAD_VARINT,         /* n: the varint's maximum bytes */
    BAD_LENGTH,         /* what, n: the length */
    BAD_HEADER_COUNT,   /* n: the count */
    BAD_HEADER_KEY,     /* - */
    BAD_SIZE_MISMATCH,  /* n: the size, used: the bytes its fields take */
    BAD_TRAILING_BYTES, /* used: the bytes after the record */
} BadKind;

typedef struct {
    BadKind kind;
    int64_t offset; /* the offset expected next: DecodeError's */
    int past_every_offset; /* DecodeError's offset is 2**63: a call took the record at offset 2**63 - 1 */
    int64_t at;     /* where the record starts */
    int32_t n;
    int64_t used;
    const char *what;
} Bad;

/* Raises the DecodeError a Bad stands for, with the reference's reason text. Always returns -1. */
static int
raise_bad(const Bad *bad)
{
    long long at = (long long)bad->at;
    PyObject *reason;
    switch (bad->kind) {
    case BAD_NEGATIVE_SIZE:
        reason = PyUnicode_FromFormat("record at byte %lld: size %d is negative", at, (int)bad->n);
        break;
    case BAD_VARINT:
        reason = PyUnicode_FromFormat("record at byte %lld: varint longer than %d bytes", at, (int)bad->n);
        break;
    case BAD_LENGTH:
        reason = PyUnicode_FromFormat("record at byte %lld: %s length %d is invalid", at, bad->what, (int)bad->n);
        break;
    case BAD_HEADER_COUNT:
        reason = PyUnicode_FromFormat("record at byte %lld: header count %d is invalid", at, (int)bad->n);
        break;
    case BAD_HEADER_KEY:
        reason = PyUnicode_FromFormat("record at byte %lld: header key is not valid UTF-8", at);
        break;
    case BAD_SIZE_MISMATCH:
        reason = PyUnicode_FromFormat("record at byte %lld: size %d but its fields take %lld bytes", at, (int)bad->n,
                                      (long long)bad->used);
        break;
    case BAD_TRAILING_BYTES:
        reason = PyUnicode_FromFormat("%lld bytes after the batch's last record", (long long)bad->used);
        break;
    case BAD_TRUNCATED:
    default:
        reason = PyUnicode_FromFormat("record at byte %lld: truncated", at);
        break;
    }
    return decode_error_past(bad->offset, bad->past_every_offset, reason);
}

/* The record at c->pos, checked; on success pos, left and expected move past it. -1 and *bad filled when the
 * record is malformed (the cursor does not move). Touches nothing but its arguments and the batch's bytes: it may
 * run without the GIL. */
static int
next_record(Cursor *c, Record *r, Bad *bad)
{
    const unsigned char *buf = c->buf;
    const int64_t at = c->pos, len = c->len;
    int64_t p = at, end = len, start = 0;
    uint64_t raw = 0;
    int rc, max_bytes = 5;
    int32_t size = 0, n = 0, count;
    const char *what = NULL;

#define VARINT(bytes, dst, conv)                                                                                      \
    do {                                                                                                              \
        max_bytes = (bytes);                                                                                          \
        rc = read_raw(buf, &p, end, max_bytes, &raw);                                                                 \
        if (rc != VARINT_OK) {                                                                                        \
            goto bad_varint;                                                                                          \
        }                                                                                                             \
        (dst) = conv(raw);                                                                                            \
    } while (0)

    bad->offset = c->expected;
    bad->past_every_offset = 0;
    bad->at = at;
    VARINT(5, size, zigzag32);
    if (size < 0) {
        bad->kind = BAD_NEGATIVE_SIZE;
        bad->n = size;
        return -1;
    }
    start = p;
    if (size > len - start) {
        goto truncated;
    }
    end = start + size;
    p += 1; /* attributes: unused */
    if (p > end) {
        goto truncated;
    }
    int64_t timestamp_delta, offset_delta;
    VARINT(10, timestamp_delta, zigzag64);
    VARINT(5, offset_delta, zigzag32);

    what = "key";
    VARINT(5, n, zigzag32);
    if (n < 0) {
        if (n != -1) {
            goto bad_length;
        }
        r->key_len = -1;
        r->key_at = p;
    }
    else {
        if (n > end - p) {
            goto truncated;
        }
        r->key_len = n;
        r->key_at = p;
        p += n;
    }
    what = "value";
    VARINT(5, n, zigzag32);
    if (n < 0) {
        if (n != -1) {
            goto bad_length;
        }
        r->value_len = -1;
        r->value_at = p;
    }
    else {
        if (n > end - p) {
            goto truncated;
        }
        r->value_len = n;
        r->value_at = p;
        p += n;
    }
    VARINT(5, count, zigzag32);
    if (count < 0) {
        bad->kind = BAD_HEADER_COUNT;
        bad->n = count;
        return -1;
    }
    r->header_count = count;
    r->headers_at = p;
    r->header_key_bytes = 0;
    r->header_value_bytes = 0;
    /* Each header takes at least two bytes, so a stated count past the record's size ends in "truncated" soon. */
    for (int32_t i = 0; i < count; i++) {
        what = "header key";
        VARINT(5, n, zigzag32);
        if (n < 0) {
            goto bad_length;
        }
        if (n > end - p) {
            goto truncated;
        }
        if (!utf8_valid(buf + p, n)) {
            bad->kind = BAD_HEADER_KEY;
            return -1;
        }
        p += n;
        r->header_key_bytes += n;
        what = "header value";
        VARINT(5, n, zigzag32);
        if (n < 0) {
            if (n != -1) {
                goto bad_length;
            }
        }
        else {
            if (n > end - p) {
                goto truncated;
            }
            p += n;
            r->header_value_bytes += n;
        }
    }
    if (p != end) {
        bad->kind = BAD_SIZE_MISMATCH;
        bad->n = size;
        bad->used = p - start;
        return -1;
    }
    if (c->left == 1 && end != len) {
        bad->kind = BAD_TRAILING_BYTES;
        bad->used = len - end;
        return -1;
    }
#undef VARINT
    r->offset = as_i64((uint64_t)c->base_offset + (uint64_t)offset_delta);
    r->timestamp = c->log_append ? c->max_timestamp : as_i64((uint64_t)c->base_timestamp + (uint64_t)timestamp_delta);
    r->end = end;
    c->pos = end;
    c->left -= 1;
    c->expected = as_i64((uint64_t)r->offset + 1u);
    return 0;

bad_varint:
    if (rc == VARINT_TOO_LONG) {
        bad->kind = BAD_VARINT;
        bad->n = max_bytes;
        return -1;
    }
truncated:
    bad->kind = BAD_TRUNCATED;
    return -1;
bad_length:
    bad->kind = BAD_LENGTH;
    bad->what = what;
    bad->n = n;
    return -1;
}

/* ---- arguments ---------------------------------------------------------------------------------------------- */

/* Every argument of every entry point is checked before anything is read or written, with the reference's
 * TypeError or ValueError naming it (the same messages, in the same order). Integers must be ints (bool and
 * subclasses too): no __index__, so no Python code runs while an argument is converted. */

#define RANGE_INT8 "from -128 to 127"
#define RANGE_INT32 "from -2147483648 to 2147483647"
#define RANGE_INT64 "from -9223372036854775808 to 9223372036854775807"
#define RANGE_LEFT "from 0 to 2147483647 (the records left after pos)"
#define RANGE_NONNEGATIVE ">= 0"
#define PAIR "a (str, bytes | None) pair"

/* TypeError: "f() argument 'name' must be what, not <type>". Always returns -1. */
static int
arg_type_error(const char *fname, const char *name, const char *what, PyObject *obj)
{
    PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be %s, not %.200s", fname, name, what,
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* ValueError: "f() argument 'name' must be range, not <value>". Always returns -1. */
static int
arg_value_error(const char *fname, const char *name, const char *range, PyObject *obj)
{
    PyErr_Format(PyExc_ValueError, "%s() argument '%s' must be %s, not %S", fname, name, range, obj);
    return -1;
}

static int
arg_int(const char *fname, const char *name, PyObject *obj)
{
    return PyLong_Check(obj) ? 0 : arg_type_error(fname, name, "int", obj);
}

/* An int argument within [lo, hi] into *out. */
static int
arg_int_in(const char *fname, const char *name, PyObject *obj, long long lo, long long hi, const char *range,
           long long *out)
{
    int overflow;
    if (arg_int(fname, name, obj) < 0) {
        return -1;
    }
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow != 0 || v < lo || v > hi) {
        return arg_value_error(fname, name, range, obj);
    }
    *out = v;
    return 0;
}

/* A C-contiguous bytes-like argument's buffer, held until PyBuffer_Release. `what` names it in the TypeError
 * ("argument 'batch'"); a failure other than the object not being one (a released memoryview's ValueError) is
 * raised as it is. */
static int
arg_buffer(const char *fname, const char *what, PyObject *obj, Py_buffer *view, const char *or_none)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) == 0) {
        return 0;
    }
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_BufferError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s() %s must be a C-contiguous bytes-like object%s, not %.200s", fname, what,
                     or_none, Py_TYPE(obj)->tp_name);
    }
    return -1;
}

/* Vectorcall arguments by position or keyword into out[0:n]; the first required are required, the rest NULL when
 * not given. */
static int
parse_args_opt(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
               const char *const *names, Py_ssize_t n, Py_ssize_t required, PyObject **out)
{
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments but %zd were given", fname, n, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    if (kwnames != NULL) {
        Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < nk; k++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, k);
            Py_ssize_t j = 0;
            while (j < n && PyUnicode_CompareWithASCIIString(name, names[j]) != 0) {
                j++;
            }
            if (j == n) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", fname, name);
                return -1;
            }
            if (out[j] != NULL) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname, names[j]);
                return -1;
            }
            out[j] = args[nargs + k];
        }
    }
    for (Py_ssize_t i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %zd)", fname, names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

/* Vectorcall arguments by position or keyword into out[0:n]; every argument is required. */
static int
parse_args(const char *fname, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, const char *const *names,
           Py_ssize_t n, PyObject **out)
{
    return parse_args_opt(fname, args, nargs, kwnames, names, n, n, out);
}

/* ---- one call: the batch, the cursor and the arguments to resume from ------------------------------------------ */

typedef struct {
    Py_buffer view;
    Cursor c;
    PyObject *position_obj;
    int64_t limit;
    int64_t position;
    int skip_all;      /* position is past every int64 offset */
    int64_t consumed;  /* records read (taken or skipped) */
    int64_t taken;
    int64_t last_offset;
} Call;

/* The first five arguments of fill_records and ColumnSink.fill, checked: a bytes-like batch held (until
 * call_open fails or call_finish), pos -1 or at least 0, left (when pos is) a record count, any int position,
 * a limit of at least 0 (past int64: no limit). -1 with an exception set and nothing held on failure. */
static int
call_start(Call *k, const char *fname, PyObject *batch, PyObject *pos, PyObject *left, PyObject *position,
           PyObject *limit)
{
    int overflow;
    long long value;
    Cursor *c = &k->c;

    if (arg_buffer(fname, "argument 'batch'", batch, &k->view, "") < 0) {
        return -1;
    }
    c->buf = (const unsigned char *)k->view.buf;
    c->len = (int64_t)k->view.len;
    k->position_obj = position;
    k->skip_all = 0;
    k->consumed = 0;
    k->taken = 0;
    k->last_offset = 0;
    if (arg_int(fname, "pos", pos) < 0) {
        goto fail;
    }
    value = PyLong_AsLongLongAndOverflow(pos, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        goto fail;
    }
    if (overflow < 0 || (overflow == 0 && value < -1)) {
        arg_value_error(fname, "pos", "-1 (the first record) or a byte of the batch", pos);
        goto fail;
    }
    c->pos = overflow > 0 ? INT64_MAX : value; /* past the batch: call_open refuses it */
    c->left = 0;
    if (c->pos >= 0) {
        long long n = 0;
        if (arg_int_in(fname, "left", left, 0, INT32_MAX, RANGE_LEFT, &n) < 0) {
            goto fail;
        }
        c->left = n;
    }
    else if (arg_int(fname, "left", left) < 0) {
        goto fail;
    }
    if (arg_int(fname, "position", position) < 0) {
        goto fail;
    }
    value = PyLong_AsLongLongAndOverflow(position, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        goto fail;
    }
    k->skip_all = overflow > 0;
    k->position = overflow < 0 ? INT64_MIN : value;
    if (arg_int(fname, "limit", limit) < 0) {
        goto fail;
    }
    value = PyLong_AsLongLongAndOverflow(limit, &overflow);
    if (value == -1 && PyErr_Occurred()) {
        goto fail;
    }
    if (overflow < 0 || (overflow == 0 && value < 0)) {
        arg_value_error(fname, "limit", RANGE_NONNEGATIVE, limit);
        goto fail;
    }
    k->limit = overflow > 0 ? INT64_MAX : value;
    return 0;

fail:
    PyBuffer_Release(&k->view);
    return -1;
}

/* Reads the batch's header once every argument was checked: DecodeError for a batch too short or a negative
 * record count, ValueError for a pos outside its records. -1 with the batch released on failure. */
static int
call_open(Call *k, const char *fname, PyObject *pos)
{
    Cursor *c = &k->c;
    if (c->len < RECORDS_AT) {
        decode_error(0, PyUnicode_FromFormat("batch of %zd bytes is shorter than its header", k->view.len));
        goto fail;
    }
    c->base_offset = as_i64(be_u64(c->buf + BASE_OFFSET_AT));
    c->log_append = (c->buf[ATTRIBUTES_AT + 1] & LOG_APPEND_TIME) != 0;
    c->base_timestamp = as_i64(be_u64(c->buf + STAMPS_AT));
    c->max_timestamp = as_i64(be_u64(c->buf + STAMPS_AT + 8));
    c->expected = c->base_offset;
    if (c->pos < 0) {
        c->pos = RECORDS_AT;
        c->left = as_i32(be_u32(c->buf + COUNT_AT));
        if (c->left < 0) {
            decode_error(c->base_offset, PyUnicode_FromFormat("record count %d is negative", (int)c->left));
            goto fail;
        }
        if (c->left == 0 && c->len > RECORDS_AT) { /* no record to end at: the bytes past the header are trailing */
            decode_error(c->base_offset,
                         PyUnicode_FromFormat("%lld bytes after the batch's last record", (long long)(c->len - RECORDS_AT)));
            goto fail;
        }
    }
    else if (c->pos < RECORDS_AT || c->pos > c->len) {
        PyErr_Format(PyExc_ValueError, "%s() argument 'pos' must be -1 (the first record) or from %d to %zd, not %S",
                     fname, RECORDS_AT, k->view.len, pos);
        goto fail;
    }
    return 0;

fail:
    PyBuffer_Release(&k->view);
    return -1;
}

/* The next record to take: 1 and *r filled, 0 when the call is done, -1 and *bad filled (raise_bad raises it).
 * Skips the records before the position. Needs no GIL. */
static inline int
call_next(Call *k, Record *r, Bad *bad)
{
    while (k->c.left > 0 && k->taken < k->limit) {
        if (next_record(&k->c, r, bad) < 0) {
            return -1;
        }
        k->consumed++;
        if (k->skip_all || r->offset < k->position) {
            continue;
        }
        return 1;
    }
    return 0;
}

/* A call's bad record: its DecodeError names at least the call's position, so records the call took, or skipped
 * below the position, are never handed out again whatever offsets the records before the bad one had. */
static int
call_raise_bad(const Call *k, Bad *bad)
{
    if (k->skip_all) {
        bad->past_every_offset = 1;
    }
    else if (bad->offset < k->position) {
        bad->offset = k->position;
    }
    return raise_bad(bad);
}

/* The record returned by call_next was taken: the position moves past it. */
static inline void
call_took(Call *k, const Record *r)
{
    k->taken++;
    k->last_offset = r->offset;
    if (r->offset == INT64_MAX) {
        k->skip_all = 1; /* the position is 2**63, as Python's unbounded integers have it */
    }
    else {
        k->position = r->offset + 1;
    }
}

/* (pos, left, position) to resume from; releases the batch. */
static PyObject *
call_finish(Call *k)
{
    PyObject *position;

    PyBuffer_Release(&k->view);
    if (k->taken == 0) {
        position = Py_NewRef(k->position_obj);
    }
    else if (k->last_offset == INT64_MAX) {
        position = PyLong_FromUnsignedLongLong((unsigned long long)INT64_MAX + 1u);
    }
    else {
        position = PyLong_FromLongLong(k->last_offset + 1);
    }
    if (position == NULL) {
        return NULL;
    }
    PyObject *result = Py_BuildValue("LLN", (long long)k->c.pos, (long long)k->c.left, position);
    return result;
}

/* ---- fill_records --------------------------------------------------------------------------------------------- */

static inline PyObject *
blob(const unsigned char *buf, int64_t at, int32_t len)
{
    if (len < 0) {
        return Py_NewRef(Py_None);
    }
    return PyBytes_FromStringAndSize((const char *)buf + at, len);
}

#define BATCH_CHANGED "the batch changed while its records were decoded"

/* The next header of a checked record: where its key and value are (value length -1: null); -1 if the bytes no
 * longer read as a header (no exception set: this may run without the GIL). The record was checked, but the walk
 * is bounded again: another thread may have written into a bytearray batch since (it may run while fill has let
 * the GIL go, or while an allocation ran a finalizer), so a changed batch raises instead of reading past it. */
static int
next_header(const unsigned char *buf, int64_t *pos, int64_t end, int64_t *key_at, int32_t *key_len,
            int64_t *value_at, int32_t *value_len)
{
    uint64_t raw = 0;
    int64_t p = *pos;
    int32_t n;
    if (read_raw(buf, &p, end, 5, &raw) != VARINT_OK || (n = zigzag32(raw)) < 0 || n > end - p) {
        goto changed;
    }
    *key_at = p;
    *key_len = n;
    p += n;
    if (read_raw(buf, &p, end, 5, &raw) != VARINT_OK || (n = zigzag32(raw)) < -1 || n > end - p) {
        goto changed;
    }
    *value_at = p;
    *value_len = n;
    if (n > 0) {
        p += n;
    }
    *pos = p;
    return 0;
changed:
    return -1;
}

/* The headers of a checked record: ((str, bytes | None), ...). */
static PyObject *
headers_tuple(const unsigned char *buf, const Record *r)
{
    if (r->header_count == 0) {
        return Py_NewRef(empty_tuple);
    }
    PyObject *headers = PyTuple_New(r->header_count);
    if (headers == NULL) {
        return NULL;
    }
    int64_t p = r->headers_at, key_at, value_at;
    int32_t key_len, value_len;
    for (int32_t i = 0; i < r->header_count; i++) {
        if (next_header(buf, &p, r->end, &key_at, &key_len, &value_at, &value_len) < 0) {
            PyErr_SetString(PyExc_RuntimeError, BATCH_CHANGED);
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)buf + key_at, key_len, NULL);
        PyObject *value = blob(buf, value_at, value_len);
        if (key == NULL || value == NULL) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
}

#define RECORD_FIELDS 11

/* The int made last for one field of the records of a call, and the value it holds. */
typedef struct {
    int64_t value;
    PyObject *obj;
} Last;

/* A new reference to an int of value v: the last one made if it holds v, else a new one (then remembered). */
static inline PyObject *
last_int(Last *last, int64_t v)
{
    if (last->obj == NULL || last->value != v) {
        PyObject *obj = PyLong_FromLongLong(v);
        if (obj == NULL) {
            return NULL;
        }
        Py_XSETREF(last->obj, obj);
        last->value = v;
    }
    return Py_NewRef(last->obj);
}

static inline void
last_clear(Last *last)
{
    Py_CLEAR(last->obj);
}

/* fill_records' own arguments, after the call's: where the records go and what they are made of. */
static int
fill_records_check(PyObject *out, PyObject *record_type, PyObject *topic, PyObject *partition,
                   PyObject *leader_epoch)
{
    static const char *fname = "fill_records";
    if (!PyList_Check(out)) {
        PyObject *append = PyObject_GetAttr(out, str_append);
        if (append == NULL && !PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        int callable = append != NULL && PyCallable_Check(append);
        Py_XDECREF(append);
        if (!callable) {
            return arg_type_error(fname, "out", "a list or have an append method", out);
        }
    }
    if (!PyType_Check(record_type) || !PyType_IsSubtype((PyTypeObject *)record_type, &PyTuple_Type)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 'record_type' must be a subclass of tuple, not %R", fname,
                     record_type);
        return -1;
    }
    if (!PyUnicode_Check(topic)) {
        return arg_type_error(fname, "topic", "str", topic);
    }
    if (arg_int(fname, "partition", partition) < 0) {
        return -1;
    }
    if (leader_epoch != Py_None && !PyLong_Check(leader_epoch)) {
        return arg_type_error(fname, "leader_epoch", "int or None", leader_epoch);
    }
    return 0;
}

static const char *const fill_records_names[] = {
    "batch", "pos", "left", "position", "limit", "out", "record_type", "topic", "partition", "leader_epoch", "extra",
};

static PyObject *
fill_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[11];
    Call k;
    Record r;
    Bad bad;
    int rc;

    (void)module;
    if (parse_args_opt("fill_records", args, nargs, kwnames, fill_records_names, 11, 10, a) < 0) {
        return NULL;
    }
    PyObject *out = a[5], *record_type = a[6], *topic = a[7], *partition = a[8], *leader_epoch = a[9];
    PyObject *extra = a[10] == Py_None ? NULL : a[10]; /* a last field after the record's own (a share record's
                                                          * delivery count), or NULL */
    Py_ssize_t fields = extra == NULL ? RECORD_FIELDS : RECORD_FIELDS + 1;
    if (call_start(&k, "fill_records", a[0], a[1], a[2], a[3], a[4]) < 0) {
        return NULL;
    }
    if (fill_records_check(out, record_type, topic, partition, leader_epoch) < 0) {
        PyBuffer_Release(&k.view);
        return NULL;
    }
    if (call_open(&k, "fill_records", a[1]) < 0) {
        return NULL;
    }
    const unsigned char *buf = k.c.buf;
    PyObject *timestamp_type = PyLong_FromLong(k.c.log_append ? 1 : 0);
    PyTypeObject *type = (PyTypeObject *)record_type;
    const int exact_tuple = type == &PyTuple_Type, out_is_list = PyList_CheckExact(out);
    /* A record holds only bytes, None, ints, a str and tuples of them, so it can be in no reference cycle: left to
     * the cyclic GC, every poll's records were traversed again at each collection while the caller held them (a
     * fifth of a 100 B record's cost). Only when nothing shared is a container and the type has no __dict__
     * through which a cycle could form later. */
    const int untrack = type->tp_dictoffset == 0 && PyUnicode_CheckExact(topic) && !PyObject_IS_GC(partition) &&
                        !PyObject_IS_GC(leader_epoch) && (extra == NULL || !PyObject_IS_GC(extra));
    /* A record's timestamp and sizes repeat from one record to the next (a producer batch's records share a
     * millisecond, a topic's values a size), so the last one's ints are reused rather than allocated again. */
    Last last_timestamp = {0, NULL}, last_key_size = {0, NULL}, last_value_size = {0, NULL};
    if (timestamp_type == NULL) {
        goto fail;
    }
    while ((rc = call_next(&k, &r, &bad)) > 0) {
        PyObject *key = blob(buf, r.key_at, r.key_len);
        PyObject *value = blob(buf, r.value_at, r.value_len);
        PyObject *offset = PyLong_FromLongLong(r.offset);
        PyObject *timestamp = last_int(&last_timestamp, r.timestamp);
        PyObject *headers = headers_tuple(buf, &r);
        PyObject *key_size = last_int(&last_key_size, r.key_len);
        PyObject *value_size = last_int(&last_value_size, r.value_len);
        PyObject *rec = NULL;
        if (key && value && offset && timestamp && headers && key_size && value_size) {
            rec = exact_tuple ? PyTuple_New(fields) : type->tp_alloc(type, fields);
        }
        if (rec == NULL) {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_XDECREF(offset);
            Py_XDECREF(timestamp);
            Py_XDECREF(headers);
            Py_XDECREF(key_size);
            Py_XDECREF(value_size);
            goto fail;
        }
        PyTuple_SET_ITEM(rec, 0, Py_NewRef(topic));
        PyTuple_SET_ITEM(rec, 1, Py_NewRef(partition));
        PyTuple_SET_ITEM(rec, 2, offset);
        PyTuple_SET_ITEM(rec, 3, timestamp);
        PyTuple_SET_ITEM(rec, 4, Py_NewRef(timestamp_type));
        PyTuple_SET_ITEM(rec, 5, key);
        PyTuple_SET_ITEM(rec, 6, value);
        PyTuple_SET_ITEM(rec, 7, headers);
        PyTuple_SET_ITEM(rec, 8, Py_NewRef(leader_epoch));
        PyTuple_SET_ITEM(rec, 9, key_size);
        PyTuple_SET_ITEM(rec, 10, value_size);
        if (extra != NULL) {
            PyTuple_SET_ITEM(rec, RECORD_FIELDS, Py_NewRef(extra));
        }
        if (untrack) {
            PyObject_GC_UnTrack(rec);
        }
        int appended;
        if (out_is_list) {
            appended = PyList_Append(out, rec);
        }
        else {
            PyObject *res = PyObject_CallMethodOneArg(out, str_append, rec);
            Py_XDECREF(res);
            appended = res == NULL ? -1 : 0;
        }
        Py_DECREF(rec);
        if (appended < 0) {
            goto fail;
        }
        call_took(&k, &r);
    }
    Py_DECREF(timestamp_type);
    last_clear(&last_timestamp);
    last_clear(&last_key_size);
    last_clear(&last_value_size);
    if (rc < 0) {
        call_raise_bad(&k, &bad);
        PyBuffer_Release(&k.view);
        return NULL;
    }
    return call_finish(&k);

fail:
    Py_XDECREF(timestamp_type);
    last_clear(&last_timestamp);
    last_clear(&last_key_size);
    last_clear(&last_value_size);
    PyBuffer_Release(&k.view);
    return NULL;
}

/* ---- ColumnSink ----------------------------------------------------------------------------------------------- */

/* A growable buffer: a bytearray whose first len bytes are written (its size is the capacity until finish). */
typedef struct {
    PyObject *ba;
    char *p;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

/* A binary column: validity bitmap (nullable only), 32-bit offsets, data. */
typedef struct {
    Buf valid;
    Buf offsets;
    Buf data;
    Py_ssize_t nulls;
    int nullable;
} Binary;

/* A sink belongs to one poll: one thread at a time. fill writes into the buffers with the GIL released, so while
 * it does, busy is set (with the GIL held) and every other method refuses to run rather than resize a buffer
 * being written. */
typedef struct {
    PyObject_HEAD
    char include_headers;
    char busy;
    Py_ssize_t expected_bytes; /* the sizing hint, until the first fill that takes a row uses it (0: none) */
    Py_ssize_t rows;
    Py_ssize_t headers;
    Buf topic;
    Buf partition;
    Buf offset;
    Buf timestamp;
    Buf timestamp_type;
    Binary key;
    Binary value;
    Buf header_offsets;
    Binary header_key;
    Binary header_value;
} Sink;

static int
buf_new(Buf *b)
{
    b->ba = PyByteArray_FromStringAndSize(NULL, 0);
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
    return b->ba == NULL ? -1 : 0;
}

static int
buf_grow(Buf *b, Py_ssize_t extra)
{
    if (extra > PY_SSIZE_T_MAX - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + extra;
    Py_ssize_t cap = b->cap <= PY_SSIZE_T_MAX / 2 ? b->cap * 2 : PY_SSIZE_T_MAX;
    if (cap < need) {
        cap = need;
    }
    if (cap < 64) {
        cap = 64;
    }
    if (PyByteArray_Resize(b->ba, cap) < 0) {
        return -1;
    }
    b->p = PyByteArray_AS_STRING(b->ba);
    b->cap = cap;
    return 0;
}

static inline int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    return extra <= b->cap - b->len ? 0 : buf_grow(b, extra);
}

static inline void
buf_put(Buf *b, const void *data, Py_ssize_t n)
{
    if (n > 0) { /* an empty buffer has no storage yet: no memcpy to NULL */
        memcpy(b->p + b->len, data, (size_t)n);
        b->len += n;
    }
}

static inline void
buf_i32(Buf *b, int32_t v)
{
    buf_put(b, &v, 4);
}

static inline void
buf_i64(Buf *b, int64_t v)
{
    buf_put(b, &v, 8);
}

static int
binary_new(Binary *col, int nullable)
{
    col->nullable = nullable;
    col->nulls = 0;
    col->valid.ba = NULL;
    col->offsets.ba = NULL;
    col->data.ba = NULL;
    if ((nullable && buf_new(&col->valid) < 0) || buf_new(&col->offsets) < 0 || buf_new(&col->data) < 0 ||
        buf_reserve(&col->offsets, 4) < 0) {
        return -1;
    }
    buf_i32(&col->offsets, 0);
    return 0;
}

static void
binary_clear(Binary *col)
{
    Py_CLEAR(col->valid.ba);
    Py_CLEAR(col->offsets.ba);
    Py_CLEAR(col->data.ba);
}

/* Room for `values` more values of `bytes` bytes in all; OverflowError past 2 GiB of data, as the reference. */
static int
binary_reserve(Binary *col, Py_ssize_t values, int64_t bytes)
{
    if (values < 0 || values > PY_SSIZE_T_MAX / 4 || bytes < 0) { /* the callers' bounds make this impossible */
        PyErr_SetString(PyExc_SystemError, "ColumnSink: room for a negative or impossible number of values");
        return -1;
    }
    if (bytes > (int64_t)DATA_MAX - (int64_t)col->data.len) {
        PyErr_SetString(PyExc_OverflowError, "a column's data passed 2 GiB in one chunk");
        return -1;
    }
    if (col->nullable && buf_reserve(&col->valid, values / 8 + 1) < 0) {
        return -1;
    }
    if (buf_reserve(&col->offsets, 4 * values) < 0 || buf_reserve(&col->data, (Py_ssize_t)bytes) < 0) {
        return -1;
    }
    return 0;
}

/* Appends value number `row` (NULL: null); room was reserved. */
static inline void
binary_put(Binary *col, Py_ssize_t row, const void *data, int32_t len)
{
    if (col->nullable) {
        if ((row & 7) == 0) {
            col->valid.p[col->valid.len++] = 0;
        }
        if (data == NULL) {
            col->nulls++;
        }
        else {
            col->valid.p[row >> 3] |= (char)(1u << (row & 7));
        }
    }
    if (data != NULL) {
        buf_put(&col->data, data, len);
    }
    buf_i32(&col->offsets, (int32_t)col->data.len);
}

static void
sink_clear(Sink *s)
{
    Py_CLEAR(s->topic.ba);
    Py_CLEAR(s->partition.ba);
    Py_CLEAR(s->offset.ba);
    Py_CLEAR(s->timestamp.ba);
    Py_CLEAR(s->timestamp_type.ba);
    binary_clear(&s->key);
    binary_clear(&s->value);
    Py_CLEAR(s->header_offsets.ba);
    binary_clear(&s->header_key);
    binary_clear(&s->header_value);
}

/* Fresh buffers into *s (whose own references were handed over or cleared). */
static int
sink_reset(Sink *s)
{
    s->rows = 0;
    s->headers = 0;
    s->topic.ba = s->partition.ba = s->offset.ba = s->timestamp.ba = s->timestamp_type.ba = NULL;
    s->header_offsets.ba = NULL;
    s->key.valid.ba = s->key.offsets.ba = s->key.data.ba = NULL;
    s->value.valid.ba = s->value.offsets.ba = s->value.data.ba = NULL;
    s->header_key.valid.ba = s->header_key.offsets.ba = s->header_key.data.ba = NULL;
    s->header_value.valid.ba = s->header_value.offsets.ba = s->header_value.data.ba = NULL;
    if (buf_new(&s->topic) < 0 || buf_new(&s->partition) < 0 || buf_new(&s->offset) < 0 ||
        buf_new(&s->timestamp) < 0 || buf_new(&s->timestamp_type) < 0 || binary_new(&s->key, 1) < 0 ||
        binary_new(&s->value, 1) < 0 || buf_new(&s->header_offsets) < 0 || buf_reserve(&s->header_offsets, 4) < 0 ||
        binary_new(&s->header_key, 0) < 0 || binary_new(&s->header_value, 1) < 0) {
        sink_clear(s);
        return -1;
    }
    buf_i32(&s->header_offsets, 0);
    return 0;
}

/* Room for one more row: fixed-width columns, key and value, and the headers. */
static int
sink_reserve_row(Sink *s, int32_t key_len, int32_t value_len, int32_t header_count, int64_t header_key_bytes,
                 int64_t header_value_bytes)
{
    if (binary_reserve(&s->key, 1, key_len > 0 ? key_len : 0) < 0 ||
        binary_reserve(&s->value, 1, value_len > 0 ? value_len : 0) < 0) {
        return -1;
    }
    if (s->include_headers) {
        if (header_count > INT32_MAX - s->headers) {
            PyErr_SetString(PyExc_OverflowError, "signed integer is greater than maximum");
            return -1;
        }
        if (binary_reserve(&s->header_key, header_count, header_key_bytes) < 0 ||
            binary_reserve(&s->header_value, header_count, header_value_bytes) < 0 ||
            buf_reserve(&s->header_offsets, 4) < 0) {
            return -1;
        }
    }
    if (buf_reserve(&s->topic, 4) < 0 || buf_reserve(&s->partition, 4) < 0 || buf_reserve(&s->offset, 8) < 0 ||
        buf_reserve(&s->timestamp, 8) < 0 || buf_reserve(&s->timestamp_type, 1) < 0) {
        return -1;
    }
    return 0;
}

/* The fixed-width part of a row and the row count; the binary columns were written. */
static inline void
sink_end_row(Sink *s, int32_t topic, int32_t partition, int64_t offset, int64_t timestamp, int8_t timestamp_type)
{
    if (s->include_headers) {
        buf_i32(&s->header_offsets, (int32_t)s->headers);
    }
    buf_i32(&s->topic, topic);
    buf_i32(&s->partition, partition);
    buf_i64(&s->offset, offset);
    buf_i64(&s->timestamp, timestamp);
    s->timestamp_type.p[s->timestamp_type.len++] = (char)timestamp_type;
    s->rows++;
}

static PyObject *
Sink_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"include_headers", "expected_bytes", NULL};
    PyObject *include_headers, *expected = NULL;
    int overflow;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:ColumnSink", kwlist, &include_headers, &expected)) {
        return NULL;
    }
    if (!PyBool_Check(include_headers)) {
        arg_type_error("ColumnSink", "include_headers", "bool", include_headers);
        return NULL;
    }
    long long expected_bytes = 0;
    if (expected != NULL) {
        if (arg_int("ColumnSink", "expected_bytes", expected) < 0) {
            return NULL;
        }
        expected_bytes = PyLong_AsLongLongAndOverflow(expected, &overflow);
        if (expected_bytes == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (overflow < 0 || (overflow == 0 && expected_bytes < 0)) {
            arg_value_error("ColumnSink", "expected_bytes", RANGE_NONNEGATIVE, expected);
            return NULL;
        }
        if (overflow > 0 || expected_bytes > PY_SSIZE_T_MAX) { /* a hint: as large as can be */
            expected_bytes = PY_SSIZE_T_MAX;
        }
    }
    Sink *s = (Sink *)type->tp_alloc(type, 0);
    if (s == NULL) {
        return NULL;
    }
    s->include_headers = include_headers == Py_True;
    s->expected_bytes = (Py_ssize_t)expected_bytes;
    if (sink_reset(s) < 0) {
        Py_DECREF(s);
        return NULL;
    }
    return (PyObject *)s;
}

static void
Sink_dealloc(Sink *s)
{
    sink_clear(s);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

/* Whether the sink may be used now (with the GIL held): -1 with RuntimeError while a fill writes into it. */
static int
sink_idle(Sink *s)
{
    if (s->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "ColumnSink used from two threads at once: a sink belongs to one poll, in one thread");
        return -1;
    }
    return 0;
}

/* The least a record takes of its batch (a size, attributes, two deltas, two lengths and a header count: one byte
 * each at least; a size of 0 is "truncated") and the least a header takes of its record (its two lengths). */
#define MIN_RECORD_BYTES 7
#define MIN_HEADER_BYTES 2

/* Batches of at least this many bytes from the cursor on are decoded with the GIL released. */
#define FILL_NOGIL_BYTES 4096

/* What fill reserved: rows and headers it may add (the fixed-width, offset and validity buffers have room for
 * them); the data buffers' room is their capacity. */
typedef struct {
    int64_t rows;
    int64_t headers;
} Room;

/* Room for every row one fill call can add, reserved with the GIL held so that the rows are written without it.
 * The bounds come from the batch and the call: records are consecutive spans of the bytes from the cursor on, so
 * a call reads at most (bytes / MIN_RECORD_BYTES) records, takes at most left of them and at most limit; the keys,
 * values, header keys and header values it copies are disjoint spans within those records, so all of them together
 * (and so each column's) fit in those bytes; headers take MIN_HEADER_BYTES each within their records. A column's
 * data is never reserved past 2 GiB: a row that would pass it raises when reached, as it did row by row. */
static int
sink_reserve_call(Sink *s, const Call *k, Room *room)
{
    const Cursor *c = &k->c;
    const int64_t bytes = c->pos < c->len ? c->len - c->pos : 0;
    int64_t rows = bytes / MIN_RECORD_BYTES;
    if (c->left < rows) {
        rows = c->left > 0 ? c->left : 0;
    }
    if (k->limit < rows) {
        rows = k->limit;
    }
    const int64_t headers = s->include_headers && rows > 0 ? bytes / MIN_HEADER_BYTES : 0;
    room->rows = rows;
    room->headers = headers;
    if (rows == 0) {
        return 0;
    }
    if (rows > PY_SSIZE_T_MAX / 8 || headers > PY_SSIZE_T_MAX / 4) {
        PyErr_NoMemory();
        return -1;
    }
#define DATA_ROOM(col) (bytes < DATA_MAX - (int64_t)(col).data.len ? bytes : DATA_MAX - (int64_t)(col).data.len)
    if (binary_reserve(&s->key, (Py_ssize_t)rows, DATA_ROOM(s->key)) < 0 ||
        binary_reserve(&s->value, (Py_ssize_t)rows, DATA_ROOM(s->value)) < 0 ||
        buf_reserve(&s->topic, 4 * (Py_ssize_t)rows) < 0 || buf_reserve(&s->partition, 4 * (Py_ssize_t)rows) < 0 ||
        buf_reserve(&s->offset, 8 * (Py_ssize_t)rows) < 0 || buf_reserve(&s->timestamp, 8 * (Py_ssize_t)rows) < 0 ||
        buf_reserve(&s->timestamp_type, (Py_ssize_t)rows) < 0) {
        return -1;
    }
    if (s->include_headers &&
        (buf_reserve(&s->header_offsets, 4 * (Py_ssize_t)rows) < 0 ||
         binary_reserve(&s->header_key, (Py_ssize_t)headers, DATA_ROOM(s->header_key)) < 0 ||
         binary_reserve(&s->header_value, (Py_ssize_t)headers, DATA_ROOM(s->header_value)) < 0)) {
        return -1;
    }
#undef DATA_ROOM
    return 0;
}

/* Why sink_fill_rows returned. */
enum { FILL_DONE, FILL_BAD_RECORD, FILL_DATA_FULL, FILL_HEADERS_FULL, FILL_CHANGED, FILL_NO_ROOM };

#define HAS_ROOM(col, n) ((n) <= (int64_t)((col).data.cap - (col).data.len))

/* The call's records as rows, into the room reserved: no Python API, so it runs with the GIL released. Stops at a
 * malformed record (*bad says which: the rows before it stay), at a row past a limit (2 GiB of a column's data,
 * 2**31 - 1 headers: checked in sink_reserve_row's order, so the same error as before), or if the batch changed
 * under it. */
static int
sink_fill_rows(Sink *s, Call *k, int32_t topic, int32_t partition, Room *room, Bad *bad)
{
    const unsigned char *buf = k->c.buf;
    const int8_t timestamp_type = k->c.log_append ? 1 : 0;
    Record r;
    int rc;

    while ((rc = call_next(k, &r, bad)) > 0) {
        const int64_t key_bytes = r.key_len > 0 ? r.key_len : 0, value_bytes = r.value_len > 0 ? r.value_len : 0;
        if (key_bytes > DATA_MAX - (int64_t)s->key.data.len || value_bytes > DATA_MAX - (int64_t)s->value.data.len) {
            return FILL_DATA_FULL;
        }
        if (s->include_headers) {
            if (r.header_count > INT32_MAX - s->headers) {
                return FILL_HEADERS_FULL;
            }
            if (r.header_key_bytes > DATA_MAX - (int64_t)s->header_key.data.len ||
                r.header_value_bytes > DATA_MAX - (int64_t)s->header_value.data.len) {
                return FILL_DATA_FULL;
            }
        }
        /* sink_reserve_call proved the room is there; checked all the same, as a wrong bound would write past a
         * buffer. */
        if (room->rows < 1 || !HAS_ROOM(s->key, key_bytes) || !HAS_ROOM(s->value, value_bytes) ||
            (s->include_headers &&
             (r.header_count > room->headers || !HAS_ROOM(s->header_key, r.header_key_bytes) ||
              !HAS_ROOM(s->header_value, r.header_value_bytes)))) {
            return FILL_NO_ROOM;
        }
        room->rows--;
        binary_put(&s->key, s->rows, r.key_len < 0 ? NULL : buf + r.key_at, r.key_len);
        binary_put(&s->value, s->rows, r.value_len < 0 ? NULL : buf + r.value_at, r.value_len);
        if (s->include_headers && r.header_count > 0) {
            room->headers -= r.header_count;
            int64_t p = r.headers_at, key_at, value_at, key_left = r.header_key_bytes,
                    value_left = r.header_value_bytes;
            int32_t key_len, value_len;
            for (int32_t i = 0; i < r.header_count; i++) {
                /* The walk that checked the record reserved this much; more would mean the bytes changed since. */
                if (next_header(buf, &p, r.end, &key_at, &key_len, &value_at, &value_len) < 0 || key_len > key_left ||
                    value_len > value_left) {
                    return FILL_CHANGED;
                }
                key_left -= key_len;
                value_left -= value_len > 0 ? value_len : 0;
                binary_put(&s->header_key, s->headers, buf + key_at, key_len);
                binary_put(&s->header_value, s->headers, value_len < 0 ? NULL : buf + value_at, value_len);
                s->headers++;
            }
        }
        sink_end_row(s, topic, partition, r.offset, r.timestamp, timestamp_type);
        call_took(k, &r);
    }
    return rc < 0 ? FILL_BAD_RECORD : FILL_DONE;
}

#undef HAS_ROOM

/* Grows a buffer to `target` bytes if it has less room: the sizing hint's, so a failure is no error. */
static void
buf_expect(Buf *b, double target)
{
    if (target > (double)(PY_SSIZE_T_MAX / 2) || (Py_ssize_t)target <= b->cap) {
        return;
    }
    if (PyByteArray_Resize(b->ba, (Py_ssize_t)target) < 0) {
        PyErr_Clear();
        return;
    }
    b->p = PyByteArray_AS_STRING(b->ba);
    b->cap = (Py_ssize_t)target;
}

static void
binary_expect(Binary *col, double growth, int64_t slack)
{
    if (col->nullable) {
        buf_expect(&col->valid, (double)col->valid.len * growth + 64);
    }
    buf_expect(&col->offsets, (double)col->offsets.len * growth + 64);
    double data = (double)col->data.len * growth + (double)slack;
    buf_expect(&col->data, data < (double)DATA_MAX ? data : (double)DATA_MAX);
}

/* After the first fill that took rows: the buffers sized for the whole poll, so that they are not copied again
 * and again as they grow (realloc copies a buffer's whole capacity, into fresh pages it faults in). The hint is
 * the bytes of the batches about to be filled (what the fetch buffer holds): this fill read `consumed` of them and
 * took `taken` rows, so about taken * expected / consumed rows are coming, at most `limit` (the poll's). Every
 * column is grown by the share those rows add to its rows so far, with one fill's worth to spare (a fill reserves
 * room for its whole batch). An estimate, never a bound: past it the buffers grow as before. */
static void
sink_expect(Sink *s, int64_t consumed, int64_t taken, int64_t limit)
{
    const double expected = (double)s->expected_bytes;
    s->expected_bytes = 0;
    if (consumed <= 0 || taken <= 0 || s->rows <= 0 || expected <= (double)consumed) {
        return;
    }
    double coming = (double)taken * (expected / (double)consumed); /* this fill's rows among them */
    if (coming > (double)limit) {
        coming = (double)limit;
    }
    const double scale = ((double)s->rows + coming) / (double)s->rows;
    buf_expect(&s->topic, (double)s->topic.len * scale);
    buf_expect(&s->partition, (double)s->partition.len * scale);
    buf_expect(&s->offset, (double)s->offset.len * scale);
    buf_expect(&s->timestamp, (double)s->timestamp.len * scale);
    buf_expect(&s->timestamp_type, (double)s->timestamp_type.len * scale);
    binary_expect(&s->key, scale, consumed);
    binary_expect(&s->value, scale, consumed);
    if (s->include_headers) {
        buf_expect(&s->header_offsets, (double)s->header_offsets.len * scale);
        binary_expect(&s->header_key, scale, consumed);
        binary_expect(&s->header_value, scale, consumed);
    }
}

static const char *const fill_names[] = {"batch", "pos", "left", "position", "limit", "topic", "partition"};

/* Reserves room for the whole call, then decodes and copies with the GIL released (over batches of
 * FILL_NOGIL_BYTES and more): the batch is a buffer view held until the end (a bytearray refuses to be resized
 * while exported, so its memory stays), and the sink is marked busy. Errors are raised once the GIL is back. */
static PyObject *
Sink_fill(Sink *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[7];
    Call k;
    Bad bad;
    Room room;
    int why;
    long long topic = 0, partition = 0;

    if (parse_args("ColumnSink.fill", args, nargs, kwnames, fill_names, 7, a) < 0 || sink_idle(s) < 0) {
        return NULL;
    }
    if (call_start(&k, "ColumnSink.fill", a[0], a[1], a[2], a[3], a[4]) < 0) {
        return NULL;
    }
    if (arg_int_in("ColumnSink.fill", "topic", a[5], INT32_MIN, INT32_MAX, RANGE_INT32, &topic) < 0 ||
        arg_int_in("ColumnSink.fill", "partition", a[6], INT32_MIN, INT32_MAX, RANGE_INT32, &partition) < 0) {
        PyBuffer_Release(&k.view);
        return NULL;
    }
    if (call_open(&k, "ColumnSink.fill", a[1]) < 0) {
        return NULL;
    }
    /* Idle again, now that no more Python code runs before busy is set: getting the batch's buffer may have run
     * some (a __buffer__ method), and another thread may have begun a fill meanwhile. */
    if (sink_idle(s) < 0 || sink_reserve_call(s, &k, &room) < 0) {
        PyBuffer_Release(&k.view);
        return NULL;
    }
    const int64_t start_pos = k.c.pos, limit = k.limit;
    const Py_ssize_t rows_before = s->rows;
    s->busy = 1;
    if (k.c.pos < k.c.len && k.c.len - k.c.pos >= FILL_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        why = sink_fill_rows(s, &k, (int32_t)topic, (int32_t)partition, &room, &bad);
        Py_END_ALLOW_THREADS
    }
    else {
        why = sink_fill_rows(s, &k, (int32_t)topic, (int32_t)partition, &room, &bad);
    }
    s->busy = 0;
    switch (why) {
    case FILL_DONE:
        if (s->expected_bytes > 0 && s->rows > rows_before) {
            sink_expect(s, k.c.pos - start_pos, s->rows - rows_before, limit);
        }
        return call_finish(&k);
    case FILL_BAD_RECORD:
        call_raise_bad(&k, &bad);
        break;
    case FILL_DATA_FULL:
        PyErr_SetString(PyExc_OverflowError, "a column's data passed 2 GiB in one chunk");
        break;
    case FILL_HEADERS_FULL:
        PyErr_SetString(PyExc_OverflowError, "signed integer is greater than maximum");
        break;
    case FILL_CHANGED:
        PyErr_SetString(PyExc_RuntimeError, BATCH_CHANGED);
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "ColumnSink.fill: a row did not fit the room reserved for the batch");
        break;
    }
    PyBuffer_Release(&k.view);
    return NULL;
}

#define APPEND "ColumnSink.append"

/* A bytes-like value or None for append: (buffer, 1) for a value, 0 for None, -1 on error. */
static int
optional_buffer(const char *what, PyObject *obj, Py_buffer *view)
{
    if (obj == Py_None) {
        return 0;
    }
    if (arg_buffer(APPEND, what, obj, view, " or None") < 0) {
        return -1;
    }
    if (view->len > DATA_MAX) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_OverflowError, "a column's data passed 2 GiB in one chunk");
        return -1;
    }
    return 1;
}

/* The headers append was given, as it holds them: a tuple of the call's own 2-tuples (str, value), with each
 * value's buffer and each key's UTF-8. Iterating them runs Python code (a pair's __iter__, a generator), which may
 * change a list it was given or drop a key in it: nothing of theirs is read after it ran, only what the tuples
 * hold. */
typedef struct {
    PyObject *pairs;       /* tuple of 2-tuples, or NULL */
    Py_ssize_t count;      /* pairs' size */
    Py_ssize_t held;       /* entries of the arrays filled (their buffers to release) */
    const char **keys;     /* UTF-8, borrowed from the str in pairs[i][0] */
    Py_ssize_t *key_lens;
    Py_buffer *values;
    int *has_value;
    int64_t key_bytes;
    int64_t value_bytes;
} Headers;

static void
headers_release(Headers *h)
{
    for (Py_ssize_t i = 0; i < h->held; i++) {
        if (h->has_value[i] > 0) {
            PyBuffer_Release(&h->values[i]);
        }
    }
    PyMem_Free(h->keys);
    PyMem_Free(h->key_lens);
    PyMem_Free(h->values);
    PyMem_Free(h->has_value);
    Py_CLEAR(h->pairs);
}

static int
headers_take(Headers *h, PyObject *given)
{
    char what[96];
    memset(h, 0, sizeof *h);
    PyObject *it = PyObject_GetIter(given);
    if (it == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            arg_type_error(APPEND, "headers", "an iterable of (str, bytes | None) pairs", given);
        }
        return -1;
    }
    PyObject *listed = PySequence_Tuple(it);
    Py_DECREF(it);
    if (listed == NULL) {
        return -1;
    }
    h->count = PyTuple_GET_SIZE(listed);
    if (h->count > INT32_MAX) {
        Py_DECREF(listed);
        PyErr_SetString(PyExc_OverflowError, "signed integer is greater than maximum");
        return -1;
    }
    h->pairs = PyTuple_New(h->count);
    if (h->pairs == NULL) {
        Py_DECREF(listed);
        return -1;
    }
    if (h->count > 0) {
        h->keys = PyMem_New(const char *, h->count);
        h->key_lens = PyMem_New(Py_ssize_t, h->count);
        h->values = PyMem_New(Py_buffer, h->count);
        h->has_value = PyMem_New(int, h->count);
        if (!h->keys || !h->key_lens || !h->values || !h->has_value) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < h->count; i++) {
        PyObject *pair = PyTuple_GET_ITEM(listed, i);
        PyObject *pair_it = PyObject_GetIter(pair);
        if (pair_it == NULL) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, APPEND "() argument 'headers': header %zd must be " PAIR ", not %.200s",
                             i, Py_TYPE(pair)->tp_name);
            }
            goto fail;
        }
        PyObject *two = PySequence_Tuple(pair_it);
        Py_DECREF(pair_it);
        if (two == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(h->pairs, i, two);
        if (PyTuple_GET_SIZE(two) != 2) {
            PyErr_Format(PyExc_ValueError, APPEND "() argument 'headers': header %zd must be " PAIR ", not %zd values",
                         i, PyTuple_GET_SIZE(two));
            goto fail;
        }
        PyObject *key = PyTuple_GET_ITEM(two, 0);
        if (!PyUnicode_Check(key)) {
            PyErr_Format(PyExc_TypeError, APPEND "() argument 'headers': header %zd's key must be str, not %.200s", i,
                         Py_TYPE(key)->tp_name);
            goto fail;
        }
        h->keys[i] = PyUnicode_AsUTF8AndSize(key, &h->key_lens[i]); /* strict: no surrogates */
        if (h->keys[i] == NULL) {
            goto fail;
        }
        snprintf(what, sizeof what, "argument 'headers': header %zd's value", i);
        h->has_value[i] = optional_buffer(what, PyTuple_GET_ITEM(two, 1), &h->values[i]);
        if (h->has_value[i] < 0) {
            goto fail;
        }
        h->held = i + 1;
        h->key_bytes += h->key_lens[i];
        if (h->has_value[i]) {
            h->value_bytes += h->values[i].len;
        }
    }
    Py_DECREF(listed);
    return 0;

fail:
    Py_DECREF(listed);
    headers_release(h);
    return -1;
}

static const char *const append_names[] = {"topic", "partition", "offset", "timestamp", "timestamp_type",
                                           "key",   "value",     "headers"};

/* One row from decoded fields. Everything is checked, and everything Python code could change is taken, before
 * anything is written: the row is appended whole or not at all. */
static PyObject *
Sink_append(Sink *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[8];
    long long topic, partition, offset, timestamp, timestamp_type;
    Py_buffer key, value;
    int has_key = -1, has_value = -1;
    Headers h;
    PyObject *result = NULL;

    if (parse_args(APPEND, args, nargs, kwnames, append_names, 8, a) < 0 || sink_idle(s) < 0) {
        return NULL;
    }
    if (arg_int_in(APPEND, "topic", a[0], INT32_MIN, INT32_MAX, RANGE_INT32, &topic) < 0 ||
        arg_int_in(APPEND, "partition", a[1], INT32_MIN, INT32_MAX, RANGE_INT32, &partition) < 0 ||
        arg_int_in(APPEND, "offset", a[2], LLONG_MIN, LLONG_MAX, RANGE_INT64, &offset) < 0 ||
        arg_int_in(APPEND, "timestamp", a[3], LLONG_MIN, LLONG_MAX, RANGE_INT64, &timestamp) < 0 ||
        arg_int_in(APPEND, "timestamp_type", a[4], -128, 127, RANGE_INT8, &timestamp_type) < 0) {
        return NULL;
    }
    if ((has_key = optional_buffer("argument 'key'", a[5], &key)) < 0) {
        return NULL;
    }
    if ((has_value = optional_buffer("argument 'value'", a[6], &value)) < 0) {
        goto done;
    }
    if (headers_take(&h, a[7]) < 0) {
        goto done;
    }
    /* Idle again: the headers' Python code may have let another thread begin a fill. From here on no Python code
     * runs until the row is written. */
    if (sink_idle(s) < 0 || sink_reserve_row(s, has_key ? (int32_t)key.len : -1, has_value ? (int32_t)value.len : -1,
                                             (int32_t)h.count, h.key_bytes, h.value_bytes) < 0) {
        headers_release(&h);
        goto done;
    }
    binary_put(&s->key, s->rows, has_key ? key.buf : NULL, has_key ? (int32_t)key.len : -1);
    binary_put(&s->value, s->rows, has_value ? value.buf : NULL, has_value ? (int32_t)value.len : -1);
    if (s->include_headers) {
        for (Py_ssize_t i = 0; i < h.count; i++) {
            binary_put(&s->header_key, s->headers, h.keys[i], (int32_t)h.key_lens[i]);
            binary_put(&s->header_value, s->headers, h.has_value[i] ? h.values[i].buf : NULL,
                       h.has_value[i] ? (int32_t)h.values[i].len : -1);
            s->headers++;
        }
    }
    sink_end_row(s, (int32_t)topic, (int32_t)partition, offset, timestamp, (int8_t)timestamp_type);
    headers_release(&h);
    result = Py_NewRef(Py_None);

done:
    if (has_key > 0) {
        PyBuffer_Release(&key);
    }
    if (has_value > 0) {
        PyBuffer_Release(&value);
    }
    return result;
}

/* Cuts a buffer's bytearray to what was written; the bytearray then is exactly the column's bytes. */
static int
buf_trim(Buf *b)
{
    if (b->ba == NULL || b->cap == b->len) {
        return 0;
    }
    if (PyByteArray_Resize(b->ba, b->len) < 0) {
        return -1;
    }
    b->p = PyByteArray_AS_STRING(b->ba);
    b->cap = b->len;
    return 0;
}

static int
binary_trim(Binary *col)
{
    return (col->nullable ? buf_trim(&col->valid) : 0) | buf_trim(&col->offsets) | buf_trim(&col->data);
}

static PyObject *
binary_parts(Binary *col)
{
    return Py_BuildValue("(OOOn)", col->nullable ? col->valid.ba : Py_None, col->offsets.ba, col->data.ba,
                         col->nulls);
}

static int
dict_put(PyObject *dict, const char *key, PyObject *value)
{
    if (value == NULL) {
        return -1;
    }
    int rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

/* The buffers as finish hands them over, and fresh ones in their place. */
static PyObject *
sink_finish(Sink *s)
{
    if (buf_trim(&s->topic) < 0 || buf_trim(&s->partition) < 0 || buf_trim(&s->offset) < 0 ||
        buf_trim(&s->timestamp) < 0 || buf_trim(&s->timestamp_type) < 0 || binary_trim(&s->key) < 0 ||
        binary_trim(&s->value) < 0 || buf_trim(&s->header_offsets) < 0 || binary_trim(&s->header_key) < 0 ||
        binary_trim(&s->header_value) < 0) {
        return NULL;
    }
    PyObject *parts = PyDict_New();
    if (parts == NULL) {
        return NULL;
    }
    if (dict_put(parts, "rows", PyLong_FromSsize_t(s->rows)) < 0 ||
        PyDict_SetItemString(parts, "topic", s->topic.ba) < 0 ||
        PyDict_SetItemString(parts, "partition", s->partition.ba) < 0 ||
        PyDict_SetItemString(parts, "offset", s->offset.ba) < 0 ||
        PyDict_SetItemString(parts, "timestamp", s->timestamp.ba) < 0 ||
        PyDict_SetItemString(parts, "timestamp_type", s->timestamp_type.ba) < 0 ||
        dict_put(parts, "key", binary_parts(&s->key)) < 0 || dict_put(parts, "value", binary_parts(&s->value)) < 0) {
        Py_DECREF(parts);
        return NULL;
    }
    if (s->include_headers &&
        (PyDict_SetItemString(parts, "header_offsets", s->header_offsets.ba) < 0 ||
         dict_put(parts, "headers", PyLong_FromSsize_t(s->headers)) < 0 ||
         dict_put(parts, "header_key", binary_parts(&s->header_key)) < 0 ||
         dict_put(parts, "header_value", binary_parts(&s->header_value)) < 0)) {
        Py_DECREF(parts);
        return NULL;
    }
    /* The dict holds the buffers now; the sink starts again with new ones (or, failing that, keeps these). */
    Sink fresh;
    fresh.include_headers = s->include_headers;
    if (sink_reset(&fresh) < 0) {
        Py_DECREF(parts);
        return NULL;
    }
    sink_clear(s);
    s->rows = fresh.rows;
    s->headers = fresh.headers;
    s->topic = fresh.topic;
    s->partition = fresh.partition;
    s->offset = fresh.offset;
    s->timestamp = fresh.timestamp;
    s->timestamp_type = fresh.timestamp_type;
    s->key = fresh.key;
    s->value = fresh.value;
    s->header_offsets = fresh.header_offsets;
    s->header_key = fresh.header_key;
    s->header_value = fresh.header_value;
    return parts;
}

/* Busy meanwhile: its allocations may run a collection, whose finalizers may run Python code, which may let
 * another thread in, whose fill must not begin writing into buffers being handed over. */
static PyObject *
Sink_finish(Sink *s, PyObject *Py_UNUSED(ignored))
{
    if (sink_idle(s) < 0) {
        return NULL;
    }
    s->busy = 1;
    PyObject *parts = sink_finish(s);
    s->busy = 0;
    return parts;
}

static PyObject *
Sink_data_bytes(Sink *s, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(s->key.data.len + s->value.data.len + s->header_value.data.len);
}

static PyMethodDef Sink_methods[] = {
    {"fill", (PyCFunction)(void (*)(void))Sink_fill, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("fill(batch, pos, left, position, limit, topic, partition) -> (pos, left, position)\n--\n\n"
               "Appends up to limit records of batch as rows of topic number topic; as fill_records.")},
    {"append", (PyCFunction)(void (*)(void))Sink_append, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("append(topic, partition, offset, timestamp, timestamp_type, key, value, headers)\n--\n\n"
               "One row from decoded fields (a magic 0/1 record).")},
    {"finish", (PyCFunction)Sink_finish, METH_NOARGS,
     PyDoc_STR("finish() -> dict\n--\n\nThe buffers of the rows so far (bytearrays, native byte order), then a "
               "fresh start.")},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Sink_members[] = {
    {"include_headers", T_BOOL, offsetof(Sink, include_headers), READONLY, NULL},
    {"rows", T_PYSSIZET, offsetof(Sink, rows), READONLY, PyDoc_STR("Rows appended since the last finish.")},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Sink_getset[] = {
    {"data_bytes", (getter)Sink_data_bytes, NULL,
     PyDoc_STR("Bytes in the binary columns' data so far (a chunk is finished before 2 GiB)."), NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "asyncconsumer.protocol._v2records_c.ColumnSink",
    .tp_basicsize = sizeof(Sink),
    .tp_dealloc = (destructor)Sink_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("ColumnSink(include_headers, expected_bytes=0)\n--\n\n"
                        "Records appended as Arrow column buffers; finish hands them over and starts again. A sink "
                        "belongs to one poll: fill lets the GIL go while it writes, and the sink refuses other "
                        "threads meanwhile (RuntimeError). expected_bytes, the bytes of the batches about to be "
                        "filled, sizes the buffers for them after the first fill (a hint: no row changes)."),
    .tp_methods = Sink_methods,
    .tp_members = Sink_members,
    .tp_getset = Sink_getset,
    .tp_new = Sink_new,
};

/* ---- CRC-32C -------------------------------------------------------------------------------------------------- */

/* Above this many bytes the GIL is released while the CRC is computed (only the held buffer view is read): below
 * it, giving the GIL away costs more than the computation when another thread wants it. */
#define CRC_NOGIL_BYTES 65536

static PyObject *
crc32c_call(const char *fname, PyObject *const *args, Py_ssize_t nargs,
            uint32_t (*extend)(uint32_t, const unsigned char *, size_t))
{
    unsigned long value = 0;
    Py_buffer view;
    uint32_t crc;

    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 1 or 2 positional arguments but %zd were given", fname, nargs);
        return NULL;
    }
    if (arg_buffer(fname, "argument 'data'", args[0], &view, "") < 0) {
        return NULL;
    }
    if (nargs == 2) {
        long long v = 0;
        if (arg_int_in(fname, "value", args[1], 0, 0xFFFFFFFFll, "a 32-bit CRC (from 0 to 4294967295)", &v) < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        value = (unsigned long)v;
    }
    if (view.len >= CRC_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = extend((uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        crc = extend((uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *
crc32c(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return crc32c_call("crc32c", args, nargs, crc32c_extend);
}

static PyObject *
crc32c_software(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return crc32c_call("crc32c_software", args, nargs, crc32c_extend_software);
}

/* ---- the module --------------------------------------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"crc32c", (PyCFunction)(void (*)(void))crc32c, METH_FASTCALL,
     PyDoc_STR("crc32c(data, value=0, /) -> int\n--\n\n"
               "The CRC-32C of a bytes-like data, continuing from value (a previous result), as zlib.crc32 does for "
               "CRC-32; by the CPU's crc32 instruction where it has one (CRC32C_IMPLEMENTATION says which).")},
    {"crc32c_software", (PyCFunction)(void (*)(void))crc32c_software, METH_FASTCALL,
     PyDoc_STR("crc32c_software(data, value=0, /) -> int\n--\n\n"
               "crc32c by the portable tables whatever the CPU has (for the tests).")},
    {"fill_records", (PyCFunction)(void (*)(void))fill_records, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("fill_records(batch, pos, left, position, limit, out, record_type, topic, partition, leader_epoch,"
               " extra=None)"
               "\n--\n\nAppends up to limit records (record_type tuples, with extra as a last field unless None) to out; "
               "returns (pos, left, position).")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "asyncconsumer.protocol._v2records_c",
    .m_doc = "The compiled v2 record decoder: the same API and results as _v2records.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__v2records_c(void)
{
    PyObject *reference = PyImport_ImportModule("asyncconsumer.protocol._v2records");
    if (reference == NULL) {
        return NULL;
    }
    DecodeError = PyObject_GetAttrString(reference, "DecodeError");
    Py_DECREF(reference);
    if (DecodeError == NULL) {
        return NULL;
    }
    empty_tuple = PyTuple_New(0);
    str_append = PyUnicode_InternFromString("append");
    if (empty_tuple == NULL || str_append == NULL || PyType_Ready(&SinkType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(module, "ColumnSink", (PyObject *)&SinkType) < 0 ||
        PyModule_AddObjectRef(module, "DecodeError", DecodeError) < 0 ||
        PyModule_AddIntConstant(module, "RECORDS_AT", RECORDS_AT) < 0 ||
        PyModule_AddStringConstant(module, "CRC32C_IMPLEMENTATION", crc32c_init()) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
