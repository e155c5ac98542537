/**
 * Which free sequence of a context a prompt takes (see slot-pool.ts), and whether another sequence's cached prefix is
 * copied into it first.
 *
 * The slot: the one sharing the longest real prefix with the prompt; without one, the one whose cache it would erase
 * least, except that losses within a factor of two of each other weigh the same and then a sequence next to decoding
 * ones goes first, in a gap between them before one at the edge of their run (llama.cpp decodes consecutive sequence
 * ids in one pass over the weights: batch-order.ts).
 *
 * The copy (copy-prefix.ts), when the step planner says it costs less than evaluating the tokens it spares (and which
 * way it goes):
 * - another sequence, free or generating, holds more of the prompt than the chosen slot (a new conversation with the
 *   same system prompt, or the chat template's opening of the previous request): its prefix is copied in;
 * - the chosen slot holds the prompt's prefix and then another conversation's tail, which taking it would erase: the
 *   prompt goes to the slot that loses least instead, with the prefix copied there, so both conversations keep theirs.
 *   A prompt that extends the whole prompt of the slot's last request is that conversation's next turn, and the
 *   tail only its previous reply (tokenized differently, or cut short): it stays in place. Where caches move (below),
 *   the prompt stays in the slot better placed and the other conversation's cache moves out instead.
 *
 * The move (where the planner says it pays: copies by cells, on the CPU): a prompt whose slot shares nothing with it
 * and has no decoding slot beside it takes a free slot beside decoding ones instead, and that slot's cache moves into
 * the one the prompt would have taken (whose cache was the one to lose). Both conversations keep their caches, and the new
 * sequence joins the others' pass over the weights: with the default model on 2 CPU cores, four streams in slots
 * 1, 5, 6 and 7 took two passes a step (a 512-token prompt's slot, kept, lay between), about 8 ms each.
 */
import type { PrefixCopyWay } from "./copy-prefix.js";

/** Shared prefix tokens that make a cached sequence worth choosing; below it, the slot that loses least is taken. */
export const MIN_REUSE = 64;

/** A cache this short is re-evaluated within a step or two: losing it weighs no more than losing nothing. */
const SMALL_LOSS = 256;

const withinTwice = (a: number, b: number): boolean => a <= 2 * b && b <= 2 * a;

/** A sequence as a prompt finds it. */
export interface SlotView<S> {
  slot: S;
  busy: boolean;
  /**
   * Busy with a request (evaluating its prompt or generating), so its sequence takes part in the steps; a slot busy
   * only saving its state to disk or lending its prefix does not.
   */
  decoding: boolean;
  /** Busy, with its whole prompt evaluated: only decodes touch its cache now, so it can lend its prefix. */
  generating: boolean;
  /** Tokens of the prompt's start it holds (0 with the prefix cache off). */
  common: number;
  /** Tokens it holds. */
  held: number;
  /** The prompt extends the whole prompt of the slot's last request: the same conversation's next turn. */
  continues: boolean;
  lastUsed: number;
}

/** The sequence whose first `shared` tokens are copied into a prompt's slot before the prompt, and how. */
export interface Donor<S> {
  slot: S;
  shared: number;
  way: PrefixCopyWay;
}

/** The slot a prompt takes, its donor when it has one, and the free slot its cache moves to first when it moves. */
export interface SlotChoice<S> {
  slot: S;
  donor?: Donor<S>;
  moveTo?: S;
}

/** What the step planner says about copies (step-planner.ts). */
export interface CopyCosts {
  /** The way to copy `tokens` tokens from a sequence holding `held`, when copying them beats evaluating them. */
  prefixCopy(tokens: number, held: number): PrefixCopyWay | undefined;
  /** Whether moving a cache of `held` tokens (by cells) costs less than the passes over the weights it saves. */
  movePays(held: number): boolean;
}

/**
 * A free slot as the ranking weighs it: tokens it shares, cached tokens it would erase, decoding slots beside it, and
 * the gap between decoding slots it lies in.
 */
interface Candidate<S> {
  view: SlotView<S>;
  shared: number;
  lost: number;
  decodingNeighbours: number;
  gap: number;
}

/**
 * The best free slot for a prompt of `promptTokens` tokens, with a donor when a copy pays and a slot to move its cache
 * to when that pays (`copies` absent: neither).
 * undefined: every slot is busy.
 */
export function chooseSlot<S>(views: SlotView<S>[], promptTokens: number, copies?: CopyCosts): SlotChoice<S> | undefined {
  const best = rankFree(views, (view) => view.common);
  if (!best || !copies) return best && { slot: best.view.slot };
  const chosen = best.view;
  const beside = best.shared === 0 && best.decodingNeighbours === 0 ? besideDecoding(views, chosen) : undefined;
  if (beside && copies.movePays(beside.held)) {
    // `chosen` receives beside's cache, so it lends nothing; beside keeps its own until the prompt trims it.
    return { ...withDonor(views.filter((view) => view !== chosen), beside, promptTokens, copies), moveTo: chosen.slot };
  }
  const tail = chosen.held - chosen.common;
  if (chosen.common > 0 && tail > 0 && !chosen.continues && copies.prefixCopy(tail, chosen.held)) {
    const other = rankFree(views.filter((view) => view !== chosen), () => 0);
    if (other && other.lost < tail) {
      // Where caches move, the prompt keeps the slot better placed beside the decoding ones and the tail moves out.
      if (best.decodingNeighbours >= other.decodingNeighbours && copies.movePays(chosen.held)) {
        return { ...withDonor(views.filter((view) => view !== other.view), chosen, promptTokens, copies), moveTo: other.view.slot };
      }
      const shared = copyable(chosen.common, promptTokens);
      const way = copies.prefixCopy(shared - other.view.common, chosen.held);
      return { slot: other.view.slot, ...(way ? { donor: { slot: chosen.slot, shared, way } } : {}) };
    }
  }
  return withDonor(views, chosen, promptTokens, copies);
}

