/**
 * The agent trace: a ~1,500-token system prompt with a tool list, then turns that each append a user message, the
 * assistant's tool call, the tool result, and (after the request) the assistant's answer — the whole conversation
 * resent every turn, as coding agents do. Time to first token per turn shows whether the shared prefix is reused.
 */
import { agentSystemPrompt, agentTurn } from "./prompts.js";
import { isOverBudget } from "./config.js";
import { streamChat } from "./sse-client.js";

/** One conversation's state: its messages so far. */
export function createConversation(id, systemWords) {
  return { id, messages: [{ role: "system", content: agentSystemPrompt(systemWords) }] };
}

/** Appends turn `turn`'s scripted messages, sends the conversation, appends the answer; returns the turn's timing. */
export async function runAgentTurn(target, settings, conversation, turn) {
  const { user, toolCall, toolResult } = agentTurn(conversation.id, turn);
  conversation.messages.push(
    { role: "user", content: user },
    { role: "assistant", content: toolCall },
    { role: "user", content: toolResult },
  );
  const t = await streamChat(target.baseUrl, {
    model: target.model, messages: conversation.messages, maxTokens: settings.agentAnswerTokens, extra: target.extra,
    timeoutMs: settings.requestTimeoutMs,
  });
  const sent = [...conversation.messages];
  conversation.messages.push({ role: "assistant", content: t.text });
  return { turn, conversation: conversation.id, ttftMs: t.ttftMs, promptTokens: t.promptTokens, cachedTokens: t.cachedTokens, sent };
}

/**
 * Replays chosen turns of a recorded trace (the exact messages sent then) with one output token: for a server
 * without a prefix cache, TTFT depends only on that turn's prompt, so the turns between need not be sent.
 */
export async function replayAgentTurns(target, settings, recorded, turns) {
  const out = [];
  for (const turn of turns) {
    const r = recorded.find((x) => x.turn === turn);
    if (!r || isOverBudget(settings)) continue;
    const t = await streamChat(target.baseUrl, {
      model: target.model, messages: r.sent, maxTokens: 1, extra: target.extra, timeoutMs: settings.requestTimeoutMs,
    });
    out.push({ turn, conversation: r.conversation, ttftMs: t.ttftMs, promptTokens: t.promptTokens, cachedTokens: t.cachedTokens });
  }
  return out;
}

/** Runs `turns` turns of one conversation. */
export async function runAgentTrace(target, settings, systemWords) {
  const conversation = createConversation(0, systemWords);
  const turns = [];
  for (let turn = 1; turn <= settings.agentTurns && !isOverBudget(settings); turn++) {
    turns.push(await runAgentTurn(target, settings, conversation, turn));
  }
  return turns;
}

/** Two conversations taking turns (A1, B1, A2, B2, …) on a server with fewer sequences than conversations. */
export async function runInterleavedTraces(target, settings, systemWords) {
  const conversations = [createConversation(1, systemWords), createConversation(2, systemWords)];
  const turns = [];
  for (let turn = 1; turn <= settings.interleavedTurns && !isOverBudget(settings); turn++) {
    for (const c of conversations) turns.push(await runAgentTurn(target, settings, c, turn));
  }
  return turns;
}
