/*
 * scn_parse_int.h — what the two halves of the scenario parser share:
 * scn_parse.c (lines, ranks / config / comm statements, whole-scenario
 * checks) and scn_parse_ops.c (op statements). Not installed.
 */
#ifndef QUAY_SCN_PARSE_INT_H
#define QUAY_SCN_PARSE_INT_H

#include "scn_int.h"

#define MAX_TOK 64

typedef struct parser {
    scn *s;
    int line;
    char *err;
    size_t errlen;
    int attached[SCN_MAX_RANKS];
    unsigned created[SCN_MAX_COMMS]; /* bit r: comm_create seen for r */
    int seen_op;
    int coll_mixed;              /* config coll=mixed */
    unsigned coll_set;           /* config keys given explicitly (bits) */
} parser;

/* key=value arguments of one op */
typedef struct args {
    const char *key[MAX_TOK];
    const char *val[MAX_TOK];
    int used[MAX_TOK];
    int n;
    const char *pos[4]; /* positional tokens */
    int npos;
} args;

/* Record "file:line: message" in p->err; returns -1. */
int scn_perr(parser *p, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* A number with an optional K / M / G suffix; 0 or -1. */
int scn_parse_u64(const char *v, uint64_t *out);
/* Index of the comm with context id `ctx`, or -1. */
int scn_find_comm(const scn *s, uint32_t ctx);
/* Append an op of `kind` to `rank`'s program (NULL: out of memory). */
scn_op *scn_new_op(parser *p, int rank, int kind);
/* How a collective's arguments read back in messages ("ibcast root=1
 * size=300"). */
void scn_cinst_text(const scn_cinst *ci, char *b, size_t n);
/* One op statement for `rank`; 0, or -1 with the message in p->err. */
int scn_parse_op(parser *p, int rank, const char *opname, args *a);

#endif /* QUAY_SCN_PARSE_INT_H */
