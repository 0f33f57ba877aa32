/*
 * fault_spec.c — fault specifications as text (fault_spec.h): parsing,
 * the canonical form, and applying one to a simulator through its public
 * calls.
 */
#include "fault_spec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int spec_err(char *err, size_t errlen, const char *what,
                    const char *item)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "faults: %s in '%s'", what, item);
    return QUAY_EINVAL;
}

/* "0.01", "1e-3", "1", "5%", "250ppm" -> parts per million. */
static int parse_prob(const char *v, uint32_t *ppm)
{
    char *end;
    double x;
    size_t l = strlen(v);
    if (l == 0 || v[0] == '-' || v[0] == '+')
        return -1;
    if (l > 3 && strcmp(v + l - 3, "ppm") == 0) {
        unsigned long long u;
        if (v[0] < '0' || v[0] > '9')
            return -1;
        errno = 0;
        u = strtoull(v, &end, 10);
        if (errno != 0 || end != v + l - 3 || u > NICSIM_PPM_ONE)
            return -1;
        *ppm = (uint32_t)u;
        return 0;
    }
    errno = 0;
    x = strtod(v, &end);
    if (errno != 0 || end == v || !(x >= 0.0))
        return -1;
    if (*end == '%') {
        x /= 100.0;
        end++;
    }
    if (*end != '\0' || x > 1.0)
        return -1;
    *ppm = (uint32_t)(x * 1e6 + 0.5);
    return 0;
}

static int parse_uint(const char *v, const char **endp, uint64_t *out)
{
    char *end;
    unsigned long long u;
    if (*v < '0' || *v > '9')
        return -1;
    errno = 0;
    u = strtoull(v, &end, 10);
    if (errno != 0)
        return -1;
    *out = (uint64_t)u;
    *endp = end;
    return 0;
}

/* "R[@T]" */
static int parse_rank_at(const char *v, int32_t *r, uint64_t *at)
{
    const char *e;
    uint64_t x;
    if (parse_uint(v, &e, &x) != 0 || x >= NICSIM_MAX_RANKS)
        return -1;
    *r = (int32_t)x;
    *at = 0;
    if (*e == '@') {
        if (parse_uint(e + 1, &e, at) != 0)
            return -1;
    }
    return *e == '\0' ? 0 : -1;
}

int nicsim_fault_spec_parse(const char *text, nicsim_fault_spec *spec,
                            char *err, size_t errlen)
{
    char item[128];
    const char *cur = text;
    if (spec == NULL)
        return QUAY_EINVAL;
    memset(spec, 0, sizeof *spec);
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (text == NULL)
        return 0;
    while (*cur == ' ')
        cur++;
    if (*cur == '\0' || strcmp(cur, "none") == 0 || strcmp(cur, "0") == 0)
        return 0;
    for (;;) {
        const char *comma = strchr(cur, ',');
        size_t len = comma != NULL ? (size_t)(comma - cur) : strlen(cur);
        char *key, *val, *colon;
        uint32_t ppm;
        if (len >= sizeof item)
            return spec_err(err, errlen, "item too long", cur);
        memcpy(item, cur, len);
        item[len] = '\0';
        key = item;
        while (*key == ' ')
            key++;
        while (len > 0 && item[len - 1] == ' ')
            item[--len] = '\0';
        colon = strchr(key, ':');
        if (colon == NULL)
            return spec_err(err, errlen, "expected key:value", key);
        *colon = '\0';
        val = colon + 1;
        if (strcmp(key, "drop") == 0 || strcmp(key, "dup") == 0 ||
            strcmp(key, "corrupt") == 0 || strcmp(key, "delay") == 0 ||
            strcmp(key, "reorder") == 0 || strcmp(key, "stall") == 0) {
            if (parse_prob(val, &ppm) != 0) {
                *colon = ':';
                return spec_err(err, errlen,
                                "bad probability (0..1, N%, Nppm)", key);
            }
            if (key[0] == 'd' && key[1] == 'r')
                spec->link.drop_ppm = ppm;
            else if (key[0] == 'd' && key[1] == 'u')
                spec->link.dup_ppm = ppm;
            else if (key[0] == 'c')
                spec->link.corrupt_ppm = ppm;
            else if (key[0] == 'd')
                spec->link.delay_ppm = ppm;
            else if (key[0] == 'r')
                spec->link.reorder_ppm = ppm;
            else
                spec->stall_ppm = ppm;
        } else if (strcmp(key, "delay_max") == 0 ||
                   strcmp(key, "stall_max") == 0) {
            const char *e;
            uint64_t k;
            if (parse_uint(val, &e, &k) != 0 || *e != '\0' || k == 0 ||
                k > NICSIM_HOLD_MAX_LIMIT) {
                *colon = ':';
                return spec_err(err, errlen, "bad event count", key);
            }
            if (key[0] == 'd')
                spec->link.delay_max = (uint32_t)k;
            else
                spec->stall_max = (uint32_t)k;
        } else if (strcmp(key, "kill") == 0) {
            int32_t r;
            uint64_t at;
            *colon = ':';
            if (parse_rank_at(val, &r, &at) != 0)
                return spec_err(err, errlen, "expected kill:R[@T]", key);
            if (spec->nkill == NICSIM_SPEC_MAX_EVENTS)
                return spec_err(err, errlen, "too many kills", key);
            spec->kill[spec->nkill].rank = r;
            spec->kill[spec->nkill].at = at;
            spec->nkill++;
        } else if (strcmp(key, "blackhole") == 0) {
            const char *e;
            uint64_t s, d, at = 0;
            *colon = ':';
            if (parse_uint(val, &e, &s) != 0 || *e != '>' ||
                parse_uint(e + 1, &e, &d) != 0 ||
                (*e == '@' && parse_uint(e + 1, &e, &at) != 0) || *e != '\0' ||
                s >= NICSIM_MAX_RANKS || d >= NICSIM_MAX_RANKS)
                return spec_err(err, errlen, "expected blackhole:S>D[@T]", key);
            if (spec->nblackhole == NICSIM_SPEC_MAX_EVENTS)
                return spec_err(err, errlen, "too many black holes", key);
            spec->blackhole[spec->nblackhole].src = (int32_t)s;
            spec->blackhole[spec->nblackhole].dst = (int32_t)d;
            spec->blackhole[spec->nblackhole].at = at;
            spec->nblackhole++;
        } else {
            *colon = ':';
            return spec_err(err, errlen,
                            "unknown key (drop dup corrupt delay reorder "
                            "stall delay_max stall_max kill blackhole)",
                            key);
        }
        if (comma == NULL)
            break;
        cur = comma + 1;
    }
    return 0;
}

