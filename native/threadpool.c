/*
 * A persistent CPU thread pool for a node-llama-cpp context.
 *
 * node-llama-cpp's prebuilt llama.cpp is built without OpenMP and attaches no thread pool to its contexts, so
 * ggml creates and joins its worker threads inside every decode call. For the small steps of token generation that
 * start-up costs more than the extra threads compute. This module creates one ggml thread pool per context and
 * attaches it with llama.cpp's own API (llama_attach_threadpool), as llama.cpp's tools do.
 *
 * The llama_context is found behind the JavaScript context as llama-context.h describes; where it cannot be
 * identified safely nothing is touched and the caller keeps node-llama-cpp's default behaviour.
 *
 * A step that runs on fewer threads than the pool would leave the other workers polling for work through every step
 * of the context (they wake for each graph and are not needed). So the handle keeps one pool per thread count, made
 * when first needed, and use() attaches the one a step's thread count calls for (none for one thread) before the
 * step: ggml pauses the pool it switches away from, whose workers then sleep.
 *
 * The same handle makes decode steps interruptible: llama.cpp's abort callback (checked by ggml between graph nodes)
 * reads a flag that interrupt() sets, so a step can be stopped mid-way; llama_decode then returns 2 and removes the
 * interrupted micro-batch's cells from the KV cache, leaving everything evaluated before it in place.
 *
 * Between steps ggml's workers poll for the next one (~180 ms at llama.cpp's default level on a 2-core EPYC) before they
 * sleep: right for a stream's next step, a core's worth of waste once the model has nothing to do. pause() sends the
 * attached pool's workers to sleep at once; ggml wakes them at the next step. It must not race a step: a worker that
 * sees the pause before the step's signal sleeps through the step and the step waits for it forever, so the caller
 * pauses only while no step of the context is in flight and none can start meanwhile (decode-threads.ts: from the
 * event loop's thread, which starts every step).
 *
 * And it can decode the batch node-llama-cpp has built on the calling thread (decodeNow), which node-llama-cpp only
 * does in a libuv work item: on a CPU whose cores all compute, the thread that queues that work item and then wakes
 * for its result competes with the compute threads at every step (decode-threads.ts says when each is used).
 */
/* dladdr() */
#define _GNU_SOURCE
#include "llama-context.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ggml_threadpool_params from ggml.h (GGML_MAX_N_THREADS = 512). */
struct ggml_threadpool_params {
  bool cpumask[512];
  int n_threads;
  int prio;
  uint32_t poll;
  bool strict_cpu;
  bool paused;
};

typedef void *(*dev_by_type_fn)(int);
typedef void *(*dev_backend_reg_fn)(void *);
typedef void *(*reg_get_proc_address_fn)(void *, const char *);
typedef void *(*threadpool_new_fn)(struct ggml_threadpool_params *);
typedef void (*threadpool_free_fn)(void *);
typedef void (*threadpool_pause_fn)(void *);
typedef void (*attach_fn)(void *, void *, void *);
typedef bool (*abort_callback_fn)(void *);
typedef void (*set_abort_fn)(void *, abort_callback_fn, void *);
typedef int32_t (*decode_fn)(void *, struct llama_batch);
typedef void (*synchronize_fn)(void *);

#define GGML_BACKEND_DEVICE_TYPE_CPU 0

#define MAX_THREADS 512

struct attached {
  void *ctx;
  /* node-llama-cpp's context: its batch, for decode_now(). */
  struct addon_context_tail *addon;
  decode_fn decode;
  synchronize_fn synchronize;
  attach_fn attach;
  threadpool_new_fn new_pool;
  threadpool_free_fn free_pool;
  /* ggml_threadpool_pause, from the library ggml_threadpool_new is in; NULL when not found (pause() does nothing). */
  threadpool_pause_fn pause_pool;
  uint32_t poll;
  uint32_t max_threads;
  /* The thread count whose pool is attached (1: none). */
  uint32_t current;
  /* pools[n]: the pool of n threads once made (n >= 2). */
  void *pools[MAX_THREADS + 1];
  /* Read by the compute thread between graph nodes, set from JavaScript. The block is never freed (one per context). */
  atomic_bool interrupt;
};

static bool should_abort(void *data) {
  return atomic_load_explicit(&((struct attached *)data)->interrupt, memory_order_relaxed);
}

/* The pool of `threads` threads, made on first use; NULL when it cannot be made. */
static void *pool_of(struct attached *handle, uint32_t threads) {
  if (!handle->pools[threads]) {
    struct ggml_threadpool_params params;
    memset(&params, 0, sizeof params);
    params.n_threads = (int)threads;
    params.poll = handle->poll;
    handle->pools[threads] = handle->new_pool(&params);
  }
  return handle->pools[threads];
}

