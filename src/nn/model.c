/* Model registry: built-in models by name, user models from a plugin shared library that exports
 * `const accel_model_ops_t accel_model_plugin`. */
#include "build_config.h"

#include <dlfcn.h>
#include <string.h>

#include "accel/log.h"
#include "accel/model.h"
#include "gpt_cuda.h"

static const accel_model_ops_t *const g_builtin[] = { &accel_model_mlp, &accel_model_gpt,
                                                        &accel_model_llama };

static accel_status_t find_ops(const accel_config_t *cfg, const accel_model_ops_t **ops)
{
    if (cfg->model.plugin[0]) {
        void *lib = dlopen(cfg->model.plugin, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            ACCEL_ERROR0("cannot load model plugin '%s': %s", cfg->model.plugin, dlerror());
            return ACCEL_ERR_NOT_FOUND;
        }
        *ops = dlsym(lib, "accel_model_plugin");
        if (!*ops) {
            ACCEL_ERROR0("model plugin '%s' does not export 'accel_model_plugin'\n"
                         "--> hint: define 'const accel_model_ops_t accel_model_plugin = {...};'",
                         cfg->model.plugin);
            return ACCEL_ERR_INVALID;
        }
        if ((*ops)->abi != ACCEL_MODEL_ABI) {
            ACCEL_ERROR0("model plugin '%s' was built for model interface version %u, this accel has "
                         "version %u\n--> hint: rebuild the plugin against this accel's headers",
                         cfg->model.plugin, (*ops)->abi, ACCEL_MODEL_ABI);
            return ACCEL_ERR_INVALID;
        }
        return ACCEL_OK;     /* the library stays loaded for the life of the process */
    }
    for (size_t i = 0; i < sizeof g_builtin / sizeof g_builtin[0]; i++)
        if (!strcmp(g_builtin[i]->name, cfg->model.name)) { *ops = g_builtin[i]; return ACCEL_OK; }
    ACCEL_ERROR0("model '%s' is not built into this version of accel", cfg->model.name);
    return ACCEL_ERR_UNSUPPORTED;
}

bool accel_model_runs_on(const accel_config_t *cfg, accel_device_kind_t device, char *why,
                         size_t whylen)
{
    if (device == ACCEL_DEVICE_CPU) return true;
    char note[256];
    return accel_gpt_cuda_check_config(cfg, why, whylen, note, sizeof note) == ACCEL_OK;
}

accel_status_t accel_model_create(const accel_config_t *cfg, accel_model_t *model)
{
    return accel_model_create_on(cfg, ACCEL_DEVICE_CPU, model);
}

accel_status_t accel_model_create_on(const accel_config_t *cfg, accel_device_kind_t device,
                                     accel_model_t *model)
{
    memset(model, 0, sizeof *model);
    accel_layout_init(&model->layout);
    if (device == ACCEL_DEVICE_CUDA) {
        char why[512], note[512];
        if (accel_gpt_cuda_check_config(cfg, why, sizeof why, note, sizeof note) != ACCEL_OK) {
            ACCEL_ERROR0("%s", why);
            return ACCEL_ERR_UNSUPPORTED;
        }
        if (note[0]) ACCEL_WARN0("%s", note);
        model->ops = !strcmp(cfg->model.name, "llama") ? &accel_model_llama_cuda : &accel_model_gpt_cuda;
    } else {
        ACCEL_CHECK(find_ops(cfg, &model->ops));
        /* Only the built-in transformers know which activations to drop and rebuild. */
        if (cfg->train.recompute_id != ACCEL_RECOMPUTE_NONE && model->ops != &accel_model_gpt &&
            model->ops != &accel_model_llama) {
            ACCEL_ERROR0("train.recompute=%s: model '%s' has no activation recompute (the built-in "
                         "gpt and llama have)\n--> hint: set train.recompute=none, or lower the "
                         "micro-batch (train.micro_batch, train.grad_accum)", cfg->train.recompute,
                         model->ops->name);
            return ACCEL_ERR_UNSUPPORTED;
        }
    }
    /* Positions per document reach only the models that read accel_batch_t.positions. */
    if (cfg->data.document_mask && model->ops != &accel_model_gpt && model->ops != &accel_model_llama &&
        model->ops != &accel_model_gpt_cuda && model->ops != &accel_model_llama_cuda) {
        ACCEL_ERROR0("data.document_mask=true: model '%s' does not read per-document positions (the "
                     "built-in gpt and llama do)\n--> hint: set data.document_mask=false",
                     model->ops->name);
        return ACCEL_ERR_UNSUPPORTED;
    }
    accel_status_t st = model->ops->create(cfg, &model->layout, &model->state);
    if (st != ACCEL_OK) {
        accel_layout_free(&model->layout);
        return st;
    }
    if (model->ops->logits) {
        model->vocab = cfg->model.vocab;
        model->context = cfg->model.context;
    }
    return ACCEL_OK;
}

void accel_model_destroy(accel_model_t *model)
{
    if (model->ops && model->state) model->ops->destroy(model->state);
    accel_layout_free(&model->layout);
    memset(model, 0, sizeof *model);
}
