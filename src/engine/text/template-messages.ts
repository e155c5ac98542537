/**
 * Turns the typed messages of a ChatRequest into the flat `{ role, content }` list chat templates iterate over,
 * under rules that keep strict templates happy: one leading system message, alternating turns, tool calls and
 * results as text, and nothing inserted between a tool call and its result.
 */
import { EngineError } from "../../errors/engine-error.js";
import type { ChatRequest, Message, Part } from "../messages.js";
import { formatToolCall, formatToolResult, formatToolResultBody } from "./tool-prompt.js";

/** One message as a chat template sees it. */
export interface TemplateMessage { role: "system" | "user" | "assistant" | "tool"; content: string }

/** How the template wants the conversation shaped. */
export interface ShapeOptions {
  /** Text appended to the leading system message (the tool description), if any. */
  toolsText?: string;
  /** The template renders role "tool" itself (wrapping results in <tool_response>). */
  toolRole: boolean;
}

/** Builds the template's message list: leading system first, then merged, alternating turns. */
export function toTemplateMessages(request: ChatRequest, options: ShapeOptions): TemplateMessage[] {
  const leading = [request.system ?? ""];
  const turns: TemplateMessage[] = [];
  let pendingSystem: string[] = [];
  let awaitingResults = false;
  request.messages.forEach((message, index) => {
    if (message.role === "system") {
      const text = joinText(message, index);
      if (turns.length === 0) leading.push(text);
      else if (awaitingResults) pendingSystem.push(text);
      else pushTurn(turns, { role: "user", content: text });
      return;
    }
    if (message.role === "assistant") {
      pendingSystem = flushSystem(turns, pendingSystem);
      pushTurn(turns, { role: "assistant", content: renderAssistant(message, index) });
      awaitingResults = message.parts.some((part) => part.type === "tool-call");
      return;
    }
    for (const turn of renderUserParts(message, index, options.toolRole)) pushTurn(turns, turn);
    // A system message that arrived between a tool call and its result goes after the result.
    pendingSystem = flushSystem(turns, pendingSystem);
    awaitingResults = false;
  });
  flushSystem(turns, pendingSystem);
  const system = [...leading, options.toolsText ?? ""].filter((text) => text.length > 0).join("\n\n");
  return system.length > 0 ? [{ role: "system", content: system }, ...turns] : turns;
}

/** Adds deferred system text as a user turn; returns the emptied list. */
function flushSystem(turns: TemplateMessage[], pending: string[]): string[] {
  if (pending.length > 0) pushTurn(turns, { role: "user", content: pending.join("\n") });
  return [];
}

/** Appends a turn, merging it into the previous one when both have the same role (tool results stay separate). */
function pushTurn(turns: TemplateMessage[], turn: TemplateMessage): void {
  const last = turns.at(-1);
  if (last && last.role === turn.role && turn.role !== "tool") last.content = `${last.content}\n\n${turn.content}`;
  else turns.push({ ...turn });
}

/** An assistant turn as text: its text and tool calls in order; past reasoning is dropped. */
function renderAssistant(message: Message, index: number): string {
  const chunks: string[] = [];
  message.parts.forEach((part, partIndex) => {
    refuseImage(part, `messages.${index}.content.${partIndex}`);
    if (part.type === "text") chunks.push(part.text);
    if (part.type === "tool-call") chunks.push(formatToolCall(part));
  });
  return chunks.join("\n");
}

/** A user or tool message: text runs become user turns, tool results tool turns (or user text without them). */
function renderUserParts(message: Message, index: number, toolRole: boolean): TemplateMessage[] {
  const turns: TemplateMessage[] = [];
  message.parts.forEach((part, partIndex) => {
    const param = `messages.${index}.content.${partIndex}`;
    refuseImage(part, param);
    if (part.type === "text") pushTurn(turns, { role: "user", content: part.text });
    if (part.type !== "tool-result") return;
    part.content.forEach((inner, innerIndex) => refuseImage(inner, `${param}.content.${innerIndex}`));
    if (toolRole) turns.push({ role: "tool", content: formatToolResultBody(part) });
    else pushTurn(turns, { role: "user", content: formatToolResult(part) });
  });
  return turns;
}

/** The text of a system message. */
function joinText(message: Message, index: number): string {
  message.parts.forEach((part, partIndex) => refuseImage(part, `messages.${index}.content.${partIndex}`));
  return message.parts.map((part) => (part.type === "text" ? part.text : "")).join("\n");
}

/** Text templates cannot carry images; a vision-capable backend handles them before rendering. */
function refuseImage(part: Part, param: string): void {
  if (part.type === "image") throw new EngineError("invalid_request", `${param}: this model does not accept images`, { param });
}
