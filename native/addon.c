/* kiln's native module: a persistent thread pool for llama.cpp contexts and decoding on the calling thread
 * (threadpool.c), one-call sampling of a decode step's sequences (step-sampler.c), and copying a sequence's cache
 * into another by its cells (copy-cells.c). */
#include <node_api.h>

void define_thread_pool(napi_env env, napi_value exports);
void define_step_sampler(napi_env env, napi_value exports);
void define_cell_copier(napi_env env, napi_value exports);

static napi_value init(napi_env env, napi_value exports) {
  define_thread_pool(env, exports);
  define_step_sampler(env, exports);
  define_cell_copier(env, exports);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