/*
 * Attaches the pool for `threads` (none for one). When that pool cannot be made (no memory or threads) none is
 * attached, and ggml starts that many threads for each step, as without this module; returns false then.
 */
static bool use_threads(struct attached *handle, uint32_t threads) {
  if (threads < 1) threads = 1;
  if (threads > handle->max_threads) threads = handle->max_threads;
  if (threads == handle->current) return true;
  void *pool = threads > 1 ? pool_of(handle, threads) : NULL;
  handle->attach(handle->ctx, pool, NULL);
  handle->current = threads;
  return threads == 1 || pool != NULL;
}

/*
 * attach(addonContext, addonModel, nCtx, nSeqMax, threads, poll, libllamaPath, libggmlPath)
 * → an opaque handle for use(), release() and interrupt(), or null when the context could not be identified safely.
 * A pool of `threads` workers is attached at once (none for one thread).
 */
static napi_value attach(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 8) return throw_error(env, "attach: 8 arguments");
  uint32_t n_ctx = 0, n_seq_max = 0, threads = 0, poll = 0;
  char libllama[4096], libggml[4096];
  if (napi_get_value_uint32(env, argv[2], &n_ctx) != napi_ok || napi_get_value_uint32(env, argv[3], &n_seq_max) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &threads) != napi_ok || napi_get_value_uint32(env, argv[5], &poll) != napi_ok ||
      !get_string(env, argv[6], libllama, sizeof libllama) || !get_string(env, argv[7], libggml, sizeof libggml)) {
    return throw_error(env, "attach: bad arguments");
  }

  napi_value null_value;
  napi_get_null(env, &null_value);
  void *llama = loaded_library(libllama), *ggml = loaded_library(libggml);
  if (!llama || !ggml) return null_value;
  attach_fn llama_attach = (attach_fn)dlsym(llama, "llama_attach_threadpool");
  set_abort_fn set_abort = (set_abort_fn)dlsym(llama, "llama_set_abort_callback");
  dev_by_type_fn dev_by_type = (dev_by_type_fn)dlsym(ggml, "ggml_backend_dev_by_type");
  dev_backend_reg_fn dev_backend_reg = (dev_backend_reg_fn)dlsym(ggml, "ggml_backend_dev_backend_reg");
  reg_get_proc_address_fn get_proc = (reg_get_proc_address_fn)dlsym(ggml, "ggml_backend_reg_get_proc_address");
  decode_fn llama_decode = (decode_fn)dlsym(llama, "llama_decode");
  synchronize_fn llama_synchronize = (synchronize_fn)dlsym(llama, "llama_synchronize");
  if (!llama_attach || !set_abort || !llama_decode || !llama_synchronize || !dev_by_type || !dev_backend_reg || !get_proc) return null_value;

  void *cpu_device = dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  void *cpu_reg = cpu_device ? dev_backend_reg(cpu_device) : NULL;
  threadpool_new_fn pool_new = cpu_reg ? (threadpool_new_fn)get_proc(cpu_reg, "ggml_threadpool_new") : NULL;
  threadpool_free_fn pool_free = cpu_reg ? (threadpool_free_fn)get_proc(cpu_reg, "ggml_threadpool_free") : NULL;
  if (!pool_new || !pool_free) return null_value;
  /* The CPU backend's registry does not hand out ggml_threadpool_pause; the library that holds ggml_threadpool_new does. */
  threadpool_pause_fn pool_pause = NULL;
  Dl_info pool_library;
  if (dladdr((void *)pool_new, &pool_library) && pool_library.dli_fname) {
    void *library = dlopen(pool_library.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (library) {
      pool_pause = (threadpool_pause_fn)dlsym(library, "ggml_threadpool_pause");
      /* Only the reference taken here: the library stays loaded, as ggml_threadpool_new's does. */
      dlclose(library);
    }
  }

  struct addon_context_tail *found = find_addon_context(env, argv[0], argv[1], n_ctx, n_seq_max, llama);
  if (!found) return null_value;
  void *ctx = found->ctx;

  if (threads < 1 || threads > MAX_THREADS) return throw_error(env, "attach: threads out of range");
  struct attached *handle = calloc(1, sizeof *handle);
  if (!handle) return null_value;
  handle->ctx = ctx;
  handle->addon = found;
  handle->decode = llama_decode;
  handle->synchronize = llama_synchronize;
  handle->attach = llama_attach;
  handle->new_pool = pool_new;
  handle->free_pool = pool_free;
  handle->pause_pool = pool_pause;
  handle->poll = poll;
  handle->max_threads = threads;
  handle->current = 1;
  atomic_init(&handle->interrupt, false);
  /* One thread needs no pool: the caller's thread computes alone. The abort callback is installed either way. */
  if (!use_threads(handle, threads)) {
    free(handle);
    return null_value;
  }
  set_abort(ctx, should_abort, handle);
  napi_value external;
  napi_create_external(env, handle, NULL, NULL, &external);
  return external;
}

