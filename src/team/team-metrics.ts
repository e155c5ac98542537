/**
 * Prometheus metrics for one server (a registry of its own, so two servers in one process never mix):
 * requests, latency, time to first token, inter-token gaps, tokens, and live engine figures read at scrape time.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Usage, Engine } from "../engine/index.js";
import type { ResponseRecord } from "../server/context.js";
import { usageOf } from "./team-policy.js";

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const ITL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** The metrics of one server, fed by each finished request's record and the model loader. */
export class TeamMetrics {
  readonly registry = new Registry();
  private engine: Engine | undefined;
  // Unmatched paths and unknown models come from clients: a bound keeps the series count finite.
  private readonly routes = new BoundedLabels(64);
  private readonly models = new BoundedLabels(64);
  private readonly requests: Counter<"route" | "status" | "model">;
  private readonly latency: Histogram<"route">;
  private readonly firstToken: Histogram<"model">;
  private readonly interToken: Histogram<"model">;
  private readonly tokens: Counter<"model" | "kind">;
  private readonly cacheHits: Counter<"model" | "tier">;
  private readonly cacheTokens: Counter<"model" | "tier">;
  private readonly modelLoad: Gauge<"model">;

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({
      name: "kiln_requests_total", help: "HTTP requests by route, status and model", labelNames: ["route", "status", "model"], registers,
    });
    this.latency = new Histogram({
      name: "kiln_request_duration_seconds", help: "HTTP request latency, until the last byte", labelNames: ["route"], buckets: LATENCY_BUCKETS, registers,
    });
    this.firstToken = new Histogram({
      name: "kiln_time_to_first_token_seconds", help: "Time from generate to the first generated content", labelNames: ["model"], buckets: TTFT_BUCKETS, registers,
    });
    this.interToken = new Histogram({
      name: "kiln_inter_token_seconds", help: "Gap between successive generated deltas", labelNames: ["model"], buckets: ITL_BUCKETS, registers,
    });
    this.tokens = new Counter({
      name: "kiln_tokens_total", help: "Tokens by kind: input (whole prompt), cached (reused prefix, part of input), output", labelNames: ["model", "kind"], registers,
    });
    this.cacheHits = new Counter({
      name: "kiln_prefix_cache_hits_total", help: "Requests that reused a cached prefix, by where it came from (ram, disk)", labelNames: ["model", "tier"], registers,
    });
    this.cacheTokens = new Counter({
      name: "kiln_prefix_cache_tokens_total", help: "Prompt tokens reused from the prefix cache, by tier (ram, disk)", labelNames: ["model", "tier"], registers,
    });
    this.modelLoad = new Gauge({ name: "kiln_model_load_seconds", help: "How long the model took to load", labelNames: ["model"], registers });
    this.addEngineGauges();
    collectDefaultMetrics({ register: this.registry, prefix: "kiln_" });
  }

  /** The engine whose live figures (queue, sequences, cache) are reported. */
  attachEngine(engine: Engine): void {
    this.engine = engine;
  }

  /** Counts one finished request: status, latency, and what its generations did (token timings, tokens). */
  observeResponse(record: ResponseRecord): void {
    const route = this.routes.label(record.route || "unmatched");
    const model = this.modelLabel(record.model);
    this.requests.inc({ route, status: String(record.status), model });
    this.latency.observe({ route }, record.durationMs / 1000);
    if (record.timeToFirstTokenMs !== undefined) this.firstToken.observe({ model }, record.timeToFirstTokenMs / 1000);
    for (const gap of record.interTokenMs ?? []) this.interToken.observe({ model }, gap / 1000);
    const usage = usageOf(record);
    if (usage) this.observeUsage(model, usage);
  }

  private observeUsage(label: string, usage: Usage): void {
    this.tokens.inc({ model: label, kind: "input" }, usage.inputTokens);
    this.tokens.inc({ model: label, kind: "cached" }, usage.cachedInputTokens);
    this.tokens.inc({ model: label, kind: "output" }, usage.outputTokens);
    if (usage.cacheTier && usage.cachedInputTokens > 0) {
      this.cacheHits.inc({ model: label, tier: usage.cacheTier });
      this.cacheTokens.inc({ model: label, tier: usage.cacheTier }, usage.cachedInputTokens);
    }
  }

  observeModelLoad(model: string, seconds: number): void {
    this.modelLoad.set({ model }, seconds);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** Model ids the engine knows, else "other": clients must not be able to mint label values. */
  private modelLabel(model: string | undefined): string {
    if (!model) return "";
    return this.engine ? (this.engine.findModel(model)?.id ?? "other") : this.models.label(model);
  }

  private addEngineGauges(): void {
    const registers = [this.registry];
    const stats = () => this.engine?.stats();
    new Gauge({ name: "kiln_queue_depth", help: "Requests waiting for a slot", registers, collect() { this.set(stats()?.queueDepth ?? 0); } });
    new Gauge({ name: "kiln_active_sequences", help: "Sequences generating now", registers, collect() { this.set(stats()?.activeSequences ?? 0); } });
    new Gauge({ name: "kiln_prefix_cache_disk_bytes", help: "Bytes of prefix states saved on disk", registers, collect() { this.set(stats()?.prefixCacheDiskBytes ?? 0); } });
    new Gauge({ name: "kiln_prefix_cache_disk_files", help: "Prefix states saved on disk", registers, collect() { this.set(stats()?.prefixCacheDiskFiles ?? 0); } });
    const steps = () => stats()?.steps ?? [];
    new Counter({
      name: "kiln_decode_steps_total", help: "Decode steps (llama.cpp and WebGPU models)", labelNames: ["model"], registers,
      collect() { this.reset(); for (const s of steps()) this.inc({ model: s.model }, s.steps); },
    });
    new Counter({
      name: "kiln_decode_step_tokens_total", help: "Tokens evaluated in decode steps (prompt and generated)", labelNames: ["model"], registers,
      collect() { this.reset(); for (const s of steps()) this.inc({ model: s.model }, s.tokens); },
    });
    new Counter({
      name: "kiln_decode_step_seconds_total",
      help: "Decode step time by part: compute (llama.cpp's decode) and host (between decodes while sequences generate)",
      labelNames: ["model", "part"], registers,
      collect() {
        this.reset();
        for (const s of steps()) {
          this.inc({ model: s.model, part: "compute" }, s.computeMs / 1000);
          this.inc({ model: s.model, part: "host" }, s.hostMs / 1000);
        }
      },
    });
    new Gauge({
      name: "kiln_prompt_cache_hit_ratio",
      help: "Prompt tokens reused from the prefix cache / all prompt tokens, since start",
      registers,
      collect() {
        const figures = stats();
        this.set(figures && figures.promptTokens > 0 ? figures.cachedPromptTokens / figures.promptTokens : 0);
      },
    });
  }
}

/** Label values as seen, up to a limit; later new values become "other". */
class BoundedLabels {
  private readonly seen = new Set<string>();

  constructor(private readonly limit: number) {}

  label(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.limit) return "other";
    this.seen.add(value);
    return value;
  }
}
