/**
 * SSE parsing for tests and the well-formedness checker of Anthropic streams (the event grammar of
 * https://docs.anthropic.com/en/api/messages-streaming), used on every stream the tests see.
 */
import { parseSseText, type SseEvent as LibSseEvent } from "../../src/lib/read-sse.js";

/** One parsed SSE event (kiln's own reader, src/lib/read-sse.ts) with `json`, the data's parse when it is JSON. */
export interface SseEvent extends LibSseEvent { json?: any }

/** Parses SSE text into events (comments skipped, \r\n tolerated). */
export function parseSse(text: string): SseEvent[] {
  return parseSseText(text).map((event) => ({ ...event, json: tryJson(event.data) }));
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Checks an Anthropic Messages stream: every event named and equal to its JSON type with one data line;
 * message_start first (content [], stop_reason null, usage object); blocks opened and closed in index order
 * 0..n-1 with matching deltas (text via text_delta from "", tool input via input_json_delta from {} whose
 * concatenation is valid JSON, thinking then one signature_delta); exactly one message_delta with stop_reason
 * and output_tokens; message_stop last. An `error` event may end the stream at any point; ping anywhere.
 * Returns the violations (empty when well-formed).
 */
export function checkAnthropicStream(text: string): string[] {
  const problems: string[] = [];
  const events = parseSse(text);
  for (const chunk of text.replace(/\r\n/g, "\n").split("\n\n").filter((c) => c.trim() && !c.startsWith(":"))) {
    const lines = chunk.split("\n").filter((line) => !line.startsWith(":"));
    if (lines.length !== 2 || !lines[0]!.startsWith("event: ") || !lines[1]!.startsWith("data: ")) problems.push(`malformed event: ${JSON.stringify(chunk)}`);
  }
  const body = events.filter((e) => e.event !== "ping");
  events.forEach((e, i) => {
    if (!e.json || e.json.type !== e.event) problems.push(`event ${i}: name ${e.event} does not equal data type ${e.json?.type}`);
  });
  const first = body[0]?.json;
  if (first?.type !== "message_start") problems.push("the first event must be message_start");
  else if (!Array.isArray(first.message?.content) || first.message.content.length !== 0 || first.message.stop_reason !== null || typeof first.message.usage !== "object") {
    problems.push("message_start must carry content [], stop_reason null and a usage object");
  }
  let open: { index: number; type: string; json: string } | undefined;
  let next = 0;
  let deltas = 0;
  let stopped = false;
  let unparsed: string | undefined;
  body.slice(1).forEach((e, i) => {
    const data = e.json ?? {};
    const at = `event ${i + 1} (${data.type})`;
    if (stopped) problems.push(`${at}: nothing may follow message_stop or error`);
    switch (data.type) {
      case "content_block_start": {
        if (open) problems.push(`${at}: block ${open.index} still open`);
        if (data.index !== next) problems.push(`${at}: expected index ${next}`);
        const block = data.content_block ?? {};
        if (block.type === "text" && block.text !== "") problems.push(`${at}: text block must start empty`);
        if (block.type === "tool_use" && (JSON.stringify(block.input) !== "{}" || !String(block.id).startsWith("toolu_"))) problems.push(`${at}: tool_use must start with input {} and a toolu_ id`);
        if (block.type === "thinking" && (block.thinking !== "" || block.signature !== "")) problems.push(`${at}: thinking must start empty`);
        open = { index: data.index, type: block.type, json: "" };
        next = data.index + 1;
        break;
      }
      case "content_block_delta": {
        if (!open || open.index !== data.index) { problems.push(`${at}: no open block ${data.index}`); break; }
        const expected = { text: ["text_delta"], tool_use: ["input_json_delta"], thinking: ["thinking_delta", "signature_delta"] }[open.type] ?? [];
        if (!expected.includes(data.delta?.type)) problems.push(`${at}: ${data.delta?.type} in a ${open.type} block`);
        if (data.delta?.type === "input_json_delta") open.json += data.delta.partial_json;
        break;
      }
      case "content_block_stop":
        if (!open || open.index !== data.index) problems.push(`${at}: no open block ${data.index}`);
        // Input that is not JSON is allowed only in a call cut off by max_tokens, which message_delta tells.
        else if (open.type === "tool_use" && !isJson(open.json)) unparsed = `${at}: tool input ${JSON.stringify(open.json)} is not valid JSON`;
        open = undefined;
        break;
      case "message_delta":
        deltas++;
        if (open) problems.push(`${at}: block ${open.index} still open`);
        if (!data.delta?.stop_reason || !("stop_sequence" in (data.delta ?? {}))) problems.push(`${at}: stop_reason and stop_sequence required`);
        if (!Number.isInteger(data.usage?.output_tokens)) problems.push(`${at}: usage.output_tokens required`);
        if (unparsed && data.delta?.stop_reason !== "max_tokens") problems.push(`${unparsed} and the stop reason is not max_tokens`);
        unparsed = undefined;
        break;
      case "message_stop":
        if (deltas !== 1) problems.push(`${at}: exactly one message_delta must precede message_stop`);
        stopped = true;
        break;
      case "error":
        if (!data.error?.type || typeof data.error?.message !== "string") problems.push(`${at}: error needs error.type and error.message`);
        stopped = true;
        break;
      default:
        problems.push(`${at}: unexpected event`);
    }
  });
  if (!stopped) problems.push("the stream must end with message_stop or error");
  return problems;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
