/*
 * mem.c — registered memory for the remote-memory protocols: regions,
 * their keys, who may use each key, and the check every key from the wire
 * goes through.
 *
 * A key is the encryption, under the engine's secret (key_secret, with
 * the rank mixed in), of the 64-bit block
 *   bits 0..16   slot index (config_check keeps max_regions <= 2^17)
 *   bits 17..19  channel (the adapter resolves a key on the engine: the
 *                key says which channel's table)
 *   bits 20..51  generation of the slot (never 0)
 *   bits 52..63  zero
 * by Speck64/128, a 64-bit block cipher: without the secret a peer cannot
 * make a key that opens to a live (slot, generation), so a guess succeeds
 * with probability live regions / 2^64, and a peer is failed after
 * forged_key_limit refused guesses. A key that opens to a live region is
 * honoured only for the peers the region was registered for (a
 * rendezvous region: the one peer of its message; a user region: one
 * peer, a communicator's members or the world), and only ever yields an
 * address inside that region, with the access it was registered for. A
 * key of a slot's earlier generation is stale (a legitimate race with
 * deregistration); any other refusal is a forgery.
 */
#include "engine/internal.h"

#define KEY_SLOT_BITS 17u
#define KEY_CHAN_SHIFT 17u
#define KEY_GEN_SHIFT 20u
#define KEY_PAD_SHIFT 52u

/* ---- the cipher: Speck64/128 (Beaulieu et al., 2013), 27 rounds --------- */

static inline uint32_t ror32(uint32_t x, unsigned r) { return x >> r | x << (32u - r); }
static inline uint32_t rol32(uint32_t x, unsigned r) { return x << r | x >> (32u - r); }

/* k[0] is the first round key, k[1..3] the rest of the key (l0, l1, l2). */
void mem_cipher_schedule(uint32_t rk[MEM_KEY_ROUNDS], const uint32_t k[4])
{
    uint32_t a = k[0], l[3] = {k[1], k[2], k[3]};
    for (uint32_t i = 0; i < MEM_KEY_ROUNDS; i++) {
        rk[i] = a;
        uint32_t nl = (a + ror32(l[i % 3], 8)) ^ i;
        l[i % 3] = nl;
        a = rol32(a, 3) ^ nl;
    }
}

/* The block's high word is Speck's x, its low word y. */
uint64_t mem_cipher_encrypt(const uint32_t rk[MEM_KEY_ROUNDS], uint64_t block)
{
    uint32_t x = (uint32_t)(block >> 32), y = (uint32_t)block;
    for (uint32_t i = 0; i < MEM_KEY_ROUNDS; i++) {
        x = (ror32(x, 8) + y) ^ rk[i];
        y = rol32(y, 3) ^ x;
    }
    return (uint64_t)x << 32 | y;
}

uint64_t mem_cipher_decrypt(const uint32_t rk[MEM_KEY_ROUNDS], uint64_t block)
{
    uint32_t x = (uint32_t)(block >> 32), y = (uint32_t)block;
    for (uint32_t i = MEM_KEY_ROUNDS; i-- > 0;) {
        y = ror32(y ^ x, 3);
        x = rol32((x ^ rk[i]) - y, 8);
    }
    return (uint64_t)x << 32 | y;
}

/* ---- keys ------------------------------------------------------------------ */

static uint64_t key_make(const quay_engine *e, uint32_t idx, uint32_t gen)
{
    uint64_t block = (uint64_t)gen << KEY_GEN_SHIFT | (uint64_t)e->chan_id << KEY_CHAN_SHIFT | idx;
    return mem_cipher_encrypt(e->mem.rk, block);
}

/* Open a key with this engine's cipher (every channel has the same):
 * 0 and its channel, slot and generation, or QUAY_ESTATE (no key this
 * engine could have made). */
static int key_open(const quay_engine *e, uint64_t key, uint32_t *ch, uint32_t *idx,
                    uint32_t *gen)
{
    if (!e->mem.keys_on)
        return QUAY_ESTATE;
    uint64_t b = mem_cipher_decrypt(e->mem.rk, key);
    *idx = (uint32_t)(b & ((1u << KEY_SLOT_BITS) - 1u));
    *ch = (uint32_t)(b >> KEY_CHAN_SHIFT) & 7u;
    *gen = (uint32_t)(b >> KEY_GEN_SHIFT);
    if ((b >> KEY_PAD_SHIFT) != 0 || *gen == 0)
        return QUAY_ESTATE;
    return 0;
}

