/** The draft model of a local model (speculative decoding), resolved through the model store as the engine takes it. */
import type { DraftDeclaration } from "../engine/index.js";
import type { PullProgress } from "../models/index.js";

/** Resolves `ref` (pulling a catalog model that is missing) into a draft declaration; undefined without a ref. */
export async function resolveDraft(ref: string | undefined, maxTokens: number | undefined, onProgress?: (progress: PullProgress) => void): Promise<DraftDeclaration | undefined> {
  if (!ref) return undefined;
  const { resolveModel } = await import("../models/index.js");
  const path = await resolveModel(ref, { onProgress });
  return maxTokens === undefined ? { path } : { path, maxTokens };
}
