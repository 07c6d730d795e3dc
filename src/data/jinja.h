/* A Jinja interpreter for chat templates, private to libaccel (the public API is
 * include/accel/chat.h). It implements the subset of Jinja2 3.1 that Hugging Face chat templates
 * use, in the environment transformers renders them in (trim_blocks, lstrip_blocks, the
 * loopcontrols extension, the `generation` tag, tojson as json.dumps, raise_exception,
 * strftime_now, namespace, dict): docs/chat.md lists what is supported. Values print as Python's
 * str() prints them, so a template renders to the same bytes as in transformers.
 *
 * Templates are untrusted code: rendering has no file or system access, and is bounded in
 * recursion depth, output size and range() length. */
#ifndef ACCEL_DATA_JINJA_H
#define ACCEL_DATA_JINJA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "accel/status.h"

typedef struct jinja_template jinja_template_t;

/* A byte range of the output, [start, end). */
typedef struct {
    size_t start, end;
} jinja_span_t;

/* The output of one render: text (malloc'd, NUL-terminated, len bytes) and the spans the
 * `{% generation %}` blocks wrote (in order; malloc'd, may be NULL when nspans is 0). */
typedef struct {
    char *text;
    size_t len;
    jinja_span_t *spans;
    int nspans;
} jinja_output_t;

/* Parse src[0..len). A syntax error or an unsupported construct is ACCEL_ERR_INVALID with err
 * naming the line. */
accel_status_t jinja_parse(const char *src, size_t len, jinja_template_t **out, char *err,
                           size_t errlen);
void jinja_free(jinja_template_t *t);
/* The template has a `{% generation %}` block. */
bool jinja_has_generation(const jinja_template_t *t);

/* Render with the members of the JSON object `vars` as variables. An error in the template
 * (a raise_exception call, an undefined value used, a type error) is ACCEL_ERR_INVALID with err
 * saying what and where; out is then empty. */
accel_status_t jinja_render(const jinja_template_t *t, const json_t *vars, jinja_output_t *out,
                            char *err, size_t errlen);
void jinja_output_free(jinja_output_t *out);

#endif
