// Slows down guessing: each client address has a budget of refused authentications (a token
// bucket holding `perMinute`, refilled at perMinute/60 a second). Past it, a key this process has
// not seen succeed is refused with 429 without a database lookup; a key it has seen succeed is
// still looked up, so an honest client behind the same address keeps working and a revocation
// still counts at once.

/** Addresses remembered at once; past it the oldest are forgotten (they start again with a full budget). */
const MAX_ADDRESSES = 100_000;
/** Keys remembered as recognised; past it the set starts again (they are looked up as usual). */
const MAX_RECOGNISED_KEYS = 100_000;

interface Bucket {
  tokens: number;
  atMs: number;
}

export class RefusalThrottle {
  private readonly capacity: number;
  private readonly refillPerMs: number;
  private readonly buckets = new Map<string, Bucket>();
  private readonly recognised = new Set<string>();

  /** perMinute 0: no bound. */
  constructor(perMinute: number) {
    this.capacity = perMinute;
    this.refillPerMs = perMinute / 60_000;
  }

  /**
   * Seconds the address must wait before a refusal may cost a lookup again, or 0 when the key
   * may be looked up now.
   */
  waitSeconds(address: string, keyHash: string, nowMs = Date.now()): number {
    if (this.capacity === 0 || this.recognised.has(keyHash)) return 0;
    const bucket = this.buckets.get(address);
    if (!bucket) return 0;
    const tokens = this.refilled(bucket, nowMs);
    return tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / this.refillPerMs / 1000));
  }

  refused(address: string, keyHash: string, nowMs = Date.now()): void {
    this.recognised.delete(keyHash);
    if (this.capacity === 0) return;
    let bucket = this.buckets.get(address);
    if (bucket) {
      bucket.tokens = this.refilled(bucket, nowMs);
      // Re-inserted, so the map's order is least recently refused first.
      this.buckets.delete(address);
    } else {
      if (this.buckets.size >= MAX_ADDRESSES) this.buckets.delete(this.buckets.keys().next().value!);
      bucket = { tokens: this.capacity, atMs: nowMs };
    }
    bucket.tokens = Math.max(0, bucket.tokens - 1);
    bucket.atMs = nowMs;
    this.buckets.set(address, bucket);
  }

  accepted(keyHash: string): void {
    if (this.recognised.has(keyHash)) return;
    if (this.recognised.size >= MAX_RECOGNISED_KEYS) this.recognised.clear();
    this.recognised.add(keyHash);
  }

  private refilled(bucket: Bucket, nowMs: number): number {
    return Math.min(this.capacity, bucket.tokens + (nowMs - bucket.atMs) * this.refillPerMs);
  }
}
