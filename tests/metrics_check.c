/* Reads an accel_train metrics file (JSON lines, docs/metrics.md) with a real JSON parser and
 * checks every row: an object with an integer "step" >= 0 and a "kind" of train, eval or summary
 * holding its keys. Prints one line per row, "KIND STEP VALUE" (VALUE: the loss, the eval loss, or
 * the steps of the run), for the shell tests to compare. Exit 1 on the first bad row. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static int bad(const char *path, int line, const char *why)
{
    fprintf(stderr, "%s:%d: %s\n", path, line, why);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: metrics_check FILE.jsonl\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) return bad(argv[1], 0, "cannot open");
    char buf[8192];
    int n = 0, rc = 0;
    while (!rc && fgets(buf, sizeof buf, f)) {
        n++;
        if (!strchr(buf, '\n')) { rc = bad(argv[1], n, "row without a newline (or too long)"); break; }
        json_error_t err;
        json_t *row = json_loads(buf, 0, &err);
        if (!json_is_object(row)) {
            rc = bad(argv[1], n, row ? "not an object" : err.text);
        } else {
            json_t *step = json_object_get(row, "step");
            const char *kind = json_string_value(json_object_get(row, "kind"));
            const char *key = !kind ? NULL : !strcmp(kind, "train") ? "loss" : !strcmp(kind, "eval") ? "eval_loss"
                            : !strcmp(kind, "summary") ? "steps_this_run" : NULL;
            json_t *value = key ? json_object_get(row, key) : NULL;
            if (!json_is_integer(step) || json_integer_value(step) < 0)
                rc = bad(argv[1], n, "no integer \"step\" >= 0");
            else if (!key)
                rc = bad(argv[1], n, "\"kind\" is not train, eval or summary");
            else if (!json_is_number(value))
                rc = bad(argv[1], n, "the row lacks its numeric value key");
            else if (!strcmp(kind, "eval") && !json_is_integer(json_object_get(row, "eval_samples")))
                rc = bad(argv[1], n, "eval row without \"eval_samples\"");
            else
                printf("%s %lld %.9g\n", kind, (long long)json_integer_value(step), json_number_value(value));
        }
        json_decref(row);
    }
    fclose(f);
    return rc;
}
