/*
 * model.c — the timed mode's cost model (model.h): defaults, the keys,
 * and "key = value" files.
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nicsim_model_default(nicsim_model *m)
{
    memset(m, 0, sizeof *m);
    m->host_send_ns = 1000;
    m->host_send_ps = 50;
    m->host_recv_ns = 1000;
    m->host_recv_ps = 50;
    m->host_call_ns = 200;
    m->host_post_ns = 500;
    m->host_notify_ns = 500;
    m->host_signal_ns = 3000;
    m->bus_ns = 500;
    m->bus_ps = 40;
    m->nic_ns = 500;
    m->agent_step_ns = 200;
    m->wire_ns = 300;
    m->wire_ps = 80;
    m->nic_buffers = 0;
}

/* The model's keys: the uint64_t fields, then two 32-bit ones. */
static const struct model_key {
    const char *name;
    size_t off;
} model_keys[] = {
#define K(f) {#f, offsetof(nicsim_model, f)}
    K(host_send_ns), K(host_send_ps), K(host_recv_ns), K(host_recv_ps), K(host_call_ns),
    K(host_post_ns), K(host_notify_ns), K(host_signal_ns),
    K(bus_ns),       K(bus_ps),       K(nic_ns),       K(agent_step_ns), K(wire_ns),
    K(wire_ps),      K(nic_buffers),  K(atomic_host),
#undef K
};
#define MODEL_NKEYS (sizeof model_keys / sizeof model_keys[0])

const char *nicsim_model_key(size_t i) { return i < MODEL_NKEYS ? model_keys[i].name : NULL; }

int nicsim_model_set(nicsim_model *m, const char *key, uint64_t v)
{
    for (size_t i = 0; i < MODEL_NKEYS; i++) {
        if (strcmp(key, model_keys[i].name) != 0)
            continue;
        if (strcmp(key, "atomic_host") == 0) {
            m->atomic_host = (uint32_t)(v != 0); /* a flag */
        } else if (strcmp(key, "nic_buffers") == 0) {
            if (v > UINT32_MAX)
                return -1;
            m->nic_buffers = (uint32_t)v;
        } else {
            memcpy((char *)m + model_keys[i].off, &v, sizeof v);
        }
        return 0;
    }
    return -1;
}

int nicsim_model_load(const char *path, nicsim_model *m, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    char line[256];
    int lineno = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        char *h = strchr(line, '#');
        if (h != NULL)
            *h = '\0';
        char key[64];
        unsigned long long v;
        char extra;
        if (sscanf(line, " %63[a-z_] = %llu %c", key, &v, &extra) != 2) {
            if (sscanf(line, " %c", &extra) != 1)
                continue; /* blank */
            snprintf(err, errlen, "%s:%d: expected key = number", path, lineno);
            fclose(f);
            return -1;
        }
        int found = nicsim_model_set(m, key, v) == 0;
        if (!found) {
            snprintf(err, errlen, "%s:%d: unknown key %s", path, lineno, key);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}
