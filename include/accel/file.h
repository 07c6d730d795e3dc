/* Whole files into memory: the small text files the tools and loaders read at once (configuration,
 * tokenizer and chat-template files, prompts). */
#ifndef ACCEL_FILE_H
#define ACCEL_FILE_H

#include <stddef.h>

/* The bytes of `path` in a malloc'd buffer with a NUL after them (*len: their count, the NUL not
 * counted; len may be NULL). NULL with errno set when the file cannot be opened or read, or
 * memory runs out. */
char *accel_file_read(const char *path, size_t *len);

#endif
