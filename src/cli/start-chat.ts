/**
 * The body of `kiln chat`: checks for a terminal, loads a saved conversation, opens the source (local engine or
 * a server) and runs the Ink app until the user leaves. Loaded lazily by commands/chat.ts.
 */
import { readFile } from "node:fs/promises";
import { createElement } from "react";
import { render } from "ink";
import { UsageError } from "./report-error.js";
import { openLocalEngine } from "./local-engine.js";
import type { ChatFlags } from "./commands/chat.js";
import type { SamplingOptions } from "../engine/index.js";
import { ChatApp } from "../chat/chat-app.js";
import { initialChatState } from "../chat/chat-state.js";
import type { ChatSource } from "../chat/chat-source.js";
import { createLocalSource } from "../chat/local-source.js";
import { createRemoteSource } from "../chat/remote-source.js";
import { parseSavedConversation, type SavedConversation } from "../chat/conversation.js";

/** Request settings already derived from the flags. */
export interface ChatSettingsInput {
  sampling: SamplingOptions;
  maxTokens: number;
}

/** Runs the chat; resolves to the exit code once the user leaves. */
export async function startChat(flags: ChatFlags, settings: ChatSettingsInput): Promise<number> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new UsageError("kiln chat needs an interactive terminal", 'for pipes and scripts use kiln run, e.g. echo "Hello" | kiln run');
  }
  const loaded = flags.load ? await loadConversation(flags.load) : undefined;
  const source = await openSource(flags);
  const state = initialChatState(
    { model: source.model.id, system: flags.system, sampling: settings.sampling, maxTokens: settings.maxTokens, stop: flags.stop },
    { contextSize: source.model.contextSize, loaded },
  );
  try {
    const app = render(createElement(ChatApp, { source, initialState: state }), { exitOnCtrlC: false });
    await app.waitUntilExit();
  } finally {
    await source.close();
  }
  return 0;
}

async function openSource(flags: ChatFlags): Promise<ChatSource> {
  if (flags.url) {
    const apiKey = flags.apiKey ?? process.env.KILN_API_KEY;
    return createRemoteSource({ url: flags.url, apiKey, api: flags.api, model: flags.model });
  }
  process.stderr.write(`loading ${flags.model ?? "the default model"}…\n`);
  // Progress of a pull prints only before the UI starts; a later /model would draw over it.
  let quiet = false;
  const source = await createLocalSource((ref) => openLocalEngine({ ...flags, model: ref, parallel: 1 }, { quiet }), flags.model);
  quiet = true;
  return source;
}

async function loadConversation(file: string): Promise<SavedConversation> {
  try {
    return parseSavedConversation(JSON.parse(await readFile(file, "utf8")));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UsageError(`cannot load ${file}: ${reason}`, "pass a file written by /save (Anthropic messages JSON)");
  }
}
