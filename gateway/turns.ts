// After authentication, before anything that works: the requests in progress of one key, of one
// project (fewer while another project is served) and of the process are bounded; past a bound a
// request waits, projects served in turn and within one its keys in turn. A waiting request keeps
// its connection's and address's places, so pipelining.ts stops reading them meanwhile. A request
// in progress for `sharedHoldMs` is waiting (on a lock, a slow read), not working: it stops
// holding its project's shared place, so one slow request does not hold up the project's others.
import type { ServerResponse } from 'node:http';
import type { Handler } from './types.ts';

export interface TurnOptions {
  /** Requests in progress per key, per project and per process (0: no bound). */
  maxPerKey: number;
  maxPerProject: number;
  maxInProgress: number;
  /** A project's bound while another project is served too (0: none beyond maxPerProject). */
  maxPerProjectShared: number;
  /** How long a request in progress counts toward that shared bound (default SHARED_HOLD_MS). */
  sharedHoldMs?: number;
}

/** Far longer than a request that works takes, far shorter than a wait on a lock. */
const SHARED_HOLD_MS = 100;

/**
 * Slow requests a project may have in progress beside its shared bound: under a load that makes
 * every request slow, a flood must not win its whole bound back 100 ms at a time.
 */
const SLOW_PLACES = 3;

/** A project that asked this recently still shares the process, between its requests too. */
const SHARING_MS = 250;

interface Waiting {
  res: ServerResponse;
  start: () => void;
  /** The client went away while it waited. */
  gone: boolean;
}

interface Key {
  id: string;
  inProgress: number;
  waiting: Waiting[];
}

interface Project {
  id: string;
  inProgress: number;
  /** Of those, begun within sharedHoldMs: what its shared bound counts. */
  holding: number;
  keys: Map<string, Key>;
  /** Its keys with requests waiting, in turn: the first is served next. */
  turn: Set<Key>;
}

/** A request begun, in the order begun: it holds its project's shared place until released or old. */
interface Begun {
  project: Project;
  key: Key;
  atMs: number;
  holding: boolean;
}

const RELEASE = Symbol('releaseTurn');
type Releasable = ServerResponse & { [RELEASE]?: () => void };

/** A request that now only waits (an event stream once begun) gives its place back. */
export function releaseTurn(res: ServerResponse): void {
  (res as Releasable)[RELEASE]?.();
}

