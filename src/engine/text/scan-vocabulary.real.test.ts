import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getLlama, LlamaLogLevel, type LlamaModel } from "node-llama-cpp";
import { scanVocabulary } from "./vocabulary.js";

/** The shared helper lives outside src/ (tsc's rootDir); a computed specifier keeps tsc from compiling it. */
const realModelHelper = "../../../test/helpers/real-model.js";
const helper = (await import(realModelHelper)) as { coderModelPath: () => string | undefined };
const coderModel = helper.coderModelPath();

// A model that loads on demand scans its vocabulary while other models stream: the pass must leave the event loop
// turns between its slices, whatever the machine's speed.
describe.skipIf(!coderModel)("scanVocabulary (Qwen2.5-Coder's 151,936 tokens)", () => {
  let model: LlamaModel;
  beforeAll(async () => {
    const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath: coderModel!, vocabOnly: true });
  });
  afterAll(async () => model?.dispose());

  it("yields to the event loop between slices and finds the template's control tokens", async () => {
    let turns = 0;
    let scanning = true;
    const tick = () => { turns++; if (scanning) setImmediate(tick); };
    setImmediate(tick);
    const scan = await scanVocabulary(model);
    scanning = false;
    // 151,936 tokens in slices of 8,192: the other work ran between each two slices.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(151_936 / 8192));
    expect(scan.controls.map((c) => c.text)).toEqual(expect.arrayContaining(["<|im_start|>", "<|im_end|>"]));
    expect(scan.maxTokenBytes).toBeGreaterThan(1);
  });
});
