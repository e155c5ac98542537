/*
 * node-llama-cpp's native objects as kiln's native module reads them: the llama_context behind a JavaScript
 * LlamaContext (node-llama-cpp does not expose it) and the llama.cpp libraries already loaded into the process.
 * Layouts are those of node-llama-cpp 3.22's addon and the llama.cpp release it ships; every pointer found is checked
 * through llama.cpp before use, and any mismatch leaves node-llama-cpp's own behaviour in place.
 */
#ifndef KILN_LLAMA_CONTEXT_H
#define KILN_LLAMA_CONTEXT_H

#include <node_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* llama_context_params as declared in llama.h of the llama.cpp release node-llama-cpp 3.22 ships (enums are int). */
struct llama_context_params {
  uint32_t n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max, n_outputs_max_per_seq;
  int32_t n_threads, n_threads_batch;
  int ctx_type, rope_scaling_type, pooling_type, attention_type, flash_attn_type;
  float rope_freq_base, rope_freq_scale, yarn_ext_factor, yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
  uint32_t yarn_orig_ctx;
  float defrag_thold;
  void *cb_eval, *cb_eval_user_data;
  int type_k, type_v;
  void *abort_callback, *abort_callback_data;
  bool embeddings, offload_kqv, no_perf, op_offload, swa_full, kv_unified;
  void *samplers;
  size_t n_samplers;
  void *ctx_other;
};

/* llama_batch from the same llama.h. */
struct llama_batch {
  int32_t n_tokens;
  void *token, *embd, *pos, *n_seq_id, *seq_id, *logits;
};

/*
 * node-llama-cpp's AddonContext (AddonContext.h) from its llama_context pointer on: std::mutex is a pthread_mutex_t
 * in libstdc++, and these members keep C's layout rules.
 */
struct addon_context_tail {
  void *ctx;
  struct llama_batch batch;
  uint64_t batch_memory_size;
  bool has_batch;
  int32_t batch_n_tokens;
  int n_cur;
  uint64_t loaded_context_memory_size;
  bool context_loaded;
  pthread_mutex_t dispose_mutex;
  /* Held by node-llama-cpp's sampling while it reads a step's logits (llama.cpp reorders its outputs on first read). */
  pthread_mutex_t sampler_mutex;
  bool got_logit, has_logits;
  /* The header declares two more flags here; the shipped binary's bytes there are not them, so nothing later is read. */
};

typedef uint32_t (*ctx_u32_fn)(const void *);

napi_value throw_error(napi_env env, const char *message);

/* A handle on a library the process has already loaded (node-llama-cpp's); NULL when it has not. */
void *loaded_library(const char *path);

bool get_string(napi_env env, napi_value value, char *out, size_t size);

/*
 * The AddonContext behind `js_context` from its llama_context pointer on, or NULL when it is not the expected layout:
 * the AddonContext begins with its AddonModel pointer (matched against `js_model`'s), then the llama_context_params
 * it was created with (checked against the context size and sequence count the caller expects), then the pointer,
 * checked once more through llama.cpp (from `libllama`, already loaded).
 */
struct addon_context_tail *find_addon_context(napi_env env, napi_value js_context, napi_value js_model, uint32_t n_ctx,
                                              uint32_t n_seq_max, void *libllama);

/*
 * The AddonContext a call names with its five arguments (addonContext, addonModel, nCtx, nSeqMax, libllamaPath), and
 * libllama's handle in `*lib`. NULL when it cannot be identified safely or libllama is not loaded; NULL with an
 * exception pending (`usage` its message) when the arguments are not those.
 */
struct addon_context_tail *addon_context_from_args(napi_env env, napi_callback_info info, const char *usage, void **lib);

#endif
