import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { toRemoteSpec } from "../serve-engine.js";
import { resolveSettings, type ServeFlags } from "./serve.js";

const noFlags: ServeFlags = { auth: true, prefixCache: true, prefillLane: true, drainTimeout: 30 };

function writeConfig(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "kiln-serve-")), "kiln.json");
  writeFileSync(path, JSON.stringify(content));
  return path;
}

describe("resolveSettings", () => {
  it("uses the defaults without a config file", () => {
    expect(resolveSettings(noFlags, {})).toMatchObject({ host: "127.0.0.1", port: 5456, apiKeys: [], auth: true, logLevel: "info", logBodies: false, models: [] });
  });

  it("takes the file's settings and lets flags override them", () => {
    const config = writeConfig({
      host: "0.0.0.0", port: 9000, apiKeys: ["file-key"], threads: 3, logLevel: "warn",
      models: [{ name: "big", backend: "openai", upstreams: ["http://a:8000/v1"] }, { source: "smollm2-135m", aliases: ["small"] }],
    });
    const fromFile = resolveSettings({ ...noFlags, config }, { KILN_API_KEY: "env-key" });
    expect(fromFile).toMatchObject({ host: "0.0.0.0", port: 9000, threads: 3, logLevel: "warn", apiKeys: ["file-key", "env-key"] });
    expect(fromFile.models.map((m) => m.kind)).toEqual(["remote", "local"]);
    const overridden = resolveSettings({ ...noFlags, config, port: 0, threads: 1, apiKey: ["flag-key"], logLevel: "debug", model: ["tiny=/m/t.gguf"] }, {});
    expect(overridden).toMatchObject({ host: "0.0.0.0", port: 0, threads: 1, logLevel: "debug", apiKeys: ["flag-key", "file-key"] });
    expect(overridden.models).toEqual([{ kind: "local", name: "tiny", source: "/m/t.gguf", aliases: [] }]);
  });

  it("maps the request caps: defaults, and --max-messages, --max-blocks and --max-body (MB)", () => {
    expect(resolveSettings(noFlags, {})).toMatchObject({ inputLimits: { maxMessages: 10_000, maxBlocks: 50_000 }, maxBodyBytes: 32 * 1024 * 1024 });
    expect(resolveSettings({ ...noFlags, maxMessages: 5, maxBlocks: 7, maxBody: 2 }, {})).toMatchObject({ inputLimits: { maxMessages: 5, maxBlocks: 7 }, maxBodyBytes: 2 * 1024 * 1024 });
  });

  it("takes the prefix cache's disk budget from --cache-disk, else the file, else 8 GiB", () => {
    expect(resolveSettings(noFlags, {})).toMatchObject({ cacheDiskBytes: 8 * 1024 ** 3, cacheMinTokens: undefined });
    const config = writeConfig({ cacheDisk: "512M", cacheMinTokens: 256 });
    expect(resolveSettings({ ...noFlags, config }, {})).toMatchObject({ cacheDiskBytes: 512 * 1024 ** 2, cacheMinTokens: 256 });
    expect(resolveSettings({ ...noFlags, config, cacheDisk: 0 }, {})).toMatchObject({ cacheDiskBytes: 0 });
  });

  it("passes --draft-model and --draft-max on, with the file's own models and their drafts", () => {
    expect(resolveSettings({ ...noFlags, draftModel: "qwen2.5-coder-0.5b", draftMax: 4 }, {})).toMatchObject({ draftModel: "qwen2.5-coder-0.5b", draftMax: 4 });
    const file = writeConfig({ models: [{ source: "qwen2.5-coder-1.5b", draftModel: "qwen2.5-coder-0.5b" }] });
    expect(resolveSettings({ ...noFlags, config: file }, {}).models).toEqual([{ kind: "local", name: undefined, source: "qwen2.5-coder-1.5b", aliases: [], draftModel: "qwen2.5-coder-0.5b" }]);
  });

  it("keeps the prefill lane unless --no-prefill-lane or the file's prefillLane: false turns it off", () => {
    expect(resolveSettings(noFlags, {})).toMatchObject({ prefillLane: true });
    expect(resolveSettings({ ...noFlags, prefillLane: false }, {})).toMatchObject({ prefillLane: false });
    expect(resolveSettings({ ...noFlags, config: writeConfig({ prefillLane: false }) }, {})).toMatchObject({ prefillLane: false });
    expect(resolveSettings({ ...noFlags, config: writeConfig({ prefillLane: true }), prefillLane: false }, {})).toMatchObject({ prefillLane: false });
  });

  it("takes llama.cpp's GPU backend and layers from the flags, else the file", () => {
    expect(resolveSettings(noFlags, {})).toMatchObject({ gpu: undefined, gpuLayers: undefined });
    const config = writeConfig({ gpu: "cuda", gpuLayers: "max" });
    expect(resolveSettings({ ...noFlags, config }, {})).toMatchObject({ gpu: "cuda", gpuLayers: "max" });
    expect(resolveSettings({ ...noFlags, config, gpu: "none", gpuLayers: 0 }, {})).toMatchObject({ gpu: "none", gpuLayers: 0 });
  });

  it("turns auth off with --no-auth or the file's noAuth, dropping every key", () => {
    const config = writeConfig({ noAuth: true, apiKeys: ["file-key"] });
    expect(resolveSettings({ ...noFlags, config }, { KILN_API_KEY: "k" })).toMatchObject({ auth: false, apiKeys: [] });
    expect(resolveSettings({ ...noFlags, auth: false, apiKey: ["x"] }, {})).toMatchObject({ auth: false, apiKeys: [] });
  });
});

describe("toRemoteSpec", () => {
  it("makes one replica per upstream, each with the key", () => {
    expect(toRemoteSpec({ kind: "remote", name: "big", upstreams: ["http://a/v1", "http://b/v1"], apiKey: "up", upstreamModel: "m", contextWindow: 4096, maxConcurrency: 2, aliases: ["b"] })).toEqual({
      id: "big", aliases: ["b"], upstreamModel: "m", replicas: [{ url: "http://a/v1", apiKey: "up" }, { url: "http://b/v1", apiKey: "up" }], contextSize: 4096, maxConcurrency: 2,
    });
  });
});
