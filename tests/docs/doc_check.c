/*
 * doc_check.c — every fenced block of the given Markdown files is checked,
 * as its directive (an HTML comment on the line before the fence) says:
 *
 *   <!-- doc: program NAME [rt N] -->  C: compiled and run as CTest test
 *                                      doc_NAME (tests/docs/CMakeLists.txt
 *                                      extracts it; under quayrun -n N)
 *   <!-- doc: excerpt PATH -->         every line, indentation aside, is a
 *                                      line of PATH, in order ("..." lines
 *                                      stand for lines left out)
 *   <!-- doc: run -->                  sh: each command runs from the
 *                                      repository root (./build/ is the
 *                                      build tree) and must succeed
 *   <!-- doc: paths -->                sh: commands not run here (they
 *                                      build, install or start jobs); each
 *                                      ./build/X names a file of the build
 *                                      tree, each examples/X (tests/, ...)
 *                                      one of the repository
 *   <!-- doc: shown REASON -->         sh: not run, for the reason given
 *
 * Blocks tagged `text` are diagrams and need none. Every relative link
 * outside the blocks must name a file of the repository. A code block without a
 * directive, or a fence without a language, fails the check: nothing in
 * the documentation goes unchecked by accident.
 *
 *   doc_check ROOT BUILD_DIR FILE.md...    exit 0 when every block passes
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_LINES 20000

static const char *root, *build;
static int failures;

typedef struct text {
    char *buf;
    char *line[MAX_LINES];
    int n;
} text;

static int load(text *t, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    t->buf = malloc((size_t)len + 1);
    if (t->buf == NULL || fread(t->buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        return -1;
    }
    fclose(f);
    t->buf[len] = '\0';
    t->n = 0;
    for (char *p = t->buf; *p != '\0' && t->n < MAX_LINES;) {
        t->line[t->n++] = p;
        char *nl = strchr(p, '\n');
        if (nl == NULL)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    return 0;
}

static void fail(const char *md, int line, const char *fmt, const char *arg)
{
    fprintf(stderr, "%s:%d: ", md, line);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    failures++;
}

/* s without leading and trailing blanks, in buf. */
static const char *trim(const char *s, char *buf, size_t cap)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= cap)
        n = cap - 1;
    memmove(buf, s, n); /* (s may lie inside buf) */
    buf[n] = '\0';
    return buf;
}

static void check_excerpt(const char *md, const text *t, int from, int to, const char *path)
{
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", root, path);
    text src;
    if (load(&src, full) != 0) {
        fail(md, from, "excerpt of a file that is not there: %s", path);
        return;
    }
    int at = 0;
    for (int i = from; i < to; i++) {
        char a[1024], b[1024];
        const char *want = trim(t->line[i], a, sizeof a);
        if (*want == '\0' || strcmp(want, "...") == 0)
            continue;
        while (at < src.n && strcmp(trim(src.line[at], b, sizeof b), want) != 0)
            at++;
        if (at == src.n) {
            fail(md, i + 1, "not in the excerpted file (in this order): %s", want);
            break;
        }
        at++;
    }
    free(src.buf);
}

/* A command line with ./build/ (or a leading build/) made the build tree. */
static void with_build(const char *cmd, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = cmd; *p != '\0' && o + 1 < cap;) {
        int lead = p == cmd || p[-1] == ' ';
        const char *rest = NULL;
        if (strncmp(p, "./build/", 8) == 0)
            rest = p + 8;
        else if (lead && strncmp(p, "build/", 6) == 0)
            rest = p + 6;
        if (rest != NULL) {
            o += (size_t)snprintf(out + o, cap - o, "%s/", build);
            p = rest;
        } else {
            out[o++] = *p++;
        }
    }
    out[o < cap ? o : cap - 1] = '\0';
}

static void check_run(const char *md, const text *t, int from, int to)
{
    for (int i = from; i < to; i++) {
        char a[1024], cmd[4096], sh[8192];
        const char *c = trim(t->line[i], a, sizeof a);
        if (*c == '\0' || *c == '#')
            continue;
        with_build(c, cmd, sizeof cmd);
        snprintf(sh, sizeof sh, "cd '%s' && %s > /dev/null", root, cmd);
        if (system(sh) != 0)
            fail(md, i + 1, "command failed: %s", cmd);
    }
}

static int exists(const char *dir, const char *rel)
{
    char p[8192];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, rel) >= (int)sizeof p)
        return 0; /* (a name that long is no file of ours) */
    return stat(p, &st) == 0;
}

