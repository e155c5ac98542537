import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseModelFlags, readConfigFile } from "./serve-config.js";

function writeConfig(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "kiln-config-")), "kiln.json");
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
  return path;
}

describe("parseModelFlags", () => {
  it("reads local refs, named refs and remote replicas of one model", () => {
    expect(parseModelFlags(["smollm2-135m", "tiny=/m/t.gguf", "big=openai+http://a:8000/v1", "big=openai+http://b:8000/v1"])).toEqual([
      { kind: "local", name: undefined, source: "smollm2-135m", aliases: [] },
      { kind: "local", name: "tiny", source: "/m/t.gguf", aliases: [] },
      { kind: "remote", name: "big", upstreams: ["http://a:8000/v1", "http://b:8000/v1"], aliases: [] },
    ]);
  });

  it("reads the upstream model from the URL's fragment, once for all replicas", () => {
    expect(parseModelFlags(["coder=openai+http://a:8000/v1#Qwen/Qwen3-32B", "coder=openai+http://b:8000/v1", "x=openai+http://c/v1#"])).toEqual([
      { kind: "remote", name: "coder", upstreams: ["http://a:8000/v1", "http://b:8000/v1"], upstreamModel: "Qwen/Qwen3-32B", aliases: [] },
      { kind: "remote", name: "x", upstreams: ["http://c/v1"], aliases: [] },
    ]);
    expect(parseModelFlags(["q=openai+http://a/v1#org%2Fm%20v2"])[0]).toMatchObject({ upstreamModel: "org/m v2" });
    expect(() => parseModelFlags(["c=openai+http://a/v1#m1", "c=openai+http://b/v1#m2"])).toThrow(/different upstream models \(m1, m2\)/);
  });

  it("refuses a remote model without a name or with a bad URL", () => {
    expect(() => parseModelFlags(["openai+http://a/v1"])).toThrow(/needs a name/);
    expect(() => parseModelFlags(["x=openai+ftp://a"])).toThrow(/not an http/);
  });
});

