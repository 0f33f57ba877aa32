/*
 * mem.c — registered memory for the remote-memory protocols: regions,
 * their keys, and the check every key from the wire goes through.
 *
 * A key names a slot of the bounded region table and carries the slot's
 * generation and a check value derived from the engine's secret, so a
 * stale key (its region deregistered, the slot reused) or a forged one is
 * refused before anything is dereferenced; a key that passes only ever
 * yields an address inside the region it names, with the access that
 * region was registered for. Key layout (64 bits):
 *   bits 0..16   slot index (config_check keeps max_regions <= 2^17)
 *   bits 17..19  channel (the adapter resolves a key on the engine: the
 *                key says which channel's table)
 *   bits 20..43  generation (24 bits, never 0)
 *   bits 44..63  check: mix(secret, channel, slot, generation) (20 bits)
 */
#include "engine/internal.h"

#define KEY_SLOT_BITS 17u
#define KEY_CHAN_SHIFT 17u
#define KEY_IDX_BITS 20u /* slot and channel */
#define KEY_GEN_BITS 24u
#define KEY_GEN_MASK ((1u << KEY_GEN_BITS) - 1u)
#define KEY_CHECK_SHIFT (KEY_IDX_BITS + KEY_GEN_BITS)

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t key_make(const quay_engine *e, uint32_t idx, uint32_t gen)
{
    uint64_t body = (uint64_t)gen << KEY_IDX_BITS | (uint64_t)e->chan_id << KEY_CHAN_SHIFT | idx;
    uint64_t check = mix64(e->mem_secret ^ body) >> KEY_CHECK_SHIFT;
    return check << KEY_CHECK_SHIFT | body;
}

int mem_init(quay_engine *e)
{
    e->nregions = e->cfg.max_regions;
    e->region_free = UINT32_MAX; /* (no table: every registration is refused) */
    if (e->nregions == 0)
        return 0;
    e->regions = qalloc(e, (size_t)e->nregions * sizeof *e->regions);
    if (e->regions == NULL)
        return QUAY_ENOMEM;
    memset(e->regions, 0, (size_t)e->nregions * sizeof *e->regions);
    e->region_free = UINT32_MAX;
    for (uint32_t i = e->nregions; i-- > 0;) {
        e->regions[i].next_free = e->region_free;
        e->region_free = i;
    }
    /* Per engine and channel, so that keys of one never pass in another. */
    e->mem_secret = mix64(e->cfg.seed ^ 0x6b6579736b657973ull ^
                          ((uint64_t)(uint32_t)e->rank << 32) ^ e->chan_id);
    return 0;
}

void mem_fini(quay_engine *e)
{
    qfree(e, e->regions);
    e->regions = NULL;
}

int mem_key_parse(const quay_engine *e, uint64_t key, uint32_t *idx, uint32_t *gen)
{
    *idx = (uint32_t)(key & ((1u << KEY_SLOT_BITS) - 1u));
    *gen = (uint32_t)(key >> KEY_IDX_BITS) & KEY_GEN_MASK;
    if (*idx >= e->nregions || *gen == 0 || key_make(e, *idx, *gen) != key)
        return QUAY_ESTATE;
    return 0;
}

mregion *mem_lookup(const quay_engine *e, uint64_t key)
{
    uint32_t idx, gen;
    if (mem_key_parse(e, key, &idx, &gen) != 0)
        return NULL;
    mregion *m = &e->regions[idx];
    if (!m->in_use || m->gen != gen)
        return NULL;
    return m;
}

int mem_register(quay_engine *e, void *base, uint64_t len, uint32_t access, int internal,
                 uint64_t *key)
{
    if (e->region_free == UINT32_MAX)
        return QUAY_EAGAIN;
    uint32_t idx = e->region_free;
    mregion *m = &e->regions[idx];
    e->region_free = m->next_free;
    m->gen = (m->gen + 1u) & KEY_GEN_MASK;
    if (m->gen == 0)
        m->gen = 1;
    m->base = base;
    m->len = len;
    m->access = (uint8_t)access;
    m->internal = (uint8_t)internal;
    m->in_use = 1;
    e->regions_used++;
    *key = key_make(e, idx, m->gen);
    return 0;
}

void mem_release(quay_engine *e, mregion *m)
{
    m->in_use = 0;
    m->base = NULL;
    m->len = 0;
    m->next_free = e->region_free;
    e->region_free = (uint32_t)(m - e->regions);
    e->regions_used--;
}

void mem_release_internal(quay_engine *e, uint64_t *key)
{
    if (*key == 0)
        return;
    mregion *m = mem_lookup(e, *key);
    if (m != NULL && m->internal)
        mem_release(e, m);
    *key = 0;
}

int quay_mem_register(quay_engine *e, void *base, size_t len, uint32_t access, uint64_t *key)
{
    if (e == NULL || key == NULL || (base == NULL && len != 0) || access == 0 ||
        (access & ~(uint32_t)(QUAY_MEM_READ | QUAY_MEM_WRITE)))
        return QUAY_EINVAL;
    *key = 0;
    if (e->fatal)
        return e->fatal;
    return mem_register(e, base, len, access, 0, key);
}

int quay_mem_deregister(quay_engine *e, uint64_t key)
{
    if (e == NULL)
        return QUAY_EINVAL;
    mregion *m = mem_lookup(e, key);
    if (m == NULL || m->internal)
        return QUAY_EINVAL;
    mem_release(e, m);
    return 0;
}

int quay_mem_resolve(const quay_engine *e, uint64_t key, uint64_t offset, uint64_t len,
                     uint32_t access, void **addr)
{
    if (e == NULL || addr == NULL)
        return QUAY_EINVAL;
    *addr = NULL;
    const quay_engine *root = e->root;
    uint32_t ch = (uint32_t)(key >> KEY_CHAN_SHIFT) & 7u;
    if (ch >= root->nchans)
        return QUAY_ESTATE;
    const mregion *m = mem_lookup(root->chans[ch], key);
    if (m == NULL)
        return QUAY_ESTATE; /* stale or forged */
    if (access == 0 || (access & ~(uint32_t)m->access) || offset > m->len ||
        len > m->len - offset)
        return QUAY_EPROTO; /* outside the region, or not allowed */
    /* (an empty region may have no base: no arithmetic on NULL) */
    *addr = m->base != NULL ? (uint8_t *)m->base + offset : NULL;
    return 0;
}
