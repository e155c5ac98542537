/**
 * The TOP_CANDIDATES best logits of each row, on the GPU, so a sampled (not greedy) token needs 512 bytes read back
 * instead of its whole row (600 KB for a 152k vocabulary) and a CPU pass over it. Each workgroup sorts a chunk of
 * TOP_CHUNK values (bitonic, in workgroup memory; best first: higher logit, then lower id, as the CPU sampler orders
 * them) and keeps its first TOP_CANDIDATES; the kept (logit, id) pairs of all chunks are reduced the same way, level
 * by level, until one chunk is left: 152k values take three levels. For real GPUs: on a software adapter the barriers
 * of the sort cost more than the CPU's own selection.
 */
import { createKernel } from "./run-kernel.js";

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

/** The pipelines of every level for rows of `count` logits (level 0 reads f32, the others pairs). */
export function createTopK(device: GPUDevice, count: number): GPUComputePipeline[] {
  return topKLevels(count).map((values, level) => createKernel(device, topKWgsl(level > 0), { COUNT: values }, `top-k-${level}`));
}
