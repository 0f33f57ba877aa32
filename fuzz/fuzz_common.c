/*
 * fuzz_common.c — see fuzz.h.
 */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fz_harness = "fuzz";

size_t fz_bytes(fz_in *in, void *out, size_t want)
{
    size_t got = fz_left(in) < want ? fz_left(in) : want;
    if (got != 0)
        memcpy(out, in->p + in->pos, got);
    if (want > got)
        memset((uint8_t *)out + got, 0, want - got);
    in->pos += got;
    return got;
}

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz: %s: invariant violated: ", fz_harness);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

int fz_verbose(void)
{
    const char *v = getenv("FUZZ_VERBOSE");
    if (v == NULL || *v == '\0')
        return 0;
    return atoi(v) > 0 ? atoi(v) : 1;
}

int fz_code_in(int rc, const int *codes)
{
    for (; *codes != -1; codes++)
        if (*codes == rc)
            return 1;
    return 0;
}

/* Every block carries its size in a header of max_align_t's size, so
 * that the block stays aligned for any type and release can count. */
typedef union fz_hdr {
    size_t size;
    max_align_t align;
} fz_hdr;

void *fz_alloc(size_t size, void *ctx)
{
    fz_mem *m = ctx;
    fz_hdr *h;
    if ((m->fail_at != 0 && --m->fail_at == 0) || (m->max_block != 0 && size > m->max_block)) {
        m->nfailed++;
        return NULL;
    }
    if (size > SIZE_MAX - sizeof *h)
        return NULL;
    h = malloc(sizeof *h + size);
    if (h == NULL)
        return NULL;
    h->size = size;
    m->live += size;
    if (m->live > m->peak)
        m->peak = m->live;
    m->nalloc++;
    return h + 1;
}

void fz_release(void *ptr, void *ctx)
{
    fz_mem *m = ctx;
    fz_hdr *h = (fz_hdr *)ptr - 1;
    if (h->size > m->live)
        fz_fail("allocator: release of %zu bytes with %zu live", h->size, m->live);
    m->live -= h->size;
    free(h);
}

void fz_mem_use(fz_mem *m, quay_config *cfg)
{
    cfg->alloc.alloc = fz_alloc;
    cfg->alloc.release = fz_release;
    cfg->alloc.ctx = m;
}

void fz_restore_config(unsigned variant, quay_config *c)
{
    quay_config_default(c);
    memset(c->key_secret, 0x5a, sizeof c->key_secret); /* (tests: any fixed secret) */
    c->flags |= QUAY_CFG_CHECK_ORACLE;
    c->eager_max = 64;
    c->frag_size = 64;
    c->pipeline_depth = 2;
    c->max_requests = 32;
    c->max_unexpected = 32;
    c->unexpected_bytes_max = 4096;
    c->max_out = 16;
    c->max_ctrl = 16;
    c->max_comms = 4;
    c->max_regions = 8;
    c->reorder_window = 16;
    c->flow_window = 16;
    c->rto_init_ns = 1000;
    c->rto_max_ns = 64000;
    c->retry_limit = 8;
    c->seed = 0x5eed + variant % FZ_RESTORE_NCFG;
    c->flow = QUAY_FLOW_ACKNACK;
    c->rank = 1;
    c->nranks = 2;
    switch (variant % FZ_RESTORE_NCFG) {
    case 0: /* acknack, rank 1 of 2 */
        break;
    case 1: /* credit, rank 0 of 3 */
        c->flow = QUAY_FLOW_CREDIT;
        c->rank = 0;
        c->nranks = 3;
        break;
    case 2: /* two channels; the blob is channel 1's */
        c->channels = 2;
        break;
    case 3: /* receiver-initiated transfers and arbitration, rank 1 of 3 */
        c->nranks = 3;
        c->transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c->rtr = 1;
        c->rtr_any = 1;
        c->rtr_per_peer = 4;
        c->any_slots = 4;
        break;
    case 4: /* RDMA GET rendezvous, rank 0 of 4 */
        c->rank = 0;
        c->nranks = 4;
        c->transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c->rndv_mode = QUAY_RNDV_GET;
        break;
    default: /* credit with rtr, rank 2 of 4 */
        c->flow = QUAY_FLOW_CREDIT;
        c->rank = 2;
        c->nranks = 4;
        c->transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        c->rtr = 1;
        break;
    }
}
