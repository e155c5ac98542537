/**
 * The KV cache of every sequence a model decodes at once, and the RoPE table they share. Each layer's keys (and
 * values) are one buffer, [slot][kvHead][positions][headDim], so one dispatch of a batched step reaches every
 * sequence's cache by its slot (kernels/causal-attention.ts, the placed RoPE kernel), while a sequence's own decode
 * plan binds only its slot's range and indexes it from 0, as it did when each plan owned its cache.
 */
import { EngineError } from "../../../../errors/engine-error.js";
import type { LlamaConfig } from "../model/llama-config.js";
import { kvBytesPerValue, type KvCacheType } from "../kernels/kv-cache-wgsl.js";
import { buildRopeTable } from "../kernels/rope.js";
import { createStorage, type BufferRange } from "../kernels/run-kernel.js";

/** Positions of a slot's layout are a multiple of this, so every slot's range starts at an aligned offset. */
const POSITION_ALIGN = 64;

export interface KvArena {
  /** Per layer: the keys and values of every slot. */
  keys: GPUBuffer[];
  values: GPUBuffer[];
  /** (cos, sin) per [position][pair] (see buildRopeTable). */
  ropeTable: GPUBuffer;
  /** Sequences it holds. */
  slots: number;
  /** Positions per slot in the layout: the kernels' MAX_CTX (the context, rounded up to POSITION_ALIGN). */
  positions: number;
  kv: KvCacheType;
}

/** What one sequence's plan binds: its slot's ranges of every layer's cache, and the shared RoPE table. */
export interface SlotCaches {
  keys: BufferRange[];
  values: BufferRange[];
  ropeTable: GPUBuffer;
  positions: number;
}

/** Allocates the caches of `slots` sequences of up to `maxCtx` positions each. */
export function createKvArena(device: GPUDevice, config: LlamaConfig, maxCtx: number, slots = 1, kv: KvCacheType = "f32"): KvArena {
  const positions = Math.ceil(maxCtx / POSITION_ALIGN) * POSITION_ALIGN;
  const bytes = slots * slotBytes(config, positions, kv);
  const most = Math.min(device.limits.maxStorageBufferBindingSize, device.limits.maxBufferSize);
  if (bytes > most) {
    // As llama.cpp's context that would not fit (fit-context.ts): a load failure naming the sizes, not a bad request.
    throw new EngineError(
      "backend_failure",
      `the KV cache of ${slots} × ${maxCtx} tokens needs ${bytes} bytes per layer, more than this GPU binds at once (${most}); ask for fewer parallel sequences or a smaller context`,
      { contextSize: maxCtx, sequences: slots },
    );
  }
  const cache = (label: string) => Array.from({ length: config.layers }, (_, i) => createStorage(device, bytes, `${label}-${i}`));
  const table = buildRopeTable(positions, config.headDim, { theta: config.ropeTheta, ropeDim: config.ropeDim, positionScale: config.ropeScale });
  return { keys: cache("keys"), values: cache("values"), ropeTable: createStorage(device, table, "rope-table"), slots, positions, kv };
}

/** The ranges sequence `slot` of the arena binds. */
export function slotCaches(arena: KvArena, config: LlamaConfig, slot: number): SlotCaches {
  if (slot < 0 || slot >= arena.slots) throw new RangeError(`slot ${slot} of ${arena.slots}`);
  const size = slotBytes(config, arena.positions, arena.kv);
  const range = (buffer: GPUBuffer) => ({ buffer, offset: slot * size, size });
  return { keys: arena.keys.map(range), values: arena.values.map(range), ropeTable: arena.ropeTable, positions: arena.positions };
}

/** Bytes of GPU memory the arena holds (the caches and the RoPE table). */
export function kvArenaBytes(arena: KvArena): number {
  return [...arena.keys, ...arena.values, arena.ropeTable].reduce((sum, buffer) => sum + buffer.size, 0);
}

export function destroyKvArena(arena: KvArena): void {
  for (const buffer of [...arena.keys, ...arena.values, arena.ropeTable]) buffer.destroy();
}

function slotBytes(config: LlamaConfig, positions: number, kv: KvCacheType): number {
  return config.kvHeads * positions * config.headDim * kvBytesPerValue(kv);
}
