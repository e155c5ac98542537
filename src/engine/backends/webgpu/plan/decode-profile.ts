/**
 * Where a decode step's time goes, for `npm run bench:webgpu -- --profile`: the host's part of each token
 * (recording the commands, submitting them, waiting for the sampled id) and the GPU's part per kernel class; and the
 * GPU's part of a prompt chunk through the batch plan, per kernel class. Kernel
 * classes are timed with timestamp queries, one pair per dispatch, when the device has the feature; adapters without
 * it (Mesa) get each class's dispatches replayed alone in one submit, timed by the wall clock.
 * Profiling leaves the sequence's state (residual, KV cache) meaningless: reset or discard the plan afterwards.
 */
import type { DecodePlan, StepHostTimes } from "./decode.js";
import type { Place, TokenBatch } from "./token-batch.js";

/** A dispatch as a profile replays it: its kernel class, and a grid of one or two dimensions. */
interface ProfiledDispatch {
  kind: string;
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  workgroups: number | readonly [number, number];
}

/** GPU milliseconds of each kernel class (per step or per chunk), in the order the classes first run. */
export type KernelTimes = { kind: string; dispatches: number; ms: number }[];

/** Per-token figures of one profile (medians over its tokens for the host, means for the kernels). */
export interface DecodeProfile {
  method: "timestamp-query" | "isolated-replay";
  tokens: number;
  dispatchesPerToken: number;
  host: StepHostTimes & { stepMs: number };
  /** GPU milliseconds per token of each kernel class, in the order the classes first run in a step. */
  kernels: KernelTimes;
}

/** Profiles `tokens` decode steps of `plan` (which must have a token to continue from: a prompt or a first step). */
export async function profileDecode(device: GPUDevice, plan: DecodePlan, tokens: number): Promise<DecodeProfile> {
  const host: StepHostTimes[] = [];
  for (let i = 0; i < tokens; i++) {
    await plan.step();
    host.push(plan.lastHostTimes);
  }
  const median = (pick: (t: StepHostTimes) => number) => host.map(pick).sort((a, b) => a - b)[Math.floor(host.length / 2)]!;
  return {
    method: profileMethod(device),
    tokens,
    dispatchesPerToken: plan.dispatchCount,
    host: { encodeMs: median((t) => t.encodeMs), submitMs: median((t) => t.submitMs), waitMs: median((t) => t.waitMs), stepMs: median((t) => t.encodeMs + t.submitMs + t.waitMs) },
    kernels: await kernelTimes(device, plan.dispatchList, tokens),
  };
}

/**
 * GPU milliseconds per kernel class of one batch (`tokens` at `places`) through the batch plan, over `rounds` runs of
 * the same batch: a prompt chunk, or with `head` a decode step of several sequences (the LM head and argmax too).
 * Leaves those places of the KV cache overwritten.
 */
export async function profileBatch(device: GPUDevice, batch: TokenBatch, tokens: readonly number[], places: readonly Place[], rounds: number, head = false): Promise<KernelTimes> {
  return kernelTimes(device, batch.prepare(tokens, places, head), rounds);
}

/** How kernelTimes measures on this device. */
export function profileMethod(device: GPUDevice): DecodeProfile["method"] {
  return device.features.has("timestamp-query") ? "timestamp-query" : "isolated-replay";
}

async function kernelTimes(device: GPUDevice, list: readonly ProfiledDispatch[], rounds: number): Promise<KernelTimes> {
  const perKind = profileMethod(device) === "timestamp-query" ? await timestampKinds(device, list, rounds) : await replayKinds(device, list, rounds);
  return [...countKinds(list)].map(([kind, dispatches]) => ({ kind, dispatches, ms: perKind.get(kind) ?? 0 }));
}

function countKinds(list: readonly ProfiledDispatch[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const d of list) counts.set(d.kind, (counts.get(d.kind) ?? 0) + 1);
  return counts;
}

function record(pass: GPUComputePassEncoder, d: ProfiledDispatch): void {
  pass.setPipeline(d.pipeline);
  pass.setBindGroup(0, d.bindGroup);
  if (typeof d.workgroups === "number") pass.dispatchWorkgroups(d.workgroups);
  else pass.dispatchWorkgroups(...d.workgroups);
}

/** Each class's dispatches of one step, `rounds` times over in one pass and one submit: wall ms per round. */
async function replayKinds(device: GPUDevice, list: readonly ProfiledDispatch[], rounds: number): Promise<Map<string, number>> {
  const result = new Map<string, number>();
  for (const kind of countKinds(list).keys()) {
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (let r = 0; r < rounds; r++) for (const d of list) if (d.kind === kind) record(pass, d);
    pass.end();
    const start = performance.now();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    result.set(kind, (performance.now() - start) / rounds);
  }
  return result;
}

/** One pass per dispatch with begin/end timestamps, `rounds` steps: mean GPU ms per step of each class. */
async function timestampKinds(device: GPUDevice, list: readonly ProfiledDispatch[], rounds: number): Promise<Map<string, number>> {
  const count = list.length * 2;
  const querySet = device.createQuerySet({ type: "timestamp", count });
  const resolved = device.createBuffer({ size: count * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const staging = device.createBuffer({ size: count * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const result = new Map<string, number>();
  try {
    for (let r = 0; r < rounds; r++) {
      const encoder = device.createCommandEncoder();
      list.forEach((d, i) => {
        const pass = encoder.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } });
        record(pass, d);
        pass.end();
      });
      encoder.resolveQuerySet(querySet, 0, count, resolved, 0);
      encoder.copyBufferToBuffer(resolved, 0, staging, 0, count * 8);
      device.queue.submit([encoder.finish()]);
      await staging.mapAsync(GPUMapMode.READ);
      const stamps = new BigInt64Array(staging.getMappedRange());
      list.forEach((d, i) => result.set(d.kind, (result.get(d.kind) ?? 0) + Number(stamps[2 * i + 1]! - stamps[2 * i]!) / 1e6 / rounds));
      staging.unmap();
    }
  } finally {
    querySet.destroy();
    resolved.destroy();
    staging.destroy();
  }
  return result;
}
