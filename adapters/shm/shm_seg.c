/*
 * shm_seg.c — segment layout, creation and attachment (shm_seg.h).
 */
#include "shm_seg.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_futex.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "shared-memory atomics must be lock-free to work across processes");

#define ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((uint64_t)(a)-1))
#define SEG_MAX_BYTES (1ull << 40)

static uint64_t pow2_at_least(uint64_t v)
{
    uint64_t p = 64;
    while (p < v)
        p <<= 1;
    return p;
}

/* Offsets inside one pair block. */
static uint64_t pair_pkt_ctl(void)
{
    return 0;
}

static uint64_t pair_ctl_ctl(void)
{
    return ALIGN_UP(sizeof(qshm_ring_ctl), QSHM_LINE);
}

static uint64_t pair_pkt_data(void)
{
    return 2 * ALIGN_UP(sizeof(qshm_ring_ctl), QSHM_LINE);
}

static int geometry(qshm_header *h, uint32_t n, uint64_t ring, uint64_t ctl)
{
    memset(h, 0, sizeof *h);
    h->magic = QSHM_MAGIC;
    h->version = QSHM_VERSION;
    h->nranks = n;
    h->ring_bytes = pow2_at_least(ring);
    h->ctl_bytes = pow2_at_least(ctl);
    h->slots_off = ALIGN_UP(sizeof(qshm_header), QSHM_LINE);
    h->pairs_off = ALIGN_UP(h->slots_off + (uint64_t)n * ALIGN_UP(sizeof(qshm_slot), QSHM_LINE),
                            4096);
    h->pair_bytes = ALIGN_UP(pair_pkt_data() + h->ring_bytes + h->ctl_bytes, 4096);
    if (n == 0 || h->ring_bytes > SEG_MAX_BYTES / n / n)
        return -EINVAL;
    h->total_bytes = h->pairs_off + (uint64_t)n * n * h->pair_bytes;
    return h->total_bytes <= SEG_MAX_BYTES ? 0 : -EINVAL;
}

int qshm_seg_create(uint32_t nranks, uint64_t ring_bytes, uint64_t ctl_bytes, qshm_seg *seg,
                    int *fd)
{
    qshm_header g;
    int rc = geometry(&g, nranks, ring_bytes, ctl_bytes);
    if (rc != 0)
        return rc;
    int f = memfd_create("quay-shm", MFD_CLOEXEC);
    if (f < 0)
        return -errno;
    if (ftruncate(f, (off_t)g.total_bytes) != 0) {
        rc = -errno;
        close(f);
        return rc;
    }
    void *base = mmap(NULL, (size_t)g.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    if (base == MAP_FAILED) {
        rc = -errno;
        close(f);
        return rc;
    }
    /* The memfd is zero-filled: rings empty, slots EMPTY, barriers 0. */
    qshm_header *h = base;
    memcpy(h, &g, offsetof(qshm_header, arrived));
    atomic_store(&h->rdma_ok, 1);
    seg->base = base;
    seg->len = (size_t)g.total_bytes;
    seg->hdr = h;
    *fd = f;
    return 0;
}

int qshm_seg_attach(int fd, uint32_t nranks, qshm_seg *seg)
{
    struct stat st;
    qshm_header g, h;
    if (fstat(fd, &st) != 0)
        return -errno;
    if ((uint64_t)st.st_size < sizeof h)
        return -EINVAL;
    if (pread(fd, &h, offsetof(qshm_header, arrived), 0) !=
        (ssize_t)offsetof(qshm_header, arrived))
        return -EINVAL;
    /* Recompute the geometry from the sizes: a header that disagrees
     * with itself or with the file is not ours. */
    if (h.magic != QSHM_MAGIC || h.version != QSHM_VERSION || h.nranks != nranks ||
        geometry(&g, h.nranks, h.ring_bytes, h.ctl_bytes) != 0 ||
        memcmp(&g, &h, offsetof(qshm_header, arrived)) != 0 ||
        (uint64_t)st.st_size != g.total_bytes)
        return -EINVAL;
    void *base = mmap(NULL, (size_t)g.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return -errno;
    seg->base = base;
    seg->len = (size_t)g.total_bytes;
    seg->hdr = base;
    return 0;
}

void qshm_seg_detach(qshm_seg *seg)
{
    if (seg->base != NULL)
        munmap(seg->base, seg->len);
    seg->base = NULL;
    seg->hdr = NULL;
    seg->len = 0;
}

qshm_slot *qshm_seg_slot(const qshm_seg *seg, uint32_t rank)
{
    uint8_t *b = seg->base;
    return (qshm_slot *)(b + seg->hdr->slots_off +
                         (uint64_t)rank * ALIGN_UP(sizeof(qshm_slot), QSHM_LINE));
}

static uint8_t *pair(const qshm_seg *seg, uint32_t src, uint32_t dst)
{
    const qshm_header *h = seg->hdr;
    return (uint8_t *)seg->base + h->pairs_off + ((uint64_t)src * h->nranks + dst) * h->pair_bytes;
}

qshm_ring_ctl *qshm_seg_pkt_ctl(const qshm_seg *seg, uint32_t src, uint32_t dst)
{
    return (qshm_ring_ctl *)(pair(seg, src, dst) + pair_pkt_ctl());
}

qshm_ring_ctl *qshm_seg_ctl_ctl(const qshm_seg *seg, uint32_t src, uint32_t dst)
{
    return (qshm_ring_ctl *)(pair(seg, src, dst) + pair_ctl_ctl());
}

uint8_t *qshm_seg_pkt_data(const qshm_seg *seg, uint32_t src, uint32_t dst)
{
    return pair(seg, src, dst) + pair_pkt_data();
}

uint8_t *qshm_seg_ctl_data(const qshm_seg *seg, uint32_t src, uint32_t dst)
{
    return pair(seg, src, dst) + pair_pkt_data() + seg->hdr->ring_bytes;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void qshm_seg_prefault(const qshm_seg *seg, uint32_t rank, uint64_t limit)
{
    const qshm_header *h = seg->hdr;
    if (h->nranks < 2 || 2 * (uint64_t)(h->nranks - 1) * h->pair_bytes > limit)
        return;
    for (uint32_t r = 0; r < h->nranks; r++) {
        if (r == rank)
            continue;
        /* (EINVAL on an older kernel: the first messages fault as before) */
        if (madvise(pair(seg, rank, r), (size_t)h->pair_bytes, MADV_POPULATE_WRITE) != 0 ||
            madvise(pair(seg, r, rank), (size_t)h->pair_bytes, MADV_POPULATE_WRITE) != 0)
            return;
    }
}

void qshm_seg_mark_exited(const qshm_seg *seg, uint32_t rank)
{
    qshm_header *h = seg->hdr;
    atomic_store(&qshm_seg_slot(seg, rank)->state, QSHM_SLOT_EXITED);
    atomic_fetch_add(&h->epoch, 1);
    for (uint32_t r = 0; r < h->nranks; r++)
        if (r != rank)
            qshm_doorbell_ring(qshm_seg_slot(seg, r));
    /* Ranks still meeting at start-up wait on the barrier words. */
    for (int k = 0; k < 2; k++)
        qshm_futex_wake(&h->arrived[k]);
}
