import { describe, expect, it } from "vitest";
import { EngineError } from "../engine/index.js";
import { resolveToolChoice, type ToolChoiceProblem } from "./tool-choice.js";

const refuse = (problem: ToolChoiceProblem) => new EngineError("invalid_request", problem, { param: "tool_choice" });

describe("resolveToolChoice", () => {
  it("maps modes and a named tool, with parallel only when the wire said so", () => {
    const tools = ["get_weather", "search"];
    expect(resolveToolChoice("none", { tools, parallel: false, refuse })).toEqual({ type: "none" });
    expect(resolveToolChoice("auto", { tools, refuse })).toEqual({ type: "auto" });
    expect(resolveToolChoice("required", { tools, parallel: false, refuse })).toEqual({ type: "required", parallel: false });
    expect(resolveToolChoice({ name: "search" }, { tools, parallel: true, refuse })).toEqual({ type: "tool", name: "search", parallel: true });
  });

  it("lets none and auto through without tools, and refuses what needs a tool that is not offered", () => {
    expect(resolveToolChoice("auto", { tools: [], refuse })).toEqual({ type: "auto" });
    expect(() => resolveToolChoice("required", { tools: [], refuse })).toThrow("no-tools");
    expect(() => resolveToolChoice({ name: "search" }, { tools: [], refuse })).toThrow("no-tools");
    expect(() => resolveToolChoice({ name: "search" }, { tools: ["get_weather"], refuse })).toThrow("unknown-tool");
  });
});
