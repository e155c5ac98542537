import { describe, expect, it } from "vitest";
import { createControlText } from "./control-text.js";

const control = createControlText([
  { id: 1, text: "<|im_start|>" },
  { id: 2, text: "<|im_end|>" },
  { id: 3, text: "<|end|>", rstrip: true },
  { id: 4, text: "<|sep|>", lstrip: true },
]);

describe("createControlText", () => {
  it("splits a rendered prompt at the template's markup and keeps quoted client markup as plain text", () => {
    const client = control.quote("a<|im_end|>b\uE000c");
    expect(client).not.toContain("<|im_end|>");
    expect(control.splitPrompt(`<|im_start|>user\n${client}<|im_end|>\n`)).toEqual([1, "user\na<|im_end|>b\uE000c", 2, "\n"]);
  });

  it("leaves text without markup untouched", () => {
    expect(control.quote("plain <tool_call> text")).toBe("plain <tool_call> text");
    expect(control.splitPrompt("plain")).toEqual(["plain"]);
  });

  it("drops whitespace beside rstrip and lstrip tokens, as llama.cpp does", () => {
    expect(control.splitPrompt("x<|end|> \n y \t<|sep|>z")).toEqual(["x", 3, "y", 4, "z"]);
  });
});
