// Every relative link in README.md and docs/ reaches a file that exists and, with a #fragment, a
// heading of that file as GitHub names its anchors (github-slugger): a renamed heading breaks the
// links to it silently otherwise.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import GithubSlugger from 'github-slugger';
import { ROOT } from '../support/cli.ts';

const DOCS = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The lines outside fenced code blocks, where a link or a heading means one. */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    return !fenced;
  });
}

const anchorsOf = new Map<string, Set<string>>();
function anchors(file: string): Set<string> {
  let found = anchorsOf.get(file);
  if (!found) {
    const slugger = new GithubSlugger();
    const headings = prose(readFileSync(file, 'utf8')).map((line) => /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]).filter((h) => h !== undefined);
    anchorsOf.set(file, found = new Set(headings.map((heading) => slugger.slug(heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')))));
  }
  return found;
}

test('every relative link in README.md and docs/ reaches its file and its heading', () => {
  const broken: string[] = [];
  for (const doc of DOCS) {
    const from = path.join(ROOT, doc);
    for (const [, target] of prose(readFileSync(from, 'utf8')).join('\n').replace(/`[^`\n]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(target!)) continue;
      const [file, fragment] = target!.split('#') as [string, string | undefined];
      const to = file === '' ? from : path.resolve(path.dirname(from), decodeURIComponent(file));
      if (!existsSync(to)) broken.push(`${doc}: ${target} (no such file)`);
      else if (fragment !== undefined && to.endsWith('.md') && !anchors(to).has(decodeURIComponent(fragment))) broken.push(`${doc}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});
