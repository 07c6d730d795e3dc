"""Writes the chat-template fixtures (run by tests/make_chat_fixtures.sh; see there).

Python is the oracle only: every expected output below comes from transformers' own chat-template
renderer (transformers.utils.chat_template_utils.render_jinja_template, the function
apply_chat_template calls) and from Hugging Face `tokenizers`; accel's C code must reproduce them.

OUTDIR/
  templates/*.jinja    chat templates written for accel (no model's real template text): five in
                       the style of model families, one with {% generation %} tags, and
                       features.jinja, which exercises each Jinja feature accel implements on a
                       labelled line of its own
  cases.json           conversations [{"name", "messages", "tools"?, "kwargs"?}]
  expected.json        every template x case x add_generation_prompt (false, true):
                       {"template", "case", "add_generation_prompt", "output"} plus "generation":
                       [[start, end], ...] (UTF-8 byte offsets into output) for templates with
                       generation tags, or {"template", "case", "add_generation_prompt", "error"}
                       when rendering raises (the message of the exception)
  tok/                 a tiny byte-level BPE tokenizer.json + tokenizer_config.json (bos "<s>" as a
                       string, eos "<|im_end|>" as an AddedToken dict, no chat_template)
  sft_messages.jsonl   chat lines {"messages": [...]}; for T in chatml_generation, chatml, llama3:
                       sft_messages.T.u32 (the ids of all lines one after the other, uint32
                       little-endian) and sft_messages.T.mask (one 0/1 byte per id)
  sft_pc.jsonl         TRL's conversational prompt-completion lines {"prompt": [...],
                       "completion": [...]}: sft_pc.chatml.u32 / .mask the same way
  e2e.json             the token count of each line, per stream
  VERSION              the versions that made the files

Rendering is done as apply_chat_template does it: message keys whose value is None dropped first
(_normalize_chat_messages), bos_token "<s>", eos_token "</s>", unk_token "<unk>", pad_token
"<pad>" passed as template variables, the case's kwargs on top. No template calls strftime_now, so
the files do not depend on the date.

What `accel_data prepare` makes of a chat line (prepare_expect below; the template variables are
the tokenizer's bos_token "<s>" and eos_token "<|im_end|>", as apply_chat_template passes them):
ids = the tokenizer's encoding of the rendering (add_generation_prompt false), nothing added; a
token's mask is 1 when its text [start, end) overlaps an assistant span [a, b) (end > a and
start < b; so a token that starts in the prompt and ends in the answer counts), where the spans are
  - templates with {% generation %}: the generation blocks (HF's assistant_masks; checked against
    apply_chat_template(..., return_assistant_tokens_mask=True));
  - other templates: for each assistant message i, [len(p_i), len(q_i)) with
    p_i = render(messages[:i], add_generation_prompt=True), q_i = render(messages[:i + 1]); every
    p_i is a prefix of q_i and every q_i of the whole rendering (asserted);
  - prompt-completion lines: [len(p), len(full)) with p = render(prompt,
    add_generation_prompt=True), full = render(prompt + completion)."""
import json
import os
import struct
import sys

import jinja2
import tokenizers
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast
from transformers.utils import logging as hf_logging
from transformers.utils.chat_template_utils import render_jinja_template

hf_logging.set_verbosity_error()   # "chat template does not contain {% generation %}" warnings
out = sys.argv[1]


def path(*names):
    return os.path.join(out, *names)


