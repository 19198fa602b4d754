// Slows down guessing: each client address has a budget of refused authentications (a token
// bucket holding `perMinute`, refilled at perMinute/60 a second). Past it, a key that must be
// looked up, or a value that cannot be a secret, is refused with 429 without a lookup; a key this
// process knows (known-keys.ts) never reaches the throttle, so an honest client behind the same
// address keeps working.

/** Addresses remembered at once; past it the oldest are forgotten (they start again with a full budget). */
const MAX_ADDRESSES = 100_000;

interface Bucket {
  tokens: number;
  atMs: number;
}

export class RefusalThrottle {
  private readonly capacity: number;
  private readonly refillPerMs: number;
  private readonly buckets = new Map<string, Bucket>();

  /** perMinute 0: no bound. */
  constructor(perMinute: number) {
    this.capacity = perMinute;
    this.refillPerMs = perMinute / 60_000;
  }

  /**
   * Before a lookup, or a refusal made without one (a value that cannot be a secret): takes one of
   * the address's refusals ahead, so that lookups in flight count too (a flood over many
   * connections cannot pass more than the budget while its lookups are running). Returns 0 when
   * the lookup or the refusal may go ahead, else the seconds until the budget allows one more.
   */
  admit(address: string, nowMs = Date.now()): number {
    if (this.capacity === 0) return 0;
    const bucket = this.bucketOf(address, nowMs);
    if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / this.refillPerMs / 1000));
    bucket.tokens -= 1;
    return 0;
  }

  /**
   * The lookup refused nothing: it found the key usable, or could not be made (the database
   * away). The refusal taken ahead is given back.
   */
  giveBack(address: string, nowMs = Date.now()): void {
    if (this.capacity > 0) this.bucketOf(address, nowMs).tokens += 1;
  }

  private bucketOf(address: string, nowMs: number): Bucket {
    let bucket = this.buckets.get(address);
    if (bucket) {
      bucket.tokens = this.refilled(bucket, nowMs);
      // Re-inserted, so the map's order is least recently used first.
      this.buckets.delete(address);
    } else {
      if (this.buckets.size >= MAX_ADDRESSES) this.buckets.delete(this.buckets.keys().next().value!);
      bucket = { tokens: this.capacity, atMs: nowMs };
    }
    bucket.atMs = nowMs;
    this.buckets.set(address, bucket);
    return bucket;
  }

  private refilled(bucket: Bucket, nowMs: number): number {
    return Math.min(this.capacity, bucket.tokens + (nowMs - bucket.atMs) * this.refillPerMs);
  }
}
