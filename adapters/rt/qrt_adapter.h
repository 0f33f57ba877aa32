/*
 * qrt_adapter.h — transports from outside the runtime: a shared library
 * named by QUAY_TRANSPORT (a value with a '/'), loaded with dlopen, whose
 * quay_transport_open (<quay/quay_adapter.h>) opens the transport.
 */
#ifndef QRT_ADAPTER_H
#define QRT_ADAPTER_H

#include <quay/quay_adapter.h>

/** 1 if QUAY_TRANSPORT's value names an adapter library (has a '/'). */
int qrt_adapter_is_path(const char *name);

/**
 * Load the adapter library at `path`, open its transport for `rank` of
 * `size` and check what it returned (version, table, head). 0 with *pt
 * and *handle (for qrt_adapter_unload after close); otherwise a message
 * on stderr and QUAY_ENOTSUP (cannot load, no quay_transport_open),
 * QUAY_EVERSION (built for a contract this runtime does not know), the
 * adapter's own code, or QUAY_EINVAL (it broke the contract).
 */
int qrt_adapter_open(const char *path, int32_t rank, int32_t size,
                     const quay_transport_sink *sink, quay_transport **pt, void **handle);

/** Unload a library qrt_adapter_open loaded (NULL is ok); after close. */
void qrt_adapter_unload(void *handle);

#endif /* QRT_ADAPTER_H */
