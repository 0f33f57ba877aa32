/*
 * list.h — intrusive circular doubly-linked lists with a sentinel.
 * A node lives inside its owner and is recovered with QUAY_CONTAINER_OF;
 * insertion and removal are O(1) and never allocate.
 */
#ifndef QUAY_ENGINE_LIST_H
#define QUAY_ENGINE_LIST_H

#include <stddef.h>

typedef struct qlink {
    struct qlink *next;
    struct qlink *prev;
} qlink;

#define QUAY_CONTAINER_OF(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline void ql_init(qlink *h) { h->next = h->prev = h; }

static inline int ql_empty(const qlink *h) { return h->next == h; }

/** A node not on any list points to itself (after ql_init or removal). */
static inline int ql_linked(const qlink *n) { return n->next != n; }

static inline void ql_insert_before(qlink *pos, qlink *n)
{
    n->prev = pos->prev;
    n->next = pos;
    pos->prev->next = n;
    pos->prev = n;
}

static inline void ql_push_tail(qlink *h, qlink *n) { ql_insert_before(h, n); }

static inline void ql_remove(qlink *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = n;
}

/** Remove n and leave its links as they are: for a node about to be
 *  freed or pushed onto another list (cheaper than ql_remove). */
static inline void ql_unlink(qlink *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

/** Move every node of list `from` to the tail of list h, in order. */
static inline void ql_splice_tail(qlink *h, qlink *from)
{
    if (from->next == from)
        return;
    qlink *first = from->next, *last = from->prev;
    first->prev = h->prev;
    h->prev->next = first;
    last->next = h;
    h->prev = last;
    from->next = from->prev = from;
}

/** First node or NULL. */
static inline qlink *ql_first(const qlink *h)
{
    return h->next == h ? NULL : h->next;
}

/** Node after n on list h, or NULL at the end. */
static inline qlink *ql_next(const qlink *h, const qlink *n)
{
    return n->next == h ? NULL : n->next;
}

#endif /* QUAY_ENGINE_LIST_H */
