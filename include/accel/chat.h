/* Chat templates: the Jinja template a Hugging Face tokenizer carries (chat_template.jinja, or the
 * "chat_template" of tokenizer_config.json), rendered to the bytes transformers'
 * apply_chat_template(..., tokenize=False) gives, and the text of a conversation for training with
 * the bytes that are trained. The interpreter implements the Jinja subset chat templates use
 * (docs/chat.md); a template using more is refused when it is read, naming the line.
 *
 * A conversation is a JSON array of messages, {"role": ..., "content": ..., ...} as transformers
 * takes them (tool_calls, reasoning_content and other keys are passed to the template; keys
 * holding null are dropped, as transformers drops them). */
#ifndef ACCEL_CHAT_H
#define ACCEL_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/status.h"

typedef struct accel_chat_template accel_chat_template_t;
struct json_t;                                  /* jansson */

/* Read a template: `path` is a tokenizer directory (its chat_template.jinja, else the
 * "chat_template" of its tokenizer_config.json: a string, or a list of {"name", "template"} of
 * which "default" is taken), a tokenizer_config.json, or a template file. The special tokens
 * (bos_token, eos_token, unk_token, pad_token, ...: strings or {"content": ...}) come from the
 * tokenizer_config.json of the directory, or beside the file, when there is one.
 * ACCEL_ERR_NOT_FOUND when the directory or file has no template. */
accel_status_t accel_chat_template_load(const char *path, accel_chat_template_t **out, char *err,
                                        size_t errlen);
/* From the template's text; `origin` names it in messages. */
accel_status_t accel_chat_template_parse(const char *source, size_t len, const char *origin,
                                         accel_chat_template_t **out, char *err, size_t errlen);
void accel_chat_template_free(accel_chat_template_t *t);
/* Where the template came from ("DIR/chat_template.jinja", ...). */
const char *accel_chat_template_origin(const accel_chat_template_t *t);
/* The template's text. */
const char *accel_chat_template_source(const accel_chat_template_t *t, size_t *len);
/* The template marks the assistant's text with {% generation %} blocks. */
bool accel_chat_template_has_generation(const accel_chat_template_t *t);
/* The template has the variable (a special token such as "bos_token", or an option). */
bool accel_chat_template_has_var(const accel_chat_template_t *t, const char *name);
/* Set a variable every render sees: "NAME=VALUE", VALUE being JSON (enable_thinking=false,
 * date_string="26 Jul 2024") or else a plain string (bos_token=<s>). */
accel_status_t accel_chat_template_set(accel_chat_template_t *t, const char *assignment, char *err,
                                       size_t errlen);
/* A string variable's value (a special token such as "eos_token"), or NULL. */
const char *accel_chat_template_var_string(const accel_chat_template_t *t, const char *name);
/* bos_token and eos_token from the tokenizer (the text of its BOS and EOS tokens) where
 * tokenizer_config.json gave none. */
struct accel_tokenizer;
void accel_chat_template_use_tokenizer(accel_chat_template_t *t, const struct accel_tokenizer *tok);
/* Set a string variable (value[0..len), UTF-8), e.g. a special token the tokenizer knows. */
accel_status_t accel_chat_template_set_string(accel_chat_template_t *t, const char *name, const char *value,
                                              size_t len);

/* Render a conversation (`messages`, an array of messages; `tools` an array or NULL) to malloc'd
 * text, as apply_chat_template(messages, tools=tools, add_generation_prompt=...,
 * tokenize=False). */
accel_status_t accel_chat_render(const accel_chat_template_t *t, const struct json_t *messages,
                                 const struct json_t *tools, bool add_generation_prompt, char **text,
                                 size_t *text_len, char *err, size_t errlen);

/* The token that ends an assistant's turn in this template: the first special token the template
 * writes after an assistant message's content (<|im_end|>, <|eot_id|>, <end_of_turn>, </s>, ...),
 * found by rendering a probe conversation; -1 when there is none. */
int accel_chat_template_end_of_turn(const accel_chat_template_t *t, struct accel_tokenizer *tok);

/* ------------------------------------------------------------------ training text */

typedef struct {
    size_t start, end;                          /* bytes [start, end) */
} accel_chat_span_t;

/* A conversation as trained on: the whole rendering, and the byte spans whose tokens are trained. */
typedef struct {
    char *text;
    size_t len;
    accel_chat_span_t *trained;
    int ntrained;
    int by_end_of_turn;                         /* assistant messages spanned by the end-of-turn rule */
} accel_chat_text_t;

typedef enum {
    ACCEL_CHAT_TRAIN_ASSISTANT = 0,             /* the assistant's messages (or the completion) */
    ACCEL_CHAT_TRAIN_ALL,                       /* every token of the rendering */
} accel_chat_train_t;

/* The training text of a conversation (`messages`: a JSON array). With `completion` (an array,
 * TRL's conversational prompt-completion) `messages` is the prompt: the text is
 * render(prompt + completion) and what follows render(prompt, add_generation_prompt) is trained.
 * Otherwise the assistant messages are trained: the template's {% generation %} blocks when it has
 * them, else for each assistant message i what render(messages[:i+1]) adds to
 * render(messages[:i], add_generation_prompt), which must be a prefix of it and of the whole
 * rendering. A template that renders a message differently once later ones follow (Qwen3 keeps
 * an empty think block on the last turn only) gets the end-of-turn rule for that message: from
 * the generation prompt's end to the end of the first end-of-turn text after it in the whole
 * rendering (what the template writes after an assistant message's content, "<|im_end|>\n");
 * a template with neither is refused, naming the message. `tools` (may be NULL) is passed to the
 * template. */
accel_status_t accel_chat_training_text(const accel_chat_template_t *t, const struct json_t *messages,
                                        const struct json_t *completion, const struct json_t *tools,
                                        accel_chat_train_t what, accel_chat_text_t *out, char *err,
                                        size_t errlen);
void accel_chat_text_free(accel_chat_text_t *ct);

#endif
