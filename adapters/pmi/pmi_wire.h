/*
 * pmi_wire.h — the text of PMI-1's "simple" wire protocol, apart from the
 * socket (pmi_client.c): an answer line split into key=value fields, the
 * fields looked up, and what a key or a value may hold. An answer is
 * untrusted: the split checks every byte and bounds the fields.
 */
#ifndef QUAY_PMI_WIRE_H
#define QUAY_PMI_WIRE_H

#include <stddef.h>

/** Most key=value fields in one answer (cmd= not counted). */
#define QPMI_WIRE_MAX_FIELDS 32

/** An answer split in place: pointers into the line it came from. */
typedef struct qpmi_answer {
    const char *cmd; /**< the value of the first cmd= */
    int n;           /**< fields after it */
    struct {
        const char *key;
        const char *val; /**< NULL: a key without '=' */
    } f[QPMI_WIRE_MAX_FIELDS];
} qpmi_answer;

/** Split `line` (`len` bytes, NUL at line[len]) in place: keys and values
 *  are NUL-terminated where they stand and MPICH's escapes ("\c" for c)
 *  are removed from values. The line must start with cmd= and hold no NUL
 *  or control byte, keys only [A-Za-z0-9_.-], at most
 *  QPMI_WIRE_MAX_FIELDS fields. 0, or -1 with the reason in `err` (the
 *  line is then partly rewritten). */
int qpmi_wire_split(char *line, size_t len, qpmi_answer *m, char *err, size_t errlen);

/** The value of the first field named `key`; NULL if none, or if it came
 *  without '='. */
const char *qpmi_wire_find(const qpmi_answer *m, const char *key);

/** 1 if a field is named `key` (with or without a value). */
int qpmi_wire_has(const qpmi_answer *m, const char *key);

/** A strict decimal int in [min, max]: an optional '-', digits and nothing
 *  else. 0 and *out, or -1 (s NULL or empty included). */
int qpmi_wire_int(const char *s, long min, long max, int *out);

/** 1 if the wire can carry `k` as a key of at most `max` bytes: printable
 *  ASCII, not empty, no space, '=' or '\'. */
int qpmi_wire_key_ok(const char *k, size_t max);

/** 1 if the wire can carry byte `c` in a value: no control, space, DEL or
 *  '\'. */
int qpmi_wire_val_byte_ok(unsigned char c);

/** 1 if every byte of `v` may be in a value, and it is 1..max bytes. */
int qpmi_wire_val_ok(const char *v, size_t max);

#endif /* QUAY_PMI_WIRE_H */
