import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addResidencyOptions, describeResidency, resolveResidency, type ResidencyFlags } from "./residency-options.js";

function parseFlags(args: string[]): ResidencyFlags {
  const command = addResidencyOptions(new Command().exitOverride().configureOutput({ writeErr: () => undefined }));
  return command.parse(args, { from: "user" }).opts<ResidencyFlags>();
}

describe("residency flags and config keys", () => {
  it("reads keep-alive durations, limits and KV cache types, the flags over the file's keys", () => {
    const file = { keepAlive: 600_000, maxLoadedModels: 3, maxMemory: 8 * 1024 ** 3, pullOnDemand: true, cacheTypeK: "q4_0" as const };
    expect(resolveResidency({}, file)).toEqual({ keepAliveMs: 600_000, maxLoadedModels: 3, maxMemory: 8 * 1024 ** 3, pullOnDemand: true, kvCacheTypes: { k: "q4_0", v: "f16" } });
    const flags = parseFlags(["--keep-alive", "0", "--max-loaded-models", "1", "--cache-type-k", "q8_0", "--cache-type-v", "q8_0"]);
    expect(resolveResidency(flags, file)).toMatchObject({ keepAliveMs: 0, maxLoadedModels: 1, kvCacheTypes: { k: "q8_0", v: "q8_0" } });
    expect(resolveResidency(parseFlags(["--keep-alive", "-1"]), {})).toEqual({ keepAliveMs: -1, pullOnDemand: false });
  });

  it("reads flash attention, the flag over the file's key, and refuses it off beside a quantized V cache", () => {
    expect(resolveResidency({}, { flashAttention: "off" })).toMatchObject({ flashAttention: "off" });
    expect(resolveResidency(parseFlags(["--flash-attention", "on"]), { flashAttention: "off" })).toMatchObject({ flashAttention: "on" });
    expect(resolveResidency({}, {})).not.toHaveProperty("flashAttention");
    expect(() => resolveResidency(parseFlags(["--flash-attention", "off", "--cache-type-v", "q8_0"]), {})).toThrow(/q8_0 V cache needs flash attention/);
    expect(() => parseFlags(["--flash-attention", "yes"])).toThrow(/Allowed choices are auto, on, off/);
  });

  it("refuses bad values, naming the flag", () => {
    expect(() => parseFlags(["--keep-alive", "soon"])).toThrow(/expected a duration/);
    expect(() => parseFlags(["--cache-type-v", "q5_1"])).toThrow(/Allowed choices are f16, q8_0, q4_0/);
  });

  it("says at start-up what is offered and when models unload", () => {
    expect(describeResidency({ pullOnDemand: false, maxLoadedModels: 2 }, 300_000, 16 * 1024 ** 3)).toBe("models on demand: every model in the store, unloaded after 5m idle, at most 2 loaded, memory budget 16.0 GiB");
    expect(describeResidency({ pullOnDemand: true, keepAliveMs: 0 }, 300_000, 1024 ** 3)).toBe("models on demand: the store's and the catalog's models, unloaded after each request, memory budget 1.0 GiB");
  });
});
