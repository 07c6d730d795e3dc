/* Unit tests of chat templates (src/data/jinja.c, src/data/chat.c) against transformers: every
 * fixture template (tests/fixtures/chat/templates, written for these tests in the styles of the
 * model families, plus features.jinja which uses every supported construct) rendered over every
 * conversation of cases.json, with and without the generation prompt, must give the bytes
 * transformers' render_jinja_template gave (expected.json), or an error carrying its message; the
 * {% generation %} spans must be transformers' too. Then loading from tokenizer directories,
 * training-text spans, refusals naming the line, bounds on untrusted templates, and mutated
 * templates that must fail cleanly. Fixtures: tests/make_chat_fixtures.sh; the runner
 * (tests/chat_unit.sh) sets ACCEL_CHAT_DIR. */
#include "build_config.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/accel.h"
#include "accel/file.h"
#include "accel/chat.h"

static const char *dir(void)
{
    const char *d = getenv("ACCEL_CHAT_DIR");
    return d ? d : "tests/fixtures/chat";
}

static json_t *load_json(const char *name)
{
    char path[1024];
    json_error_t je;
    snprintf(path, sizeof path, "%s/%s", dir(), name);
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* A fixture template with the special tokens the reference rendered with, and a case's kwargs. */
static accel_chat_template_t *fixture_template(const char *name, const json_t *kwargs)
{
    char path[1024], err[2048] = "";
    size_t len;
    snprintf(path, sizeof path, "%s/templates/%s.jinja", dir(), name);
    char *src = accel_file_read(path, &len);
    ck_assert_msg(src != NULL, "cannot read %s", path);
    accel_chat_template_t *t = NULL;
    accel_status_t st = accel_chat_template_parse(src, len, path, &t, err, sizeof err);
    free(src);
    ck_assert_msg(st == ACCEL_OK, "%s: %s", path, err);
    static const char *const special[][2] = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"},
                                             {"pad_token", "<pad>"}};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(accel_chat_template_set_string(t, special[i][0], special[i][1], strlen(special[i][1])), ACCEL_OK);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)kwargs, key, v) {
        char *val = json_dumps(v, JSON_ENCODE_ANY), set[4096];
        snprintf(set, sizeof set, "%s=%s", key, val);
        free(val);
        ck_assert_int_eq(accel_chat_template_set(t, set, err, sizeof err), ACCEL_OK);
    }
    return t;
}

static const json_t *find_case(const json_t *cases, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
        if (!strcmp(json_string_value(json_object_get(c, "name")), name)) return c;
    ck_abort_msg("no case %s", name);
    return NULL;
}

/* Every template x case x generation prompt: the same bytes as transformers, or its error. */
START_TEST(test_reference)
{
    json_t *expected = load_json("expected.json"), *cases = load_json("cases.json");
    size_t i, same = 0, errors = 0;
    json_t *e;
    json_array_foreach(expected, i, e) {
        const char *tpl = json_string_value(json_object_get(e, "template"));
        const char *cname = json_string_value(json_object_get(e, "case"));
        bool agp = json_is_true(json_object_get(e, "add_generation_prompt"));
        const json_t *c = find_case(cases, cname);
        accel_chat_template_t *t = fixture_template(tpl, json_object_get(c, "kwargs"));
        char *text = NULL, err[2048] = "";
        size_t len = 0;
        accel_status_t st = accel_chat_render(t, json_object_get(c, "messages"), json_object_get(c, "tools"), agp,
                                              &text, &len, err, sizeof err);
        const json_t *want = json_object_get(e, "output"), *want_err = json_object_get(e, "error");
        if (want_err) {
            ck_assert_msg(st == ACCEL_ERR_INVALID, "%s/%s agp=%d: transformers raised \"%s\", accel rendered",
                          tpl, cname, agp, json_string_value(want_err));
            ck_assert_msg(strstr(err, json_string_value(want_err)) != NULL, "%s/%s: error \"%s\" lacks \"%s\"",
                          tpl, cname, err, json_string_value(want_err));
            errors++;
        } else {
            ck_assert_msg(st == ACCEL_OK, "%s/%s agp=%d: %s", tpl, cname, agp, err);
            const char *w = json_string_value(want);
            size_t wn = json_string_length(want), k = 0;
            while (k < len && k < wn && text[k] == w[k]) k++;
            ck_assert_msg(k == len && k == wn,
                          "%s/%s agp=%d: output differs at byte %zu of %zu (want %zu)\n"
                          "  accel:        \"%.80s\"\n  transformers: \"%.80s\"",
                          tpl, cname, agp, k, len, wn, text + (k > 20 ? k - 20 : 0), w + (k > 20 ? k - 20 : 0));
            const json_t *spans = json_object_get(e, "generation");
            if (spans && !agp && json_array_size(spans)) {   /* the {% generation %} spans */
                accel_chat_text_t ct;
                ck_assert_int_eq(accel_chat_training_text(t, json_object_get(c, "messages"), NULL,
                                                          json_object_get(c, "tools"), ACCEL_CHAT_TRAIN_ASSISTANT,
                                                          &ct, err, sizeof err), ACCEL_OK);
                size_t nonempty = 0, j;
                json_t *sp;
                json_array_foreach(spans, j, sp) {
                    size_t s0 = (size_t)json_integer_value(json_array_get(sp, 0)),
                           s1 = (size_t)json_integer_value(json_array_get(sp, 1));
                    if (s1 == s0) continue;
                    ck_assert_msg((int)nonempty < ct.ntrained && ct.trained[nonempty].start == s0 &&
                                  ct.trained[nonempty].end == s1, "%s/%s: generation span %zu is not [%zu, %zu)",
                                  tpl, cname, j, s0, s1);
                    nonempty++;
                }
                ck_assert_int_eq(ct.ntrained, nonempty);
                accel_chat_text_free(&ct);
            }
            same++;
        }
        free(text);
        accel_chat_template_free(t);
    }
    ck_assert_msg(same + errors == json_array_size(expected) && same > 150, "%zu same, %zu errors", same, errors);
    printf("chat templates: %zu renders byte-identical to transformers, %zu errors matched\n", same, errors);
    json_decref(expected);
    json_decref(cases);
}
END_TEST

