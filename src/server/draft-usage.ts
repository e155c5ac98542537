/** Drafted-token counts of several generations (n choices, several prompts) added up; undefined when none drafted. */
import type { DraftUsage } from "../engine/index.js";

export function addDraftUsage(a: DraftUsage | undefined, b: DraftUsage | undefined): DraftUsage | undefined {
  if (!a || !b) return a ?? b;
  return { drafted: a.drafted + b.drafted, accepted: a.accepted + b.accepted };
}
