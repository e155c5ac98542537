/*
 * Samples every sequence of a decode step in one call.
 *
 * node-llama-cpp samples each sequence through an async call of its own: a libuv work item and a promise per
 * sequence per step, each copying the whole vocabulary into a candidate array (152k entries for Qwen) before its
 * samplers run. With many sequences on a GPU that host work, not the GPU's, sets the step time. sampleStep() takes
 * the step's sequences together, spreads them over at most MAX_SLICES work items (a small step is sampled inline),
 * and for each reads the logits row once: greedy is an argmax over the row, and otherwise the top-k candidates are
 * picked from the row with a small heap before llama.cpp's own top-p, min-p, temperature and dist samplers run on
 * those k alone. That is the chain node-llama-cpp builds (top-k first, then the same samplers), so a seeded request
 * draws the same tokens; only exact ties between logits may order differently.
 *
 * Each sequence has its own state (sequenceSampler(): the chain and the dist sampler with its random state, kept
 * across steps and re-seeded only when the seed changes, as node-llama-cpp's sampler does). The logits are read under
 * node-llama-cpp's own sampling mutex, so its sampling of other sequences in the same step (those with a grammar,
 * penalties or a bias, which stay on its path) never races this.
 */
#include "llama-context.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* llama_token_data and llama_token_data_array from llama.h. */
typedef struct {
  int32_t id;
  float logit;
  float p;
} token_data;

typedef struct {
  token_data *data;
  size_t size;
  int64_t selected;
  bool sorted;
} token_data_array;

struct chain_params {
  bool no_perf;
};

/* The most candidates the heap picks; a larger top-k stays on node-llama-cpp's path. */
#define MAX_TOP_K 256
#define MAX_SLICES 4
/* Sequences a work item takes before another one is worth starting. */
#define SEQUENCES_PER_SLICE 8
/*
 * A step with at most this many logits (a sequence of a 152k vocabulary, a few of a 49k one) is sampled inline, on the
 * calling thread: reading it takes ~0.1 ms, less than handing it to a libuv thread and waking the loop again. A caller
 * whose model runs on the CPU asks for every step inline: there the work items' threads would wait for cores that the
 * compute threads hold (spinning between steps), and each hop cost more than the sampling it moved.
 */
#define INLINE_LOGITS (1 << 18)

static struct {
  float *(*logits_ith)(void *ctx, int32_t i);
  const void *(*get_model)(const void *ctx);
  const void *(*model_vocab)(const void *model);
  int32_t (*vocab_n_tokens)(const void *vocab);
  void *(*chain_init)(struct chain_params params);
  void (*chain_add)(void *chain, void *sampler);
  void *(*top_p)(float p, size_t min_keep);
  void *(*min_p)(float p, size_t min_keep);
  void *(*temp)(float t);
  void *(*dist)(uint32_t seed);
  void (*apply)(void *sampler, token_data_array *candidates);
  void (*free)(void *sampler);
} llama;

static bool load_llama(void *lib) {
  if (llama.free) return true;
  llama.logits_ith = dlsym(lib, "llama_get_logits_ith");
  llama.get_model = dlsym(lib, "llama_get_model");
  llama.model_vocab = dlsym(lib, "llama_model_get_vocab");
  llama.vocab_n_tokens = dlsym(lib, "llama_vocab_n_tokens");
  llama.chain_init = dlsym(lib, "llama_sampler_chain_init");
  llama.chain_add = dlsym(lib, "llama_sampler_chain_add");
  llama.top_p = dlsym(lib, "llama_sampler_init_top_p");
  llama.min_p = dlsym(lib, "llama_sampler_init_min_p");
  llama.temp = dlsym(lib, "llama_sampler_init_temp");
  llama.dist = dlsym(lib, "llama_sampler_init_dist");
  llama.apply = dlsym(lib, "llama_sampler_apply");
  void (*free_sampler)(void *) = dlsym(lib, "llama_sampler_free");
  bool complete = llama.logits_ith && llama.get_model && llama.model_vocab && llama.vocab_n_tokens && llama.chain_init &&
                  llama.chain_add && llama.top_p && llama.min_p && llama.temp && llama.dist && llama.apply && free_sampler;
  /* Set last: it marks the table complete. */
  if (complete) llama.free = free_sampler;
  return complete;
}

