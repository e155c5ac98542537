/** The stream checkers must catch the breakages clients hit, or the stream tests prove nothing. */
import { describe, expect, it } from "vitest";
import { checkChatCompletionStream, checkCompletionStream, checkResponsesStream } from "../helpers/openai-stream.js";

const head = { id: "c1", object: "chat.completion.chunk", created: 1, model: "m" };
const frame = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
const chunk = (delta: object, finish: string | null = null) => frame({ ...head, choices: [{ index: 0, delta, finish_reason: finish }] });
const role = chunk({ role: "assistant", content: "" });
const done = "data: [DONE]\n\n";

describe("checkChatCompletionStream", () => {
  it("accepts a well-formed text stream", () => {
    expect(checkChatCompletionStream(role + chunk({ content: "Hi" }) + chunk({}, "stop") + done)).toEqual([]);
  });

  it.each([
    ["a missing role", chunk({ content: "Hi" }) + chunk({}, "stop") + done, /role/],
    ["a missing [DONE]", role + chunk({}, "stop"), /DONE/],
    ["two finish chunks", role + chunk({}, "stop") + chunk({}, "stop") + done, /finish_reason/],
    ["a tool call without index", role + chunk({ tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: "" } }] }) + chunk({}, "tool_calls") + done, /index/],
    ["arguments in the first delta", role + chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }] }) + chunk({}, "tool_calls") + done, /arguments:""/],
    ["content beside tool calls", role + chunk({ content: "x", tool_calls: [{ index: 0, id: "c", type: "function", function: { name: "f", arguments: "" } }] }) + chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }) + chunk({}, "tool_calls") + done, /content and tool_calls/],
    ["stop after a tool call", role + chunk({ tool_calls: [{ index: 0, id: "c", type: "function", function: { name: "f", arguments: "" } }] }) + chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }) + chunk({}, "stop") + done, /finish_reason is stop/],
    ["arguments that are not JSON", role + chunk({ tool_calls: [{ index: 0, id: "c", type: "function", function: { name: "f", arguments: "" } }] }) + chunk({ tool_calls: [{ index: 0, function: { arguments: "{" } }] }) + chunk({}, "tool_calls") + done, /not JSON/],
    ["JSON across two data lines", "data: {\"a\":\ndata: 1}\n\n" + role + chunk({}, "stop") + done, /data lines/],
    ["a ': ping' comment", ": ping\n\n" + role + chunk({}, "stop") + done, /ping/],
  ])("reports %s", (_, text, problem) => {
    expect(checkChatCompletionStream(text).join("\n")).toMatch(problem);
  });

  it("checks include_usage: null usage before, one usage chunk with choices [] last", () => {
    const withUsage = (delta: object, finish: string | null = null) => frame({ ...head, choices: [{ index: 0, delta, finish_reason: finish }], usage: null });
    const usage = frame({ ...head, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
    expect(checkChatCompletionStream(withUsage({ role: "assistant" }) + withUsage({}, "stop") + usage + done, { includeUsage: true })).toEqual([]);
    expect(checkChatCompletionStream(role + chunk({}, "stop") + done, { includeUsage: true }).join()).toMatch(/usage must be null/);
    expect(checkChatCompletionStream(withUsage({ role: "assistant" }) + withUsage({}, "stop") + usage + done).join()).toMatch(/without include_usage/);
  });
});

describe("checkCompletionStream and checkResponsesStream", () => {
  it("report a completion chunk without index and a responses stream without response.completed", () => {
    const bad = frame({ id: "x", object: "text_completion", choices: [{ text: "a", finish_reason: "stop" }] }) + done;
    expect(checkCompletionStream(bad).join()).toMatch(/index/);
    const events = `event: response.created\ndata: ${JSON.stringify({ type: "response.created", sequence_number: 0, response: {} })}\n\n` +
      `event: response.output_item.added\ndata: ${JSON.stringify({ type: "response.output_item.added", sequence_number: 2, output_index: 0 })}\n\n`;
    const problems = checkResponsesStream(events).join("\n");
    expect(problems).toMatch(/sequence_number 2/);
    expect(problems).toMatch(/last event/);
  });
});
