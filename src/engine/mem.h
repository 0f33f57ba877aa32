/*
 * mem.h — registered memory: the region table, memory keys and who may use
 * them (mem.c). docs/wire.md, "Memory keys", has the key format and
 * docs/threats.md what it defends against.
 */
#ifndef QUAY_ENGINE_MEM_H
#define QUAY_ENGINE_MEM_H

#include <stdint.h>

struct quay_engine;
struct quay_comm;

/* Who may use a region's key (mregion.scope): a world rank (>= 0), or: */
enum {
    MEM_SCOPE_WORLD = -1, /* every rank of the world */
    MEM_SCOPE_COMM = -2,  /* the members of the communicator scope_comm */
    MEM_SCOPE_NONE = -3   /* nobody yet (mem_bind names the peer later) */
};

typedef struct mregion {
    void *base;
    uint64_t len;
    uint32_t gen;        /* in every key of it; bumped on each registration */
    uint32_t next_free;  /* free list (index), UINT32_MAX at the end */
    int32_t scope;       /* a world rank or MEM_SCOPE_* */
    uint32_t scope_comm; /* MEM_SCOPE_COMM: index in the engine's comms */
    uint8_t access;      /* QUAY_MEM_READ | QUAY_MEM_WRITE */
    uint8_t internal;    /* registered by a protocol, not the user */
    uint8_t in_use;
} mregion;

#define MEM_KEY_ROUNDS 27

/* A channel's region table and key cipher, held by value in the engine. */
typedef struct mem_table {
    mregion *regions;
    uint32_t nregions;
    uint32_t used;
    uint32_t free;                 /* free list head, UINT32_MAX if none */
    uint32_t comm_scoped;          /* live regions scoped to a communicator */
    uint32_t rk[MEM_KEY_ROUNDS];   /* the key cipher's round keys */
    uint8_t keys_on;               /* a key_secret was configured */
} mem_table;

int mem_init(struct quay_engine *e);
void mem_fini(struct quay_engine *e);
/** The region a key names on this channel, or NULL (stale, forged, other
 *  channel). No scope check: for the engine's own keys. */
mregion *mem_lookup(const struct quay_engine *e, uint64_t key);
/** Slot and generation of a key well formed for this channel, whatever
 *  the table holds now: 0, else QUAY_ESTATE. */
int mem_key_parse(const struct quay_engine *e, uint64_t key, uint32_t *idx, uint32_t *gen);
/** Register a region usable by `scope` (a world rank or MEM_SCOPE_*;
 *  scope_comm for MEM_SCOPE_COMM). 0, QUAY_EAGAIN (table full),
 *  QUAY_ENOTSUP (no key secret). */
int mem_register(struct quay_engine *e, void *base, uint64_t len, uint32_t access, int internal,
                 int32_t scope, uint32_t scope_comm, uint64_t *key);
void mem_release(struct quay_engine *e, mregion *m);
/** 1 if a live region is scoped to communicator c (it may not be freed). */
int mem_comm_in_use(const struct quay_engine *e, const struct quay_comm *c);
/** Let world rank `peer` alone use the region of the engine's own `key`. */
void mem_bind(struct quay_engine *e, uint64_t key, int32_t peer);
/** Release the protocol-internal region *key names, if any; *key = 0. */
void mem_release_internal(struct quay_engine *e, uint64_t *key);

/* The key cipher (Speck64/128), exposed for its known-answer test. */
void mem_cipher_schedule(uint32_t rk[MEM_KEY_ROUNDS], const uint32_t k[4]);
uint64_t mem_cipher_encrypt(const uint32_t rk[MEM_KEY_ROUNDS], uint64_t block);
uint64_t mem_cipher_decrypt(const uint32_t rk[MEM_KEY_ROUNDS], uint64_t block);

#endif /* QUAY_ENGINE_MEM_H */