struct step_context {
  struct addon_context_tail *addon;
  int32_t n_vocab;
};

/* What a sequence asks of each step; temperature <= 0 is greedy. */
struct sampling {
  float temperature, top_p, min_p;
  int32_t top_k;
  uint32_t seed;
};

struct sequence_sampler {
  /* top-p, min-p and temperature, for the values in `built`. */
  void *chain;
  struct sampling built;
  void *dist;
  uint32_t dist_seed;
  token_data candidates[MAX_TOP_K];
};

static void free_sequence_sampler(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  struct sequence_sampler *sampler = data;
  if (sampler->chain) llama.free(sampler->chain);
  if (sampler->dist) llama.free(sampler->dist);
  free(sampler);
}

/* The chain node-llama-cpp builds after top-k, for these values (rebuilt only when they change). */
static void configure(struct sequence_sampler *sampler, const struct sampling *want) {
  const struct sampling *has = &sampler->built;
  if (!sampler->chain || has->temperature != want->temperature || has->top_p != want->top_p || has->min_p != want->min_p) {
    if (sampler->chain) llama.free(sampler->chain);
    sampler->chain = llama.chain_init((struct chain_params){.no_perf = true});
    if (want->top_p >= 0.0f && want->top_p <= 1.0f) llama.chain_add(sampler->chain, llama.top_p(want->top_p, 1));
    if (want->min_p > 0.0f) llama.chain_add(sampler->chain, llama.min_p(want->min_p, 1));
    llama.chain_add(sampler->chain, llama.temp(want->temperature));
    sampler->built = *want;
  }
  if (!sampler->dist || sampler->dist_seed != want->seed) {
    if (sampler->dist) llama.free(sampler->dist);
    sampler->dist = llama.dist(want->seed);
    sampler->dist_seed = want->seed;
  }
}

/* Heap order: the worse candidate is the lower logit, and among equal logits the later token (earlier ones stay). */
static bool worse(const token_data *a, const token_data *b) {
  return a->logit < b->logit || (a->logit == b->logit && a->id > b->id);
}

static void sift_down(token_data *heap, int32_t size, int32_t at) {
  for (;;) {
    int32_t child = 2 * at + 1;
    if (child >= size) return;
    if (child + 1 < size && worse(&heap[child + 1], &heap[child])) child++;
    if (!worse(&heap[child], &heap[at])) return;
    token_data swap = heap[at];
    heap[at] = heap[child];
    heap[child] = swap;
    at = child;
  }
}

static int better_first(const void *a, const void *b) {
  return worse(a, b) ? 1 : worse(b, a) ? -1 : 0;
}

/*
 * Logits are scanned in blocks of 16: a block with none above the bar (the heap's worst logit, or the best so far) is
 * skipped with four vector comparisons, and most of a row is. GCC's and Clang's vector extensions compile this to SSE
 * or NEON; on a 152k-token row the top-k scan went from 96–135 to 23 µs and the argmax from 54 to 22 µs (2-core
 * EPYC). Within a block that has one, each logit is taken in order as before, so the picks are the same.
 */
#define BLOCK 16
typedef float float4 __attribute__((vector_size(16)));
typedef int32_t int4 __attribute__((vector_size(16)));

/* Whether any of the BLOCK logits from `x` is above `bar`. */
static inline bool any_above(const float *x, float bar) {
  float4 a, b, c, d;
  memcpy(&a, x, sizeof a);
  memcpy(&b, x + 4, sizeof b);
  memcpy(&c, x + 8, sizeof c);
  memcpy(&d, x + 12, sizeof d);
  const float4 bars = {bar, bar, bar, bar};
  const int4 above = (a > bars) | (b > bars) | (c > bars) | (d > bars);
  return (above[0] | above[1] | above[2] | above[3]) != 0;
}

