import { describe, expect, it } from "vitest";
import { librariesIn } from "./native-module.js";

const bins = "/app/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
const line = (file: string, address: string) => `${address}-${address}1000 r-xp 00000000 08:01 1234 ${bins}/${file}`;

describe("librariesIn", () => {
  it("finds libllama and libggml whatever comes first in the maps, never libllama-common or libggml-base", () => {
    const files = ["libggml-base.so", "libllama-common.so", "libggml.v0.5.0.so", "libllama.v0.5.0.so", "libggml-cpu-zen4.so"];
    for (const order of [files, [...files].reverse()]) {
      expect(librariesIn(order.map((file, i) => line(file, `7f00000${i}`)).join("\n"))).toEqual({
        libllama: `${bins}/libllama.v0.5.0.so`,
        libggml: `${bins}/libggml.v0.5.0.so`,
      });
    }
  });

  it("accepts unversioned names and reports nothing without both libraries", () => {
    expect(librariesIn([line("libllama.so", "7f01"), line("libggml.so", "7f02")].join("\n"))).toEqual({ libllama: `${bins}/libllama.so`, libggml: `${bins}/libggml.so` });
    expect(librariesIn([line("libllama-common.so", "7f01"), line("libggml.so", "7f02")].join("\n"))).toBeUndefined();
  });
});
