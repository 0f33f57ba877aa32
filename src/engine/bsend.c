/*
 * bsend.c — the buffer attached for buffered sends (MPI_Buffer_attach).
 *
 * A buffered send copies its payload into a block of the attached buffer
 * and completes at once; an internal request sends from the copy and
 * releases the block when done. Blocks are laid out back to back, each
 * preceded by QUAY_BSEND_OVERHEAD bytes whose first 16 hold its total size
 * and whether it is in use (read and written with memcpy: the buffer need
 * not be aligned). Allocation is first fit; release merges free
 * neighbours. Not a hot path.
 */
#include "engine/internal.h"

typedef struct bhdr {
    uint64_t size; /* whole block, header included */
    uint64_t used;
} bhdr;

static bhdr bget(const bsend_state *b, size_t off)
{
    bhdr h;
    memcpy(&h, b->buf + off, sizeof h);
    return h;
}

static void bset(bsend_state *b, size_t off, uint64_t size, uint64_t used)
{
    bhdr h = {size, used};
    memcpy(b->buf + off, &h, sizeof h);
}

int quay_buffer_attach(quay_engine *e, void *buf, size_t len)
{
    if (e == NULL || (buf == NULL && len != 0))
        return QUAY_EINVAL;
    if (e->bs.buf != NULL)
        return QUAY_EBUSY;
    e->bs.buf = buf;
    e->bs.len = len;
    e->bs.nused = 0;
    if (len >= QUAY_BSEND_OVERHEAD)
        bset(&e->bs, 0, len, 0);
    return 0;
}

int quay_buffer_detach(quay_engine *e, void **pbuf, size_t *plen)
{
    if (e == NULL)
        return QUAY_EINVAL;
    if (e->bs.buf == NULL)
        return QUAY_EINVAL;
    if (e->bs.nused != 0)
        return QUAY_EBUSY;
    if (pbuf != NULL)
        *pbuf = e->bs.buf;
    if (plen != NULL)
        *plen = e->bs.len;
    memset(&e->bs, 0, sizeof e->bs);
    return 0;
}

void *bsend_alloc(quay_engine *e, size_t len)
{
    bsend_state *b = &e->bs;
    if (b->buf == NULL || len > b->len)
        return NULL;
    uint64_t need = (uint64_t)len + QUAY_BSEND_OVERHEAD;
    size_t off = 0;
    while (b->len - off >= QUAY_BSEND_OVERHEAD) {
        bhdr h = bget(b, off);
        if (!h.used && h.size >= need) {
            /* Split when the rest can hold a header and a byte. */
            if (h.size - need > QUAY_BSEND_OVERHEAD) {
                bset(b, off + (size_t)need, h.size - need, 0);
                h.size = need;
            }
            bset(b, off, h.size, 1);
            b->nused++;
            return b->buf + off + QUAY_BSEND_OVERHEAD;
        }
        off += (size_t)h.size;
    }
    return NULL;
}

void bsend_release(quay_engine *e, void *block)
{
    bsend_state *b = &e->bs;
    size_t mine = (size_t)((uint8_t *)block - b->buf) - QUAY_BSEND_OVERHEAD;
    bhdr h = bget(b, mine);
    bset(b, mine, h.size, 0);
    b->nused--;
    /* Merge runs of free blocks, front to back. */
    size_t off = 0;
    while (b->len - off >= QUAY_BSEND_OVERHEAD) {
        h = bget(b, off);
        size_t next = off + (size_t)h.size;
        if (!h.used && b->len - next >= QUAY_BSEND_OVERHEAD) {
            bhdr n = bget(b, next);
            if (!n.used) {
                bset(b, off, h.size + n.size, 0);
                continue;
            }
        }
        off = next;
    }
}
