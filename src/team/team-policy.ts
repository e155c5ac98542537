/**
 * The team policy the server calls around each generating request: admit it against its key's rate limits before
 * it takes a slot, and settle it once its record is complete — the limiter learns the real token count, the ledger
 * the usage. Model scopes are the server's (a principal carries them); metrics and logs read the record.
 */
import type { Admission, AdmissionRequest, Principal, ResponseRecord } from "../server/context.js";
import type { Usage } from "../engine/index.js";
import type { Limits, RateLimiter } from "./rate-limiter.js";
import type { UsageLedger } from "./usage-ledger.js";

/** What the policy reports to; shared by every request of a server. */
export interface TeamPolicyDeps {
  limiter: RateLimiter;
  limitsOf(keyId: string): Limits;
  ledger?: UsageLedger;
}

/** Admits a request of `principal` or throws rate_limited; its prompt is counted only when a token limit applies. */
export async function admitRequest(deps: TeamPolicyDeps, principal: Principal, request: AdmissionRequest): Promise<Admission> {
  const limits = deps.limitsOf(principal.keyId);
  const admitted = deps.limiter.admit(principal.keyId, limits, limits.tpm === undefined ? 0 : await request.estimateTokens());
  return {
    settle(record) {
      const usage = usageOf(record);
      admitted.settle(usage ? usage.inputTokens + usage.outputTokens : 0);
      if (usage) deps.ledger?.record(principal.keyId, record.model ?? request.model, usage);
    },
  };
}

/** The usage a record holds; none when generation never started. */
export function usageOf(record: ResponseRecord): Usage | undefined {
  if (record.inputTokens === undefined) return undefined;
  return {
    inputTokens: record.inputTokens,
    cachedInputTokens: record.cachedInputTokens ?? 0,
    outputTokens: record.outputTokens ?? 0,
    ...(record.cacheTier ? { cacheTier: record.cacheTier } : {}),
  };
}
