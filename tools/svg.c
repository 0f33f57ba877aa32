/* svg.c — see svg.h. */
#include "svg.h"

#include <math.h>
#include <stdio.h>

/* Canvas and plot area (px); the legend sits right of the plot. */
enum { WIDTH = 800, HEIGHT = 480, PLOT_L = 80, PLOT_T = 50, PLOT_R = 580, PLOT_B = 420 };

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#17becf", "#8c564b", "#7f7f7f"};
enum { NPALETTE = sizeof palette / sizeof palette[0] };

/* One axis in transformed units: log2 / log10 of the data on log axes. */
typedef struct axis {
    enum svg_scale scale;
    double lo, hi, step; /* step: linear ticks only */
} axis;

static int usable(const axis *a, double v)
{
    return isfinite(v) && (a->scale == SVG_LINEAR || v > 0);
}

static double transform(const axis *a, double v)
{
    switch (a->scale) {
    case SVG_LOG2:
        return log2(v);
    case SVG_LOG10:
        return log10(v);
    default:
        return v;
    }
}

/* 1, 2 or 5 times a power of ten, about span / 5. */
static double nice_step(double span)
{
    double raw = span / 5, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* Fit the axis to the usable values of every series (x or y). */
static void axis_fit(axis *a, const svg_chart *c, int want_y)
{
    double mn = INFINITY, mx = -INFINITY;
    for (size_t s = 0; s < c->nseries; s++)
        for (size_t i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            axis other = {want_y ? c->xscale : c->yscale, 0, 0, 0};
            double v = want_y ? y : x, w = want_y ? x : y;
            if (!usable(a, v) || !usable(&other, w))
                continue;
            v = transform(a, v);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
    if (mn > mx) { /* nothing to draw */
        mn = 0;
        mx = 1;
    }
    if (a->scale == SVG_LINEAR) {
        double lo = mn >= 0 ? 0 : mn;
        a->step = nice_step(mx > lo ? mx - lo : 1);
        a->lo = floor(lo / a->step) * a->step;
        a->hi = ceil(mx / a->step) * a->step;
        if (a->hi <= a->lo)
            a->hi = a->lo + a->step;
    } else {
        a->lo = floor(mn);
        a->hi = ceil(mx);
        if (a->hi <= a->lo)
            a->hi = a->lo + 1;
    }
}

/* A data value's position between 0 and 1 along the axis. */
static double axis_frac(const axis *a, double v)
{
    return (transform(a, v) - a->lo) / (a->hi - a->lo);
}

static double px_x(const axis *a, double v) { return PLOT_L + axis_frac(a, v) * (PLOT_R - PLOT_L); }
static double px_y(const axis *a, double v) { return PLOT_B - axis_frac(a, v) * (PLOT_B - PLOT_T); }

static void put_text(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* One tick: grid line, tick mark and (if label) its label. */
static void tick(FILE *f, int on_x, double pos, const char *label)
{
    const char *grid = label != NULL ? "#dddddd" : "#f0f0f0";
    if (on_x) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/>\n", pos,
                PLOT_T, pos, PLOT_B, grid);
        if (label == NULL)
            return;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"black\"/>\n",
                pos, PLOT_B, pos, PLOT_B + 5);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", pos, PLOT_B + 19);
    } else {
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n", PLOT_L,
                pos, PLOT_R, pos, grid);
        if (label == NULL)
            return;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n",
                PLOT_L - 5, pos, PLOT_L, pos);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", PLOT_L - 8, pos + 4);
    }
    put_text(f, label);
    fputs("</text>\n", f);
}

