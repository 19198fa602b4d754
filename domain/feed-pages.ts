// The feed's pages as last read, by project, with the version read at. Every write of events moves
// that version in its own transaction, so a page kept at the current version is what a fresh read
// would give. Bounded by size, least recently used first out.

/** The pages kept at most, in UTF-16 code units of their JSON (16 MB at worst). */
export const FEED_PAGES_BUDGET = 8 * 1024 * 1024;
/** A page larger than this share of the budget is answered and not kept. */
const LARGEST_SHARE = 16;

interface Page {
  version: string;
  json: string;
}

export class FeedPages {
  readonly #budget: number;
  readonly #pages = new Map<string, Page>();
  #size = 0;

  constructor(budget = FEED_PAGES_BUDGET) {
    this.#budget = budget;
  }

  /** The page of `project` read at `version`, if it is the one kept. */
  get(project: string, version: string): string | undefined {
    const page = this.#pages.get(project);
    if (page === undefined || page.version !== version) return undefined;
    // Re-inserted, so the map's order is least recently used first.
    this.#pages.delete(project);
    this.#pages.set(project, page);
    return page.json;
  }

  set(project: string, version: string, json: string): void {
    this.#drop(project);
    if (json.length > this.#budget / LARGEST_SHARE) return;
    this.#pages.set(project, { version, json });
    this.#size += json.length;
    for (const [oldest] of this.#pages) {
      if (this.#size <= this.#budget) break;
      this.#drop(oldest);
    }
  }

  /** The JSON kept, in UTF-16 code units. */
  get size(): number {
    return this.#size;
  }

  #drop(project: string): void {
    const page = this.#pages.get(project);
    if (page === undefined) return;
    this.#pages.delete(project);
    this.#size -= page.json.length;
  }
}
