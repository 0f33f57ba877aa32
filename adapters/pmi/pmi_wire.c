/*
 * pmi_wire.c — PMI-1 "simple" wire text (pmi_wire.h): splitting an answer
 * line into its fields and checking what a key or a value may hold.
 */
#include "pmi_wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int keychar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.';
}

int qpmi_wire_split(char *line, size_t len, qpmi_answer *m, char *err, size_t errlen)
{
    char *s = line;
    m->cmd = NULL;
    m->n = 0;
    if (memchr(s, '\0', len) != NULL)
        return refuse(err, errlen, "NUL byte in an answer");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return refuse(err, errlen, "control character 0x%02x in an answer", c);
    }
    if (strncmp(s, "cmd=", 4) != 0)
        return refuse(err, errlen, "answer does not start with cmd=: \"%.60s\"", s);

    char *c = s;
    for (;;) {
        while (*c == ' ')
            c++;
        if (*c == '\0')
            break;
        char *key = c;
        while (keychar((unsigned char)*c))
            c++;
        if (c == key || (*c != '=' && *c != ' ' && *c != '\0'))
            return refuse(err, errlen, "bad key in an answer: \"%.60s\"", key);
        char *val = NULL;
        if (*c == '=') {
            *c++ = '\0';
            val = c;
            char *w = c;
            while (*c != ' ' && *c != '\0') {
                if (*c == '\\' && c[1] != '\0')
                    c++; /* escaped byte, a space included */
                *w++ = *c++;
            }
            char end = *c;
            *w = '\0'; /* may overwrite the space that ends it */
            if (end != '\0')
                c++;
        } else if (*c == ' ') {
            *c++ = '\0';
        }
        if (strcmp(key, "cmd") == 0 && m->cmd == NULL) {
            if (val == NULL || *val == '\0')
                return refuse(err, errlen, "empty cmd= in an answer");
            m->cmd = val;
            continue;
        }
        if (m->n == QPMI_WIRE_MAX_FIELDS)
            return refuse(err, errlen, "more than %d fields in an answer",
                          QPMI_WIRE_MAX_FIELDS);
        m->f[m->n].key = key;
        m->f[m->n].val = val;
        m->n++;
    }
    if (m->cmd == NULL)
        return refuse(err, errlen, "no cmd in an answer");
    return 0;
}

const char *qpmi_wire_find(const qpmi_answer *m, const char *key)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->f[i].key, key) == 0)
            return m->f[i].val;
    return NULL;
}

int qpmi_wire_has(const qpmi_answer *m, const char *key)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->f[i].key, key) == 0)
            return 1;
    return 0;
}

int qpmi_wire_int(const char *s, long min, long max, int *out)
{
    if (s == NULL || *s == '\0')
        return -1;
    const char *d = (*s == '-') ? s + 1 : s;
    if (*d < '0' || *d > '9')
        return -1;
    for (const char *c = d; *c; c++)
        if (*c < '0' || *c > '9')
            return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

int qpmi_wire_key_ok(const char *k, size_t max)
{
    size_t n = 0;
    for (; k[n]; n++) {
        unsigned char c = (unsigned char)k[n];
        if (c <= 0x20 || c >= 0x7f || c == '=' || c == '\\' || n >= max)
            return 0;
    }
    return n > 0;
}

int qpmi_wire_val_byte_ok(unsigned char c)
{
    return c > 0x20 && c != 0x7f && c != '\\';
}

int qpmi_wire_val_ok(const char *v, size_t max)
{
    size_t n = 0;
    for (; v[n]; n++)
        if (!qpmi_wire_val_byte_ok((unsigned char)v[n]) || n >= max)
            return 0;
    return n > 0;
}
