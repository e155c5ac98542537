import { describe, expect, it } from "vitest";
import { Command } from "commander";
import { addModelOptions, parseGpuLayers, parseSize, toBytes, toGpuChoice, type ModelFlags } from "./options.js";

describe("toBytes", () => {
  it("reads plain bytes and binary units with or without i/B", () => {
    expect(toBytes("1048576")).toBe(1024 ** 2);
    expect(toBytes("8G")).toBe(8 * 1024 ** 3);
    expect(toBytes("500MiB")).toBe(500 * 1024 ** 2);
    expect(toBytes("1.5gb")).toBe(1.5 * 1024 ** 3);
    expect(toBytes("64k")).toBe(64 * 1024);
    expect(toBytes("0")).toBe(0);
  });

  it("refuses what is not a size", () => {
    for (const bad of ["", "G", "-1G", "8X", "eight"]) expect(toBytes(bad)).toBeUndefined();
    expect(() => parseSize("lots")).toThrow(/expected a size/);
  });
});

describe("the GPU flags", () => {
  it("reads --gpu-layers as auto, max or a count", () => {
    expect(parseGpuLayers("auto")).toBe("auto");
    expect(parseGpuLayers("MAX")).toBe("max");
    expect(parseGpuLayers("0")).toBe(0);
    expect(parseGpuLayers("33")).toBe(33);
    for (const bad of ["", "-1", "2.5", "all", "1e3"]) expect(() => parseGpuLayers(bad)).toThrow(/expected auto, max or a number of layers/);
  });

  it("reads --flash-attention on the commands that load a model, and refuses other values", () => {
    const parse = (args: string[]) => addModelOptions(new Command().exitOverride().configureOutput({ writeErr: () => undefined })).parse(args, { from: "user" }).opts<ModelFlags>();
    expect(parse(["--flash-attention", "off", "--gpu-layers", "0"])).toMatchObject({ flashAttention: "off", gpuLayers: 0 });
    expect(parse([]).flashAttention).toBeUndefined();
    expect(() => parse(["--flash-attention", "never"])).toThrow(/Allowed choices are auto, on, off/);
  });

  it("maps --gpu none to the CPU and passes the backends through", () => {
    expect(toGpuChoice("none")).toBe(false);
    expect(toGpuChoice("cuda")).toBe("cuda");
    expect(toGpuChoice("auto")).toBe("auto");
    expect(toGpuChoice(undefined)).toBeUndefined();
  });
});
