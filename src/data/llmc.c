/* llm.c token shards (karpathy/llm.c, dev/data/data_common.py write_datafile): 256 little-endian
 * int32 of header (header[0] magic, header[1] version, header[2] token count, the rest zero), then
 * the tokens. GPT-2 shards: magic 20240520, version 1, uint16 tokens. Llama-3 shards: magic 20240801,
 * version 7, uint32 tokens. Like llm.c's own loader we require the file size to be exactly
 * header + count tokens: a shorter file was truncated, a longer one is not what the header says. */
#include "build_config.h"

#include <stdio.h>
#include <string.h>

#include "import.h"

static int32_t le32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

int32_t accel_llmc_magic(const unsigned char *head, size_t n)
{
    if (n < 4) return 0;
    int32_t m = le32(head);
    return m == ACCEL_LLMC_MAGIC_GPT2 || m == ACCEL_LLMC_MAGIC_LLAMA3 || m == ACCEL_LLMC_MAGIC_EVAL ? m : 0;
}

accel_status_t accel_llmc_open(FILE *f, const char *path, int64_t size, accel_tokfile_t *out,
                               char *err, size_t errlen)
{
    unsigned char h[ACCEL_LLMC_HEADER_BYTES];
    memset(out, 0, sizeof *out);
    if (size < ACCEL_LLMC_HEADER_BYTES || fseek(f, 0, SEEK_SET) != 0 || fread(h, 1, sizeof h, f) != sizeof h) {
        snprintf(err, errlen, "%s: %lld bytes, shorter than the %d-byte llm.c header (256 int32)\n"
                 "--> hint: the file is truncated; copy or make it again", path, (long long)size,
                 ACCEL_LLMC_HEADER_BYTES);
        return ACCEL_ERR_CORRUPT;
    }
    int32_t magic = le32(h), version = le32(h + 4), count = le32(h + 8);
    if (magic == ACCEL_LLMC_MAGIC_EVAL) {
        snprintf(err, errlen, "%s: an llm.c evaluation file (magic %d: HellaSwag/MMLU examples), not "
                 "a token shard\n--> hint: import the training shards (magic %d or %d); evaluation "
                 "files are not token streams", path, magic, ACCEL_LLMC_MAGIC_GPT2,
                 ACCEL_LLMC_MAGIC_LLAMA3);
        return ACCEL_ERR_INVALID;
    }
    if (magic == ACCEL_LLMC_MAGIC_GPT2 && version == 1) {
        snprintf(out->format, sizeof out->format, "llm.c-gpt2");
        snprintf(out->what, sizeof out->what, "llm.c GPT-2 shard (magic %d v1), uint16 tokens", magic);
        out->itemsize = 2;
        out->vocab = 50257;
        out->document_start = 50256;        /* llm.c's fineweb.py: [<|endoftext|>] + doc */
    } else if (magic == ACCEL_LLMC_MAGIC_LLAMA3 && version == 7) {
        snprintf(out->format, sizeof out->format, "llm.c-llama3");
        snprintf(out->what, sizeof out->what, "llm.c Llama-3 shard (magic %d v7), uint32 tokens", magic);
        out->itemsize = 4;
        out->vocab = 128256;
        out->document_start = 128000;       /* [<|begin_of_text|>] + doc */
    } else if (magic == ACCEL_LLMC_MAGIC_GPT2 || magic == ACCEL_LLMC_MAGIC_LLAMA3) {
        snprintf(err, errlen, "%s: llm.c magic %d with version %d; accel knows version %d for this "
                 "magic\n--> hint: the header is damaged or from a newer llm.c", path, magic, version,
                 magic == ACCEL_LLMC_MAGIC_GPT2 ? 1 : 7);
        return ACCEL_ERR_INVALID;
    } else {
        snprintf(err, errlen, "%s: header magic %d is not an llm.c token shard's (%d for GPT-2, %d "
                 "for Llama-3)\n--> hint: llm.c shards are made by llm.c's dev/data scripts; text goes "
                 "through accel_data prepare", path, magic, ACCEL_LLMC_MAGIC_GPT2, ACCEL_LLMC_MAGIC_LLAMA3);
        return ACCEL_ERR_INVALID;
    }
    out->count = count;
    out->offset = ACCEL_LLMC_HEADER_BYTES;
    int64_t want = ACCEL_LLMC_HEADER_BYTES + (int64_t)count * out->itemsize;
    if (count < 0 || size != want) {
        int64_t have = (size - ACCEL_LLMC_HEADER_BYTES) / out->itemsize;
        snprintf(err, errlen, "%s: the header says %d tokens (%lld bytes with the header) but the file "
                 "has %lld bytes, room for %lld tokens\n--> hint: %s", path, count, (long long)want,
                 (long long)size, (long long)have,
                 size < want ? "the file is truncated; copy or make it again"
                             : "the header count is wrong or data was appended; make the shard again");
        return ACCEL_ERR_CORRUPT;
    }
    return ACCEL_OK;
}