/* Offers logits [from, to) to the heap of the k best; returns the heap's new worst logit. */
static float offer(const float *logits, int32_t from, int32_t to, int32_t k, token_data *heap, float floor) {
  for (int32_t id = from; id < to; id++) {
    if (logits[id] <= floor) continue;
    heap[0] = (token_data){id, logits[id], 0.0f};
    sift_down(heap, k, 0);
    floor = heap[0].logit;
  }
  return floor;
}

/* The k highest logits of the row, best first. */
static void top_k(const float *logits, int32_t n_vocab, int32_t k, token_data *out) {
  for (int32_t id = 0; id < k; id++) out[id] = (token_data){id, logits[id], 0.0f};
  for (int32_t at = k / 2 - 1; at >= 0; at--) sift_down(out, k, at);
  float floor = out[0].logit;
  int32_t id = k;
  for (; id + BLOCK <= n_vocab; id += BLOCK) {
    if (any_above(logits + id, floor)) floor = offer(logits, id, id + BLOCK, k, out, floor);
  }
  offer(logits, id, n_vocab, k, out, floor);
  qsort(out, (size_t)k, sizeof *out, better_first);
}

/* The first of the highest logits among [from, to) and the best so far, as llama.cpp's greedy sampler picks it. */
static void best_of(const float *logits, int32_t from, int32_t to, int32_t *best, float *best_logit) {
  for (int32_t id = from; id < to; id++) {
    if (logits[id] > *best_logit) {
      *best_logit = logits[id];
      *best = id;
    }
  }
}

static int32_t argmax(const float *logits, int32_t n_vocab) {
  int32_t best = 0;
  float best_logit = logits[0];
  int32_t id = 0;
  for (; id + BLOCK <= n_vocab; id += BLOCK) {
    if (any_above(logits + id, best_logit)) best_of(logits, id, id + BLOCK, &best, &best_logit);
  }
  best_of(logits, id, n_vocab, &best, &best_logit);
  return best;
}

/* The next token from one logits row; -1 when there is none. */
static int32_t sample(struct sequence_sampler *sampler, const struct sampling *want, const float *logits, int32_t n_vocab) {
  if (!logits) return -1;
  if (want->temperature <= 0.0f) return argmax(logits, n_vocab);
  int32_t k = want->top_k < n_vocab ? want->top_k : n_vocab;
  top_k(logits, n_vocab, k, sampler->candidates);
  configure(sampler, want);
  token_data_array candidates = {sampler->candidates, (size_t)k, -1, true};
  llama.apply(sampler->chain, &candidates);
  llama.apply(sampler->dist, &candidates);
  if (candidates.selected < 0 || candidates.selected >= (int64_t)candidates.size) return -1;
  return candidates.data[candidates.selected].id;
}

struct step_batch;

struct slice {
  struct step_batch *batch;
  int32_t from, to;
  napi_async_work work;
};

struct step_batch {
  struct step_context *context;
  int32_t count;
  int32_t *indexes;
  struct sampling *wants;
  struct sequence_sampler **samplers;
  const float **rows;
  int32_t *tokens;
  napi_deferred deferred;
  /* Keep the JavaScript context and the samplers alive while the work runs. */
  napi_ref context_ref, samplers_ref;
  int slices_left;
  bool failed;
  struct slice slices[MAX_SLICES];
};

static void free_batch(napi_env env, struct step_batch *batch) {
  for (int i = 0; i < MAX_SLICES; i++) {
    if (batch->slices[i].work) napi_delete_async_work(env, batch->slices[i].work);
  }
  if (batch->context_ref) napi_delete_reference(env, batch->context_ref);
  if (batch->samplers_ref) napi_delete_reference(env, batch->samplers_ref);
  free(batch->indexes);
  free(batch->wants);
  free(batch->samplers);
  free(batch->rows);
  free(batch->tokens);
  free(batch);
}

static void run_slice(napi_env env, void *data) {
  (void)env;
  struct slice *slice = data;
  struct step_batch *batch = slice->batch;
  struct addon_context_tail *addon = batch->context->addon;
  int32_t n_vocab = batch->context->n_vocab;
  pthread_mutex_lock(&addon->sampler_mutex);
  for (int32_t i = slice->from; i < slice->to; i++) {
    batch->rows[i] = llama.logits_ith(addon->ctx, batch->indexes[i]);
  }
  pthread_mutex_unlock(&addon->sampler_mutex);
  for (int32_t i = slice->from; i < slice->to; i++) {
    batch->tokens[i] = sample(batch->samplers[i], &batch->wants[i], batch->rows[i], n_vocab);
  }
}