describe("readConfigFile", () => {
  it("reads models with their backends and takes the upstream key from the environment", () => {
    const path = writeConfig({
      port: 6000,
      backend: "llama-cpp",
      models: [
        { source: "smollm2-135m", aliases: ["claude-haiku"] },
        { name: "gpu", source: "./tiny.gguf", backend: "webgpu" },
        { name: "llama", backend: "openai", upstreams: ["http://gpu1:8000/v1"], apiKeyEnv: "UP_KEY", contextWindow: 32768 },
      ],
    });
    const config = readConfigFile(path, { UP_KEY: "secret" });
    expect(config.port).toBe(6000);
    expect(config.backend).toBe("llama-cpp");
    expect(config.declarations).toEqual([
      { kind: "local", name: undefined, source: "smollm2-135m", aliases: ["claude-haiku"] },
      { kind: "local", name: "gpu", source: "./tiny.gguf", aliases: [], backend: "webgpu" },
      { kind: "remote", name: "llama", upstreams: ["http://gpu1:8000/v1"], apiKey: "secret", upstreamModel: undefined, contextWindow: 32768, maxConcurrency: undefined, aliases: [] },
    ]);
  });

  it("reads a local model's reasoning override and refuses one that is not a boolean", () => {
    const config = readConfigFile(writeConfig({ models: [{ source: "./qwen3.gguf", reasoning: false }, { source: "./coder.gguf", reasoning: true }, { source: "m" }] }));
    expect(config.declarations.map((declaration) => declaration.kind === "local" && declaration.reasoning)).toEqual([false, true, undefined]);
    expect(() => readConfigFile(writeConfig({ models: [{ source: "m", reasoning: "yes" }] }))).toThrow(/models\.0/);
  });

  it("reads llama.cpp's GPU backend and layers", () => {
    expect(readConfigFile(writeConfig({ gpu: "vulkan", gpuLayers: 20 }))).toMatchObject({ gpu: "vulkan", gpuLayers: 20 });
    expect(readConfigFile(writeConfig({ gpu: "none", gpuLayers: "max" }))).toMatchObject({ gpu: "none", gpuLayers: "max" });
    expect(readConfigFile(writeConfig({ gpu: "auto", gpuLayers: "auto" }))).toMatchObject({ gpu: "auto", gpuLayers: "auto" });
    expect(readConfigFile(writeConfig({ gpuLayers: 0 }))).toMatchObject({ gpuLayers: 0 });
    expect(() => readConfigFile(writeConfig({ gpu: "rocm" }))).toThrow(/config .*: gpu: /);
    expect(() => readConfigFile(writeConfig({ gpu: false }))).toThrow(/gpu: /);
    expect(() => readConfigFile(writeConfig({ gpuLayers: -1 }))).toThrow(/gpuLayers: expected "auto", "max" or a number of layers/);
    expect(() => readConfigFile(writeConfig({ gpuLayers: "some" }))).toThrow(/gpuLayers: /);
    expect(() => readConfigFile(writeConfig({ gpuLayers: 2.5 }))).toThrow(/gpuLayers: /);
  });

  it("reads a local model's draft model and draft size", () => {
    const config = readConfigFile(writeConfig({ models: [{ source: "qwen2.5-coder-1.5b", draftModel: "qwen2.5-coder-0.5b", draftMax: 6 }] }));
    expect(config.declarations).toEqual([{ kind: "local", name: undefined, source: "qwen2.5-coder-1.5b", aliases: [], draftModel: "qwen2.5-coder-0.5b", draftMax: 6 }]);
    expect(() => readConfigFile(writeConfig({ models: [{ source: "m", draftMax: 0 }] }))).toThrow(/models\.0\.draftMax: /);
    expect(() => readConfigFile(writeConfig({ models: [{ source: "m", draftModel: "" }] }))).toThrow(/models\.0\.draftModel: /);
    expect(() => readConfigFile(writeConfig({ models: [{ name: "r", backend: "openai", upstreams: ["http://a/v1"], draftModel: "m" }] }))).toThrow(/models\.0/);
  });

  it("names the key and the problem of a bad config", () => {
    expect(() => readConfigFile(writeConfig({ models: [{ source: "m", backend: "cuda" }] }))).toThrow(/models\.0/);
    expect(() => readConfigFile(writeConfig({ port: "x" }))).toThrow(/port: Invalid type/);
    expect(() => readConfigFile(writeConfig({ models: [{ name: "m", backend: "openai", upstreams: ["not a url"] }] }))).toThrow(/models\.0/);
    expect(() => readConfigFile(writeConfig({ prot: 1 }))).toThrow(/prot/);
    expect(() => readConfigFile(writeConfig("{oops"))).toThrow(/must be JSON|cannot read/);
    expect(() => readConfigFile(writeConfig({ cacheDisk: "lots" }))).toThrow(/cacheDisk: expected a size/);
    expect(() => readConfigFile(writeConfig({ cacheMinTokens: 0 }))).toThrow(/cacheMinTokens/);
    expect(() => readConfigFile(writeConfig({ models: [{ name: "m", backend: "openai", upstreams: ["http://a/v1"], apiKeyEnv: "NOPE" }] }), {})).toThrow(/NOPE is not set/);
  });
});

describe("readConfigFile: models on demand and KV cache types", () => {
  it("reads the keep-alive as a duration, sizes and types", () => {
    const config = readConfigFile(writeConfig({ keepAlive: "10m", maxLoadedModels: 3, maxMemory: "8G", pullOnDemand: true, cacheTypeK: "q4_0", flashAttention: "on" }));
    expect(config).toMatchObject({ keepAlive: 600_000, maxLoadedModels: 3, maxMemory: 8 * 1024 ** 3, pullOnDemand: true, cacheTypeK: "q4_0", flashAttention: "on" });
    expect(readConfigFile(writeConfig({ keepAlive: -1 })).keepAlive).toBe(-1);
  });

  it("refuses bad values, naming the key", () => {
    expect(() => readConfigFile(writeConfig({ keepAlive: "forever" }))).toThrow(/keepAlive: expected seconds or a duration/);
    expect(() => readConfigFile(writeConfig({ maxLoadedModels: 0 }))).toThrow(/maxLoadedModels/);
    expect(() => readConfigFile(writeConfig({ cacheTypeV: "q5_1" }))).toThrow(/cacheTypeV/);
  });
});
