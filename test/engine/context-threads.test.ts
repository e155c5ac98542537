/**
 * Contexts of one process decode side by side as kiln decides, without node-llama-cpp's thread splitter in between
 * (load-llama.ts): a short step of a third context runs while two other contexts each evaluate a 500-token batch of
 * the real default model. With the splitter (4 threads on a 2-core CPU, each context counted at the threads it was
 * created with) that step waited for one of the batches to end.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Llama, LlamaContext, LlamaModel } from "node-llama-cpp";
import { openLlama } from "../../src/engine/backends/llama-cpp/load-llama.js";
import { realModelPath } from "../helpers/real-model.js";

let llama: Llama;
let model: LlamaModel;
const contexts: LlamaContext[] = [];

beforeAll(async () => {
  llama = await openLlama(false);
  model = await llama.loadModel({ modelPath: realModelPath() });
  for (const threads of [2, 2, 1]) contexts.push(await model.createContext({ contextSize: 1024, threads }));
});

afterAll(async () => {
  for (const context of contexts) await context.dispose();
  await model?.dispose();
  await llama?.dispose();
});

it("leaves no context's step waiting for other contexts' steps", async () => {
  expect(llama.maxThreads).toBe(0);
  const [first, second, third] = contexts;
  const batch = model.tokenize(Array.from({ length: 80 }, (_, i) => `Pot ${i} cooled slowly.`).join(" ")).slice(0, 500);
  expect(batch.length).toBe(500);
  let batchesDone = 0;
  const batches = [first!, second!].map((context) => context.getSequence().evaluateWithoutGeneratingNewTokens(batch).then(() => { batchesDone++; }));
  // Both batches are dispatched on the next turn of the event loop; the short step is queued after them.
  await new Promise((resolve) => setImmediate(resolve));
  await third!.getSequence().evaluateWithoutGeneratingNewTokens(model.tokenize("Hello there"));
  const doneBeforeShortStep = batchesDone;
  await Promise.all(batches);
  expect(doneBeforeShortStep).toBe(0);
});
