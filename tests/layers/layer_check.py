#!/usr/bin/env python3
"""Check the library's layers from its built objects (nm), not its includes.

    layer_check.py OBJECT...

Each object is named by its source (.../src/FOLDER/FILE.c.o). A direct call
(an undefined symbol of one object that another defines) from one folder
of src/ into another must be allowed below; a call through a table of
function pointers (link.h, coll_port.h) is no symbol reference, which is
the point. A file directly in src/ (quay.c, the composition root; context.c
and snapshot.c, above engine and link) may call any folder. Exits 1 and names every call that breaks a rule, and any group of
files in more than one folder that call each other in a circle.
"""
import collections
import subprocess
import sys

# Who may call whom (docs/architecture.md): everything rests on engine.
ALLOWED = {
    ('collectives', 'engine'),
    ('flowctl', 'engine'),
}


def unit(path):
    """'.../src/engine/match.c.o' -> 'engine/match.c'."""
    rel = path.replace('\\', '/').rsplit('/src/', 1)[-1]
    return rel[:-2] if rel.endswith('.o') else rel


def folder(u):
    return u.split('/')[0] if '/' in u else ''


def symbols(path, flags):
    out = subprocess.run(['nm', *flags, path], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def circles(graph):
    """Strongly connected components with more than one member (iterative Tarjan)."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def main(objects):
    if not objects:
        print(__doc__)
        return 2
    defined, wanted = {}, {}
    for obj in objects:
        u = unit(obj)
        for s in symbols(obj, ['--defined-only', '-g']):
            defined[s] = u
        wanted[u] = symbols(obj, ['-u'])
    graph = collections.defaultdict(set)
    bad = []
    for u, syms in sorted(wanted.items()):
        for s in sorted(syms):
            d = defined.get(s)
            if d is None or d == u:
                continue
            graph[u].add(d)
            fu, fd = folder(u), folder(d)
            if fu != fd and fu != '' and (fu, fd) not in ALLOWED:
                bad.append(f'{u} calls {s} ({d}): {fu} -> {fd} is not allowed')
    for comp in circles(graph):
        if len({folder(u) for u in comp}) > 1:
            bad.append('a circle across folders: ' + ' '.join(comp))
    edges = collections.Counter((folder(u), folder(d)) for u in graph for d in graph[u]
                                if folder(u) != folder(d))
    for (a, b), n in sorted(edges.items()):
        print(f'{a or "(root)"} -> {b}: {n} file pair(s)')
    for line in bad:
        print('FAIL', line)
    print(f'{len(objects)} objects, {len(bad)} problem(s)')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