def write_json(name, obj):
    with open(path(name), "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1, sort_keys=False)
        f.write("\n")


# ---- the templates, written for accel (each becomes templates/NAME.jinja)
TEMPLATES = {
    "chatml": r"""{#- ChatML-style template written for accel's tests (Qwen family layout, own wording). -#}
{%- set ns = namespace(last_query=messages | length - 1, found=false) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages | length - 1) - loop.index0 %}
    {%- if not ns.found and message.role == 'user' and message.content is string and not message.content.strip().startswith('<tool_response>') %}
        {%- set ns.found = true %}
        {%- set ns.last_query = index %}
    {%- endif %}
{%- endfor %}
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content | trim + '\n\n' }}
    {%- endif %}
    {{- '# Tools\n\nThese functions can be called. Their JSON schemas, one per line:\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' + tool | tojson }}
    {%- endfor %}
    {{- '\n</tools>\n\nTo call one, reply with a JSON object {"name": ..., "arguments": {...}} inside <tool_call></tool_call> tags.<|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content | trim + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- set content = message.content if message.content is string else '' %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {%- set reasoning = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning = message.reasoning_content %}
        {%- elif '</think>' in content %}
            {%- set reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- set content = content.split('</think>')[-1].lstrip('\n') %}
        {%- endif %}
        {{- '<|im_start|>assistant\n' }}
        {%- if loop.index0 > ns.last_query and reasoning.strip() %}
            {{- '<think>\n' + reasoning.strip('\n') + '\n</think>\n\n' }}
        {%- endif %}
        {{- content }}
        {%- if message.tool_calls is defined and message.tool_calls %}
            {%- for call in message.tool_calls %}
                {%- set fn = call.function if call.function is defined else call %}
                {%- if content or not loop.first %}
                    {{- '\n' }}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' + fn.name + '", "arguments": ' }}
                {%- if fn.arguments is string %}
                    {{- fn.arguments }}
                {%- else %}
                    {{- fn.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' + content + '\n</tool_response>' }}
        {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}
""",
    "chatml_generation": r"""{#- ChatML with {% generation %} around what the assistant writes, the way TRL's training templates mark it. -#}
{%- for message in messages %}
    {%- if message.role == 'assistant' %}
        {{- '<|im_start|>assistant\n' }}
        {%- generation %}
            {{- message.content | default('') + '<|im_end|>' }}
        {%- endgeneration %}
        {{- '\n' }}
    {%- else %}
        {{- '<|im_start|>' + message.role + '\n' + message.content | default('') + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
""",
    "llama3": r"""{#- Llama-3-style template written for accel's tests (header/eot layout, own wording). -#}
{{- bos_token }}
{%- if tools_in_user_message is not defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if date_string is not defined %}
    {%- set date_string = '01 Jan 2025' %}
{%- endif %}
{%- if messages[0].role == 'system' %}
    {%- set system_message = messages[0].content | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = '' %}
{%- endif %}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' }}
{%- if tools is not none %}
    {{- 'Environment: tools\n' }}
{%- endif %}
{{- 'Current date: ' + date_string + '\n\n' }}
{%- if tools is not none and not tools_in_user_message %}
    {{- 'You may call the functions below. To call one, reply with only a JSON object {"name": function name, "parameters": {argument: value}}.\n\n' }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- '\n\n' }}
    {%- endfor %}
{%- endif %}
{{- system_message + '<|eot_id|>' }}
{%- if tools_in_user_message and tools is not none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0].content | trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception('The tools go into the first user message, and there is none.') }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- 'Answer with a function call when one helps. Reply with only a JSON object {"name": function name, "parameters": {argument: value}}. The functions:\n\n' }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- '\n\n' }}
    {%- endfor %}
    {{- first_user_message + '<|eot_id|>' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role in ['ipython', 'tool'] %}
        {{- '<|start_header_id|>ipython<|end_header_id|>\n\n' }}
        {%- if message.content is mapping or (message.content is iterable and message.content is not string) %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- '<|eot_id|>' }}
    {%- elif message.tool_calls is defined and message.tool_calls %}
        {%- if message.tool_calls | length != 1 %}
            {{- raise_exception('This template supports only one tool call per assistant message.') }}
        {%- endif %}
        {%- set call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
        {{- '{"name": "' + call.name + '", "parameters": ' + call.arguments | tojson + '}' }}
        {{- '<|eot_id|>' }}
    {%- else %}
        {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
""",
    "mistral": r"""{#- Mistral-style [INST] template written for accel's tests (own wording). -#}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set system_message = none %}
    {%- set loop_messages = messages %}
{%- endif %}
{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is not none %}
            {{- '[INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- '[INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] | default('') + eos_token }}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with an optional system message first!') }}
    {%- endif %}
{%- endfor %}
""",
    "gemma": r"""{#- Gemma-style turn template written for accel's tests (own wording). -#}
{{- bos_token }}
{%- if messages[0].role == 'system' %}
    {%- set first_user_prefix = messages[0].content | trim + '\n\n' %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set first_user_prefix = '' %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- for message in loop_messages %}
    {%- if message.role == 'assistant' %}
        {%- set role = 'model' %}
    {%- elif message.role == 'user' %}
        {%- set role = 'user' %}
    {%- else %}
        {{- raise_exception('Unknown role "' + message.role + '": only system, user and assistant are allowed') }}
    {%- endif %}
    {{- '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}
    {{- message.content | trim }}
    {{- '<end_of_turn>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<start_of_turn>model\n' }}
{%- endif %}
""",
    "phi": r"""{#- Phi-style template written for accel's tests (own wording). -#}
{%- set system = messages | selectattr('role', 'equalto', 'system') | list %}
{%- if system %}
    {{- '<|system|>\n' + system[0].content + '<|end|>\n' }}
{%- endif %}
{%- for message in messages if message.role != 'system' %}
    {%- if loop.first and message.role != 'user' %}
        {{- '<|user|>\n<|end|>\n' }}
    {%- endif %}
    {{- '<|' + message.role + '|>\n' + message.get('content', '') + '<|end|>\n' }}
{%- else %}
    {{- '<|user|>\n<|end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|assistant|>\n' }}
{%- else %}
    {{- eos_token }}
{%- endif %}
""",
    "features": r"""{#- features.jinja: a stress test of the Jinja subset that accel's chat-template interpreter
    implements (written for accel's test-suite). One labelled line per feature, so that a
    mismatch points at the feature. Rendered as transformers does: trim_blocks and lstrip_blocks. -#}
== features ==
{# ---- whitespace control ---- #}
ws-minus: [{{- '  a  ' -}}] [  {{- 'b' -}}  ] [ {{ 'c' }} ] [ {{- 'd' }} ] [ {{ 'e' -}} ]
ws-blocks: [
    {%- if true -%}
        x
    {%- endif -%}
]
ws-lstrip: <
    {% if true %}
    kept indent
    {% endif %}
    {# an indented comment line vanishes #}
>
ws-inline: {% if true %}yes{% endif %} {% for i in [1, 2, 3] %} {{ i }}{% endfor %} done
ws-comment: a{# inline comment #}b {#- trimmed comment -#} c
ws-newline: {% if true %}
after-trimmed-newline
{% endif %}
{{ 'expression lines keep their newline' }}
{# ---- set, block set, scoping, macro, namespace ---- #}
{% set greeting = 'hello' %}
{% set captured %}[{{ greeting }} from a block set]{% endset %}
set: {{ greeting }} {{ captured }} {{ captured | length }}
{% set outer = 'before' %}
{% for i in [1] %}{% set outer = 'inside' %}{% endfor %}
set-scope: {{ outer }}
{% macro pair(a, b='x') -%}
    ({{ a }}|{{ b }})
{%- endmacro %}
macro: {{ pair(1) }} {{ pair(1, 2) }} {{ pair('p', b='q') }} {{ pair(a='k') }} {{ pair(b='only-b', a=0) }} {{ pair(1) | length }}
{% set ns = namespace(count=0, roles='', last_user=-1) %}
{% for m in messages %}
    {% set ns.count = ns.count + 1 %}
    {% set ns.roles = ns.roles ~ m.role ~ ';' %}
    {% if m.role == 'user' %}
        {% set ns.last_user = loop.index0 %}
    {% endif %}
{% endfor %}
namespace: {{ ns.count }} {{ ns.roles }} {{ ns.last_user }}
{# ---- for loops ---- #}
for-list: {% for x in ['a', 'b', 'c'] %}{{ x }}{% if not loop.last %},{% endif %}{% endfor %}

for-items: {% for k, v in {'one': 1, 'two': [2], 'three': none}.items() %}{{ k }}={{ v }};{% endfor %}

for-if: {% for m in messages if m.role != 'system' %}{{ loop.index }}/{{ loop.length }}:{{ m.role }} {% endfor %}

for-else: {% for x in [] %}never{% else %}empty-list{% endfor %} {% for m in messages if m.role == 'nobody' %}never{% else %}no-match{% endfor %}

for-break: {% for i in range(10) %}{% if i == 7 %}{% break %}{% endif %}{% if i is odd %}{% continue %}{% endif %}{{ i }}{% endfor %}

loop-vars: {% for x in ['p', 'q', 'r'] %}[{{ loop.index }} {{ loop.index0 }} {{ loop.revindex }} {{ loop.revindex0 }} {{ loop.first }} {{ loop.last }} {{ loop.length }} {{ loop.previtem }} {{ loop.nextitem }} {{ loop.previtem is defined }} {{ loop.nextitem is undefined }}]{% endfor %}

for-string: {% for ch in 'héllo' %}{{ ch }}.{% endfor %}

for-range: {% for i in range(3) %}{{ i }}{% endfor %} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}
for-nested: {% for i in [1, 2] %}{% for j in 'ab' %}{{ i }}{{ j }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %}

for-reverse: {% for m in messages[::-1] %}{{ m.role }}@{{ loop.index0 }} {% endfor %}

{# ---- slicing and indexing ---- #}
{% set L = [10, 20, 30, 40, 50] %}
slice: {{ L[1:] }} {{ L[:-1] }} {{ L[::-1] }} {{ L[1:3] }} {{ L[-1] }} {{ L[-2] }} {{ L[::2] }} {{ L[10:] }} {{ L[:2] }}
slice-str: {{ 'héllo'[1:3] }} {{ 'héllo'[::-1] }} {{ 'héllo'[-1] }} {{ 'héllo'[0] }} {{ '日本語'[1:] }}
slice-msgs: {{ messages[1:] | length }} {{ messages[:-1] | map(attribute='role') | join(',') }} {{ messages[::-1] | map(attribute='role') | join(',') }} {{ messages[-1].role }}
{# ---- string methods ---- #}
{% set s = '  Hello, World!  ' %}
str-strip: [{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] [{{ 'xxhixx'.strip('x') }}] [{{ 'xyhiyx'.lstrip('yx') }}] [{{ 'hi\n\n'.rstrip('\n') }}] [{{ '\n\t mixed \t\n'.strip() }}]
str-split: {{ 'a,b,,c'.split(',') }} {{ ' a  b \n c '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ ' a  b '.split(' ') }} {{ 'x</think>y</think>z'.split('</think>')[-1] }} {{ 'none here'.split('</think>') }}
str-affix: {{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'hello'.endswith(('a', 'b')) }} {{ ''.startswith('') }}
str-case: {{ 'MiXed é'.upper() }} {{ 'MiXed É'.lower() }} {{ "it's a 2nd-best title".title() }} {{ 'hELLO wORLD'.capitalize() }}
str-misc: {{ 'a-b-c'.replace('-', '+') }} {{ 'banana'.find('an') }} {{ 'banana'.find('x') }} {{ 'banana'.count('a') }} {{ 'banana'.count('an') }}
{# ---- dict methods ---- #}
{% set d = {'b': 2, 'a': 1, 'c': none} %}
dict: {{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z', 'dflt') }} {{ d.get('z') }} {{ d['b'] }} {{ d.b }}
{# ---- filters ---- #}
flt-trim: [{{ '  t  ' | trim }}] [{{ '\n\tx\n' | trim }}]
flt-length: {{ [1, 2, 3] | length }} {{ 'héllo' | length }} {{ {'a': 1} | length }} {{ [1, 2] | count }} {{ messages | length }}
flt-tojson: {{ {'b': [1, 2.5, none, true, false], 'a': 'é"\\/\n\t<>&', 'n': {}} | tojson }}
flt-tojson-num: {{ [1.0, 1e20, 1e-5, 0.1, -2, 1e16, 123456789.0] | tojson }}
flt-tojson-indent: {{ {'b': [1, 2], 'a': {}, 'c': [], 'd': {'e': none}} | tojson(indent=2) }}
flt-tojson-sort: {{ {'b': 1, 'a': {'z': 0, 'y': 1}} | tojson(sort_keys=true) }}
flt-tojson-sep: {{ {'b': 1, 'a': [1, 2]} | tojson(separators=(',', ':')) }}
flt-string: {{ 5 | string }} {{ none | string }} {{ [1, 'a'] | string }} {{ (5 | string) ~ 'x' }}
flt-case: {{ 'abc' | upper }} {{ 'ABC' | lower }} {{ "it's a 2nd-best title" | title }} {{ 'hELLO wORLD' | capitalize }}
flt-default: {{ undefined_name | default('dflt') }} [{{ none | default('nn') }}] {{ none | default('nn', true) }} [{{ '' | default('empty') }}] {{ '' | d('empty', true) }} {{ false | default('f', true) }} {{ messages[0].nope | d('missing') }}
flt-join: {{ ['a', 'b', 'c'] | join }} {{ ['a', 'b'] | join(', ') }} {{ messages | join('/', attribute='role') }} {{ [1, 2] | join('-') }}
flt-firstlast: {{ [3, 4, 5] | first }} {{ [3, 4, 5] | last }} {{ 'xyz' | first }} {{ 'xyz' | last }} {{ (messages | first).role }} {{ (messages | last)['role'] }}
flt-list: {{ 'xyz' | list }} {{ {'a': 1, 'b': 2} | list }} {{ {'k': 'v', 'n': 1} | items | list }}
flt-replace: {{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'a\nb' | replace('\n', '\\n') }}
flt-safe: {{ '<b>&amp;</b>' | safe }}
flt-num: {{ '42' | int }} {{ '42' | int + 1 }} {{ '3.5' | float }} {{ 'x' | int }} {{ 'x' | float }} {{ 3.9 | int }} {{ -3.9 | int }} {{ '3.5' | int }} {{ true | int }} {{ -5 | abs }} {{ -2.5 | abs }} {{ 7 | float }}
flt-round: {{ 3.14159 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 7 | round }} {{ 1234.5678 | round(1) }}
flt-select: {{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | selectattr('tool_calls', 'defined') | list | length }} {{ messages | rejectattr('content', 'none') | list | length }} {{ messages | rejectattr('tool_calls', 'defined') | map(attribute='role') | join(',') }} {{ [{'a': none}, {'a': 1}, {}] | selectattr('a', 'none') | list }}
flt-map: {{ messages | map(attribute='role') | list }} {{ ['a', 'b'] | map('upper') | list }} {{ ['ab', 'c'] | map('length') | list }}
flt-selecttest: {{ [1, 2, 3, 4, 5, 6] | select('odd') | list }} {{ [1, 2, 3, 4, 5, 6] | reject('divisibleby', 3) | list }} {{ [0, 1, '', 'a', none, [], [0]] | select | list }} {{ [1, 2, 3] | select('equalto', 2) | list }}
flt-unique: {{ [3, 1, 3, 2, 1] | unique | list }} {{ ['b', 'A', 'a', 'B'] | unique | list }}
flt-reverse: {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}
flt-sort: {{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c', 'a'] | sort }} {{ [3, 1, 2] | sort(reverse=true) }} {{ [{'n': 2, 'v': 'x'}, {'n': 1, 'v': 'y'}] | sort(attribute='n') | map(attribute='v') | list }}
flt-indent: [{{ 'a\nb\n\nc' | indent(2) }}] [{{ 'x\ny' | indent(4, first=True) }}] [{{ 'x\ny' | indent(3, true) }}]
flt-minmaxsum: {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2, 3.5] | sum }} {{ [] | sum }} {{ [1.5, 2.5] | sum }} {{ messages | map(attribute='role') | map('length') | sum }}
{# ---- tests ---- #}
tests-defined: {{ x is defined }} {{ x is undefined }} {{ messages is defined }} {{ messages[0].nokey is defined }} {{ messages[0]['nokey'] is defined }} {{ messages[0].role is defined }}
tests-type: {{ none is none }} {{ 0 is none }} {{ 'a' is string }} {{ 1 is string }} {{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} {{ 1.0 is integer }} {{ true is integer }} {{ 1.5 is float }} {{ 1 is float }}
tests-coll: {{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'ab' is iterable }} {{ 3 is iterable }} {{ {} is iterable }} {{ [] is sequence }} {{ 'ab' is sequence }} {{ {} is sequence }} {{ 3 is sequence }}
tests-bool: {{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ none is false }}
tests-num: {{ 3 is odd }} {{ 3 is even }} {{ 4 is even }} {{ 9 is divisibleby(3) }} {{ 10 is divisibleby(3) }} {{ 'a' is equalto('a') }} {{ 2 is eq(2) }} {{ 2 is eq(3) }} {{ 'b' is in('abc') }} {{ 2 is in([1, 2]) }} {{ 5 is not in([1, 2]) }}
tests-not: {{ none is not none }} {{ 'a' is not string }} {{ x is not defined }}
{# ---- operators ---- #}
arith: {{ 7 + 3 }} {{ 7 - 10 }} {{ 6 * 7 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 7.5 // 2 }} {{ 2 * 3 + 4 }} {{ 2 * (3 + 4) }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }} {{ 2 ** 3 ** 2 }}
concat: {{ 'a' ~ 1 ~ none ~ true ~ 2.5 }} {{ 'ab' * 3 }} [{{ '=' * 0 }}] {{ 3 * 'x' }} {{ [1] + [2, 3] }} {{ 'foo' + 'bar' }} {{ [0] * 2 }}
compare: {{ 1 < 2 }} {{ 2 <= 1 }} {{ 3 > 2 }} {{ 3 >= 4 }} {{ 'a' < 'b' }} {{ 'B' < 'a' }} {{ 1 == 1.0 }} {{ 'a' != 'a' }} {{ [1, 2] == [1, 2] }} {{ none == none }} {{ 1 == true }} {{ '1' == 1 }}
in-ops: {{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'z' not in 'abc' }} {{ 3 not in [1] }} {{ 'k' in {'k': 1} }} {{ 'v' in {'k': 'v'} }} {{ 'role' in messages[0] }} {{ 'nokey' in messages[0] }} {{ '' in 'abc' }}
logic: {{ true and false }} {{ true or false }} {{ not true }} {{ not 0 }} {{ 0 or 'x' }} [{{ '' and 'y' }}] {{ 'a' and 'b' }} {{ none or [] }} {{ not none and 1 }} {{ not (true and false) }}
ternary: {{ 'yes' if 1 else 'no' }} {{ 'no' if '' else 'yes' }} [{{ 'hidden' if false }}] {{ 'shown' if true }} {{ 'a' if false else 'b' if false else 'c' }}
unary: {{ -3 }} {{ -(2 + 3) }} {{ -L[0] }} {{ - 1.5 }} {{ 5 - -2 }}
{# ---- literals and printing ---- #}
str-lit: {{ 'single' }} {{ "double" }} {{ 'tab[\t]' }} {{ 'it\'s' }} {{ "say \"hi\"" }} {{ 'back\\slash' }} {{ 'two\nlines' }} {{ "é 日本" }} {{ "mixed 'quotes'" }} {{ 'mixed "quotes"' }}
num-lit: {{ 42 }} {{ 1.5 }} {{ 2.0 }} {{ 1e-5 }} {{ 1e20 }} {{ 1e15 }} {{ 1e16 }} {{ 0.0001 }} {{ 123.456 }} {{ 1.0e3 }} {{ 2E3 }} {{ 0.5e-3 }}
const-lit: {{ true }} {{ True }} {{ false }} {{ False }} {{ none }} {{ None }} {{ true == True }} {{ None is none }}
coll-lit: {{ [1, 'two', 3.0, none, true, [false]] }} {{ (1, 'a') }} {{ {'k': 'v', 'n': [1, 2.5]} }} {{ [] }} {{ {} }} {{ () }} {{ [1, 2,] }}
repr: {{ [["it's", 'x'], 'a"b', 'both\'"', 'nl\n', 'tab\t', 'bs\\', 'é日本😀'] }} {{ {'q': "it's"} }}
str-of: {{ none }} {{ true }} {{ 3 }} {{ 2.5 }} {{ 1.0 }} {{ ['a', 'b'] }} {{ {'a': none, 'b': false} }} {{ dict(a=1, b='x') }} {{ dict() }} {{ [none] }}
access: {{ messages[0].role }} {{ messages[0]['role'] }} {{ messages[0].get('role') }} {{ messages[0].get('nokey', 'fallback') }} [{{ messages[0].nokey }}] [{{ messages[0]['nokey'] }}] {{ messages[0].content is defined }} {{ ['a', 'b'][1] }} {{ {'k': {'j': 'deep'}}.k.j }} {{ {'k': {'j': 'deep'}}['k']['j'] }}
{# ---- the conversation and the template variables ---- #}
first-message: {{ messages[0] }}
last-message: {{ messages[-1] }}
{% for m in messages %}
msg {{ loop.index0 }}: {{ m.role | upper }} {{ (m.content if m.content is string else '') | trim | length }} chars
    {%- if m.reasoning_content is defined %}, reasoning {{ m.reasoning_content | length }}{% endif %}
    {%- if m.tool_calls is defined %}, calls {{ m.tool_calls | map(attribute='function') | map(attribute='name') | join(' ') }}
        {%- for c in m.tool_calls %} {{ c.function.arguments | tojson(sort_keys=true) }}{% endfor %}
    {%- endif %}
    {%- if m.content is string and m.content.strip() != m.content %}, untrimmed{% endif %}
    {{- ' <think>' if m.content is string and '</think>' in m.content }}
{% endfor %}
kwargs: {{ add_generation_prompt }} {{ bos_token }} {{ eos_token }} {{ enable_thinking | default('unset') }} {{ date_string | default('no date') }} {{ tools is none }}
tools: {% if tools %}{% for t in tools %}{{ t.function.name }}({{ t.function.parameters.properties | list | join(', ') }}){{ ' ' if not loop.last }}{% endfor %}{% else %}none{% endif %}

== end ==
""",
}

# ---- the conversations (cases.json)
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
CALC = {"type": "function", "function": {
    "name": "calculate", "description": "Evaluate an arithmetic expression.",
    "parameters": {"type": "object", "properties": {
        "expression": {"type": "string"},
        "precision": {"type": "integer", "minimum": 0, "default": 2}},
        "required": ["expression"]}}}
TOOLS = [WEATHER, CALC]

CASES = [
    {"name": "single_user", "messages": [{"role": "user", "content": "Hello!"}]},
    {"name": "system_user", "messages": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is 2+2?"}]},
    {"name": "multi_turn", "messages": [
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am a test assistant."},
        {"role": "user", "content": "Name three colours."},
        {"role": "assistant", "content": "Red, green and blue."},
        {"role": "user", "content": "And one more?"},
        {"role": "assistant", "content": "Yellow."}]},
    {"name": "reasoning", "messages": [
        {"role": "system", "content": "Think before answering."},
        {"role": "user", "content": "Is 17 prime?"},
        {"role": "assistant", "content": "Yes, 17 is prime.", "reasoning_content": "17 has no divisor between 2 and 4."},
        {"role": "user", "content": "And 21?"},
        {"role": "assistant", "content": "No: 21 = 3 * 7.", "reasoning_content": "\n21 is divisible by 3.\n"}]},
    {"name": "think_in_content", "messages": [
        {"role": "user", "content": "How many r's in strawberry?"},
        {"role": "assistant", "content": "<think>\nCount them: s-t-r-a-w-b-e-r-r-y.\n</think>\n\nThere are 3 r's."}]},
    {"name": "tool_calls", "tools": TOOLS, "messages": [
        {"role": "system", "content": "You can use tools."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "Xa1b2C3d4", "type": "function", "function": {"name": "get_weather", "arguments": {
                "city": "Paris", "days": 3, "threshold": 0.5, "metric": True, "station": None}}}]},
        {"role": "tool", "tool_call_id": "Xa1b2C3d4", "name": "get_weather", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21.5 °C and clear in Paris."}]},
    {"name": "parallel_tool_calls", "tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in Oslo, and 2**10?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}},
            {"type": "function", "function": {"name": "calculate", "arguments": {"expression": "2**10", "precision": 0}}}]},
        {"role": "tool", "content": "-3 degrees"},
        {"role": "tool", "content": "1024"},
        {"role": "assistant", "content": "Oslo is at -3 °C, and 2**10 = 1024."}]},
    {"name": "tools_prompt", "tools": TOOLS, "kwargs": {"tools_in_user_message": False, "date_string": "26 Jul 2024"},
     "messages": [
        {"role": "system", "content": "Use tools when useful."},
        {"role": "user", "content": "Compute 3/7 to 4 places."}]},
    {"name": "unicode", "messages": [
        {"role": "user", "content": "Héllo, 日本語 and emoji 😀👍🏽!\nA \"quoted\" word, an 'apostrophe', a back\\slash and a\ttab."},
        {"role": "assistant", "content": "Ça va très bien — merci.\n\n二つ目の段落。 🎉"}]},
    {"name": "empty_content", "messages": [
        {"role": "system", "content": ""},
        {"role": "user", "content": "Say nothing."},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": ""}]},
    {"name": "whitespace", "messages": [
        {"role": "system", "content": "  Padded system.\n"},
        {"role": "user", "content": "   padded question  \n"},
        {"role": "assistant", "content": "\n  padded answer \n\n"}]},
    {"name": "wrong_order", "messages": [
        {"role": "user", "content": "First."},
        {"role": "user", "content": "Second, again a user."}]},
    {"name": "unknown_role", "messages": [
        {"role": "user", "content": "Tell a story."},
        {"role": "narrator", "content": "Once upon a time."}]},
    {"name": "no_thinking", "kwargs": {"enable_thinking": False}, "messages": [
        {"role": "user", "content": "Quick answer: capital of France?"}]},
    {"name": "date_kwarg", "kwargs": {"date_string": "26 Jul 2024", "enable_thinking": True}, "messages": [
        {"role": "system", "content": "Today matters."},
        {"role": "user", "content": "What day is it?"},
        {"role": "assistant", "content": "I cannot know that."}]},
    {"name": "system_only", "messages": [{"role": "system", "content": "Only a system prompt."}]},
]


# ---- chat data for `accel_data prepare` (see prepare_expect)
SFT_MESSAGES = [
    {"messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."}]},
    {"messages": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Name a prime number."},
        {"role": "assistant", "content": "7"},
        {"role": "user", "content": "Another one, bigger than 10?"},
        {"role": "assistant", "content": "13 is prime."}]},
    {"messages": [
        {"role": "user", "content": "Traduis « bonjour » en japonais, s'il te plaît."},
        {"role": "assistant", "content": "« Bonjour » se dit こんにちは (konnichiwa). 😊"}]},
    {"messages": [
        {"role": "user", "content": "Write a haiku about training."},
        {"role": "assistant", "content": "Loss falls like snow,\ngradients drift through the night,\nweights wake up at dawn."}]},
    {"messages": [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Count to three."},
        {"role": "assistant", "content": "One, two, three."},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You're welcome."}]},
    {"messages": [
        {"role": "system", "content": "You write code."},
        {"role": "user", "content": "Print a quoted string in C."},
        {"role": "assistant", "content": "puts(\"say \\\"hi\\\"\\n\");\n\nThe backslashes escape the quotes."}]},    {"messages": [
        {"role": "user", "content": "Reply starting with a blank line."},
        {"role": "assistant", "content": "\n\nThis answer starts with a blank line, so a token crosses into the prompt."}]},
]
SFT_PC = [
    {"prompt": [{"role": "user", "content": "What colour is the sky?"}],
     "completion": [{"role": "assistant", "content": "Blue, on a clear day."}]},
    {"prompt": [{"role": "system", "content": "Reply in French."},
                {"role": "user", "content": "Good morning!"}],
     "completion": [{"role": "assistant", "content": "Bonjour !"}]},
    {"prompt": [{"role": "user", "content": "2 + 2 = ?"}],
     "completion": [{"role": "assistant", "content": "4"}]},
    {"prompt": [{"role": "user", "content": "Say something with an emoji."}],
     "completion": [{"role": "assistant", "content": "Here you go: 🚀✨"}]},
]


# ---- rendering, as apply_chat_template does it
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}