static void finish_slice(napi_env env, napi_status status, void *data) {
  struct step_batch *batch = ((struct slice *)data)->batch;
  if (status != napi_ok) batch->failed = true;
  if (--batch->slices_left > 0) return;
  if (batch->failed) {
    napi_value message, error;
    napi_create_string_utf8(env, "sampleStep: a work item was cancelled", NAPI_AUTO_LENGTH, &message);
    napi_create_error(env, NULL, message, &error);
    napi_reject_deferred(env, batch->deferred, error);
  } else {
    napi_value buffer, tokens;
    void *bytes = NULL;
    napi_create_arraybuffer(env, (size_t)batch->count * sizeof(int32_t), &bytes, &buffer);
    memcpy(bytes, batch->tokens, (size_t)batch->count * sizeof(int32_t));
    napi_create_typedarray(env, napi_int32_array, (size_t)batch->count, buffer, 0, &tokens);
    napi_resolve_deferred(env, batch->deferred, tokens);
  }
  free_batch(env, batch);
}

/*
 * stepContext(addonContext, addonModel, nCtx, nSeqMax, libllamaPath) → a handle for sampleStep(), or null when the
 * context cannot be identified safely or libllama lacks a function used here.
 */
static napi_value step_context(napi_env env, napi_callback_info info) {
  napi_value null_value;
  napi_get_null(env, &null_value);
  void *lib = NULL;
  struct addon_context_tail *addon = addon_context_from_args(env, info, "stepContext: expects the native context and model, nCtx, nSeqMax and libllama's path", &lib);
  /* Bad arguments leave an exception pending, which N-API throws whatever the return value. */
  if (!addon || !load_llama(lib)) return null_value;
  struct step_context *context = calloc(1, sizeof *context);
  if (!context) return null_value;
  context->addon = addon;
  context->n_vocab = llama.vocab_n_tokens(llama.model_vocab(llama.get_model(addon->ctx)));
  napi_value handle;
  /* One per context, never freed: a few bytes, and a sampleStep() in flight may still hold it. */
  napi_create_external(env, context, NULL, NULL, &handle);
  return handle;
}

/* sequenceSampler() → one sequence's sampling state, freed with the handle. */
static napi_value sequence_sampler(napi_env env, napi_callback_info info) {
  (void)info;
  struct sequence_sampler *sampler = calloc(1, sizeof *sampler);
  if (!sampler) return throw_error(env, "sequenceSampler: out of memory");
  napi_value handle;
  napi_create_external(env, sampler, free_sequence_sampler, NULL, &handle);
  return handle;
}

/*
 * sampleStep(stepContext, jsContext, batchIndexes: Int32Array, sampling: Float64Array, samplers: external[], inline?: boolean)
 * → Promise<Int32Array>: the token of each sequence (-1: none). `sampling` holds five numbers per sequence:
 * temperature, top-k (1..256), top-p, min-p, seed. Call it once the step's decode has finished. A step of at most
 * INLINE_LOGITS logits, or any step when `inline` is true, is sampled before the call returns (the promise is then
 * already resolved).
 */
