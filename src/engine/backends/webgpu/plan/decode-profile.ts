/**
 * Where a decode step's time goes, for `npm run bench:webgpu -- --profile`: the host's part of each token
 * (recording the commands, submitting them, waiting for the sampled id) and the GPU's part per kernel class. Kernel
 * classes are timed with timestamp queries, one pair per dispatch, when the device has the feature; adapters without
 * it (Mesa) get each class's dispatches replayed alone in one submit, timed by the wall clock.
 * Profiling leaves the sequence's state (residual, KV cache) meaningless: reset or discard the plan afterwards.
 */
import type { DecodePlan, StepHostTimes } from "./decode.js";
import type { PlannedDispatch } from "./decode-dispatches.js";

/** Per-token figures of one profile (medians over its tokens for the host, means for the kernels). */
export interface DecodeProfile {
  method: "timestamp-query" | "isolated-replay";
  tokens: number;
  dispatchesPerToken: number;
  host: StepHostTimes & { stepMs: number };
  /** GPU milliseconds per token of each kernel class, in the order the classes first run in a step. */
  kernels: { kind: string; dispatches: number; ms: number }[];
}

/** Profiles `tokens` decode steps of `plan` (which must have a token to continue from: a prompt or a first step). */
export async function profileDecode(device: GPUDevice, plan: DecodePlan, tokens: number): Promise<DecodeProfile> {
  const host: StepHostTimes[] = [];
  for (let i = 0; i < tokens; i++) {
    await plan.step();
    host.push(plan.lastHostTimes);
  }
  const median = (pick: (t: StepHostTimes) => number) => host.map(pick).sort((a, b) => a - b)[Math.floor(host.length / 2)]!;
  const stamped = device.features.has("timestamp-query");
  const perKind = stamped ? await timestampKinds(device, plan.dispatchList, tokens) : await replayKinds(device, plan.dispatchList, tokens);
  const counts = countKinds(plan.dispatchList);
  return {
    method: stamped ? "timestamp-query" : "isolated-replay",
    tokens,
    dispatchesPerToken: plan.dispatchCount,
    host: { encodeMs: median((t) => t.encodeMs), submitMs: median((t) => t.submitMs), waitMs: median((t) => t.waitMs), stepMs: median((t) => t.encodeMs + t.submitMs + t.waitMs) },
    kernels: [...counts].map(([kind, dispatches]) => ({ kind, dispatches, ms: perKind.get(kind) ?? 0 })),
  };
}

function countKinds(list: readonly PlannedDispatch[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const d of list) counts.set(d.kind, (counts.get(d.kind) ?? 0) + 1);
  return counts;
}

function record(pass: GPUComputePassEncoder, d: PlannedDispatch): void {
  pass.setPipeline(d.pipeline);
  pass.setBindGroup(0, d.bindGroup);
  pass.dispatchWorkgroups(d.workgroups);
}

/** Each class's dispatches of one step, `rounds` times over in one pass and one submit: wall ms per round. */
async function replayKinds(device: GPUDevice, list: readonly PlannedDispatch[], rounds: number): Promise<Map<string, number>> {
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
async function timestampKinds(device: GPUDevice, list: readonly PlannedDispatch[], rounds: number): Promise<Map<string, number>> {
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