def normalize(messages):
    """apply_chat_template's _normalize_chat_messages: drop the keys whose value is None."""
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def render(source, messages, add_generation_prompt, tools=None, kwargs=None, special=SPECIAL):
    """(text, generation spans in code points) of transformers' renderer."""
    rendered, spans = render_jinja_template(
        conversations=[normalize(messages)], tools=tools, chat_template=source,
        return_assistant_tokens_mask=True, add_generation_prompt=add_generation_prompt,
        **{**special, **(kwargs or {})})
    return rendered[0], spans[0]


def u8(text, i):
    """The UTF-8 byte offset of code point i of text."""
    return len(text[:i].encode("utf-8"))


os.makedirs(path("templates"), exist_ok=True)
for name, source in TEMPLATES.items():
    with open(path("templates", name + ".jinja"), "w", encoding="utf-8") as f:
        f.write(source)
write_json("cases.json", CASES)

expected = []
for name, source in TEMPLATES.items():
    has_generation = "{%- generation" in source or "{% generation" in source
    for case in CASES:
        for agp in (False, True):
            rec = {"template": name, "case": case["name"], "add_generation_prompt": agp}
            try:
                text, spans = render(source, case["messages"], agp, case.get("tools"), case.get("kwargs"))
            except Exception as e:          # raise_exception() in the template, mostly
                rec["error"] = str(e)
            else:
                rec["output"] = text
                if has_generation:
                    rec["generation"] = [[u8(text, a), u8(text, b)] for a, b in spans]
                else:
                    assert not spans
            expected.append(rec)
