/** Files that are not loadable models fail with a backend_failure naming the file and the cause. */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kiln-engine-"));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("loading a model", () => {
  it("refuses a file that is not GGUF, naming it", async () => {
    const path = join(dir, "notes-not-a-model.gguf");
    await writeFile(path, "this is plain text, not a model\n");
    await expect(createEngine({ models: [{ id: "broken", path }], threads: 1 })).rejects.toMatchObject({
      code: "backend_failure",
      message: expect.stringContaining("notes-not-a-model.gguf"),
    });
  });

  it("refuses a truncated GGUF, naming it and the cause", async () => {
    const path = join(dir, "truncated.gguf");
    await writeFile(path, Buffer.concat([Buffer.from("GGUF"), Buffer.from([3, 0, 0, 0]), Buffer.alloc(8)]));
    const error = await createEngine({ models: [{ id: "truncated", path }], threads: 1 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "backend_failure", message: expect.stringContaining("truncated.gguf") });
    expect((error as Error).message.length).toBeGreaterThan("cannot load model truncated.gguf: ".length + 5);
  });

  it("refuses a damaged GGUF (the magic, then garbage) from its own read of the header, naming the file and the cause", async () => {
    const path = join(dir, "corrupt.gguf");
    // Version 3, then counts and strings of random bytes: a damaged download that still starts like a model.
    const bytes = randomBytes(1 << 20);
    bytes.write("GGUF", 0, "latin1");
    bytes.writeUInt32LE(3, 4);
    const error = await createEngine({ models: [{ id: "corrupt", path: await writeAndReturn(path, bytes) }], threads: 1 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "backend_failure", message: expect.stringMatching(/corrupt\.gguf: not a valid GGUF file: /) });
  });

  it("refuses a missing file, naming it", async () => {
    const path = join(dir, "missing.gguf");
    await expect(createEngine({ models: [{ id: "missing", path }], threads: 1 })).rejects.toMatchObject({
      code: "backend_failure",
      message: expect.stringContaining("missing.gguf"),
    });
  });
});

async function writeAndReturn(path: string, bytes: Buffer): Promise<string> {
  await writeFile(path, bytes);
  return path;
}
