/*
 * quay_mem.h — registered memory, memory keys, one-sided put / get and remote
 * atomics.
 * Part of quay.h, which includes it; include <quay/quay.h>.
 */
#include <quay/quay.h>

#ifndef QUAY_MEM_H
#define QUAY_MEM_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Registered memory and one-sided transfers                            */
/* ------------------------------------------------------------------ */

/** Access rights of a registered region (quay_mem_register). */
enum {
    QUAY_MEM_READ = 1u << 0,  /**< peers may read it (RDMA_GET) */
    QUAY_MEM_WRITE = 1u << 1  /**< peers may write it (RDMA_PUT) */
};

/**
 * Register `len` bytes at `base` for remote access by every rank of the
 * world, with `access` (QUAY_MEM_*). *key receives an opaque 64-bit key to
 * give to peers; it names this channel's region, is honoured only for the
 * peers the registration names, and is refused once the region is
 * deregistered (keys are never reused). The memory must stay valid until
 * quay_mem_deregister. Returns 0, QUAY_EINVAL, QUAY_EAGAIN (the
 * max_regions table is full), QUAY_ENOTSUP (no key_secret configured).
 * quay_mem_register_peer and quay_mem_register_comm grant less.
 */
QUAY_API int quay_mem_register(quay_engine *e, void *base, size_t len, uint32_t access,
                               uint64_t *key);

/** As quay_mem_register, but the key is honoured only for world rank
 *  `peer` (QUAY_ERANK if out of range). */
QUAY_API int quay_mem_register_peer(quay_engine *e, void *base, size_t len, uint32_t access,
                                    int32_t peer, uint64_t *key);

/** As quay_mem_register, but the key is honoured only for the members of
 *  communicator `comm` (a group). quay_comm_free answers QUAY_EBUSY while
 *  such a region is registered. */
QUAY_API int quay_mem_register_comm(quay_engine *e, void *base, size_t len, uint32_t access,
                                    const quay_comm *comm, uint64_t *key);

/** Deregister a region registered by quay_mem_register. QUAY_EINVAL for
 *  an unknown, stale or engine-internal key. Transfers already executing
 *  on it are the caller's business (as with verbs). */
QUAY_API int quay_mem_deregister(quay_engine *e, uint64_t key);

/**
 * For adapters executing an RDMA action whose target is this engine
 * (any channel handle), requested by world rank `peer` (the initiator, as
 * the transport knows it, never as the request claims): check (key,
 * offset, len) against the registered regions, the peers each region's
 * key was made for, and the access the action needs (QUAY_MEM_READ for a
 * GET, QUAY_MEM_WRITE for a PUT). 0 and *addr = the local address;
 * QUAY_ESTATE (stale key, or one not valid for `peer`: nothing is
 * dereferenced); QUAY_EPROTO (outside the region, or access not granted);
 * QUAY_EINVAL; QUAY_ERANK. A key this engine never made for `peer` is
 * forged: counted, traced, and past forged_key_limit the peer is declared
 * failed here (as by quay_on_peer_failed). This engine's own rank may use
 * every key. Report a refusal to the initiator as the action's op_done
 * status.
 */
QUAY_API int quay_mem_resolve(quay_engine *e, int32_t peer, uint64_t key, uint64_t offset,
                              uint64_t len, uint32_t access, void **addr);

/**
 * One-sided transfers to or from world rank `peer`'s registered memory
 * (key and offset as the peer registered and published them): put writes
 * `len` bytes from `local` there, get reads them into `local`. They
 * become an RDMA_PUT / RDMA_GET action (to this rank itself: done at
 * once); the request completes at its op_done, with status.error the
 * adapter's status (e.g. QUAY_ESTATE for a key the peer refused) and
 * status.count = len on success. `local` must stay valid until then.
 * Needs the transport capability (QUAY_CAP_RDMA_PUT / _GET) unless peer
 * is this rank. Returns 0, QUAY_EINVAL, QUAY_ERANK, QUAY_ENOTSUP,
 * QUAY_EAGAIN.
 */
QUAY_API int quay_iput(quay_engine *e, int32_t peer, const void *local, size_t len,
                       uint64_t key, uint64_t offset, quay_req **preq);
QUAY_API int quay_iget(quay_engine *e, int32_t peer, void *local, size_t len, uint64_t key,
                       uint64_t offset, quay_req **preq);

/** Remote atomic operations on a 64-bit word [NIC ch. 5]. */
enum {
    QUAY_ATOMIC_FADD = 1, /**< word += operand; returns the old word */
    QUAY_ATOMIC_SWAP = 2, /**< word = operand (fetch-and-write) */
    QUAY_ATOMIC_CAS = 3   /**< if word == compare: word = operand; returns the old word */
};

/**
 * A remote atomic on the 8-byte word at (key, offset) of world rank
 * `peer`'s registered memory (registered with QUAY_MEM_READ |
 * QUAY_MEM_WRITE): it becomes one QUAY_ACT_RDMA_ATOMIC action, executed
 * where the memory is without its host (to this rank itself: at once);
 * the old value lands in *result (host byte order) and the request
 * completes at the op_done (status.error: e.g. QUAY_ESTATE / QUAY_EPROTO
 * when the peer refused the key). Operations on one engine's memory are
 * executed one at a time, so each is atomic against the others. *result
 * must stay valid until completion. Needs QUAY_CAP_RDMA_ATOMIC unless
 * peer is this rank. 0, QUAY_EINVAL, QUAY_ERANK, QUAY_ENOTSUP,
 * QUAY_EAGAIN.
 */
QUAY_API int quay_iatomic(quay_engine *e, int32_t peer, uint32_t op, uint64_t key,
                          uint64_t offset, uint64_t operand, uint64_t compare,
                          uint64_t *result, quay_req **preq);

/**
 * For adapters executing QUAY_ACT_RDMA_ATOMIC on target engine e for world
 * rank `peer`: check the key as quay_mem_resolve does (8 bytes, read and
 * write access, forged keys counted), then
 * apply op to the word and store its previous value in *old. The word is
 * read and written with memcpy (no alignment needed); the caller
 * serialises calls on one engine (the engine contract), which is what
 * makes the operation atomic against every other remote atomic there.
 * 0, QUAY_ESTATE, QUAY_EPROTO, QUAY_EINVAL (unknown op), QUAY_ERANK.
 */
QUAY_API int quay_mem_atomic(quay_engine *e, int32_t peer, uint64_t key, uint64_t offset,
                             uint32_t op, uint64_t operand, uint64_t compare, uint64_t *old);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_MEM_H */