write_json("expected.json", expected)

# ---- a tiny byte-level BPE tokenizer (tests/data_fixtures.py's tinybpe, with chat tokens)
CHAT_TOKENS = ["<s>", "</s>", "<|im_start|>", "<|im_end|>", "<|start_header_id|>",
               "<|end_header_id|>", "<|eot_id|>", "<think>", "</think>"]
texts = []
for case in CASES:
    for m in case["messages"]:
        texts += [m["role"], m.get("content") or ""]
for line in SFT_MESSAGES:
    texts += [m["content"] for m in line["messages"]]
for line in SFT_PC:
    texts += [m["content"] for m in line["prompt"] + line["completion"]]
corpus = texts * 4 + [
    "system\nuser\nassistant\ntool\n",
    "The quick brown fox jumps over the lazy dog.",
    "A training run reads tokens, masks the prompt and learns from the answers.",
    "Current date: 01 Jan 2025\n\n",
] * 20
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=2, special_tokens=CHAT_TOKENS,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
tok.train_from_iterator(corpus, trainer)
os.makedirs(path("tok"), exist_ok=True)
tok.save(path("tok", "tokenizer.json"))
tok_config = {
    "tokenizer_class": "PreTrainedTokenizerFast",
    "bos_token": "<s>",                                 # the plain string form
    "eos_token": {"__type": "AddedToken", "content": "<|im_end|>", "lstrip": False,
                  "normalized": False, "rstrip": False, "single_word": False, "special": True},
    "clean_up_tokenization_spaces": False,
    "model_max_length": 4096,
}
write_json(os.path.join("tok", "tokenizer_config.json"), tok_config)

