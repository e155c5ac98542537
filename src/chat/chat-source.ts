/** Where replies come from: the local engine (local-source.ts) or a server over HTTP (remote-source.ts). */
import type { ChatRequest, GenerationEvent } from "../engine/index.js";

/** The model a source talks to. */
export interface SourceModel {
  id: string;
  /** Context window in tokens, when known. */
  contextSize?: number;
}

export interface ChatSource {
  /** The model in use now. */
  readonly model: SourceModel;
  /** Streams a reply. Errors before the first event may be thrown (the chat shows both kinds the same way). */
  generate(request: ChatRequest, signal: AbortSignal): AsyncIterable<GenerationEvent>;
  /** Switches to another model (local: load it; remote: use that id) and returns it. */
  switchModel(ref: string): Promise<SourceModel>;
  close(): Promise<void>;
}
