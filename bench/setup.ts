// What the bench's servers need before they start, for every script that starts them (run.ts,
// serve.ts, side-by-side.ts): a certificate on disk, and R2's table; and the app the writes create.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { selfSigned } from '../gateway/tls.ts';

/** A self-signed certificate and its key written into `dir`: the environment that names them. */
export async function certificateFiles(dir: string): Promise<{ TLS_CERT_FILE: string; TLS_KEY_FILE: string }> {
  const tls = await selfSigned();
  const files = { TLS_CERT_FILE: path.join(dir, 'cert.pem'), TLS_KEY_FILE: path.join(dir, 'key.pem') };
  writeFileSync(files.TLS_CERT_FILE, tls.cert);
  writeFileSync(files.TLS_KEY_FILE, tls.key);
  return files;
}

/** The app the bench creates (POST /v1/app/create, and the apps PATCH goes round). */
export const APP_BODY = {
  name: 'Bench app',
  description: 'Summarizes a text',
  category: 'summarization',
  data: [{ type: 'text area', name: 'text', placeholder: 'Paste', required: true }],
  instruction: [{ type: 'system', instruction: 'Summarize the text.' }],
};

/** The table R2 selects from (bench/reference.ts), once per database. */
export async function createReferenceTable(db: Pick<pg.Client, 'query'>): Promise<void> {
  await db.query('CREATE TABLE IF NOT EXISTS bench_reference (k text PRIMARY KEY, v text NOT NULL)');
  await db.query("INSERT INTO bench_reference SELECT 'key-' || g, repeat('x', 64) FROM generate_series(1, 1000) g ON CONFLICT DO NOTHING");
}