raw = Tokenizer.from_file(path("tok", "tokenizer.json"))
fast = PreTrainedTokenizerFast(tokenizer_file=path("tok", "tokenizer.json"))
hf = AutoTokenizer.from_pretrained(path("tok"))
assert hf.bos_token == "<s>" and hf.eos_token == "<|im_end|>", (hf.bos_token, hf.eos_token)
assert hf.chat_template is None
for t in CHAT_TOKENS:
    assert hf.convert_tokens_to_ids(t) == raw.token_to_id(t) == fast.convert_tokens_to_ids(t)
TOK_SPECIAL = {"bos_token": hf.bos_token, "eos_token": hf.eos_token}   # what apply_chat_template passes


def encode(text):
    """ids and code-point offsets of the whole text; transformers must agree."""
    enc = raw.encode(text, add_special_tokens=False)
    assert hf(text, add_special_tokens=False)["input_ids"] == enc.ids
    assert fast(text, add_special_tokens=False)["input_ids"] == enc.ids
    assert raw.decode(enc.ids, skip_special_tokens=False) == text
    return enc.ids, enc.offsets


def overlap_mask(offsets, spans):
    """1 for a token whose [start, end) overlaps a span: token_end > start and token_start < end."""
    return [int(any(e > a and s < b for a, b in spans)) for s, e in offsets]


