/*
 * sim_model.h — nicsim model parameters from the command line:
 * `--set key=value` over a loaded model, and the one-line summary the
 * tables start with. Keys are those of nicsim_model_load (timed.h).
 */
#ifndef QUAY_TOOLS_SIM_MODEL_H
#define QUAY_TOOLS_SIM_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "timed.h"

/** Apply one "key=value" (value a decimal integer) to *m. 0; -1 (no
 *  "=", or a bad value) or -2 (unknown key), with a message in err. */
int sim_model_set(nicsim_model *m, const char *assignment, char *err, size_t errlen);

/** Write the key names sim_model_set accepts, space separated. */
void sim_model_list_keys(FILE *out);

/** Print "# model: ..." (every parameter) and a newline. */
void sim_model_print(FILE *out, const nicsim_model *m);

#endif /* QUAY_TOOLS_SIM_MODEL_H */
