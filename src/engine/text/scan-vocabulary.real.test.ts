import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { getLlama, LlamaLogLevel, type LlamaModel } from "node-llama-cpp";
import { scanVocabulary } from "./vocabulary.js";

/** The shared helper lives outside src/ (tsc's rootDir); a computed specifier keeps tsc from compiling it. */
const realModelHelper = "../../../test/helpers/real-model.js";
const helper = (await import(realModelHelper)) as { coderModelPath: () => string | undefined };
const coderModel = helper.coderModelPath();

// A model that loads on demand scans its vocabulary while other models stream: the pass must leave the event loop
// turns between its slices.
describe.skipIf(!coderModel)("scanVocabulary (Qwen2.5-Coder's 151,936 tokens)", () => {
  let model: LlamaModel;
  beforeAll(async () => {
    const llama = await getLlama({ build: "never", gpu: false, logLevel: LlamaLogLevel.error });
    model = await llama.loadModel({ modelPath: coderModel!, vocabOnly: true });
  });
  afterAll(async () => model?.dispose());

  it("yields to the event loop every few milliseconds, finds the template's control tokens, and scans a file once", async () => {
    // A clock that moves 1 ms at each look (one look every 128 tokens): a slice of 2 ms is 256 tokens whatever the
    // machine's speed, so the count of turns checks that slices end by time, not the speed.
    let clock = 0;
    const now = vi.spyOn(performance, "now").mockImplementation(() => (clock += 1));
    let turns = 0;
    let scanning = true;
    const tick = () => { turns++; if (scanning) setImmediate(tick); };
    setImmediate(tick);
    const scan = await scanVocabulary(model, coderModel!).finally(() => now.mockRestore());
    scanning = false;
    expect(turns).toBeGreaterThanOrEqual(Math.floor(151_936 / 256) - 1);
    expect(scan.controls.map((c) => c.text)).toEqual(expect.arrayContaining(["<|im_start|>", "<|im_end|>"]));
    expect(scan.maxTokenBytes).toBeGreaterThan(1);
    // The same file again (a model loaded again after an idle unload): the scan already made.
    expect(await scanVocabulary(model, coderModel!)).toBe(scan);
  });
});
