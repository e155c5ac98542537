/**
 * The TOP_CANDIDATES best logits of each row, on the GPU, so a sampled (not greedy) token needs 512 bytes read back
 * instead of its whole row (600 KB for a 152k vocabulary) and a CPU pass over it. Each workgroup sorts a chunk of
 * TOP_CHUNK values (bitonic, in workgroup memory; best first: higher logit, then lower id, as the CPU sampler orders
 * them) and keeps its first TOP_CANDIDATES; the kept (logit, id) pairs of all chunks are reduced the same way, level
 * by level, until one chunk is left: 152k values take three levels. For real GPUs: on a software adapter the barriers
 * of the sort cost more than the CPU's own selection.
 */
import type { Candidate } from "../sampler.js";
import { bindBuffers, createKernel, createStorage } from "./run-kernel.js";

/** Candidates kept per row (a request's top-k must not exceed it to sample from them). */
export const TOP_CANDIDATES = 64;
/** Values one workgroup sorts. */
const TOP_CHUNK = 1024;
const LANES = 256;

/**
 * One level. Input row r: `count` logits (f32, level 0) or (bits of logit, id) pairs; output row r: TOP_CANDIDATES
 * pairs per chunk of the input. Bindings: input, output. Dispatch (chunks, rows).
 */
export function topKWgsl(pairs: boolean): string {
  const load = pairs
    ? "let v = input[row * COUNT + at]; key = bitcast<f32>(v.x); id = v.y;"
    : "key = input[row * COUNT + at]; id = at;";
  return /* wgsl */ `
override COUNT: u32;
@group(0) @binding(0) var<storage, read> input: array<${pairs ? "vec2<u32>" : "f32"}>;
@group(0) @binding(1) var<storage, read_write> output: array<vec2<u32>>;
var<workgroup> keys: array<f32, ${TOP_CHUNK}>;
var<workgroup> ids: array<u32, ${TOP_CHUNK}>;
// Whether (ka, ia) goes before (kb, ib): the higher logit, then the lower id (the CPU sampler's order).
fn before(ka: f32, ia: u32, kb: f32, ib: u32) -> bool { return ka > kb || (ka == kb && ia < ib); }
@compute @workgroup_size(${LANES})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let row = wg.y;
  let chunks = (COUNT + ${TOP_CHUNK - 1}u) / ${TOP_CHUNK}u;
  for (var k = 0u; k < ${TOP_CHUNK / LANES}u; k++) {
    let slot = lane + k * ${LANES}u;
    let at = wg.x * ${TOP_CHUNK}u + slot;
    var key = -3.4e38;
    var id = 0xffffffffu;
    if (at < COUNT) { ${load} }
    keys[slot] = key;
    ids[slot] = id;
  }
  workgroupBarrier();
  for (var size = 2u; size <= ${TOP_CHUNK}u; size <<= 1u) {
    for (var stride = size >> 1u; stride > 0u; stride >>= 1u) {
      for (var k = 0u; k < ${TOP_CHUNK / LANES}u; k++) {
        let i = lane + k * ${LANES}u;
        let j = i ^ stride;
        if (j > i) {
          // Blocks of \`size\` alternate direction, so each merge step sees two sorted runs; the whole ends best first.
          let first = (i & size) == 0u;
          if (before(keys[j], ids[j], keys[i], ids[i]) == first) {
            let kt = keys[i]; keys[i] = keys[j]; keys[j] = kt;
            let it = ids[i]; ids[i] = ids[j]; ids[j] = it;
          }
        }
      }
      workgroupBarrier();
    }
  }
  if (lane < ${TOP_CANDIDATES}u) {
    output[(row * chunks + wg.x) * ${TOP_CANDIDATES}u + lane] = vec2<u32>(bitcast<u32>(keys[lane]), ids[lane]);
  }
}`;
}

/** The values each level reads per row: the logits, then TOP_CANDIDATES per chunk of the level before, down to one chunk. */
export function topKLevels(count: number): number[] {
  const levels = [count];
  while (levels.at(-1)! > TOP_CHUNK) levels.push(Math.ceil(levels.at(-1)! / TOP_CHUNK) * TOP_CANDIDATES);
  return levels;
}

/** Chunks (workgroups per row) of a level reading `count` values. */
export function topKChunks(count: number): number {
  return Math.ceil(count / TOP_CHUNK);
}

/** Pipelines per device and row length: every sequence of a model selects from rows of the same vocabulary. */
const compiled = new WeakMap<GPUDevice, Map<number, GPUComputePipeline[]>>();

/**
 * The pipelines of every level for rows of `count` logits (level 0 reads f32, the others pairs), compiled once per
 * device and count (a model's plans and batch plan share them).
 */
export function createTopK(device: GPUDevice, count: number): GPUComputePipeline[] {
  const byCount = compiled.get(device) ?? new Map<number, GPUComputePipeline[]>();
  compiled.set(device, byCount);
  let pipelines = byCount.get(count);
  if (!pipelines) {
    pipelines = topKLevels(count).map((values, level) => createKernel(device, topKWgsl(level > 0), { COUNT: values }, `top-k-${level}`));
    byCount.set(count, pipelines);
  }
  return pipelines;
}

/** The levels over one logits buffer of `rows` rows, bound once, and the buffer the last level fills. */
export interface TopKPlan {
  levels: Array<{ pipeline: GPUComputePipeline; bindGroup: GPUBindGroup; chunks: number }>;
  /** Per row, TOP_CANDIDATES (logit bits, id) pairs, best first. */
  output: GPUBuffer;
  /** Every buffer it made. */
  buffers: GPUBuffer[];
}

/** Pipelines, buffers and bind groups to select the best candidates of up to `rows` rows of `vocab` logits in `logits`. */
export function createTopKPlan(device: GPUDevice, logits: GPUBuffer, vocab: number, rows: number): TopKPlan {
  const pipelines = createTopK(device, vocab);
  const buffers: GPUBuffer[] = [];
  let input = logits;
  const levels = topKLevels(vocab).map((values, level) => {
    const output = createStorage(device, rows * topKChunks(values) * TOP_CANDIDATES * 8, `top-k-${level}`);
    buffers.push(output);
    const pipeline = pipelines[level]!;
    const step = { pipeline, bindGroup: bindBuffers(device, pipeline, [input, output]), chunks: topKChunks(values) };
    input = output;
    return step;
  });
  return { levels, output: input, buffers };
}

/** Records the selection for the first `rows` rows in a compute pass of its own. */
export function encodeTopK(encoder: GPUCommandEncoder, plan: TopKPlan, rows: number): void {
  const pass = encoder.beginComputePass();
  for (const level of plan.levels) {
    pass.setPipeline(level.pipeline);
    pass.setBindGroup(0, level.bindGroup);
    pass.dispatchWorkgroups(level.chunks, rows);
  }
  pass.end();
}

/** Bytes of one row's candidates. */
export const TOP_CANDIDATE_BYTES = TOP_CANDIDATES * 8;

/** One row's (logit bits, id) pairs as candidates, best first; padding (a row with fewer finite logits) left out. */
export function candidatesOf(bytes: ArrayBuffer, vocab: number): Candidate[] {
  const words = new Uint32Array(bytes);
  const logits = new Float32Array(bytes);
  const out: Candidate[] = [];
  for (let k = 0; k < words.length; k += 2) if (words[k + 1]! < vocab) out.push({ id: words[k + 1]!, logit: logits[k]! });
  return out;
}