int mem_init(quay_engine *e)
{
    mem_table *t = &e->mem;
    t->nregions = e->cfg.max_regions;
    t->free = UINT32_MAX; /* (no table: every registration is refused) */
    uint32_t k[4] = {0, 0, 0, 0};
    for (int i = 0; i < 16; i++)
        k[i / 4] |= (uint32_t)e->cfg.key_secret[i] << (8 * (i % 4));
    t->keys_on = (k[0] | k[1] | k[2] | k[3]) != 0;
    /* Ranks given one secret still make different keys. */
    k[3] ^= (uint32_t)e->rank;
    mem_cipher_schedule(t->rk, k);
    if (t->nregions == 0)
        return 0;
    t->regions = qalloc(e, (size_t)t->nregions * sizeof *t->regions);
    if (t->regions == NULL)
        return QUAY_ENOMEM;
    memset(t->regions, 0, (size_t)t->nregions * sizeof *t->regions);
    for (uint32_t i = t->nregions; i-- > 0;) {
        t->regions[i].next_free = t->free;
        t->free = i;
    }
    return 0;
}

void mem_fini(quay_engine *e)
{
    qfree(e, e->mem.regions);
    e->mem.regions = NULL;
}

int mem_key_parse(const quay_engine *e, uint64_t key, uint32_t *idx, uint32_t *gen)
{
    uint32_t ch;
    if (key_open(e, key, &ch, idx, gen) != 0 || ch != e->chan_id || *idx >= e->mem.nregions)
        return QUAY_ESTATE;
    return 0;
}

mregion *mem_lookup(const quay_engine *e, uint64_t key)
{
    uint32_t idx, gen;
    if (mem_key_parse(e, key, &idx, &gen) != 0)
        return NULL;
    mregion *m = &e->mem.regions[idx];
    if (!m->in_use || m->gen != gen)
        return NULL;
    return m;
}

int mem_register(quay_engine *e, void *base, uint64_t len, uint32_t access, int internal,
                 int32_t scope, uint32_t scope_comm, uint64_t *key)
{
    mem_table *t = &e->mem;
    if (!t->keys_on)
        return QUAY_ENOTSUP;
    if (t->free == UINT32_MAX)
        return QUAY_EAGAIN;
    uint32_t idx = t->free;
    mregion *m = &t->regions[idx];
    t->free = m->next_free;
    /* (0 is never a generation; one key in 2^64 encrypts to 0, the
     * protocols' "no key": skip that generation) */
    do {
        m->gen = m->gen + 1u != 0 ? m->gen + 1u : 1u;
        *key = key_make(e, idx, m->gen);
    } while (*key == 0);
    m->base = base;
    m->len = len;
    m->access = (uint8_t)access;
    m->internal = (uint8_t)internal;
    m->scope = scope;
    m->scope_comm = scope_comm;
    m->in_use = 1;
    t->used++;
    if (scope == MEM_SCOPE_COMM)
        t->comm_scoped++;
    return 0;
}

void mem_release(quay_engine *e, mregion *m)
{
    mem_table *t = &e->mem;
    if (m->scope == MEM_SCOPE_COMM)
        t->comm_scoped--;
    m->in_use = 0;
    m->base = NULL;
    m->len = 0;
    m->next_free = t->free;
    t->free = (uint32_t)(m - t->regions);
    t->used--;
}

int mem_comm_in_use(const quay_engine *e, const quay_comm *c)
{
    const mem_table *t = &e->mem;
    uint32_t idx = (uint32_t)(c - e->comms);
    for (uint32_t i = 0; t->comm_scoped != 0 && i < t->nregions; i++)
        if (t->regions[i].in_use && t->regions[i].scope == MEM_SCOPE_COMM &&
            t->regions[i].scope_comm == idx)
            return 1;
    return 0;
}

