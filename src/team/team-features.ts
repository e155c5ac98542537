/**
 * The team features of `kiln serve` in one object: stored keys, model scopes, rate limits with their
 * headers, the usage ledger, Prometheus metrics and the request log. The HTTP core calls the ServerFeatures
 * hooks; `kiln serve` serves `metricsText()` at GET /metrics and calls `close()` on shutdown.
 */
import type { Engine } from "../engine/index.js";
import type { KeyVerifier, Principal, ServerFeatures } from "../server/context.js";
import { hasLiveKeys, watchStoredKeys } from "./key-store.js";
import { StoredKeyVerifier } from "./key-verifier.js";
import { toRateLimitHeaders } from "./rate-limit-headers.js";
import { RateLimiter } from "./rate-limiter.js";
import { createRequestLogger, type LogLevel } from "./request-logger.js";
import { TeamDb } from "./team-db.js";
import { TeamMetrics } from "./team-metrics.js";
import { admitRequest, type TeamPolicyDeps } from "./team-policy.js";
import { UsageLedger } from "./usage-ledger.js";

/** Options of {@link createTeamFeatures}. */
export interface TeamFeaturesOptions {
  /** KILN_HOME: the database is `<home>/kiln.db`. */
  home: string;
  logLevel?: LogLevel;
  /** Log prompts and outputs (off by default: they may be private). */
  logBodies?: boolean;
  /**
   * Whether the store holds a live key now. The HTTP core turns auth on as soon as `keys` is given, so a server
   * started without --api-key should pass `keys` only when this is true (else a fresh install refuses everyone).
   */
  hasLiveKeys?(): boolean;
  /** The engine whose queue and cache figures /metrics reports (else the one the server attaches when ready). */
  engine?: Engine;
  /** Where log lines go and whether they are readable rather than JSON (defaults: stderr, when it is a terminal). */
  logWrite?(line: string): void;
  prettyLogs?: boolean;
  /** Wall clock (limits, expiry, usage days); injectable for tests. */
  clock?(): number;
}

/** ServerFeatures plus what `kiln serve` needs around them. */
export interface TeamFeatures extends ServerFeatures {
  keys: KeyVerifier;
  /** The Prometheus text exposition for GET /metrics. */
  metricsText(): Promise<string>;
  /** The Content-Type of `metricsText()`. */
  readonly metricsContentType: string;
  /**
   * Whether the store holds a live key now. The HTTP core turns auth on as soon as `keys` is given, so a server
   * started without --api-key should pass `keys` only when this is true (else a fresh install refuses everyone).
   */
  hasLiveKeys(): boolean;
  /** Whether any key was ever stored (revoked and expired ones count): from then on stored keys are enforced. */
  hasStoredKeys(): boolean;
  /** The engine whose queue and cache figures /metrics reports (the server attaches its engine once ready). */
  attachEngine(engine: Engine): void;
  /** Reports how long a model took to load (kiln_model_load_seconds). */
  observeModelLoad(model: string, milliseconds: number): void;
  /** Writes pending usage now. */
  flush(): Promise<void>;
  /** Writes pending usage and closes the database; later calls do nothing. */
  close(): Promise<void>;
}

/** Opens the team database under `home` and builds the features around it. */
export function createTeamFeatures(options: TeamFeaturesOptions): TeamFeatures {
  const clock = options.clock ?? Date.now;
  const db = TeamDb.open(options.home);
  const ledger = new UsageLedger(db, clock);
  // Static keys (--api-key) are the HTTP core's: it checks them before these stored ones.
  const stored = new StoredKeyVerifier(db, { clock, onUse: (keyId) => ledger.touchKey(keyId) });
  const limiter = new RateLimiter(clock);
  const metrics = new TeamMetrics();
  if (options.engine) metrics.attachEngine(options.engine);
  const log = createRequestLogger({ level: options.logLevel, logBodies: options.logBodies, write: options.logWrite, pretty: options.prettyLogs, clock });
  const policy: TeamPolicyDeps = { limiter, limitsOf: (keyId) => stored.limitsOf(keyId), ledger };
  let closed = false;
  return {
    keys: stored,
    admit: (principal, request) => admitRequest(policy, principal, request),
    recordBodies: options.logBodies ?? false,
    responseHeaders: (principal: Principal) => toRateLimitHeaders(limiter.snapshot(principal.keyId, stored.limitsOf(principal.keyId)), clock()),
    onResponse(record) {
      metrics.observeResponse(record);
      log(record);
    },
    attachEngine: (engine) => metrics.attachEngine(engine),
    hasLiveKeys: () => hasLiveKeys(db, clock()),
    hasStoredKeys: watchStoredKeys(db),
    metricsText: () => metrics.text(),
    metricsContentType: metrics.registry.contentType,
    observeModelLoad: (model, milliseconds) => metrics.observeModelLoad(model, milliseconds / 1000),
    flush: () => ledger.flush(),
    async close() {
      if (closed) return;
      closed = true;
      try {
        await ledger.close();
      } finally {
        db.close();
      }
    },
  };
}