# ---- what `accel_data prepare` writes for chat data
def prepare_expect(stem, template, lines, spans_of):
    ids_all, mask_all, counts, straddling = [], [], [], 0
    for line in lines:
        text, spans = spans_of(TEMPLATES[template], line)
        ids, offsets = encode(text)
        mask = overlap_mask(offsets, spans)
        assert any(mask) and not all(mask)
        straddling += sum(s < a < e or s < b < e for s, e in offsets for a, b in spans)
        ids_all += ids
        mask_all += mask
        counts.append(len(ids))
    with open(path("%s.%s.u32" % (stem, template)), "wb") as f:
        f.write(struct.pack("<%dI" % len(ids_all), *ids_all))
    with open(path("%s.%s.mask" % (stem, template)), "wb") as f:
        f.write(bytes(mask_all))
    # the last SFT_MESSAGES line makes a "\n\n" token start in the prompt and end in the answer
    # (not with llama3, which trims the content)
    assert bool(straddling) == (lines is SFT_MESSAGES and template != "llama3"), (stem, template)
    return counts


def generation_spans(source, line):
    """Templates with {% generation %}: HF's assistant_masks spans; checked against apply_chat_template."""
    messages = line["messages"]
    text, spans = render(source, messages, False, special=TOK_SPECIAL)
    got = hf.apply_chat_template(messages, chat_template=source, tokenize=True, return_dict=True,
                                 return_assistant_tokens_mask=True)
    ids, offsets = encode(text)
    assert got["input_ids"] == ids
    assert got["assistant_masks"] == overlap_mask(offsets, spans)
    return text, spans


