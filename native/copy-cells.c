/*
 * Copying one sequence's cache into another by its cells, not its stream.
 *
 * node-llama-cpp gives each sequence of a context a KV stream of its own, and llama.cpp copies a sequence into
 * another stream by copying the whole stream buffer, at the context's next decode: the cost of the context's cells
 * per sequence (~190 MB for the default model's 8,192), whatever the source holds. Through llama.cpp's sequence
 * state API (the one its state files use) only the source's cells move: read into a buffer, then written into the
 * target's stream, which is done when the call returns. A chat template's opening of 20 tokens moves ~0.5 MB instead.
 *
 * Called under node-llama-cpp's context lock (in place of its copySequenceStateFromOtherSequence), so no decode of
 * the context is in flight. Host memory only: on a GPU the state API would pass every cell through the host.
 */
#include "llama-context.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef size_t (*state_size_fn)(void *ctx, int32_t seq, uint32_t flags);
typedef size_t (*state_get_fn)(void *ctx, uint8_t *dst, size_t size, int32_t seq, uint32_t flags);
typedef size_t (*state_set_fn)(void *ctx, const uint8_t *src, size_t size, int32_t seq, uint32_t flags);
typedef void *(*get_memory_fn)(void *ctx);
typedef int32_t (*pos_max_fn)(void *mem, int32_t seq);
typedef bool (*seq_rm_fn)(void *mem, int32_t seq, int32_t p0, int32_t p1);

/* Kept between copies up to this size, so a copy does not fault in fresh pages every time. */
#define KEPT_BUFFER_BYTES (64u << 20)

struct cell_copier {
  struct addon_context_tail *addon;
  state_size_fn size;
  state_get_fn get;
  state_set_fn set;
  get_memory_fn memory;
  pos_max_fn pos_max;
  seq_rm_fn seq_rm;
  uint8_t *buffer;
  size_t capacity;
};

/*
 * cellCopier(addonContext, addonModel, nCtx, nSeqMax, libllamaPath) → a handle for copyCells(), or null when the
 * context cannot be identified safely or libllama lacks a function used here.
 */
static napi_value cell_copier(napi_env env, napi_callback_info info) {
  napi_value null_value;
  napi_get_null(env, &null_value);
  void *lib = NULL;
  struct addon_context_tail *addon = addon_context_from_args(env, info, "cellCopier: expects the native context and model, nCtx, nSeqMax and libllama's path", &lib);
  /* Bad arguments leave an exception pending, which N-API throws whatever the return value. */
  if (!addon) return null_value;
  struct cell_copier copier = {
    .addon = addon,
    .size = (state_size_fn)dlsym(lib, "llama_state_seq_get_size_ext"),
    .get = (state_get_fn)dlsym(lib, "llama_state_seq_get_data_ext"),
    .set = (state_set_fn)dlsym(lib, "llama_state_seq_set_data_ext"),
    .memory = (get_memory_fn)dlsym(lib, "llama_get_memory"),
    .pos_max = (pos_max_fn)dlsym(lib, "llama_memory_seq_pos_max"),
    .seq_rm = (seq_rm_fn)dlsym(lib, "llama_memory_seq_rm"),
  };
  if (!copier.size || !copier.get || !copier.set || !copier.memory || !copier.pos_max || !copier.seq_rm) return null_value;
  struct cell_copier *handle = malloc(sizeof *handle);
  if (!handle) return null_value;
  *handle = copier;
  napi_value external;
  /* One per context, never freed (as stepContext's): the buffer is released after each copy beyond its bound. */
  napi_create_external(env, handle, NULL, NULL, &external);
  return external;
}

/*
 * copyCells(copier, targetSeq, sourceSeq) → the source's highest position, as node-llama-cpp's copy reports it (0 for
 * an empty source, the target then emptied too, which node-llama-cpp reads as a failed copy), or -1 when the copy
 * failed (the target is then empty). The target's
 * own cells are replaced. Call it only while no decode of the context is in flight.
 */
static napi_value copy_cells(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result;
  void *data = NULL;
  int32_t target = 0, source = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc != 3 ||
      napi_get_value_external(env, argv[0], &data) != napi_ok || !data ||
      napi_get_value_int32(env, argv[1], &target) != napi_ok || napi_get_value_int32(env, argv[2], &source) != napi_ok) {
    return throw_error(env, "copyCells: expects the handle cellCopier returned and two sequence ids");
  }
  struct cell_copier *copier = data;
  void *ctx = copier->addon->ctx;
  if (!copier->addon->context_loaded) return throw_error(env, "copyCells: the context is disposed");
  void *memory = copier->memory(ctx);
  int32_t highest = copier->pos_max(memory, source);
  if (highest < 0) {
    copier->seq_rm(memory, target, -1, -1);
    highest = 0;
  } else {
    size_t size = copier->size(ctx, source, 0);
    if (size > copier->capacity) {
      free(copier->buffer);
      copier->buffer = malloc(size);
      copier->capacity = copier->buffer ? size : 0;
    }
    bool copied = copier->buffer && copier->get(ctx, copier->buffer, size, source, 0) == size &&
                  copier->set(ctx, copier->buffer, size, target, 0) == size;
    if (copier->capacity > KEPT_BUFFER_BYTES) {
      free(copier->buffer);
      copier->buffer = NULL;
      copier->capacity = 0;
    }
    if (!copied) {
      copier->seq_rm(memory, target, -1, -1);
      highest = -1;
    }
  }
  napi_create_int32(env, highest, &result);
  return result;
}

/* Adds cellCopier and copyCells to the module's exports. */
void define_cell_copier(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
    {"cellCopier", NULL, cell_copier, NULL, NULL, NULL, napi_default, NULL},
    {"copyCells", NULL, copy_cells, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, 2, properties);
}
