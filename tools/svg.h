/*
 * svg.h — a small line-chart writer: one chart per SVG file, axes with
 * ticks, labels and a light grid, linear / log2 / log10 scales, a legend,
 * and one polyline with markers per series. Self-contained (no fonts or
 * scripts referenced); any browser or xmllint reads the output.
 */
#ifndef QUAY_TOOLS_SVG_H
#define QUAY_TOOLS_SVG_H

#include <stddef.h>

enum svg_scale {
    SVG_LINEAR,
    SVG_LOG2,  /**< ticks at powers of two (rank counts) */
    SVG_LOG10  /**< ticks at powers of ten, minor ticks between */
};

typedef struct svg_series {
    const char *name;      /**< legend text */
    const double *x, *y;   /**< n points; on a log axis, points <= 0 are left out */
    size_t n;
    int color;             /**< index into the palette; series may share one */
    int dashed;
} svg_series;

typedef struct svg_chart {
    const char *title, *xlabel, *ylabel;
    enum svg_scale xscale, yscale;
    const svg_series *series;
    size_t nseries;
} svg_chart;

/** Write the chart to path (replaced). 0, or -1 with errno set. */
int svg_write(const char *path, const svg_chart *c);

#endif /* QUAY_TOOLS_SVG_H */
