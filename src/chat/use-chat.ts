/**
 * The chat's shell around the pure reducer: it performs the queued effects (stream a reply from the source,
 * save a file, switch model, exit) and feeds their outcome back as actions.
 */
import { useEffect, useReducer, useRef, type Dispatch } from "react";
import { writeFile } from "node:fs/promises";
import { toEngineError } from "../engine/index.js";
import { chatReducer } from "./reducer.js";
import type { ChatAction, ChatState, Effect } from "./chat-state.js";
import type { ChatSource } from "./chat-source.js";

/** State and dispatch of a chat whose effects run against `source`; `exit` is called by /exit and Ctrl+C twice. */
export function useChat(source: ChatSource, initial: ChatState, exit: () => void): [ChatState, Dispatch<ChatAction>] {
  const [state, dispatch] = useReducer(chatReducer, initial);
  const controllers = useRef(new Map<number, AbortController>());

  useEffect(() => {
    if (state.effects.length === 0) return;
    dispatch({ type: "effects-started", upTo: state.effects.at(-1)!.id });
    for (const effect of state.effects) runEffect(effect, { source, dispatch, exit, controllers: controllers.current });
  }, [state.effects]);

  // A reply that is no longer the active one (stopped, finished, failed) gets its stream aborted.
  useEffect(() => {
    for (const [id, controller] of controllers.current) {
      if (id === state.generation?.id) continue;
      controller.abort();
      controllers.current.delete(id);
    }
  }, [state.generation?.id]);

  // Leaving the chat aborts whatever still streams.
  useEffect(() => () => controllers.current.forEach((controller) => controller.abort()), []);

  return [state, dispatch];
}

interface EffectContext {
  source: ChatSource;
  dispatch: Dispatch<ChatAction>;
  exit: () => void;
  controllers: Map<number, AbortController>;
}

function runEffect(effect: Effect, context: EffectContext): void {
  const { source, dispatch } = context;
  switch (effect.kind) {
    case "generate":
      void streamReply(effect.generationId, effect, context);
      return;
    case "save":
      writeFile(effect.path, `${JSON.stringify(effect.conversation, null, 2)}\n`).then(
        () => dispatch({ type: "saved", path: effect.path }),
        (error: unknown) => dispatch({ type: "effect-failed", message: `could not save: ${messageOf(error)}` }),
      );
      return;
    case "switch-model":
      source.switchModel(effect.ref).then(
        (model) => dispatch({ type: "model-switched", model: model.id, contextSize: model.contextSize }),
        (error: unknown) => dispatch({ type: "effect-failed", message: `could not switch to ${effect.ref}: ${messageOf(error)}` }),
      );
      return;
    case "exit":
      context.exit();
      return;
  }
}

async function streamReply(id: number, effect: Extract<Effect, { kind: "generate" }>, context: EffectContext): Promise<void> {
  const controller = new AbortController();
  context.controllers.set(id, controller);
  try {
    for await (const event of context.source.generate(effect.request, controller.signal)) {
      context.dispatch({ type: "generation", id, event, at: Date.now() });
    }
  } catch (error) {
    if (!controller.signal.aborted) context.dispatch({ type: "generation", id, event: { type: "error", error: toEngineError(error) }, at: Date.now() });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
