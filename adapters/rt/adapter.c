/*
 * adapter.c — a transport from a shared library (qrt_adapter.h).
 *
 * Everything an adapter hands back is checked before the runtime relies
 * on it: a library built for another contract, or one that leaves a hole
 * in its table, is refused with a message naming it, never run into.
 */
#include "qrt_adapter.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The caps this runtime knows; others an adapter offers are cleared (a
 * newer adapter may offer more than this runtime can use). */
#define KNOWN_CAPS                                                                         \
    ((uint32_t)(QUAY_CAP_ORDERED | QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT |                  \
                QUAY_CAP_RDMA_ATOMIC | QUAY_CAP_MULTI_SEND))
#define RDMA_CAPS ((uint32_t)(QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT | QUAY_CAP_RDMA_ATOMIC))

int qrt_adapter_is_path(const char *name)
{
    return name != NULL && strchr(name, '/') != NULL;
}

/* What is wrong with the transport `open` returned, or NULL. */
static const char *broken(const quay_transport *t, const quay_transport_sink *sink,
                          int32_t rank, int32_t size)
{
    const quay_transport_ops *o = t->ops;
    if (o->name == NULL || o->send == NULL || o->poll == NULL || o->wake == NULL ||
        o->bye == NULL || o->busy == NULL)
        return "its operations table has a NULL entry";
    if ((t->caps & RDMA_CAPS) != 0 && o->rdma == NULL)
        return "it offers RDMA caps without an rdma operation";
    if (t->sink != sink || t->rank != rank || t->size != size)
        return "its transport's head does not hold the sink, rank and size it was given";
    return NULL;
}

int qrt_adapter_open(const char *path, int32_t rank, int32_t size,
                     const quay_transport_sink *sink, quay_transport **pt, void **handle)
{
    quay_transport_open_fn open_fn;
    quay_transport *t = NULL;
    const char *why;
    *pt = NULL;
    *handle = NULL;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "quay rank %d: QUAY_TRANSPORT=%s: cannot load the adapter: %s\n",
                (int)rank, path, dlerror());
        return QUAY_ENOTSUP;
    }
    void *sym = dlsym(lib, QUAY_TRANSPORT_OPEN_SYMBOL);
    if (sym == NULL) {
        fprintf(stderr,
                "quay rank %d: QUAY_TRANSPORT=%s: not a quay adapter: it exports no %s "
                "(<quay/quay_adapter.h>)\n",
                (int)rank, path, QUAY_TRANSPORT_OPEN_SYMBOL);
        dlclose(lib);
        return QUAY_ENOTSUP;
    }
    /* (POSIX's way from dlsym's object pointer to a function pointer) */
    memcpy(&open_fn, &sym, sizeof open_fn);
    int rc = open_fn(QUAY_TRANSPORT_ABI_VERSION, rank, size, sink, &t);
    if (rc != 0 || t == NULL) {
        /* The adapter said why on stderr; a positive code is no code. */
        if (rc >= 0)
            rc = QUAY_EINVAL;
        fprintf(stderr, "quay rank %d: QUAY_TRANSPORT=%s: the adapter did not open: %s\n",
                (int)rank, path, quay_strerror(rc));
        /* (a transport it returned anyway is not trusted to close) */
        dlclose(lib);
        return rc;
    }
    if (t->ops == NULL || t->ops->abi_version < QUAY_TRANSPORT_ABI_VERSION_MIN) {
        /* A table of unknown layout: not even its close is safe to call
         * (the transport is left open; the runtime stops anyway). */
        fprintf(stderr,
                "quay rank %d: QUAY_TRANSPORT=%s: the adapter was built for transport ABI "
                "version %u; this runtime takes version %d or later: rebuild it against "
                "this quay's <quay/quay_adapter.h>\n",
                (int)rank, path, t->ops != NULL ? (unsigned)t->ops->abi_version : 0u,
                QUAY_TRANSPORT_ABI_VERSION_MIN);
        return QUAY_EVERSION;
    }
    if (t->ops->close == NULL) {
        fprintf(stderr, "quay rank %d: QUAY_TRANSPORT=%s: the adapter's table has no close\n",
                (int)rank, path);
        return QUAY_EINVAL;
    }
    if ((why = broken(t, sink, rank, size)) != NULL) {
        fprintf(stderr, "quay rank %d: QUAY_TRANSPORT=%s: the adapter breaks the contract: %s\n",
                (int)rank, path, why);
        t->ops->close(t);
        dlclose(lib);
        return QUAY_EINVAL;
    }
    t->caps &= KNOWN_CAPS;
    *pt = t;
    *handle = lib;
    return 0;
}

void qrt_adapter_unload(void *handle)
{
    if (handle != NULL)
        dlclose(handle);
}
