/* What kind of JSON value a jansson value is, in words for error messages ("an object", "a
 * string", ...): the readers of JSON in the data layer (tokenizer.json, JSON Lines) share it. */
#ifndef ACCEL_DATA_JSON_TYPE_H
#define ACCEL_DATA_JSON_TYPE_H

#include <jansson.h>

static inline const char *accel_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

#endif