static napi_value sample_step(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  const char *usage = "sampleStep: expects a step context, the native context, Int32Array indexes, Float64Array sampling, samplers and optionally whether to sample inline";
  bool inline_all = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5 ||
      (argc == 6 && napi_get_value_bool(env, argv[5], &inline_all) != napi_ok)) {
    return throw_error(env, usage);
  }
  struct step_context *context = NULL;
  napi_typedarray_type index_type, sampling_type;
  size_t count = 0, sampling_count = 0;
  void *index_data = NULL, *sampling_data = NULL;
  uint32_t sampler_count = 0;
  if (napi_get_value_external(env, argv[0], (void **)&context) != napi_ok || !context ||
      napi_get_typedarray_info(env, argv[2], &index_type, &count, &index_data, NULL, NULL) != napi_ok || index_type != napi_int32_array ||
      napi_get_typedarray_info(env, argv[3], &sampling_type, &sampling_count, &sampling_data, NULL, NULL) != napi_ok ||
      sampling_type != napi_float64_array || sampling_count != count * 5 ||
      napi_get_array_length(env, argv[4], &sampler_count) != napi_ok || sampler_count != count || count == 0) {
    return throw_error(env, usage);
  }
  struct step_batch *batch = calloc(1, sizeof *batch);
  if (!batch) return throw_error(env, "sampleStep: out of memory");
  batch->context = context;
  batch->count = (int32_t)count;
  batch->indexes = malloc(count * sizeof *batch->indexes);
  batch->wants = malloc(count * sizeof *batch->wants);
  batch->samplers = malloc(count * sizeof *batch->samplers);
  batch->rows = malloc(count * sizeof *batch->rows);
  batch->tokens = malloc(count * sizeof *batch->tokens);
  if (!batch->indexes || !batch->wants || !batch->samplers || !batch->rows || !batch->tokens) {
    free_batch(env, batch);
    return throw_error(env, "sampleStep: out of memory");
  }
  memcpy(batch->indexes, index_data, count * sizeof *batch->indexes);
  const double *numbers = sampling_data;
  for (size_t i = 0; i < count; i++) {
    const double *n = numbers + i * 5;
    if (!(n[1] >= 1 && n[1] <= MAX_TOP_K)) {
      free_batch(env, batch);
      return throw_error(env, "sampleStep: top-k must be 1 to 256");
    }
    batch->wants[i] = (struct sampling){(float)n[0], (float)n[2], (float)n[3], (int32_t)n[1], (uint32_t)n[4]};
    napi_value element;
    if (napi_get_element(env, argv[4], (uint32_t)i, &element) != napi_ok ||
        napi_get_value_external(env, element, (void **)&batch->samplers[i]) != napi_ok || !batch->samplers[i]) {
      free_batch(env, batch);
      return throw_error(env, usage);
    }
  }
  napi_create_reference(env, argv[1], 1, &batch->context_ref);
  napi_create_reference(env, argv[4], 1, &batch->samplers_ref);
  napi_value promise, name;
  napi_create_promise(env, &batch->deferred, &promise);
  if (inline_all || count * (size_t)context->n_vocab <= INLINE_LOGITS) {
    struct slice *whole = &batch->slices[0];
    *whole = (struct slice){batch, 0, (int32_t)count, NULL};
    batch->slices_left = 1;
    run_slice(env, whole);
    finish_slice(env, napi_ok, whole);
    return promise;
  }
  int slices = (int)((count + SEQUENCES_PER_SLICE - 1) / SEQUENCES_PER_SLICE);
  if (slices > MAX_SLICES) slices = MAX_SLICES;
  napi_create_string_utf8(env, "kiln.sampleStep", NAPI_AUTO_LENGTH, &name);
  for (int s = 0; s < slices; s++) {
    struct slice *slice = &batch->slices[s];
    slice->batch = batch;
    slice->from = (int32_t)(count * (size_t)s / (size_t)slices);
    slice->to = (int32_t)(count * (size_t)(s + 1) / (size_t)slices);
    napi_create_async_work(env, NULL, name, run_slice, finish_slice, slice, &slice->work);
  }
  batch->slices_left = slices;
  for (int s = 0; s < slices; s++) napi_queue_async_work(env, batch->slices[s].work);
  return promise;
}

/* Adds stepContext, sequenceSampler, sampleStep and maxTopK to the module's exports. */
void define_step_sampler(napi_env env, napi_value exports) {
  napi_value max_top_k;
  napi_create_int32(env, MAX_TOP_K, &max_top_k);
  napi_property_descriptor properties[] = {
    {"stepContext", NULL, step_context, NULL, NULL, NULL, napi_default, NULL},
    {"sequenceSampler", NULL, sequence_sampler, NULL, NULL, NULL, napi_default, NULL},
    {"sampleStep", NULL, sample_step, NULL, NULL, NULL, napi_default, NULL},
    {"maxTopK", NULL, NULL, NULL, NULL, max_top_k, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, 4, properties);
}
