// The feed's kept pages (domain/feed-pages.ts): by project and version, bounded by their size.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FeedPages } from '../../domain/feed-pages.ts';

test('a page is answered only for its own project and the version it was read at', () => {
  const pages = new FeedPages(1000);
  pages.set('proj_a', '101', '[a]');
  assert.equal(pages.get('proj_a', '101'), '[a]');
  assert.equal(pages.get('proj_a', '102'), undefined);
  assert.equal(pages.get('proj_b', '101'), undefined);
  pages.set('proj_a', '102', '[a2]');
  assert.equal(pages.get('proj_a', '101'), undefined);
  assert.equal(pages.get('proj_a', '102'), '[a2]');
  assert.equal(pages.size, 4, 'the page replaced no longer counts');
});

test('past the budget the least recently used pages go first', () => {
  // Sixteen pages of 10 fill a budget of 160.
  const pages = new FeedPages(160);
  const page = (i: number) => String(i).padStart(10, '-');
  for (let i = 0; i < 16; i += 1) pages.set(`proj_${i}`, '1', page(i));
  assert.equal(pages.size, 160);
  assert.equal(pages.get('proj_0', '1'), page(0), 'a read: now the most recently used');
  pages.set('proj_16', '1', page(16));
  assert.equal(pages.get('proj_1', '1'), undefined, 'the least recently used went');
  for (const i of [0, ...Array.from({ length: 15 }, (_, j) => j + 2)]) assert.equal(pages.get(`proj_${i}`, '1'), page(i));
  assert.equal(pages.size, 160);
});

test('a page larger than a sixteenth of the budget is not kept, and takes an older one of its project with it', () => {
  const pages = new FeedPages(1600);
  pages.set('proj_a', '1', 'x'.repeat(100));
  assert.equal(pages.get('proj_a', '1'), 'x'.repeat(100));
  pages.set('proj_a', '2', 'y'.repeat(101));
  assert.equal(pages.get('proj_a', '2'), undefined);
  assert.equal(pages.get('proj_a', '1'), undefined);
  assert.equal(pages.size, 0);
});