export function takeTurns({ maxPerKey, maxPerProject, maxInProgress, maxPerProjectShared, sharedHoldMs = SHARED_HOLD_MS }: TurnOptions): Handler {
  const projects = new Map<string, Project>();
  /** Projects with requests waiting, in turn. */
  const turn = new Set<Project>();
  let inProgress = 0;

  const room = (count: number, max: number) => max === 0 || count < max;
  /** Projects with requests in progress. */
  let busy = 0;
  // The last two projects that asked, by id (an idle project's entry is made anew), and when.
  let lastId = '';
  let lastAtMs = -Infinity;
  let beforeId = '';
  let beforeAtMs = -Infinity;

  function asked(project: Project, nowMs: number): void {
    if (lastId !== project.id) {
      beforeId = lastId;
      beforeAtMs = lastAtMs;
      lastId = project.id;
    }
    lastAtMs = nowMs;
  }

  /** Whether another project is served now or asked lately: then each holds only its share. */
  function shared(project: Project): boolean {
    if (busy - (project.inProgress > 0 ? 1 : 0) > 0) return true;
    const nowMs = performance.now();
    return (lastId !== project.id && nowMs - lastAtMs < SHARING_MS) || (beforeId !== project.id && nowMs - beforeAtMs < SHARING_MS);
  }

  const projectHasRoom = (project: Project) => room(project.inProgress, maxPerProject)
    && (maxPerProjectShared === 0 || (project.holding < maxPerProjectShared && project.inProgress < maxPerProjectShared + SLOW_PLACES) || !shared(project));
  const keyHasRoom = (key: Key) => room(key.inProgress, maxPerKey);

  function projectOf(id: string): Project {
    let project = projects.get(id);
    if (!project) projects.set(id, project = { id, inProgress: 0, holding: 0, keys: new Map(), turn: new Set() });
    return project;
  }

  function keyOf(project: Project, id: string): Key {
    let key = project.keys.get(id);
    if (!key) project.keys.set(id, key = { id, inProgress: 0, waiting: [] });
    return key;
  }

  function forgetIfIdle(project: Project, key: Key): void {
    if (key.inProgress === 0 && key.waiting.length === 0) project.keys.delete(key.id);
    if (project.inProgress === 0 && project.keys.size === 0) projects.delete(project.id);
  }

  /**
   * Requests begun, oldest first from `oldest`: those within sharedHoldMs, and older or released
   * ones not yet looked at (an entry released is skipped once it is old).
   */
  const begun: Begun[] = [];
  let oldest = 0;
  let expiry: NodeJS.Timeout | undefined;

  /** Requests begun sharedHoldMs ago give back their projects' shared places. */
  function expire(nowMs: number): void {
    while (oldest < begun.length && nowMs - begun[oldest]!.atMs >= sharedHoldMs) {
      const old = begun[oldest++]!;
      if (old.holding) {
        old.holding = false;
        old.project.holding--;
      }
    }
    if (oldest === begun.length || oldest > 1024) {
      begun.splice(0, oldest);
      oldest = 0;
    }
  }

  /** While requests wait, they are looked at again once the oldest request in progress grows old. */
  function expireLater(): void {
    if (expiry || oldest === begun.length) return;
    expiry = setTimeout(() => {
      expiry = undefined;
      expire(performance.now());
      serveWaiting();
      if (turn.size > 0) expireLater();
    }, Math.max(0, begun[oldest]!.atMs + sharedHoldMs - performance.now()));
    expiry.unref();
  }

  function begin(project: Project, key: Key, res: ServerResponse, start: () => void): void {
    inProgress++;
    if (project.inProgress++ === 0) busy++;
    key.inProgress++;
    project.holding++;
    const begins: Begun = { project, key, atMs: performance.now(), holding: true };
    begun.push(begins);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      freed.push(begins);
      if (freed.length === 1) setImmediate(handBack);
    };
    (res as Releasable)[RELEASE] = release;
    // Given back once the answer is written, not once it is sent: a pipelined answer is sent only
    // after the answers before it, and those may still wait for a place this one would hold.
    const end = res.end;
    res.end = function endAndRelease(this: ServerResponse, ...args: unknown[]) {
      release();
      return (end as (...a: unknown[]) => ServerResponse).apply(this, args);
    } as ServerResponse['end'];
    res.once('close', release);
    start();
  }

  /** The next request of the project, from its keys in turn, whose key has room; undefined if none. */
  function nextOf(project: Project): [Key, Waiting] | undefined {
    for (const key of [...project.turn]) {
      while (key.waiting[0]?.gone) key.waiting.shift();
      if (key.waiting.length === 0) {
        project.turn.delete(key);
        forgetIfIdle(project, key);
        continue;
      }
      if (!keyHasRoom(key)) continue;
      // Back of the line once served, if it has more waiting.
      project.turn.delete(key);
      const waiting = key.waiting.shift()!;
      if (key.waiting.length > 0) project.turn.add(key);
      return [key, waiting];
    }
    return undefined;
  }

  /** Hands the places freed to the waiting requests: one per project in turn, round after round. */
  function serveWaiting(): void {
    let started = true;
    while (started && turn.size > 0 && room(inProgress, maxInProgress)) {
      started = false;
      for (const project of [...turn]) {
        if (!room(inProgress, maxInProgress)) return;
        if (!projectHasRoom(project)) continue;
        const next = nextOf(project);
        turn.delete(project);
        if (project.turn.size > 0) turn.add(project);
        if (!next) continue;
        const [key, waiting] = next;
        begin(project, key, waiting.res, waiting.start);
        started = true;
      }
    }
  }

  /**
   * Places given back in this turn of the event loop are handed on in the next, as pipelining.ts
   * does for addresses: answers that complete at once cannot let one project start request after
   * request while the others wait for the turn to end.
   */
  const freed: Begun[] = [];

  function handBack(): void {
    expire(performance.now());
    for (const done of freed.splice(0)) {
      const { project, key } = done;
      inProgress--;
      if (--project.inProgress === 0) busy--;
      key.inProgress--;
      if (done.holding) {
        done.holding = false;
        project.holding--;
      }
      forgetIfIdle(project, key);
    }
    serveWaiting();
    if (turn.size > 0) expireLater();
  }

  return function takeTurn(req, res, next) {
    const caller = req.caller;
    if (!caller) return next();
    const project = projectOf(caller.project_id);
    const key = keyOf(project, caller.id);
    const nowMs = performance.now();
    expire(nowMs);
    // Nothing of its key waits, and there is room: none waiting could take this place instead.
    asked(project, nowMs);
    if (key.waiting.length === 0 && keyHasRoom(key) && projectHasRoom(project) && room(inProgress, maxInProgress)) {
      return begin(project, key, res, () => next());
    }
    const waiting: Waiting = { res, start: () => next(), gone: false };
    key.waiting.push(waiting);
    res.once('close', () => { waiting.gone = true; });
    project.turn.add(key);
    turn.add(project);
    expireLater();
  };
}
