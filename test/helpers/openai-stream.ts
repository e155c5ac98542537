/**
 * Well-formedness checkers for the OpenAI surface's SSE streams (chat-streaming, completions/object and
 * responses-streaming under https://platform.openai.com/docs/api-reference/), and a recording `fetch` so every
 * stream an SDK client reads in a test is checked from its raw bytes. Each checker returns a list of problems (empty = well-formed).
 */
import { parseSse, type SseEvent } from "./sse.js";

/** Parses SSE text (shared parser) and reports framing problems the parser forgives: an event spread over several
 * data lines, a comment starting with ": ping" (Continue ends the stream there). */
export function parseSseStrict(text: string): { events: SseEvent[]; problems: string[] } {
  const problems: string[] = [];
  for (const block of text.split("\n\n")) {
    const lines = block.split("\n");
    const dataLines = lines.filter((line) => line.startsWith("data:")).length;
    if (dataLines > 1) problems.push(`an event spans ${dataLines} data lines: ${block.slice(0, 80)}`);
    if (lines.some((line) => line.startsWith(": ping"))) problems.push("a comment starts with ': ping' (breaks Continue)");
  }
  if (text.length && !text.endsWith("\n\n")) problems.push("the stream does not end with a blank line");
  return { events: parseSse(text), problems };
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Checks a chat.completion.chunk stream (https://platform.openai.com/docs/api-reference/chat-streaming); `choices`
 * is the `n` asked for (default 1).
 */
export function checkChatCompletionStream(text: string, options: { includeUsage?: boolean; choices?: number } = {}): string[] {
  const { events, problems } = parseSseStrict(text);
  const datas = events.map((event) => event.data);
  const errorAt = datas.findIndex((data) => data !== "[DONE]" && "error" in JSON.parse(data));
  if (errorAt >= 0) {
    if (errorAt !== datas.length - 1) problems.push("events follow an in-band error");
    if (typeof JSON.parse(datas[errorAt]!).error?.message !== "string") problems.push("the in-band error has no message");
  } else if (datas.at(-1) !== "[DONE]") problems.push("the stream does not end with data: [DONE]");
  if (datas.indexOf("[DONE]") >= 0 && datas.indexOf("[DONE]") !== datas.length - 1) problems.push("events follow [DONE]");
  const chunks: Json[] = datas.filter((data, index) => data !== "[DONE]" && index !== errorAt).map((data) => JSON.parse(data));
  problems.push(...checkChunks(chunks, options.includeUsage === true, errorAt >= 0, options.choices ?? 1));
  return problems;
}

function checkChunks(chunks: Json[], includeUsage: boolean, errored: boolean, choices: number): string[] {
  const problems: string[] = [];
  const first = chunks[0];
  const calls = new Map<number, { id: string; args: string }>();
  const finishes = new Map<number, number>();
  const started = new Set<number>();
  let sawText = false;
  chunks.forEach((chunk, position) => {
    const at = `chunk ${position}`;
    if (chunk.object !== "chat.completion.chunk") problems.push(`${at}: object is ${chunk.object}`);
    if (chunk.id !== first?.id || chunk.created !== first?.created || chunk.model !== first?.model) problems.push(`${at}: id/created/model differ from the first chunk`);
    if (!Array.isArray(chunk.choices)) problems.push(`${at}: no choices array`);
    const isUsageChunk = Array.isArray(chunk.choices) && chunk.choices.length === 0;
    if (includeUsage && !isUsageChunk && chunk.usage !== null) problems.push(`${at}: usage must be null before the usage chunk`);
    if (!includeUsage && "usage" in chunk) problems.push(`${at}: usage present without include_usage`);
    if (isUsageChunk) problems.push(...checkUsageChunk(chunk, position, chunks.length, includeUsage));
    for (const choice of chunk.choices ?? []) {
      if (typeof choice.index !== "number") problems.push(`${at}: a choice has no index`);
      const delta = choice.delta ?? {};
      if (!started.has(choice.index) && delta.role !== "assistant") problems.push(`${at}: the first delta of choice ${choice.index} has no role assistant`);
      if (started.has(choice.index) && "role" in delta && delta.role !== "assistant") problems.push(`${at}: role ${delta.role}`);
      started.add(choice.index);
      if (choice.finish_reason !== null) finishes.set(choice.index, (finishes.get(choice.index) ?? 0) + 1);
      if (delta.content && delta.tool_calls) problems.push(`${at}: content and tool_calls in one delta`);
      if (delta.content || delta.tool_calls) sawText = true;
      if (delta.reasoning_content && sawText) problems.push(`${at}: reasoning after content or tool calls`);
      for (const call of delta.tool_calls ?? []) problems.push(...checkToolDelta(call, calls, at));
      if (choice.finish_reason !== null && calls.size > 0 && choice.finish_reason !== "tool_calls" && choice.finish_reason !== "length") {
        problems.push(`${at}: tool calls were made but finish_reason is ${choice.finish_reason}`);
      }
    }
  });
  problems.push(...checkFinishes(errored ? undefined : finishes, choices));
  // After an in-band error, or at the token limit, the last call may be cut short; only a finished stream owes
  // complete arguments.
  const cut = chunks.some((chunk) => (chunk.choices ?? []).some((choice: Json) => choice.finish_reason === "length"));
  if (!errored && !cut) for (const [index, call] of calls) {
    try { JSON.parse(call.args); } catch { problems.push(`tool call ${index}: arguments ${JSON.stringify(call.args)} are not JSON`); }
  }
  return problems;
}

/** Each of the `choices` indices must finish exactly once (unless the stream errored). */
function checkFinishes(finishes: Map<number, number> | undefined, choices: number): string[] {
  if (!finishes) return [];
  return Array.from({ length: choices }, (_, index) => finishes.get(index) ?? 0)
    .flatMap((count, index) => (count === 1 ? [] : [`choice ${index}: ${count} chunks carry a finish_reason (expected 1)`]));
}

function checkUsageChunk(chunk: Json, position: number, count: number, includeUsage: boolean): string[] {
  const problems: string[] = [];
  if (!includeUsage) problems.push(`chunk ${position}: empty choices without include_usage`);
  if (position !== count - 1) problems.push(`chunk ${position}: the usage chunk is not last`);
  for (const key of ["prompt_tokens", "completion_tokens", "total_tokens"]) {
    if (!Number.isInteger(chunk.usage?.[key])) problems.push(`chunk ${position}: usage.${key} is not an integer`);
  }
  return problems;
}

function checkToolDelta(call: Json, calls: Map<number, { id: string; args: string }>, at: string): string[] {
  const problems: string[] = [];
  if (typeof call.index !== "number") return [`${at}: a tool-call delta has no index`];
  if (typeof call.function !== "object") problems.push(`${at}: a tool-call delta has no function object`);
  const known = calls.get(call.index);
  if (!known) {
    if (!call.id || call.type !== "function" || !call.function?.name || call.function?.arguments !== "") {
      problems.push(`${at}: the first delta of call ${call.index} lacks id, type, name or arguments:""`);
    }
    if ([...calls.values()].some((other) => other.id === call.id)) problems.push(`${at}: duplicate tool call id ${call.id}`);
    calls.set(call.index, { id: call.id, args: call.function?.arguments ?? "" });
    return problems;
  }
  if ("id" in call || "type" in call || call.function?.name !== undefined) problems.push(`${at}: a later delta of call ${call.index} repeats id/type/name`);
  known.args += call.function?.arguments ?? "";
  return problems;
}

/**
 * Checks a text_completion stream (https://platform.openai.com/docs/api-reference/completions/object); `choices`
 * counts every prompt's `n` (default 1).
 */
export function checkCompletionStream(text: string, options: { includeUsage?: boolean; choices?: number } = {}): string[] {
  const { events, problems } = parseSseStrict(text);
  if (events.at(-1)?.data !== "[DONE]") problems.push("the stream does not end with data: [DONE]");
  const chunks: Json[] = events.filter((event) => event.data !== "[DONE]").map((event) => JSON.parse(event.data));
  const finishes = new Map<number, number>();
  chunks.forEach((chunk, position) => {
    if (chunk.object !== "text_completion") problems.push(`chunk ${position}: object is ${chunk.object}`);
    if (chunk.choices?.length === 0) {
      problems.push(...checkUsageChunk(chunk, position, chunks.length, options.includeUsage === true));
      return;
    }
    for (const choice of chunk.choices ?? []) {
      if (typeof choice.index !== "number" || typeof choice.text !== "string") problems.push(`chunk ${position}: a choice lacks index or text`);
      if (choice.finish_reason !== null) finishes.set(choice.index, (finishes.get(choice.index) ?? 0) + 1);
    }
  });
  problems.push(...checkFinishes(finishes, options.choices ?? 1));
  return problems;
}

/** Checks a Responses API stream (https://platform.openai.com/docs/api-reference/responses-streaming). */
export function checkResponsesStream(text: string): string[] {
  const { events, problems } = parseSseStrict(text);
  const payloads: Json[] = events.map((event) => JSON.parse(event.data));
  payloads.forEach((payload, position) => {
    if (typeof payload.type !== "string") problems.push(`event ${position}: no type`);
    if (payload.sequence_number !== position) problems.push(`event ${position}: sequence_number ${payload.sequence_number}`);
    if (events[position]?.event !== undefined && events[position]?.event !== payload.type) problems.push(`event ${position}: event name differs from type`);
  });
  if (payloads[0]?.type !== "response.created") problems.push("the first event is not response.created");
  const last = payloads.at(-1);
  if (last?.type !== "response.completed" && last?.type !== "response.failed") problems.push(`the last event is ${last?.type}`);
  const added = payloads.filter((payload) => payload.type === "response.output_item.added").map((payload) => payload.output_index);
  const done = payloads.filter((payload) => payload.type === "response.output_item.done").map((payload) => payload.output_index);
  // A failed response may leave items open; a completed one must have finalized every item it announced.
  if (last?.type === "response.completed" && JSON.stringify(added) !== JSON.stringify(done)) problems.push(`items added ${added} but done ${done}`);
  if (last?.type === "response.completed") {
    const usage = last.response?.usage ?? {};
    for (const key of ["input_tokens", "output_tokens", "total_tokens"]) if (!Number.isInteger(usage[key])) problems.push(`usage.${key} is not an integer`);
    if (!Number.isInteger(usage.input_tokens_details?.cached_tokens)) problems.push("usage.input_tokens_details.cached_tokens is not an integer");
  }
  return problems;
}

/** A fetch that keeps a copy of every streamed (text/event-stream) response body for checking. */
export function createRecordingFetch(): { fetch: typeof fetch; streams: () => Promise<Array<{ url: string; body: unknown; text: string }>> } {
  const pending: Array<Promise<{ url: string; body: unknown; text: string }>> = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (response.headers.get("content-type")?.includes("text/event-stream")) {
      const body = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
      pending.push(response.clone().text().then((text) => ({ url: String(input instanceof Request ? input.url : input), body, text })));
    }
    return response;
  };
  return { fetch: recordingFetch, streams: () => Promise.all(pending) };
}

/** Runs the right checker for each recorded stream (by URL) and returns every problem found. */
export async function checkRecordedStreams(recorded: ReturnType<typeof createRecordingFetch>): Promise<string[]> {
  const streams = await recorded.streams();
  return streams.flatMap(({ url, body, text }) => {
    const json = body as Json | undefined;
    const includeUsage = json?.stream_options?.include_usage === true;
    const n = json?.n ?? 1;
    const prompts = Array.isArray(json?.prompt) && json.prompt.some((item: unknown) => typeof item !== "number") ? json.prompt.length : 1;
    const problems = url.includes("/chat/completions") ? checkChatCompletionStream(text, { includeUsage, choices: n })
      : url.includes("/completions") ? checkCompletionStream(text, { includeUsage, choices: n * prompts })
      : url.includes("/responses") ? checkResponsesStream(text) : [];
    return problems.map((problem) => `${url}: ${problem}`);
  });
}