static void axis_ticks(FILE *f, const axis *a, int on_x)
{
    char label[32];
    if (a->scale == SVG_LINEAR) {
        long n = lround((a->hi - a->lo) / a->step);
        for (long k = 0; k <= n; k++) {
            double v = a->lo + (double)k * a->step;
            if (fabs(v) < a->step * 1e-9)
                v = 0; /* no "-0" or "1e-17" */
            snprintf(label, sizeof label, "%.6g", v);
            tick(f, on_x, on_x ? px_x(a, v) : px_y(a, v), label);
        }
        return;
    }
    double base = a->scale == SVG_LOG2 ? 2 : 10;
    long lo = lround(a->lo), hi = lround(a->hi);
    /* At most ~12 labels on a log2 axis: label every other power beyond. */
    long every = a->scale == SVG_LOG2 && hi - lo > 12 ? 2 : 1;
    for (long k = lo; k <= hi; k++) {
        double v = pow(base, (double)k);
        snprintf(label, sizeof label, "%.6g", v);
        tick(f, on_x, on_x ? px_x(a, v) : px_y(a, v), (k - lo) % every == 0 ? label : NULL);
        for (int m = 2; a->scale == SVG_LOG10 && k < hi && m <= 9; m++)
            tick(f, on_x, on_x ? px_x(a, v * m) : px_y(a, v * m), NULL);
    }
}

/* Marker shape by series index, so series sharing a colour stay apart. */
static void marker(FILE *f, size_t shape, double x, double y, const char *color)
{
    switch (shape % 4) {
    case 0:
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x, y, color);
        break;
    case 1:
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"%s\"/>\n",
                x - 3.5, y - 3.5, color);
        break;
    case 2:
        fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>\n", x, y - 4.5,
                x + 4, y + 3, x - 4, y + 3, color);
        break;
    default:
        fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\"/>\n", x,
                y - 4.5, x + 4.5, y, x, y + 4.5, x - 4.5, y, color);
        break;
    }
}

static void series_draw(FILE *f, const axis *ax, const axis *ay, const svg_series *s,
                        size_t index)
{
    const char *color = palette[(size_t)s->color % NPALETTE];
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s points=\"", color,
            s->dashed ? " stroke-dasharray=\"6,4\"" : "");
    for (size_t i = 0; i < s->n; i++)
        if (usable(ax, s->x[i]) && usable(ay, s->y[i]))
            fprintf(f, "%.1f,%.1f ", px_x(ax, s->x[i]), px_y(ay, s->y[i]));
    fputs("\"/>\n", f);
    for (size_t i = 0; i < s->n; i++)
        if (usable(ax, s->x[i]) && usable(ay, s->y[i]))
            marker(f, index, px_x(ax, s->x[i]), px_y(ay, s->y[i]), color);
}

static void legend(FILE *f, const svg_chart *c)
{
    for (size_t s = 0; s < c->nseries; s++) {
        const svg_series *se = &c->series[s];
        const char *color = palette[(size_t)se->color % NPALETTE];
        double y = PLOT_T + 10 + 22.0 * (double)s;
        fprintf(f,
                "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"1.8\"%s/>\n",
                PLOT_R + 20, y, PLOT_R + 50, y, color,
                se->dashed ? " stroke-dasharray=\"6,4\"" : "");
        marker(f, s, PLOT_R + 35, y, color);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\">", PLOT_R + 58, y + 4);
        put_text(f, se->name);
        fputs("</text>\n", f);
    }
}

int svg_write(const char *path, const svg_chart *c)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    axis ax = {c->xscale, 0, 0, 0}, ay = {c->yscale, 0, 0, 0};
    axis_fit(&ax, c, 0);
    axis_fit(&ay, c, 1);

    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            WIDTH, HEIGHT, WIDTH, HEIGHT);
    fprintf(f, "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"15\" "
               "font-weight=\"bold\">", (PLOT_L + PLOT_R) / 2);
    put_text(f, c->title);
    fputs("</text>\n", f);

    axis_ticks(f, &ax, 1);
    axis_ticks(f, &ay, 0);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
               "stroke=\"black\"/>\n", PLOT_L, PLOT_T, PLOT_R - PLOT_L, PLOT_B - PLOT_T);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (PLOT_L + PLOT_R) / 2,
            PLOT_B + 42);
    put_text(f, c->xlabel);
    fputs("</text>\n", f);
    fprintf(f, "<text x=\"22\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 22 %d)\">",
            (PLOT_T + PLOT_B) / 2, (PLOT_T + PLOT_B) / 2);
    put_text(f, c->ylabel);
    fputs("</text>\n", f);

    for (size_t s = 0; s < c->nseries; s++)
        series_draw(f, &ax, &ay, &c->series[s], s);
    legend(f, c);
    fputs("</svg>\n", f);

    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return -1;
    return 0;
}
