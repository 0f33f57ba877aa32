/*
 * snap.c — the context walker's primitives (snap.h): bytes, integers,
 * counts and sections, each written in SAVE and read and bounded in
 * CHECK / APPLY. A read past the current section's end is corrupt, and the
 * first error sticks: later reads yield zeros and change nothing.
 */
#include "engine/snap.h"

void snap_raw(snap *s, uint8_t *b, size_t n)
{
    if (s->mode == SNAP_SAVE) {
        if (s->pos <= s->cap && n <= s->cap - s->pos)
            memcpy(s->out + s->pos, b, n);
        s->pos += n;
        return;
    }
    if (s->err != 0 || n > s->end - s->pos) {
        snap_corrupt(s);
        memset(b, 0, n);
        return;
    }
    memcpy(b, s->in + s->pos, n);
    s->pos += n;
}

void snap_skip(snap *s, uint64_t n)
{
    if (s->err != 0 || n > s->end - s->pos)
        snap_corrupt(s);
    else
        s->pos += (size_t)n;
}

void sx_u64(snap *s, uint64_t *v)
{
    uint8_t b[8];
    if (s->mode == SNAP_SAVE)
        for (int i = 0; i < 8; i++)
            b[i] = (uint8_t)(*v >> (8 * i));
    snap_raw(s, b, 8);
    if (s->mode != SNAP_SAVE) {
        uint64_t x = 0;
        for (int i = 0; i < 8; i++)
            x |= (uint64_t)b[i] << (8 * i);
        *v = x;
    }
}

void sx_u32(snap *s, uint32_t *v)
{
    uint8_t b[4];
    if (s->mode == SNAP_SAVE)
        for (int i = 0; i < 4; i++)
            b[i] = (uint8_t)(*v >> (8 * i));
    snap_raw(s, b, 4);
    if (s->mode != SNAP_SAVE)
        *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
             (uint32_t)b[3] << 24;
}

void sx_u16(snap *s, uint16_t *v)
{
    uint32_t u = *v;
    sx_u32(s, &u);
    if (u > UINT16_MAX)
        snap_corrupt(s);
    *v = (uint16_t)u;
}

void sx_size(snap *s, size_t *v)
{
    uint64_t u = *v;
    sx_u64(s, &u);
    if (u > SIZE_MAX)
        snap_corrupt(s);
    *v = (size_t)u;
}

uint32_t sx_count(snap *s, uint32_t n, uint32_t max)
{
    sx_u32(s, &n);
    if (n > max) {
        snap_corrupt(s);
        return 0;
    }
    return n;
}

size_t snap_sec_begin(snap *s, uint32_t tag, size_t *outer_end)
{
    uint32_t t = tag, n = 0;
    sx_u32(s, &t);
    if (t != tag)
        snap_corrupt(s);
    size_t at = s->pos;
    sx_u32(s, &n);
    *outer_end = s->end;
    if (s->mode != SNAP_SAVE) {
        if (s->err == 0 && n > s->end - s->pos)
            snap_corrupt(s);
        else
            s->end = s->pos + n;
    }
    return at;
}

void snap_sec_end(snap *s, size_t at, size_t outer_end)
{
    if (s->mode == SNAP_SAVE) {
        size_t n = s->pos - at - 4;
        if (at + 4 <= s->cap)
            for (int i = 0; i < 4; i++)
                s->out[at + (size_t)i] = (uint8_t)(n >> (8 * i));
        return;
    }
    if (s->err == 0 && s->pos != s->end)
        snap_corrupt(s);
    s->end = outer_end;
}
