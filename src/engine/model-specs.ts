/**
 * What each backend loads: a local GGUF, a model behind remote replicas, or a recording. Declared here, not in the
 * backends, so the engine's callers describe models without importing a backend.
 */
import type { GenerationEvent } from "./events.js";

/** A local model to serve: its id, the .gguf path (already resolved by the model store), other names, its backend. */
export interface ModelDeclaration {
  id: string;
  path: string;
  aliases?: string[];
  /** A registered backend name (default: the engine's `backend`, else "llama-cpp"). */
  backend?: string;
  /** A smaller model with the same vocabulary that drafts tokens for this one (speculative decoding; llama.cpp). */
  draft?: DraftDeclaration;
}

/** The draft model of a local model: its .gguf path and the most tokens it drafts per step (default 8). */
export interface DraftDeclaration {
  path: string;
  maxTokens?: number;
}

/** One upstream of a remote model. */
export interface ReplicaSpec {
  /** Base URL including the API prefix, e.g. http://gpu1:8000/v1. */
  url: string;
  /** Bearer key for the upstream, if it needs one. */
  apiKey?: string;
}

/** A model served by remote OpenAI-compatible engines. */
export interface RemoteModelSpec {
  id: string;
  aliases?: string[];
  /**
   * The model name the upstream expects. When omitted: `id` if the upstream serves it, else the upstream's model
   * when it serves exactly one (reported as `details.upstreamModelPicked`), else `id`.
   */
  upstreamModel?: string;
  replicas: ReplicaSpec[];
  /** Context window; read from the upstream's /models when omitted. */
  contextSize?: number;
  /** Concurrent requests per replica (default 8). */
  maxConcurrency?: number;
  healthIntervalMs?: number;
  /** Time to wait for the upstream's response headers (default 60 s). */
  connectTimeoutMs?: number;
}

/** Catches the next generations that reach it; they go on when it opens or their request is aborted. */
export interface ScriptGate {
  /** The next `count` generations to reach the gate wait there (later ones pass). */
  hold(count?: number): void;
  /** Lets every waiting generation go on. */
  open(): void;
  /** Waits when the gate still has a catch left; resolves at once when `signal` aborts. */
  pass(signal?: AbortSignal): Promise<void>;
}

/** A scripted model to serve. */
export interface ScriptedModelSpec {
  id: string;
  aliases?: string[];
  /** The recording: an events.jsonl path (e.g. a golden fixture) or the events themselves. */
  events: string | GenerationEvent[];
  /** Requests it runs at once (default 1). */
  parallel?: number;
  /** Context window it reports (default 2048). */
  contextSize?: number;
  /** When held, each generation waits after `start` until it opens (or the request is aborted). */
  gate?: ScriptGate;
}
