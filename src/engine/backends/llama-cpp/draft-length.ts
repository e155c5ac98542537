/**
 * Whether the next step drafts, from the speed each way has had on this machine lately. Drafting pays where a
 * target step of a few tokens costs little more than one, as on an idle CPU or a GPU; on a CPU shared with other
 * work, where every token costs its own compute, it can cost more than it brings. So the tokens and milliseconds of
 * drafting steps (the draft's proposals and the target's check, with what the draft had to catch up on) and of the
 * target's own loop are counted, fading so that the last dozen or so count most, and the faster way goes on, with a
 * probe of the other way every PROBE_EVERY steps so that a change of load is seen. A drafting step asks for
 * `--draft-max` proposals; the draft stops earlier where it is unsure (speculative-decode.ts).
 */

/** Tokens the target generates on its own in one go (a step of its own loop, or a probe of it). */
export const ALONE_TOKENS = 16;
/** Steps of the faster way between two probes of the other. */
const PROBE_EVERY = 8;
/** Weight a step keeps per later step of the same way. */
const FADE = 0.9;

/** Faded tokens and milliseconds of one way of generating. */
class Throughput {
  private tokens = 0;
  private ms = 0;

  add(tokens: number, ms: number): void {
    this.tokens = FADE * this.tokens + tokens;
    this.ms = FADE * this.ms + ms;
  }

  /** Tokens per millisecond; undefined before the first step. */
  get rate(): number | undefined {
    return this.ms > 0 ? this.tokens / this.ms : undefined;
  }
}

export class DraftLength {
  private readonly drafting = new Throughput();
  private readonly alone = new Throughput();
  private sinceProbe = 0;

  /** `always`: every step drafts, whatever the speeds measured. */
  constructor(readonly max: number, private readonly always = false) {}

  /** Proposals to ask for in the next step: `max`, or 0 for ALONE_TOKENS tokens of the target's own loop. */
  next(): number {
    if (this.always) return this.max;
    const drafting = this.drafting.rate;
    const alone = this.alone.rate;
    // Drafting is tried first, and the target's own loop as soon as drafting has been measured.
    if (drafting === undefined) return this.max;
    if (alone === undefined) return 0;
    const faster = drafting >= alone ? this.max : 0;
    if (++this.sinceProbe < PROBE_EVERY) return faster;
    this.sinceProbe = 0;
    return faster === 0 ? this.max : 0;
  }

  /** A drafting step yielded `tokens` tokens in `ms`, the draft's work included. */
  drafted(tokens: number, ms: number): void {
    this.drafting.add(tokens, ms);
  }

  /** The target's own loop generated `tokens` tokens in `ms`. */
  wentAlone(tokens: number, ms: number): void {
    this.alone.add(tokens, ms);
  }
}
