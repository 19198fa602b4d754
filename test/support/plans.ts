// What PostgreSQL plans for one of sql/queries' statements when its table's statistics say nothing
// of a project: the plan a prepared statement's first (custom) runs get in a table not yet
// analyzed, or for a project outside the statistics' most common values.
import type pg from 'pg';
import { queryText } from '../../lib/sql-files.ts';

export type PlanNode = Record<string, unknown>;

/** Whether this server can clear statistics (pg_clear_relation_stats is PostgreSQL 18's). */
export async function canClearStatistics(db: pg.Pool): Promise<boolean> {
  return (await db.query("SELECT 1 FROM pg_proc WHERE proname = 'pg_clear_relation_stats'")).rowCount === 1;
}

/** Forgets what the statistics say of `table`, and of its project_id column. */
export async function clearStatistics(db: pg.Pool, table: string): Promise<void> {
  await db.query("SELECT pg_clear_relation_stats('public', $1), pg_clear_attribute_stats('public', $1, 'project_id', false)", [table]);
}

/** Every node of the plan `name` runs with `values` (literals, as a prepared statement's custom plan), run for real. */
export async function planNodes(db: pg.Pool, name: string, types: string[], values: Array<string | number>): Promise<PlanNode[]> {
  const client = await db.connect();
  try {
    await client.query(`PREPARE page (${types.join(', ')}) AS ${queryText(name)}`);
    const literals = values.map((v) => (typeof v === 'number' ? String(v) : client.escapeLiteral(v)));
    const { rows: [explained] } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE page (${literals.join(', ')})`);
    await client.query('DEALLOCATE page');
    const nodes: PlanNode[] = [];
    const walk = (node: PlanNode) => {
      nodes.push(node);
      for (const child of (node.Plans as PlanNode[] | undefined) ?? []) walk(child);
    };
    walk(explained['QUERY PLAN'][0].Plan);
    return nodes;
  } finally {
    client.release();
  }
}

/** The scans of `table` as [node type, index], and how many sorts the plan has. */
export function scansOf(nodes: PlanNode[], table: string) {
  return {
    scans: nodes.filter((n) => n['Relation Name'] === table).map((n) => [n['Node Type'], n['Index Name']]),
    rows: nodes.filter((n) => n['Relation Name'] === table).map((n) => n['Actual Rows']),
    sorts: nodes.filter((n) => n['Node Type'] === 'Sort').length,
  };
}