static void check_paths(const char *md, const text *t, int from, int to)
{
    static const char *const repo_dirs[] = {"examples/", "tests/", "tools/", "fuzz/",
                                            "bench/",    "docs/",  "mpi/",   "adapters/"};
    for (int i = from; i < to; i++) {
        char a[1024];
        const char *c = trim(t->line[i], a, sizeof a);
        if (*c == '#')
            continue;
        char *save = NULL;
        for (char *w = strtok_r(a, " \t", &save); w != NULL; w = strtok_r(NULL, " \t", &save)) {
            if (*w == '#')
                break; /* a comment to the end of the line */
            if (strncmp(w, "./build/", 8) == 0 || strncmp(w, "build/", 6) == 0) {
                const char *rel = w + (w[0] == '.' ? 8 : 6);
                if (!exists(build, rel))
                    fail(md, i + 1, "no such file in the build tree: %s", w);
                continue;
            }
            for (size_t k = 0; k < sizeof repo_dirs / sizeof *repo_dirs; k++)
                if (strncmp(w, repo_dirs[k], strlen(repo_dirs[k])) == 0 && !exists(root, w))
                    fail(md, i + 1, "no such file in the repository: %s", w);
        }
    }
}

/* Every relative link of a line names a file of the repository (relative
 * to the Markdown file; anchors aside): none leads outside it. */
static void check_links(const char *md, int line, const char *s)
{
    for (const char *p = strstr(s, "]("); p != NULL; p = strstr(p + 2, "](")) {
        const char *t = p + 2, *end = strchr(t, ')');
        if (end == NULL)
            break;
        char target[1024];
        size_t n = (size_t)(end - t);
        if (n == 0 || n >= sizeof target)
            continue;
        memcpy(target, t, n);
        target[n] = '\0';
        char *hash = strchr(target, '#');
        if (hash != NULL)
            *hash = '\0';
        if (target[0] == '\0' || strstr(target, "://") != NULL || strncmp(target, "mailto:", 7) == 0)
            continue;
        char dir[2048], rel[4096];
        snprintf(dir, sizeof dir, "%s", md);
        char *slash = strrchr(dir, '/');
        if (slash != NULL)
            slash[1] = '\0';
        else
            dir[0] = '\0';
        snprintf(rel, sizeof rel, "%s%s", dir, target);
        if (strncmp(target, "../", 3) == 0 && strchr(md, '/') == NULL)
            fail(md, line, "a link out of the repository: %s", target);
        else if (!exists(root, rel))
            fail(md, line, "a link to nothing: %s", target);
    }
}

static void check_file(const char *md)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, md);
    text t;
    if (load(&t, path) != 0) {
        fail(md, 0, "cannot read %s", path);
        return;
    }
    for (int i = 0; i < t.n; i++) {
        if (strncmp(t.line[i], "```", 3) != 0) {
            check_links(md, i + 1, t.line[i]);
            continue;
        }
        const char *lang = t.line[i] + 3;
        int end = i + 1;
        while (end < t.n && strncmp(t.line[end], "```", 3) != 0)
            end++;
        if (end == t.n) {
            fail(md, i + 1, "a fence that never closes%s", "");
            break;
        }
        char d[1024] = "";
        if (i > 0 && strncmp(t.line[i - 1], "<!-- doc: ", 10) == 0) {
            trim(t.line[i - 1] + 10, d, sizeof d);
            size_t n = strlen(d);
            if (n >= 3 && strcmp(d + n - 3, "-->") == 0) {
                d[n - 3] = '\0'; /* (cut "-->", then the blank before it) */
                trim(d, d, sizeof d);
            }
        }
        if (*lang == '\0') {
            fail(md, i + 1, "a fence without a language (text for a diagram)%s", "");
        } else if (strcmp(lang, "text") == 0) {
            /* a diagram */
        } else if (strncmp(d, "excerpt ", 8) == 0) {
            check_excerpt(md, &t, i + 1, end, d + 8);
        } else if (strcmp(lang, "c") == 0 && strncmp(d, "program ", 8) == 0) {
            /* compiled and run by its own test (tests/docs/CMakeLists.txt) */
        } else if (strcmp(lang, "sh") == 0 && strcmp(d, "run") == 0) {
            check_run(md, &t, i + 1, end);
        } else if (strcmp(lang, "sh") == 0 && strcmp(d, "paths") == 0) {
            check_paths(md, &t, i + 1, end);
        } else if (strcmp(lang, "sh") == 0 && strncmp(d, "shown ", 6) == 0 && d[6] != '\0') {
            check_paths(md, &t, i + 1, end);
        } else {
            fail(md, i + 1, "a %s block without a directive it can have", lang);
        }
        i = end;
    }
    free(t.buf);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: doc_check ROOT BUILD_DIR FILE.md...\n");
        return 2;
    }
    root = argv[1];
    build = argv[2];
    for (int i = 3; i < argc; i++)
        check_file(argv[i]);
    if (failures != 0)
        fprintf(stderr, "doc_check: %d problem(s)\n", failures);
    return failures != 0;
}
