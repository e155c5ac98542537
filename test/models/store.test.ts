import { beforeEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EngineError } from "../../src/engine/index.js";
import { pullModel } from "../../src/models/pull.js";
import { resolveModel } from "../../src/models/resolve-model.js";
import { findModel, listModels, removeModel, showModel, type ModelRecord } from "../../src/models/store.js";
import { TINY, tinyGgufBytes, tinyParameterCount, writeTinyGguf } from "../helpers/tiny-gguf.js";

let home: string;
let tinyPath: string;
const bytes = tinyGgufBytes(3);

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "kiln-store-"));
  tinyPath = await writeTinyGguf(join(home, "Tiny-Test.gguf"), 3);
});

async function pullLocal(path: string, name?: string): Promise<ModelRecord> {
  const pull = pullModel(path, { home, name });
  for (let step = await pull.next(); ; step = await pull.next()) if (step.done) return step.value;
}

async function codeOf(work: Promise<unknown>): Promise<string | undefined> {
  const error = await work.then(() => undefined, (e: unknown) => e);
  return error instanceof EngineError ? error.code : undefined;
}

describe("the model store", () => {
  it("pulls a local file with its checksum and the facts of its GGUF header", async () => {
    const record = await pullLocal(tinyPath);
    expect(record).toMatchObject({
      name: "tiny-test", source: tinyPath, file: join(home, "models", "tiny-test.gguf"), size: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"), format: "gguf v3", architecture: "llama",
      parameters: tinyParameterCount(), contextLength: TINY.contextLength, chatTemplate: true, quantization: "F32",
    });
    expect(Date.parse(record.pulledAt)).not.toBeNaN();
    expect(await listModels({ home })).toEqual([record]);
    expect(await showModel("tiny-test", { home })).toEqual(record);
  });

  it("removes a model and its record", async () => {
    await pullLocal(tinyPath, "doomed");
    await removeModel("doomed", { home });
    expect(await readdir(join(home, "models"))).toEqual([]);
    expect(await codeOf(showModel("doomed", { home }))).toBe("not_found");
    expect(await codeOf(removeModel("doomed", { home }))).toBe("not_found");
  });

  it("refuses a local file that is not a GGUF, naming it, and stores nothing", async () => {
    const junk = join(home, "junk.gguf");
    await writeFile(junk, "definitely not a model");
    await expect(pullLocal(junk)).rejects.toThrow(`${junk} is not a GGUF model file`);
    expect(await readdir(join(home, "models"))).toEqual([]);
  });

  it("records a .gguf placed by hand on first sight, and never lists a .partial", async () => {
    await mkdir(join(home, "models"));
    await copyFile(tinyPath, join(home, "models", "by-hand.gguf"));
    await writeFile(join(home, "models", "half.gguf.partial"), bytes.subarray(0, 100));
    const [record, ...rest] = await listModels({ home });
    expect(rest).toEqual([]);
    expect(record).toMatchObject({ name: "by-hand", source: "unknown", sha256: createHash("sha256").update(bytes).digest("hex") });
    expect((await readdir(join(home, "models"))).sort()).toEqual(["by-hand.gguf", "by-hand.json", "half.gguf.partial"]);
  });
});

describe("resolveModel", () => {
  it("finds store names and uses local paths in place", async () => {
    const record = await pullLocal(tinyPath, "named");
    expect(await resolveModel("named", { home })).toBe(record.file);
    expect(await resolveModel(tinyPath, { home })).toBe(tinyPath);
  });

  it("says not_found for an unknown name or a missing file", async () => {
    expect(await codeOf(resolveModel("nope", { home }))).toBe("not_found");
    expect(await codeOf(resolveModel(join(home, "missing.gguf"), { home }))).toBe("not_found");
  });

  it("uses the stored copy of a remote reference instead of fetching it again", async () => {
    const ref = "https://127.0.0.1:9/unreachable/Tiny-Test.gguf";
    await mkdir(join(home, "models"));
    await copyFile(tinyPath, join(home, "models", "tiny-test.gguf"));
    const adopted = await findModel("tiny-test", { home });
    await writeFile(join(home, "models", "tiny-test.json"), JSON.stringify({ ...adopted, source: ref }));
    expect(await resolveModel(ref, { home })).toBe(join(home, "models", "tiny-test.gguf"));
    expect(await codeOf(resolveModel("https://127.0.0.1:9/other/Tiny-Test.gguf", { home }))).toBe("invalid_request");
  });
});
