/*
 * nicsim_prng.h — the simulator's PRNG: xoshiro256** seeded through
 * splitmix64. Shared by nicsim and the ordering runner so both draw from
 * the same generator; the state is always the caller's (no globals).
 */
#ifndef NICSIM_PRNG_H
#define NICSIM_PRNG_H

#include <stdint.h>

/** splitmix64: next seed word from the counter *x (used to seed). */
static inline uint64_t nicsim_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t nicsim_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/** xoshiro256**: next 64 random bits from state s. */
static inline uint64_t nicsim_xoshiro_next(uint64_t s[4])
{
    uint64_t result = nicsim_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = nicsim_rotl(s[3], 45);
    return result;
}

#endif /* NICSIM_PRNG_H */
