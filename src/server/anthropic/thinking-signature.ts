/**
 * Signatures of the thinking blocks kiln writes. Anthropic's clients send a turn's thinking back in later turns,
 * signature included, and expect the server to tell its own blocks from altered ones: kiln signs each block with an
 * HMAC-SHA256 of its text under a secret of this install (`$KILN_HOME/thinking.key`, made on first use), marked with
 * SIGNATURE_PREFIX, and a block that comes back with a kiln signature that does not match is refused. A signature
 * without the mark is another server's (a conversation begun on Anthropic's API and continued here): kiln cannot
 * check it, and refusing it would end the conversation, so the block is taken as unsigned history.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EngineError, type GenerationEvent } from "../../engine/index.js";
import { kilnHome } from "../../models/index.js";
import { mapStream } from "../../lib/map-stream.js";

/** What every signature kiln writes begins with. */
const SIGNATURE_PREFIX = "kiln1.";

let secret: Buffer | undefined;

/** The install's secret: read once, created (readable by its owner only) when there is none yet. */
function signingSecret(): Buffer {
  if (secret) return secret;
  const home = kilnHome();
  const path = join(home, "thinking.key");
  try {
    mkdirSync(home, { recursive: true });
    // "wx": two servers starting together keep whichever secret was written first.
    writeFileSync(path, randomBytes(32).toString("hex"), { flag: "wx", mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  secret = Buffer.from(readFileSync(path, "utf8").trim(), "hex");
  return secret;
}

export function signThinking(text: string): string {
  return SIGNATURE_PREFIX + createHmac("sha256", signingSecret()).update(text).digest("base64");
}

/**
 * Refuses a thinking block whose kiln signature does not match its text (`param`: where the block is). A block
 * without a signature, or with another server's, is taken as unsigned history: clients of other APIs carry
 * reasoning without one.
 */
export function checkThinkingSignature(text: string, signature: string | undefined, param: string): void {
  if (!signature?.startsWith(SIGNATURE_PREFIX)) return;
  const expected = Buffer.from(signThinking(text));
  const given = Buffer.from(signature);
  if (given.length === expected.length && timingSafeEqual(given, expected)) return;
  throw new EngineError(
    "invalid_request",
    `${param}.signature: the signature does not match this thinking block (the block or its signature was changed, or another kiln install wrote it)`,
    { param: `${param}.signature` },
  );
}

/** The events with each reasoning block's signature set on its end. */
export function withThinkingSignatures(events: AsyncIterable<GenerationEvent>): AsyncIterable<GenerationEvent> {
  const texts = new Map<number, string>();
  return mapStream(events, {
    map: (event) => {
      if (event.type === "reasoning-delta") texts.set(event.index, (texts.get(event.index) ?? "") + event.text);
      return event.type === "reasoning-end" ? { ...event, signature: signThinking(texts.get(event.index) ?? "") } : event;
    },
  });
}
