/** The model store's public surface: references, the catalog, the store and pulls (GGUF itself: src/gguf/). */
export { DEFAULT_MODEL, parseModelRef, type ModelRef, type PullableRef } from "./refs.js";
export { CATALOG, findCatalogEntry, type CatalogEntry, type CatalogSource, type Capabilities } from "./catalog.js";
export { kilnHome, cacheDir, listModels, showModel, findModel, removeModel, modelPaths, type ModelRecord, type StoreOptions } from "./store.js";
export { pullModel, type PullOptions } from "./pull.js";
export { PullError, type PullProgress } from "./pull-progress.js";
export { resolveModel, type ResolveOptions } from "./resolve-model.js";
export { createProgressRenderer } from "./progress-renderer.js";
export { pullWithProgress, resolveWithProgress, type PullWithProgressOptions } from "./pull-with-progress.js";