def prefix_spans(source, line):
    """Templates without generation tags: assistant message i spans [len(p_i), len(q_i)),
    p_i = render(messages[:i], add_generation_prompt=True), q_i = render(messages[:i+1])."""
    messages = line["messages"]
    text, _ = render(source, messages, False, special=TOK_SPECIAL)
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        p, _ = render(source, messages[:i], True, special=TOK_SPECIAL)
        q, _ = render(source, messages[:i + 1], False, special=TOK_SPECIAL)
        assert q.startswith(p) and text.startswith(q), (source[:40], i)
        spans.append((len(p), len(q)))
    return text, spans


def prompt_completion_spans(source, line):
    """TRL's conversational prompt-completion: the completion spans [len(p), len(full))."""
    p, _ = render(source, line["prompt"], True, special=TOK_SPECIAL)
    full, _ = render(source, line["prompt"] + line["completion"], False, special=TOK_SPECIAL)
    assert full.startswith(p)
    return full, [(len(p), len(full))]


for name, lines in (("sft_messages.jsonl", SFT_MESSAGES), ("sft_pc.jsonl", SFT_PC)):
    with open(path(name), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
counts = {
    "sft_messages.chatml_generation": prepare_expect("sft_messages", "chatml_generation", SFT_MESSAGES, generation_spans),
    "sft_messages.chatml": prepare_expect("sft_messages", "chatml", SFT_MESSAGES, prefix_spans),
    "sft_messages.llama3": prepare_expect("sft_messages", "llama3", SFT_MESSAGES, prefix_spans),
    "sft_pc.chatml": prepare_expect("sft_pc", "chatml", SFT_PC, prompt_completion_spans),
}

# ---- a normalizing tokenizer (NFC, as Qwen2's): with decomposed characters the tokens' bytes add up
# to the normalized text, not the rendering, so accel carries the trained spans into it; the answers
# start with a blank line, so a "\n\n\n" token straddles the assistant header and the answer
tok.normalizer = normalizers.NFC()
os.makedirs(path("tok_nfc"), exist_ok=True)
tok.save(path("tok_nfc", "tokenizer.json"))
write_json(os.path.join("tok_nfc", "tokenizer_config.json"), tok_config)
hf_nfc = AutoTokenizer.from_pretrained(path("tok_nfc"))
SFT_NFC = [
    {"messages": [{"role": "user", "content": "Cafe\u0301 please"},
                  {"role": "assistant", "content": "\n\nSure, cafe\u0301 it is."}]},
    {"messages": [{"role": "system", "content": "Be nice"}, {"role": "user", "content": "x"},
                  {"role": "assistant", "content": "\n\nYes e\u0301"},
                  {"role": "user", "content": "more\u0301"}, {"role": "assistant", "content": "ok\n"}]},
    {"messages": [{"role": "user", "content": "plain"}, {"role": "assistant", "content": "answer"}]},
]
nfc_ids, nfc_mask = [], []
for line in SFT_NFC:
    got = hf_nfc.apply_chat_template(line["messages"], chat_template=TEMPLATES["chatml_generation"], tokenize=True,
                                     return_dict=True, return_assistant_tokens_mask=True)
    nfc_ids += got["input_ids"]
    nfc_mask += got["assistant_masks"]
text0, _ = render(TEMPLATES["chatml_generation"], SFT_NFC[0]["messages"], False, special=TOK_SPECIAL)
assert hf_nfc.decode(hf_nfc(text0, add_special_tokens=False)["input_ids"]) != text0    # NFC rewrote it
with open(path("sft_nfc.jsonl"), "w", encoding="utf-8") as f:
    for line in SFT_NFC:
        f.write(json.dumps(line, ensure_ascii=False) + "\n")
with open(path("sft_nfc.chatml_generation.u32"), "wb") as f:
    f.write(struct.pack("<%dI" % len(nfc_ids), *nfc_ids))
with open(path("sft_nfc.chatml_generation.mask"), "wb") as f:
    f.write(bytes(nfc_mask))
counts["sft_nfc.chatml_generation"] = [len(nfc_ids)]
write_json("e2e.json", counts)
with open(path("VERSION"), "w") as f:
    f.write("transformers %s, jinja2 %s, tokenizers %s, tok vocab %d\n" % (
        transformers.__version__, jinja2.__version__, tokenizers.__version__, raw.get_vocab_size()))
print("wrote the chat fixtures in", out, "(transformers %s, jinja2 %s, tokenizers %s)" % (
    transformers.__version__, jinja2.__version__, tokenizers.__version__))
