/**
 * What a saved sequence state depends on, so a state file is only ever loaded where it means the same thing: the
 * model file (size, modification time and a hash of its first and last MiB: cheap for multi-GB files, and any
 * re-download or edit changes it), the context settings that shape the KV cache, and the llama.cpp build.
 */
import { createHash } from "node:crypto";
import { open, stat } from "node:fs/promises";
import type { Llama, LlamaContext } from "node-llama-cpp";

/** The identity a state file records and a loader compares, field for field. */
export interface PrefixCacheKey {
  model: { size: number; mtimeMs: number; sampleSha256: string };
  /** Tokens per sequence. */
  contextSize: number;
  flashAttention: boolean | string;
  /** The K/V element types ("f16/f16", "q8_0/q8_0"): a state saved with one is never loaded into another. */
  kvCacheTypes: string;
  llamaCpp: string;
  gpu: string;
}

const SAMPLE_BYTES = 1 << 20;

/** Reads the model file's identity and the context's state-shaping settings. */
export async function readPrefixCacheKey(modelPath: string, llama: Llama, context: LlamaContext, kvCacheTypes: string): Promise<PrefixCacheKey> {
  const info = await stat(modelPath);
  const hash = createHash("sha256");
  const handle = await open(modelPath, "r");
  try {
    for (const position of [0, Math.max(0, info.size - SAMPLE_BYTES)]) {
      const buffer = Buffer.alloc(Math.min(SAMPLE_BYTES, info.size));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      hash.update(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return {
    model: { size: info.size, mtimeMs: Math.trunc(info.mtimeMs), sampleSha256: hash.digest("hex") },
    contextSize: context.contextSize,
    flashAttention: context.flashAttention,
    kvCacheTypes,
    llamaCpp: llama.llamaCppRelease.release,
    gpu: String(llama.gpu),
  };
}

/** A short stable name for a key: the folder its state files live in. */
export function nameOfKey(key: PrefixCacheKey): string {
  return createHash("sha256").update(JSON.stringify(key)).digest("hex").slice(0, 16);
}