/**
 * A copy leaves two tokens to evaluate: the step that performs a copy by stream evaluates the next one, and the last
 * gives logits (a copy by cells needs no step: the prompt's own evaluates one token more).
 */
const copyable = (tokens: number, promptTokens: number) => Math.min(tokens, promptTokens - 2);

/** `chosen`, with the sequence holding most of the prompt beyond it as its donor, when that copy pays. */
function withDonor<S>(views: SlotView<S>[], chosen: SlotView<S>, promptTokens: number, copies: CopyCosts): SlotChoice<S> {
  let donor: SlotView<S> | undefined;
  for (const view of views) {
    if (view !== chosen && (!view.busy || view.generating) && view.common > (donor?.common ?? chosen.common)) donor = view;
  }
  const shared = donor ? copyable(donor.common, promptTokens) : 0;
  const way = donor && shared > chosen.common ? copies.prefixCopy(shared - chosen.common, donor.held) : undefined;
  return donor && way ? { slot: chosen.slot, donor: { slot: donor.slot, shared, way } } : { slot: chosen.slot };
}

/** How many of the slots beside the one at `index` take part in the steps. */
const decodingBeside = <S>(views: SlotView<S>[], index: number): number =>
  Number(views[index - 1]?.decoding ?? false) + Number(views[index + 1]?.decoding ?? false);

/**
 * How many slots lie between the decoding slots nearest to `index` on either side (Infinity past the outermost ones).
 * Beside decoding slots, a slot in a gap comes before one at the edge: filling a gap joins two runs of decoding ids into
 * one pass, where growing the edge leaves both passes. With 8 streams of unique prompts in 32 slots, growing the edges
 * kept 8 sequences in 2–3 runs (a quarter of the steps took two or three passes, each step 72–78 ms against 48–70 in one).
 */
function gapAround<S>(views: SlotView<S>[], index: number): number {
  let left = index - 1;
  while (left >= 0 && !views[left]!.decoding) left--;
  let right = index + 1;
  while (right < views.length && !views[right]!.decoding) right++;
  return left >= 0 && right < views.length ? right - left - 1 : Number.POSITIVE_INFINITY;
}

/**
 * The free slot with the most decoding slots beside it (in the smallest gap, then with the fewest tokens to move among
 * equals), other than `not`.
 */
function besideDecoding<S>(views: SlotView<S>[], not: SlotView<S>): SlotView<S> | undefined {
  type Place = { view: SlotView<S>; beside: number; gap: number };
  const above = (a: Place, b: Place): boolean =>
    a.beside !== b.beside ? a.beside > b.beside : a.gap !== b.gap ? a.gap < b.gap : a.view.held < b.view.held;
  let best: Place | undefined;
  for (const [index, view] of views.entries()) {
    const beside = decodingBeside(views, index);
    if (view.busy || view === not || beside === 0) continue;
    const place = { view, beside, gap: gapAround(views, index) };
    if (!best || above(place, best)) best = place;
  }
  return best?.view;
}

/** The free slot ranked first, each sharing `sharedOf(view)` tokens in place. */
function rankFree<S>(views: SlotView<S>[], sharedOf: (view: SlotView<S>) => number): Candidate<S> | undefined {
  let best: Candidate<S> | undefined;
  for (const [index, view] of views.entries()) {
    if (view.busy) continue;
    const common = sharedOf(view);
    // A few shared tokens (a chat template's opening) are no reason to erase another conversation's long prefix;
    // a sequence that holds nothing but a prefix of this prompt loses nothing, so any share of it counts.
    const shared = common >= MIN_REUSE || (common > 0 && common === view.held) ? common : 0;
    const decodingNeighbours = decodingBeside(views, index);
    const gap = decodingNeighbours > 0 ? gapAround(views, index) : Number.POSITIVE_INFINITY;
    const candidate = { view, shared, lost: view.held - view.common, decodingNeighbours, gap };
    if (!best || ranksAbove(candidate, best)) best = candidate;
  }
  return best;
}

/** Whether `a` is the better slot for the prompt than `b`. */
function ranksAbove<S>(a: Candidate<S>, b: Candidate<S>): boolean {
  if (a.shared !== b.shared) return a.shared > b.shared;
  // Erasing 230 tokens or 358 (or none) costs about the same, while a slot next to decoding ones saves a pass over the
  // weights at every step of the request: only a loss beyond twice the other's (each counted as at least SMALL_LOSS
  // tokens) outranks adjacency.
  if (!withinTwice(Math.max(a.lost, SMALL_LOSS), Math.max(b.lost, SMALL_LOSS))) return a.lost < b.lost;
  if (a.decodingNeighbours !== b.decodingNeighbours) return a.decodingNeighbours > b.decodingNeighbours;
  if (a.gap !== b.gap) return a.gap < b.gap;
  if (a.lost !== b.lost) return a.lost < b.lost;
  return a.view.lastUsed < b.view.lastUsed;
}