/* The handle attach() returned, from argument 0; NULL (an exception pending) when it is not one. */
static struct attached *handle_arg(napi_env env, napi_value value, const char *message) {
  void *data = NULL;
  if (napi_get_value_external(env, value, &data) != napi_ok || !data) {
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  return data;
}

/* The handle attach() returned, as a call's only argument; NULL (an exception pending) otherwise. */
static struct attached *sole_handle_arg(napi_env env, napi_callback_info info, const char *message) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 1) {
    napi_throw_error(env, NULL, message);
    return NULL;
  }
  return handle_arg(env, argv[0], message);
}

/*
 * use(handle, threads) → whether the context's next steps run on a pool of that many threads (clamped to 1 and the
 * count given to attach). Call it only between the context's decode steps.
 */
static napi_value use(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  uint32_t threads = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2) return throw_error(env, "use: expects the handle attach returned and a thread count");
  struct attached *handle = handle_arg(env, argv[0], "use: expects the handle attach returned and a thread count");
  if (!handle) return NULL;
  if (napi_get_value_uint32(env, argv[1], &threads) != napi_ok) return throw_error(env, "use: expects the handle attach returned and a thread count");
  napi_value used;
  napi_get_boolean(env, use_threads(handle, threads), &used);
  return used;
}

/*
 * release(handle): stops the pools' threads. Call it once the context is disposed (node-llama-cpp's dispose waits for
 * the decode in flight and frees the llama_context, which does not own the pool). Idempotent.
 */
static napi_value release(napi_env env, napi_callback_info info) {
  struct attached *handle = sole_handle_arg(env, info, "release: expects the handle attach returned");
  if (!handle) return NULL;
  for (uint32_t n = 2; n <= handle->max_threads; n++) {
    if (handle->pools[n]) handle->free_pool(handle->pools[n]);
    handle->pools[n] = NULL;
  }
  napi_value done;
  napi_get_boolean(env, true, &done);
  return done;
}

/*
 * pause(handle) → whether the attached pool's workers were sent to sleep (false: one thread, no pool, or no pause
 * function). Call it only while none of the context's steps is in flight (see the comment at the top).
 */
static napi_value pause_pool(napi_env env, napi_callback_info info) {
  struct attached *handle = sole_handle_arg(env, info, "pause: expects the handle attach returned");
  if (!handle) return NULL;
  void *pool = handle->current >= 2 ? handle->pools[handle->current] : NULL;
  if (pool && handle->pause_pool) handle->pause_pool(pool);
  napi_value paused;
  napi_get_boolean(env, pool && handle->pause_pool, &paused);
  return paused;
}

/* interrupt(handle, on): while on, the decode step in flight (or the next one) stops at its next graph node. */
static napi_value interrupt(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  void *data = NULL;
  bool on = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 2 ||
      napi_get_value_external(env, argv[0], &data) != napi_ok || !data || napi_get_value_bool(env, argv[1], &on) != napi_ok) {
    return throw_error(env, "interrupt: expects the handle attach returned and a boolean");
  }
  atomic_store_explicit(&((struct attached *)data)->interrupt, on, memory_order_relaxed);
  return NULL;
}

/*
 * decodeNow(handle) → llama_decode's result for the batch node-llama-cpp has built (0: done; 1: no KV slot; 2:
 * interrupted), computed on the calling thread exactly as node-llama-cpp's decode work item computes it on a libuv
 * thread. Call it only where node-llama-cpp would call decodeBatch().
 */
static napi_value decode_now(napi_env env, napi_callback_info info) {
  struct attached *handle = sole_handle_arg(env, info, "decodeNow: expects the handle attach returned");
  if (!handle) return NULL;
  struct addon_context_tail *addon = handle->addon;
  addon->got_logit = false;
  addon->has_logits = false;
  int32_t result = handle->decode(handle->ctx, addon->batch);
  if (result == 0) handle->synchronize(handle->ctx);
  napi_value value;
  napi_create_int32(env, result, &value);
  return value;
}

/* Adds attach, use, release, interrupt, pause and decodeNow to the module's exports. */
void define_thread_pool(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
    {"attach", NULL, attach, NULL, NULL, NULL, napi_default, NULL},
    {"use", NULL, use, NULL, NULL, NULL, napi_default, NULL},
    {"release", NULL, release, NULL, NULL, NULL, napi_default, NULL},
    {"interrupt", NULL, interrupt, NULL, NULL, NULL, napi_default, NULL},
    {"pause", NULL, pause_pool, NULL, NULL, NULL, napi_default, NULL},
    {"decodeNow", NULL, decode_now, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, 6, properties);
}