/* Where a tokenizer keeps its template: chat_template.jinja first, then tokenizer_config.json (a
 * string, or named templates), special tokens as strings or {"content": ...}. */
START_TEST(test_load)
{
    char d[] = "/tmp/accel_chat_XXXXXX", path[512], err[2048] = "";
    ck_assert_ptr_nonnull(mkdtemp(d));
    accel_chat_template_t *t = NULL;
    ck_assert_int_eq(accel_chat_template_load(d, &t, err, sizeof err), ACCEL_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err, "has no chat template") && strstr(err, "--chat-template"), "%s", err);

    snprintf(path, sizeof path, "%s/tokenizer_config.json", d);
    write_file(path, "{\"bos_token\": {\"content\": \"<B>\", \"lstrip\": false}, \"eos_token\": \"<E>\","
                     " \"chat_template\": \"{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}\"}");
    ck_assert_int_eq(accel_chat_template_load(d, &t, err, sizeof err), ACCEL_OK);
    json_t *msgs = json_loads("[{\"role\": \"user\", \"content\": \"hi\", \"name\": null}]", 0, NULL);
    char *text;
    size_t len;
    ck_assert_int_eq(accel_chat_render(t, msgs, NULL, false, &text, &len, err, sizeof err), ACCEL_OK);
    ck_assert_str_eq(text, "<B>hi<E>");
    ck_assert(strstr(accel_chat_template_origin(t), "tokenizer_config.json") != NULL);
    free(text);
    accel_chat_template_free(t);

    /* chat_template.jinja wins over the config's, which still gives the special tokens */
    snprintf(path, sizeof path, "%s/chat_template.jinja", d);
    write_file(path, "[{{ bos_token }}{{ messages[0]['content'] }}]\n");
    ck_assert_int_eq(accel_chat_template_load(d, &t, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(accel_chat_render(t, msgs, NULL, false, &text, &len, err, sizeof err), ACCEL_OK);
    ck_assert_str_eq(text, "[<B>hi]");          /* one trailing newline dropped, as Jinja */
    free(text);
    accel_chat_template_free(t);
    unlink(path);

    /* named templates: "default" */
    snprintf(path, sizeof path, "%s/tokenizer_config.json", d);
    write_file(path, "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}, {\"name\": \"default\", "
                     "\"template\": \"D{{ messages|length }}\"}]}");
    ck_assert_int_eq(accel_chat_template_load(path, &t, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(accel_chat_render(t, msgs, NULL, false, &text, &len, err, sizeof err), ACCEL_OK);
    ck_assert_str_eq(text, "D1");
    free(text);
    accel_chat_template_free(t);
    write_file(path, "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"T\"}]}");
    ck_assert_int_eq(accel_chat_template_load(d, &t, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_msg(strstr(err, "default") != NULL, "%s", err);
    write_file(path, "{\"chat_template\": 7}");
    ck_assert_int_eq(accel_chat_template_load(d, &t, err, sizeof err), ACCEL_ERR_INVALID);
    write_file(path, "not json");
    ck_assert_int_eq(accel_chat_template_load(d, &t, err, sizeof err), ACCEL_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "not JSON") != NULL, "%s", err);
    unlink(path);
    rmdir(d);
    json_decref(msgs);
}
END_TEST

static accel_status_t render_src(const char *src, const char *messages, char **text, char *err, size_t errlen)
{
    accel_chat_template_t *t = NULL;
    *text = NULL;
    accel_status_t st = accel_chat_template_parse(src, strlen(src), "test", &t, err, errlen);
    if (st != ACCEL_OK) return st;
    json_t *m = json_loads(messages ? messages : "[{\"role\": \"user\", \"content\": \"hi\"}]", 0, NULL);
    size_t len;
    st = accel_chat_render(t, m, NULL, true, text, &len, err, errlen);
    json_decref(m);
    accel_chat_template_free(t);
    return st;
}

/* Bad templates are refused naming the line; nothing unsupported is silently skipped. */
START_TEST(test_refusals)
{
    static const struct { const char *src, *want; accel_status_t st; } cases[] = {
        {"a\n{% if x %}b", "line 2: the block opened here is not closed (no {% endif %})", ACCEL_ERR_INVALID},
        {"{% for x in y %}", "no {% endfor %}", ACCEL_ERR_INVALID},
        {"{{ x ", "line 1: a {{ tag is not closed", ACCEL_ERR_INVALID},
        {"\n\n{% endif %}", "line 3: unexpected {% endif %}", ACCEL_ERR_INVALID},
        {"{% raw %}x{% endraw %}", "{% raw %} is not supported", ACCEL_ERR_INVALID},
        {"{% call m() %}x{% endcall %}", "{% call %} is not supported", ACCEL_ERR_INVALID},
        {"{% include 'x' %}", "{% include %} is not supported", ACCEL_ERR_INVALID},
        {"{{ 'abc }}", "a string literal is not closed", ACCEL_ERR_INVALID},
        {"{{ 1 + }}", "unexpected the end of the tag in an expression", ACCEL_ERR_INVALID},
        {"{{ a $ b }}", "unexpected character '$'", ACCEL_ERR_INVALID},
        {"{# never closed", "a comment {# is not closed", ACCEL_ERR_INVALID},
        {"x\n{{ messages|wordwrap }}", "line 2: the filter 'wordwrap' is not supported", ACCEL_ERR_INVALID},
        {"{{ messages[0].content.nope.deeper }}", "'nope' is undefined (reading its attribute 'deeper')", ACCEL_ERR_INVALID},
        {"{{ raise_exception('no system role') }}", "the template raised an error: no system role", ACCEL_ERR_INVALID},
        {"{{ 'a' + 1 }}", "unsupported operand types for +: a string and an integer", ACCEL_ERR_INVALID},
        {"{{ 1 // 0 }}", "integer division or modulo by zero", ACCEL_ERR_INVALID},
        {"{% set ns = 3 %}{% set ns.a = 1 %}", "not a namespace", ACCEL_ERR_INVALID},
        {"{{ range(100000000)|length }}", "at most 10000000", ACCEL_ERR_INVALID},
        {"{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "macro calls nested deeper than", ACCEL_ERR_INVALID},
        {"{{ 'x' * 1000000000 }}", "the output passes 256 MiB", ACCEL_ERR_INVALID},
        {"{% break %}", "break or continue outside a loop", ACCEL_ERR_INVALID},
        {"{{ undefined_thing|tojson }}", "tojson: 'undefined_thing' is undefined", ACCEL_ERR_INVALID},
        {"ok\n{{ '\xe6\x97' }}", "the template is not UTF-8 text (byte 7 is 0xe6)", ACCEL_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *text = NULL, err[2048] = "";
        accel_status_t st = render_src(cases[i].src, NULL, &text, err, sizeof err);
        ck_assert_msg(st == cases[i].st, "\"%s\": status %d, want %d (%s)", cases[i].src, st, cases[i].st, err);
        ck_assert_msg(strstr(err, cases[i].want) != NULL, "\"%s\": error \"%s\" lacks \"%s\"", cases[i].src, err,
                      cases[i].want);
        free(text);
    }
    /* a bad message list is named */
    char *text, err[2048];
    ck_assert_int_eq(render_src("{{ messages }}", "[{\"content\": \"x\"}]", &text, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_msg(strstr(err, "message 1 has no string \"role\"") != NULL, "%s", err);
    ck_assert_int_eq(render_src("{{ messages }}", "[1]", &text, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_msg(strstr(err, "message 1 is not an object") != NULL, "%s", err);
}
END_TEST

/* Training text: spans by prefix when the template has no generation blocks, the completion after
 * the prompt's generation prompt, a template that rewrites earlier turns refused naming the
 * message (and accepted with --train-on all). */
START_TEST(test_training_text)
{
    static const char *const chatml = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                                      "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
    accel_chat_template_t *t = NULL;
    char err[2048] = "";
    ck_assert_int_eq(accel_chat_template_parse(chatml, strlen(chatml), "chatml", &t, err, sizeof err), ACCEL_OK);
    json_t *m = json_loads("[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U1\"},"
                           " {\"role\": \"assistant\", \"content\": \"A1\"}, {\"role\": \"user\", \"content\": \"U2\"},"
                           " {\"role\": \"assistant\", \"content\": \"A2\"}]", 0, NULL);
    accel_chat_text_t ct;
    ck_assert_int_eq(accel_chat_training_text(t, m, NULL, NULL, ACCEL_CHAT_TRAIN_ASSISTANT, &ct, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(ct.ntrained, 2);
    ck_assert_int_eq((int)(ct.trained[0].end - ct.trained[0].start), (int)strlen("A1<|im_end|>\n"));
    ck_assert(!memcmp(ct.text + ct.trained[0].start, "A1<|im_end|>\n", strlen("A1<|im_end|>\n")));
    ck_assert(!memcmp(ct.text + ct.trained[1].start, "A2<|im_end|>\n", ct.trained[1].end - ct.trained[1].start));
    ck_assert_uint_eq(ct.trained[1].end, ct.len);
    accel_chat_text_free(&ct);
    ck_assert_int_eq(accel_chat_training_text(t, m, NULL, NULL, ACCEL_CHAT_TRAIN_ALL, &ct, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(ct.ntrained, 1);
    ck_assert_uint_eq(ct.trained[0].end - ct.trained[0].start, ct.len);
    accel_chat_text_free(&ct);
    /* prompt + completion */
    json_t *p = json_loads("[{\"role\": \"user\", \"content\": \"Q\"}]", 0, NULL),
           *c = json_loads("[{\"role\": \"assistant\", \"content\": \"A\"}]", 0, NULL);
    ck_assert_int_eq(accel_chat_training_text(t, p, c, NULL, ACCEL_CHAT_TRAIN_ASSISTANT, &ct, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(ct.ntrained, 1);
    ck_assert_str_eq(ct.text + ct.trained[0].start, "A<|im_end|>\n");
    accel_chat_text_free(&ct);
    accel_chat_template_free(t);
    /* drops the reasoning of turns before the last user message: earlier turns change */
    static const char *const drops = "{% set ns = namespace(last=0) %}{% for m in messages %}{% if m.role == 'user' %}"
        "{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{% for m in messages %}[{{ m.role }}]"
        "{% if m.role == 'assistant' and loop.index0 > ns.last %}<think>{{ m.reasoning_content }}</think>{% endif %}"
        "{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";
    ck_assert_int_eq(accel_chat_template_parse(drops, strlen(drops), "drops.jinja", &t, err, sizeof err), ACCEL_OK);
    json_t *r = json_loads("[{\"role\": \"user\", \"content\": \"U1\"}, {\"role\": \"assistant\", \"content\": \"A1\","
                           " \"reasoning_content\": \"R1\"}, {\"role\": \"user\", \"content\": \"U2\"},"
                           " {\"role\": \"assistant\", \"content\": \"A2\", \"thinking\": \"R2\"}]", 0, NULL);
    ck_assert_int_eq(accel_chat_training_text(t, r, NULL, NULL, ACCEL_CHAT_TRAIN_ASSISTANT, &ct, err, sizeof err),
                     ACCEL_ERR_INVALID);
    ck_assert_msg(strstr(err, "drops.jinja renders the conversation before message 2 (assistant) differently once "
                              "later messages follow") && strstr(err, "--train-on all"), "%s", err);
    ck_assert_int_eq(accel_chat_training_text(t, r, NULL, NULL, ACCEL_CHAT_TRAIN_ALL, &ct, err, sizeof err), ACCEL_OK);
    ck_assert_str_eq(ct.text, "[user]U1[assistant]A1[user]U2[assistant]<think>R2</think>A2");  /* thinking -> reasoning_content */
    accel_chat_text_free(&ct);
    accel_chat_template_free(t);
    /* the same with an end of turn after each message: the end-of-turn rule spans message 2 */
    static const char *const drops_eot = "{% set ns = namespace(last=0) %}{% for m in messages %}{% if m.role == 'user' %}"
        "{% set ns.last = loop.index0 %}{% endif %}{% endfor %}{% for m in messages %}[{{ m.role }}]"
        "{% if m.role == 'assistant' and loop.index0 > ns.last %}<think>{{ m.reasoning_content }}</think>{% endif %}"
        "{{ m.content }}<end>\n{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";
    ck_assert_int_eq(accel_chat_template_parse(drops_eot, strlen(drops_eot), "eot.jinja", &t, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(accel_chat_training_text(t, r, NULL, NULL, ACCEL_CHAT_TRAIN_ASSISTANT, &ct, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(ct.ntrained, 2);
    ck_assert_int_eq(ct.by_end_of_turn, 1);
    ck_assert_uint_eq(ct.trained[0].end - ct.trained[0].start, strlen("A1<end>\n"));
    ck_assert(!memcmp(ct.text + ct.trained[0].start, "A1<end>\n", strlen("A1<end>\n")));
    ck_assert_str_eq(ct.text + ct.trained[1].start, "<think>R2</think>A2<end>\n");
    accel_chat_text_free(&ct);
    json_t *empty = json_array();
    ck_assert_int_eq(accel_chat_training_text(t, empty, NULL, NULL, ACCEL_CHAT_TRAIN_ALL, &ct, err, sizeof err),
                     ACCEL_ERR_INVALID);
    ck_assert_msg(strstr(err, "the conversation is empty") != NULL, "%s", err);
    accel_chat_template_free(t);
    json_decref(empty);
    json_decref(r);
    json_decref(p);
    json_decref(c);
    json_decref(m);
}
END_TEST

/* Mutated fixture templates (bytes flipped, inserted, cut) parse and render or fail with a
 * message: never a crash, a hang or an unterminated error. */
START_TEST(test_mutations)
{
    static const char *const names[] = {"chatml", "llama3", "mistral", "gemma", "phi", "features", "chatml_generation"};
    json_t *cases = load_json("cases.json");
    const json_t *msgs = json_object_get(find_case(cases, "multi_turn"), "messages");
    unsigned long long seed = 12345;
    int ok = 0, refused = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof path, "%s/templates/%s.jinja", dir(), names[k]);
        char *src = accel_file_read(path, &len);
        ck_assert_ptr_nonnull(src);
        for (int it = 0; it < 150; it++) {
            char *mut = malloc(len + 8);
            memcpy(mut, src, len);
            size_t n = len;
            for (int e = 0; e < 1 + it % 3; e++) {
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                size_t at = (size_t)(seed >> 33) % (n ? n : 1);
                static const char alphabet[] = "{}%#-+()[]'\".|~=,: \nxa1";
                char ch = alphabet[(seed >> 13) % (sizeof alphabet - 1)];
                switch ((seed >> 7) % 3) {
                case 0: if (n) mut[at] = ch; break;
                case 1: memmove(mut + at + 1, mut + at, n - at); mut[at] = ch; n++; break;
                default: n = at; break;
                }
            }
            accel_chat_template_t *t = NULL;
            char err[2048] = "", *text = NULL;
            size_t tl;
            accel_status_t st = accel_chat_template_parse(mut, n, names[k], &t, err, sizeof err);
            if (st == ACCEL_OK) st = accel_chat_render(t, msgs, NULL, it & 1, &text, &tl, err, sizeof err);
            if (st == ACCEL_OK) ok++;
            else {
                ck_assert_msg(st == ACCEL_ERR_INVALID && err[0], "%s mutation %d: status %d, error \"%s\"",
                              names[k], it, st, err);
                refused++;
            }
            free(text);
            accel_chat_template_free(t);
            free(mut);
        }
        free(src);
    }
    printf("mutated templates: %d rendered, %d refused with a message\n", ok, refused);
    json_decref(cases);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("chat");
    TCase *tc = tcase_create("chat");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_reference);
    tcase_add_test(tc, test_load);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_training_text);
    tcase_add_test(tc, test_mutations);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"