void mem_bind(quay_engine *e, uint64_t key, int32_t peer)
{
    mregion *m = mem_lookup(e, key);
    if (m != NULL && m->scope != MEM_SCOPE_COMM)
        m->scope = peer;
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

/* ---- the user's registrations ---------------------------------------------- */

static int register_user(quay_engine *e, void *base, size_t len, uint32_t access,
                         int32_t scope, uint32_t scope_comm, uint64_t *key)
{
    if (e == NULL || key == NULL || (base == NULL && len != 0) || access == 0 ||
        (access & ~(uint32_t)(QUAY_MEM_READ | QUAY_MEM_WRITE)))
        return QUAY_EINVAL;
    *key = 0;
    if (e->fatal)
        return e->fatal;
    return mem_register(e, base, len, access, 0, scope, scope_comm, key);
}

int quay_mem_register(quay_engine *e, void *base, size_t len, uint32_t access, uint64_t *key)
{
    return register_user(e, base, len, access, MEM_SCOPE_WORLD, 0, key);
}

int quay_mem_register_peer(quay_engine *e, void *base, size_t len, uint32_t access,
                           int32_t peer, uint64_t *key)
{
    if (e != NULL && (peer < 0 || peer >= e->nranks)) {
        if (key != NULL)
            *key = 0;
        return QUAY_ERANK;
    }
    return register_user(e, base, len, access, peer, 0, key);
}

int quay_mem_register_comm(quay_engine *e, void *base, size_t len, uint32_t access,
                           const quay_comm *comm, uint64_t *key)
{
    if (e == NULL || comm == NULL || comm < e->comms || comm >= e->comms + e->ncomms_max ||
        !comm->in_use || comm->internal) {
        if (key != NULL)
            *key = 0;
        return QUAY_EINVAL;
    }
    return register_user(e, base, len, access, MEM_SCOPE_COMM, (uint32_t)(comm - e->comms), key);
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

/* ---- keys from the wire ------------------------------------------------------ */

static int comm_has_member(const quay_comm *c, int32_t peer)
{
    if (c->identity)
        return peer < c->size;
    for (int32_t i = 0; i < c->size; i++)
        if (c->world[i] == peer)
            return 1;
    return 0;
}

/* May `peer` use region m of channel ch? Its owner always may. */
static int scope_allows(const quay_engine *ch, const mregion *m, int32_t peer)
{
    if (peer == ch->rank || m->scope == MEM_SCOPE_WORLD || m->scope == peer)
        return 1;
    return m->scope == MEM_SCOPE_COMM && comm_has_member(&ch->comms[m->scope_comm], peer);
}

/* `peer` presented a key this engine never made for it: count it, trace
 * it, and past the limit fail the peer. */
static int key_forged(quay_engine *root, int32_t peer)
{
    root->st.forged_keys++;
    if (root->trace_fn)
        trace_pkt(root, QUAY_TR_FORGED_KEY, 0, peer, 0, 0, QUAY_ESTATE);
    if (peer != root->rank && !peer_failed(root, peer) &&
        ++root->strikes[peer].forged > root->cfg.forged_key_limit)
        engine_peer_hostile(root, peer, QUAY_ESTATE);
    return QUAY_ESTATE;
}

/* The live region `key` names for `peer`; NULL with *rc the refusal. */
static const mregion *key_check(quay_engine *root, int32_t peer, uint64_t key, int *rc)
{
    uint32_t ch, idx, gen;
    *rc = QUAY_ESTATE;
    if (peer != root->rank && peer_failed(root, peer))
        return NULL; /* nothing more from it counts */
    if (key_open(root, key, &ch, &idx, &gen) != 0 || ch >= root->nchans) {
        key_forged(root, peer);
        return NULL;
    }
    const quay_engine *c = root->chans[ch];
    if (idx >= c->mem.nregions) {
        key_forged(root, peer);
        return NULL;
    }
    const mregion *m = &c->mem.regions[idx];
    if (m->in_use && m->gen == gen) {
        if (scope_allows(c, m, peer))
            return m;
        key_forged(root, peer); /* made for another peer */
        return NULL;
    }
    /* An earlier generation of the slot is stale; a later one was never
     * made. */
    if ((int32_t)(gen - m->gen) > 0)
        key_forged(root, peer);
    return NULL;
}

int quay_mem_resolve(quay_engine *e, int32_t peer, uint64_t key, uint64_t offset, uint64_t len,
                     uint32_t access, void **addr)
{
    if (e == NULL || addr == NULL)
        return QUAY_EINVAL;
    *addr = NULL;
    quay_engine *root = e->root;
    if (peer < 0 || peer >= root->nranks)
        return QUAY_ERANK;
    int rc;
    const mregion *m = key_check(root, peer, key, &rc);
    if (m == NULL)
        return rc;
    if (access == 0 || (access & ~(uint32_t)m->access) || offset > m->len ||
        len > m->len - offset)
        return QUAY_EPROTO; /* outside the region, or not allowed */
    /* (an empty region may have no base: no arithmetic on NULL) */
    *addr = m->base != NULL ? (uint8_t *)m->base + offset : NULL;
    return 0;
}
