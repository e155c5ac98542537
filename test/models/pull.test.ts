import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PullError, type PullProgress } from "../../src/models/pull-progress.js";
import { pullModel, type PullOptions } from "../../src/models/pull.js";
import { listModels } from "../../src/models/store.js";
import { startHttpsFileServer, type HttpsFileServer } from "../helpers/https-file-server.js";
import { tinyGgufBytes } from "../helpers/tiny-gguf.js";

const model = tinyGgufBytes(7);
const sha256 = createHash("sha256").update(model).digest("hex");
let server: HttpsFileServer;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "kiln-pull-"));
  server = await startHttpsFileServer(scratch, {
    "/model.gguf": { body: model },
    "/cut.gguf": { body: model, mode: "cut" },
    "/stall.gguf": { body: model, mode: "stall" },
    "/no-range.gguf": { body: model, mode: "no-range" },
    "/text.gguf": { body: Buffer.from("<html>this is not a model</html>".repeat(100)) },
    "/truncated.gguf": { body: model.subarray(0, 400) },
  });
});
afterAll(async () => server?.close());

/** A fresh, empty store for each test. */
async function freshStore(): Promise<PullOptions & { home: string }> {
  return { home: await mkdtemp(join(scratch, "home-")), ca: server.cert };
}

async function collect(ref: string, options: PullOptions): Promise<PullProgress[]> {
  const events: PullProgress[] = [];
  for await (const event of pullModel(ref, options)) events.push(event);
  return events;
}

async function storeFiles(home: string): Promise<string[]> {
  return readdir(join(home, "models")).catch(() => []);
}

describe("pullModel over HTTPS", () => {
  it("yields download progress up to the full size, then verify and done, with the file's SHA-256", async () => {
    const options = await freshStore();
    const events = await collect(`${server.url}/model.gguf`, options);
    const downloads = events.filter((e) => e.phase === "download");
    expect(downloads.length).toBeGreaterThan(1);
    expect(downloads.every((e) => e.totalBytes === model.length && e.name === "model")).toBe(true);
    expect(downloads.map((e) => e.receivedBytes)).toEqual([...downloads.map((e) => e.receivedBytes)].sort((a, b) => a - b));
    expect(downloads.at(-1)!.receivedBytes).toBe(model.length);
    expect(events.slice(-2).map((e) => e.phase)).toEqual(["verify", "done"]);
    const record = events.at(-1)!.record!;
    expect(record).toMatchObject({ name: "model", source: `${server.url}/model.gguf`, size: model.length, sha256, architecture: "llama" });
    expect((await readFile(record.file)).equals(model)).toBe(true);
    expect((await listModels(options)).map((r) => r.name)).toEqual(["model"]);
  });

  it("resumes with a Range request when the server cuts the connection mid-body", async () => {
    const options = await freshStore();
    const events = await collect(`${server.url}/cut.gguf`, options);
    const ranges = server.requests.filter((r) => r.path === "/cut.gguf").map((r) => r.range);
    expect(ranges).toHaveLength(2);
    expect(ranges[0]).toBeUndefined();
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(ranges[1] ?? "")?.[1]);
    expect(resumedAt).toBeGreaterThan(0);
    expect(resumedAt).toBeLessThan(model.length);
    expect(events.some((e) => e.resumedFrom === resumedAt)).toBe(true);
    expect(events.some((e) => e.message?.includes("resuming"))).toBe(true);
    expect(events.at(-1)!.record!.sha256).toBe(sha256);
  });

  it("keeps an interrupted download as a partial that list ignores, and the next pull resumes it", async () => {
    const options = await freshStore();
    const controller = new AbortController();
    const half = model.length >> 1;
    const interrupted = (async () => {
      for await (const event of pullModel(`${server.url}/stall.gguf`, { ...options, signal: controller.signal })) {
        if (event.receivedBytes >= half) controller.abort();
      }
    })();
    await expect(interrupted).rejects.toThrow();
    expect(await storeFiles(options.home)).toEqual(["stall.gguf.partial"]);
    expect(await listModels(options)).toEqual([]);

    const events = await collect(`${server.url}/stall.gguf`, options);
    expect(server.requests.filter((r) => r.path === "/stall.gguf").at(-1)!.range).toBe(`bytes=${half}-`);
    expect(events.find((e) => e.resumedFrom !== undefined)?.resumedFrom).toBe(half);
    expect(events.at(-1)!.record!.sha256).toBe(sha256);
    expect((await storeFiles(options.home)).sort()).toEqual(["stall.gguf", "stall.json"]);
  });

  it("starts over when the server ignores the Range request", async () => {
    const options = await freshStore();
    await mkdir(join(options.home, "models"));
    await writeFile(join(options.home, "models", "no-range.gguf.partial"), Buffer.alloc(1000, 0xab));
    const events = await collect(`${server.url}/no-range.gguf`, options);
    expect(server.requests.filter((r) => r.path === "/no-range.gguf").map((r) => r.range)).toEqual(["bytes=1000-"]);
    expect(events.at(-1)!.record!).toMatchObject({ sha256, size: model.length });
  });

  it.each([
    ["a 404", "/missing.gguf", /HTTP 404/],
    ["a file that is not a GGUF", "/text.gguf", /text\.gguf is not a GGUF model file/],
    ["a GGUF cut inside its header", "/truncated.gguf", /truncated\.gguf is not a GGUF model file \(the GGUF header is truncated\)/],
  ])("fails on %s and leaves nothing in the store", async (_, path, message) => {
    const options = await freshStore();
    const pull = collect(`${server.url}${path}`, options);
    await expect(pull).rejects.toThrow(message);
    await expect(pull).rejects.toBeInstanceOf(PullError);
    expect(await storeFiles(options.home)).toEqual([]);
    expect(await listModels(options)).toEqual([]);
  });
});
