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
  /** Whether the model thinks in `<think>` blocks; undefined: detected from its chat template. */
  reasoning?: boolean;
  /** A smaller model with the same vocabulary that drafts tokens for this one (speculative decoding; llama.cpp). */
  draft?: DraftDeclaration;
  /**
   * false: load without the warm-up a server does at start (step calibration, the prompt thread), because a request
   * is waiting for this load; default: the engine's `warmUp`.
   */
  warmUp?: boolean;
}

/** The draft model of a local model: its .gguf path and the most tokens it drafts per step (default 8). */
export interface DraftDeclaration {
  path: string;
  maxTokens?: number;
  /**
   * Draft at every step a stream generates alone, as llama-server does, rather than only while drafting has measured
   * faster than the model's own token loop (draft-length.ts): for measuring a draft's acceptance.
   */
  always?: boolean;
}

/**
 * Models the engine loads on the first request that names them (a model store's), beside the declared ones, which
 * load at start and stay. Lookups are synchronous because the engine answers `findModel` at once.
 */
export interface OnDemandModels {
  /** The model a name (id or alias) means, or undefined. */
  find(name: string): OnDemandModel | undefined;
  /** Every model offered now (what /v1/models lists). */
  list(): OnDemandModel[];
  /** Names of models to load at start; unlike declared models they unload when idle. */
  preload?: string[];
}

/** A model that can be loaded by name. */
export interface OnDemandModel {
  id: string;
  aliases?: string[];
  /** A registered backend name (default: the engine's `backend`, else "llama-cpp"). */
  backend?: string;
  /** Bytes of its file: what the memory budget counts for it until its first load measures it. */
  fileSize: number;
  /** The context /v1/models shows before the first load (the trained length), when known. */
  contextSize?: number;
  /** Unix seconds (file time). */
  created?: number;
  /** What its backend loads (for llama-cpp and webgpu a ModelDeclaration); may pull the model first. */
  resolve(): Promise<unknown>;
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