int nicsim_fault_spec_active(const nicsim_fault_spec *spec)
{
    const nicsim_faults *f = &spec->link;
    return f->drop_ppm || f->dup_ppm || f->corrupt_ppm || f->delay_ppm ||
           f->reorder_ppm || spec->stall_ppm || spec->nblackhole ||
           spec->nkill;
}

typedef struct sbuf {
    char *b;
    size_t len;
    size_t n;
} sbuf;

static void sb_put(sbuf *sb, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_put(sbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int k;
    va_start(ap, fmt);
    k = vsnprintf(sb->n < sb->len ? sb->b + sb->n : NULL,
                  sb->n < sb->len ? sb->len - sb->n : 0, fmt, ap);
    va_end(ap);
    if (k > 0)
        sb->n += (size_t)k;
}

static void sb_prob(sbuf *sb, const char *key, uint32_t ppm)
{
    char frac[8];
    int i;
    if (ppm == 0)
        return;
    sb_put(sb, "%s%s:", sb->n ? "," : "", key);
    if (ppm >= NICSIM_PPM_ONE) {
        sb_put(sb, "1");
        return;
    }
    snprintf(frac, sizeof frac, "%06u", (unsigned)ppm);
    for (i = 5; i > 0 && frac[i] == '0'; i--)
        frac[i] = '\0';
    sb_put(sb, "0.%s", frac);
}

size_t nicsim_fault_spec_format(const nicsim_fault_spec *spec, char *buf,
                                size_t len)
{
    sbuf sb;
    uint32_t i;
    sb.b = buf;
    sb.len = len;
    sb.n = 0;
    if (len > 0)
        buf[0] = '\0';
    sb_prob(&sb, "drop", spec->link.drop_ppm);
    sb_prob(&sb, "dup", spec->link.dup_ppm);
    sb_prob(&sb, "corrupt", spec->link.corrupt_ppm);
    sb_prob(&sb, "delay", spec->link.delay_ppm);
    if (spec->link.delay_max)
        sb_put(&sb, "%sdelay_max:%u", sb.n ? "," : "",
               (unsigned)spec->link.delay_max);
    sb_prob(&sb, "reorder", spec->link.reorder_ppm);
    sb_prob(&sb, "stall", spec->stall_ppm);
    if (spec->stall_max)
        sb_put(&sb, "%sstall_max:%u", sb.n ? "," : "",
               (unsigned)spec->stall_max);
    for (i = 0; i < spec->nblackhole && i < NICSIM_SPEC_MAX_EVENTS; i++)
        sb_put(&sb, "%sblackhole:%d>%d@%llu", sb.n ? "," : "",
               (int)spec->blackhole[i].src, (int)spec->blackhole[i].dst,
               (unsigned long long)spec->blackhole[i].at);
    for (i = 0; i < spec->nkill && i < NICSIM_SPEC_MAX_EVENTS; i++)
        sb_put(&sb, "%skill:%d@%llu", sb.n ? "," : "",
               (int)spec->kill[i].rank, (unsigned long long)spec->kill[i].at);
    if (sb.n == 0)
        sb_put(&sb, "none");
    return sb.n;
}

void nicsim_fault_spec_to_config(const nicsim_fault_spec *spec,
                                 nicsim_config *cfg)
{
    cfg->faults = spec->link;
    cfg->stall_ppm = spec->stall_ppm;
    cfg->stall_max = spec->stall_max;
}

int nicsim_fault_spec_schedule(nicsim *sim, const nicsim_fault_spec *spec)
{
    uint32_t i;
    int rc;
    for (i = 0; i < spec->nblackhole && i < NICSIM_SPEC_MAX_EVENTS; i++) {
        rc = nicsim_blackhole_link(sim, spec->blackhole[i].src,
                                   spec->blackhole[i].dst,
                                   spec->blackhole[i].at);
        if (rc != 0)
            return rc;
    }
    for (i = 0; i < spec->nkill && i < NICSIM_SPEC_MAX_EVENTS; i++) {
        rc = nicsim_kill_rank(sim, spec->kill[i].rank, spec->kill[i].at);
        if (rc != 0)
            return rc;
    }
    return 0;
}
