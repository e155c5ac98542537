/* Finding node-llama-cpp's llama_context (see llama-context.h). */
#include "llama-context.h"

#include <dlfcn.h>
#include <string.h>

/* How far into the AddonContext its model pointer is looked for (past the ObjectWrap base). */
#define SCAN_BYTES 512

napi_value throw_error(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

void *loaded_library(const char *path) {
  return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
}

bool get_string(napi_env env, napi_value value, char *out, size_t size) {
  size_t length = 0;
  return napi_get_value_string_utf8(env, value, out, size, &length) == napi_ok && length < size - 1;
}

struct addon_context_tail *find_addon_context(napi_env env, napi_value js_context, napi_value js_model, uint32_t n_ctx,
                                              uint32_t n_seq_max, void *libllama) {
  unsigned char *addon_context = NULL;
  void *addon_model = NULL;
  if (napi_unwrap(env, js_context, (void **)&addon_context) != napi_ok || napi_unwrap(env, js_model, &addon_model) != napi_ok) return NULL;
  ctx_u32_fn llama_n_ctx = (ctx_u32_fn)dlsym(libllama, "llama_n_ctx");
  ctx_u32_fn llama_n_seq_max = (ctx_u32_fn)dlsym(libllama, "llama_n_seq_max");
  if (!llama_n_ctx || !llama_n_seq_max) return NULL;
  const size_t params_size = sizeof(struct llama_context_params);
  for (size_t offset = 0; offset + sizeof(void *) <= SCAN_BYTES; offset += sizeof(void *)) {
    const void *candidate;
    memcpy(&candidate, addon_context + offset, sizeof candidate);
    if (candidate != addon_model) continue;
    struct llama_context_params params;
    memcpy(&params, addon_context + offset + sizeof(void *), params_size);
    /* node-llama-cpp keeps the cells it asked for; llama.cpp pads each sequence's share to 256, so the context may
       hold more than was asked (10,048 × 2 asked, 20,480 held), never fewer, and less than 256 more a sequence. */
    if (params.n_ctx == 0 || params.n_ctx > n_ctx || n_ctx - params.n_ctx >= 256u * n_seq_max || params.n_seq_max != n_seq_max) return NULL;
    struct addon_context_tail *tail = (struct addon_context_tail *)(addon_context + offset + sizeof(void *) + params_size);
    if (!tail->ctx || !tail->context_loaded) return NULL;
    if (llama_n_ctx(tail->ctx) != n_ctx || llama_n_seq_max(tail->ctx) != n_seq_max) return NULL;
    return tail;
  }
  return NULL;
}

struct addon_context_tail *addon_context_from_args(napi_env env, napi_callback_info info, const char *usage, void **lib) {
  size_t argc = 5;
  napi_value argv[5];
  uint32_t n_ctx = 0, n_seq_max = 0;
  char path[4096];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 5 ||
      napi_get_value_uint32(env, argv[2], &n_ctx) != napi_ok || napi_get_value_uint32(env, argv[3], &n_seq_max) != napi_ok ||
      !get_string(env, argv[4], path, sizeof path)) {
    throw_error(env, usage);
    return NULL;
  }
  *lib = loaded_library(path);
  return *lib ? find_addon_context(env, argv[0], argv[1], n_ctx, n_seq_max, *lib) : NULL;
}
