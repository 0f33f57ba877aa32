/*
 * bad_adapter.c — adapters that break the transport contract
 * (<quay/quay_adapter.h>), one way per build (BAD_*), for the runtime's
 * checks in tests/adapter: each must be refused with a message and a
 * failing code.
 *   BAD_NO_SYMBOL    exports its open function under another name
 *   BAD_OLD_ABI      stamps its table with ABI version 0
 *   BAD_NEEDS_NEWER  refuses the runtime's version (QUAY_EVERSION)
 *   BAD_NULL_OP      leaves poll out of its table
 *   BAD_WRONG_HEAD   fills its head with another rank
 */
#include <stdio.h>
#include <stdlib.h>

#include <quay/quay_adapter.h>

static int b_send(quay_transport *t, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                  uint64_t token)
{
    (void)t, (void)peer, (void)iov, (void)iovcnt, (void)token;
    return QUAY_EPEER;
}

static int b_poll(quay_transport *t, int64_t timeout_ns)
{
    (void)t, (void)timeout_ns;
    return 0;
}

static void b_wake(quay_transport *t)
{
    (void)t;
}

static int b_bye(quay_transport *t)
{
    (void)t;
    return 0;
}

static int b_busy(const quay_transport *t)
{
    (void)t;
    return 0;
}

static void b_close(quay_transport *t)
{
    free(t);
}

static const quay_transport_ops b_ops = {
#ifdef BAD_OLD_ABI
    .abi_version = 0,
#else
    .abi_version = QUAY_TRANSPORT_ABI_VERSION,
#endif
    .name = "bad",
    .send = b_send,
#ifndef BAD_NULL_OP
    .poll = b_poll,
#endif
    .wake = b_wake,
    .bye = b_bye,
    .busy = b_busy,
    .close = b_close,
};

#ifdef BAD_NO_SYMBOL
/* (a misspelt name: nothing called quay_transport_open is exported) */
QUAY_TRANSPORT_EXPORT int quay_transport_opne(int abi_version, int32_t rank, int32_t size,
                                              const quay_transport_sink *sink,
                                              quay_transport **pt);
#define OPEN quay_transport_opne
#else
#define OPEN quay_transport_open
#endif

QUAY_TRANSPORT_EXPORT int OPEN(int abi_version, int32_t rank, int32_t size,
                               const quay_transport_sink *sink, quay_transport **pt)
{
#ifdef BAD_NEEDS_NEWER
    if (abi_version < 99) {
        fprintf(stderr, "bad adapter: needs transport ABI 99, the runtime has %d\n",
                abi_version);
        return QUAY_EVERSION;
    }
#else
    (void)abi_version;
#endif
#ifdef BAD_NULL_OP
    (void)b_poll; /* (left out of the table on purpose) */
#endif
    quay_transport *t = calloc(1, sizeof *t);
    if (t == NULL)
        return QUAY_ENOMEM;
    t->ops = &b_ops;
    t->sink = sink;
    t->rank = rank;
    t->size = size;
#ifdef BAD_WRONG_HEAD
    t->rank = rank + 1;
#endif
    *pt = t;
    return 0;
}
