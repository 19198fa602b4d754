// The apps resource: create, list, detail, edit and soft delete, with the plan's answers before
// any other; and the workspace's changes of an app (logo, activation), which the API does not make.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { isId, newId } from '../lib/ids.ts';
import { queryFile, type Database, type Queryable } from '../lib/pool.ts';
import { fillTemplate } from '../lib/sql-files.ts';
import { SQLSTATE } from '../lib/sqlstate.ts';
import { recordEvent } from './audit.ts';
import { catalog, IMAGE_DATA_TYPE_ID, type Catalog } from './catalog.ts';
import { errors } from './errors.ts';
import { isImage } from './images.ts';
import { Invalid, NotFound } from './projects.ts';
import { apiActor, ok, pageOf, paging, type DomainRequest } from './requests.ts';
import type { Actor } from './actor.ts';
import { change, changeByStatement, type Services, type Tx } from './services.ts';
import { APP_DESCRIPTION, APP_NAME, editedText, requiredText } from './text-fields.ts';

const DEFAULT_CATEGORY = 'general';
const CATEGORY_ALIASES = ['category', 'task_type', 'model_task_type'] as const;

interface NewDataField {
  id: string;
  /** The type as the caller sent it: a name or an identifier. */
  sentType: string;
  typeId: string;
  name: string;
  placeholder: string;
  required: boolean;
}

interface NewInstruction {
  id: string;
  type: string;
  instruction: string;
}

interface NewApp {
  name: string;
  description: string;
  category: string;
  data: NewDataField[];
  instruction: NewInstruction[];
  status: 'draft' | 'activated';
  type: 'private' | 'public';
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';
function parseDataFields(data: unknown, types: Catalog): NewDataField[] {
  if (!Array.isArray(data) || data.length === 0) throw errors.dataNotArray();
  const fields = data.map((entry): NewDataField => {
    if (!isObject(entry) || !nonEmptyString(entry.type) || !nonEmptyString(entry.name)) throw errors.dataFieldShape();
    const placeholder = entry.placeholder ?? '';
    if (typeof placeholder !== 'string') throw errors.dataFieldPlaceholder();
    const required = entry.required ?? false;
    if (typeof required !== 'boolean') throw errors.dataFieldRequiredFlag();
    const typeId = types.dataTypeId(entry.type);
    if (!typeId) throw errors.dataTypeUnknown();
    return { id: newId('madi'), sentType: entry.type, typeId, name: entry.name, placeholder, required };
  });
  if (new Set(fields.map((f) => f.name)).size !== fields.length) throw errors.dataNamesUnique();
  if (!fields.some((f) => f.required)) throw errors.dataNoneRequired();
  return fields;
}

function parseInstructions(instruction: unknown, types: Catalog): NewInstruction[] {
  if (!Array.isArray(instruction) || instruction.length === 0) throw errors.instructionNotArray();
  return instruction.map((entry): NewInstruction => {
    if (!isObject(entry)) throw errors.instructionShape();
    const text = entry.instruction ?? entry.prompt;
    if (!nonEmptyString(entry.type) || !nonEmptyString(text)) throw errors.instructionShape();
    if (!types.isInstructionType(entry.type)) throw errors.instructionTypeUnknown();
    return { id: newId('miid'), type: entry.type, instruction: text };
  });
}

/** Validation in its fixed order; its fault is answered only after the plan's (createApp). */
function parseNewApp(body: Record<string, unknown>, types: Catalog): NewApp {
  const name = requiredText(body.name, APP_NAME);
  const description = requiredText(body.description, APP_DESCRIPTION);
  const data = parseDataFields(body.data, types);
  const instruction = parseInstructions(body.instruction, types);
  const status = body.status ?? 'activated';
  if (status !== 'draft' && status !== 'activated') throw errors.appStatus();
  const type = body.type ?? 'private';
  if (type !== 'private' && type !== 'public') throw errors.appType();
  // The category comes last: a non-string names no category and is answered as an unknown name.
  const sentCategory = CATEGORY_ALIASES.map((alias) => body[alias]).find((value) => value !== undefined && value !== null);
  if (sentCategory !== undefined && typeof sentCategory !== 'string') throw errors.categoryUnknown();
  return { name, description, category: sentCategory ?? DEFAULT_CATEGORY, data, instruction, status, type };
}

interface Created {
  outcome: 'created' | 'unknown' | 'no-image-model';
  model_id: string;
  build_id: string;
  created_at: number;
}

/**
 * A creation is one statement: the key's check, the app and its event, then the plan's admission
 * last, so creations wait for each other only near the app limit. The plan's answers still come
 * first: a body's or category's fault is answered only once the plan would have allowed an app.
 */
export async function createApp(services: Services, req: DomainRequest) {
  const projectId = req.caller.project_id;
  const types = await catalog(services.pool);
  let app: NewApp;
  try {
    app = parseNewApp(req.body, types);
  } catch (fault) {
    await admitApp(services, req);
    throw fault;
  }
  const actor = apiActor(req);
  const id = newId('mapp');
  const created = await changeByStatement(services, async (db, checkedKey) => {
    const [row] = await queryFile<Created>(db, 'app_create', {
      id, project_id: projectId, name: app.name, description: app.description, category: app.category,
      type: app.type, status: app.status, needs_image_model: app.data.some((f) => f.typeId === IMAGE_DATA_TYPE_ID),
      field_ids: app.data.map((f) => f.id), field_positions: app.data.map((_, i) => i),
      field_names: app.data.map((f) => f.name), field_types: app.data.map((f) => f.typeId),
      field_placeholders: app.data.map((f) => f.placeholder), field_required: app.data.map((f) => f.required),
      instruction_ids: app.instruction.map((i) => i.id), instruction_positions: app.instruction.map((_, i) => i),
      instruction_types: app.instruction.map((i) => i.type), instruction_texts: app.instruction.map((i) => i.instruction),
      checked_key: checkedKey, event_id: newId('evnt'), origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
    });
    return row!;
  }).catch((err: unknown) => {
    throw planRefusal(err);
  });
  if (created.outcome !== 'created') throw created.outcome === 'unknown' ? errors.categoryUnknown() : errors.categoryNoImageModel();
  return ok({
    id,
    object: 'app' as const,
    name: app.name,
    description: app.description,
    category: app.category,
    model: created.model_id,
    model_library: created.build_id,
    status: app.status,
    created_at: created.created_at,
    data: Object.fromEntries(app.data.map((f) => [f.id, { type: f.sentType, value: f.name, placeholder: f.placeholder, required: f.required }])),
    instruction: Object.fromEntries(app.instruction.map((i) => [i.id, { type: i.type, instruction: i.instruction }])),
  });
}

/** The plan's answers alone (step 9): 402 if the project's plan would refuse one more app now. */
export async function admitApp(services: Services, req: DomainRequest): Promise<void> {
  await change(services, (tx) => tx.client.query(planAdmission(tx, req.caller.project_id))).catch((err: unknown) => {
    throw planRefusal(err);
  });
}

/** The statement that holds the project's admission and refuses an app the plan does not allow. */
function planAdmission(tx: Tx, projectId: string): string {
  return fillTemplate('plan_admission', { project: tx.client.escapeLiteral(projectId) });
}

/** plan_admission's refusals as the plan's answers. */
function planRefusal(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === SQLSTATE.planNoCustomApps) return errors.planNoCustomApps();
  if (code === SQLSTATE.planAppLimit) return errors.planAppLimit();
  return err;
}

interface AppSummaryRow {
  id: string; name: string; description: string; type: 'private' | 'public'; status: 'draft' | 'activated';
  model_id: string; model_build_id: string; created_at: number; updated_at: number;
}

interface AppListRow extends AppSummaryRow {
  runs_private: number;
  runs_public: number;
  tokens: { input: number; output: number; total: number } | null;
}

/** The app object; list adds runs and tokens, detail also logo, data and instruction. */
function appView(row: AppSummaryRow & Partial<AppDetailRow>) {
  return {
    id: row.id,
    object: 'app' as const,
    name: row.name,
    description: row.description,
    type: row.type,
    status: row.status,
    ...(row.logo === undefined ? {} : { logo: row.logo }),
    model: row.model_id,
    model_library: row.model_build_id,
    ...(row.data === undefined ? {} : { data: row.data, instruction: row.instruction }),
    ...(row.runs_private === undefined ? {} : { runs: { private: row.runs_private, public: row.runs_public }, tokens: row.tokens }),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export async function listApps(db: Database, req: DomainRequest) {
  const { limit, offset } = paging(req.query);
  const rows = await queryFile<AppListRow & { total: number }>(db, 'app_list', [req.caller.project_id, limit, offset]);
  return ok(pageOf(rows, appView));
}

interface AppDetailRow extends AppListRow {
  logo: string;
  data: Array<{ id: string; name: string; type: string; placeholder: string; required: boolean }>;
  /** null for another project's (public) app. */
  instruction: Array<{ id: string; type: string; instruction: string }> | null;
}

function appIdParam(req: DomainRequest): string {
  const id = req.params.app_id ?? '';
  if (!isId('mapp', id)) throw errors.appNotFound();
  return id;
}

export async function getApp(db: Database, req: DomainRequest) {
  const [row] = await queryFile<AppDetailRow>(db, 'app_find_readable', [appIdParam(req), req.caller.project_id]);
  if (!row) throw errors.appNotFound();
  return ok(appView(row));
}

interface AppEdit {
  name?: string;
  description?: string;
  type?: 'private' | 'public';
}

function parseEdit(body: Record<string, unknown>): AppEdit {
  const { name, description, type } = body;
  if (name === undefined && description === undefined && type === undefined) throw errors.nothingToUpdate();
  const edit: AppEdit = {};
  if (name !== undefined) edit.name = editedText(name, APP_NAME);
  if (description !== undefined) edit.description = editedText(description, APP_DESCRIPTION);
  if (type !== undefined) {
    if (type !== 'private' && type !== 'public') throw errors.appType();
    edit.type = type;
  }
  return edit;
}

/** app_edit.sql's row: the app as the edit leaves it, or why publishing it was refused. */
interface EditedApp extends AppSummaryRow {
  refusal: 'needs-activation' | 'needs-image-logo' | null;
}

/** An edit is one statement: key check, app locked, the edit (unless a no-op or refused), its events. */
export async function updateApp(services: Services, req: DomainRequest) {
  // The body first, then the app: an id that cannot be an app's is answered as an unknown one.
  const edit = parseEdit(req.body);
  const id = appIdParam(req);
  const actor = apiActor(req);
  const [row] = await changeByStatement(services, (db, checkedKey) => queryFile<EditedApp>(db, 'app_edit', {
    id, project_id: req.caller.project_id, name: edit.name ?? null, description: edit.description ?? null, type: edit.type ?? null,
    checked_key: checkedKey, updated_event_id: newId('evnt'), type_event_id: newId('evnt'),
    origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
  }));
  if (!row) throw errors.appNotFound();
  if (row.refusal === 'needs-activation') throw errors.publishNeedsActivation();
  if (row.refusal === 'needs-image-logo') throw errors.publishNeedsImageLogo();
  return ok(appView(row));
}

export async function deleteApp(services: Services, req: DomainRequest) {
  const id = appIdParam(req);
  const actor = apiActor(req);
  const [deleted] = await changeByStatement(services, (db, checkedKey) => queryFile<{ id: string }>(db, 'app_delete', {
    id, project_id: req.caller.project_id, checked_key: checkedKey, event_id: newId('evnt'),
    origin: actor.origin, actor_id: actor.keyId ?? null, ip_address: actor.ip,
  }));
  if (!deleted) throw errors.appNotFound();
  return ok({ deleted: true as const, id });
}

/** A logo bigger than this is refused before it is read. */
export const MAX_LOGO_BYTES = 5 * 1024 * 1024;

interface AppRow {
  id: string;
  project_id: string;
  status: string;
  logo_file_id: string | null;
}

/** Any app, deleted or not, by id: the workspace's changes and reports name apps that the API may no longer show. */
export async function findApp(db: Queryable, appId: string): Promise<AppRow> {
  const [app] = await queryFile<AppRow>(db, 'app_find_any', [appId]);
  if (!app) throw new NotFound(`No app ${appId}.`);
  return app;
}

/** An app a workspace command changes, locked until its transaction ends (app_lock_any). */
async function lockApp(tx: Tx, appId: string): Promise<AppRow> {
  const { project_id } = await findApp(tx.client, appId);
  const [app] = await queryFile<AppRow>(tx.client, 'app_lock_any', [appId, project_id]);
  if (!app) throw new NotFound(`No app ${appId}.`);
  return app;
}

/** The logo file's bytes; one that cannot be read is the caller's to fix, told in one line. */
function readLogo(filePath: string): Buffer {
  const unreadable = () => new Invalid(`The logo file cannot be read: ${filePath}.`);
  let size: number;
  try {
    size = statSync(filePath).size;
  } catch {
    throw unreadable();
  }
  if (size > MAX_LOGO_BYTES) throw new Invalid(`The logo file is larger than ${MAX_LOGO_BYTES} bytes.`);
  try {
    return readFileSync(filePath);
  } catch {
    throw unreadable();
  }
}

export async function setLogo(services: Services, actor: Actor, appId: string, filePath: string) {
  const content = readLogo(filePath);
  const image = isImage(content);
  return change(services, async (tx) => {
    // Locked, so that the `from` recorded is the logo this change replaces, whatever ran beside it.
    const app = await lockApp(tx, appId);
    const fileId = newId('file');
    await queryFile(tx.client, 'file_insert', {
      id: fileId, project_id: app.project_id, name: path.basename(filePath), size_bytes: content.length, is_image: image, content,
    });
    const [updated] = await queryFile<{ updated_at: number }>(tx.client, 'app_set_logo', [appId, fileId, app.project_id]);
    await recordEvent(tx, actor, {
      projectId: app.project_id,
      type: 'app.logo_changed',
      related: { table: 'app', id: appId },
      details: { changes: { logo: { from: app.logo_file_id ?? '', to: fileId } }, image },
      at: updated!.updated_at,
    });
    return { app: { id: appId, logo: fileId }, file: { id: fileId, image } };
  });
}

export async function activateApp(services: Services, actor: Actor, appId: string) {
  return change(services, async (tx) => {
    const app = await lockApp(tx, appId);
    const [activated] = await queryFile<{ id: string; project_id: string; updated_at: number }>(tx.client, 'app_activate', [appId, app.project_id]);
    // Already activated: nothing changed, nothing to record.
    if (activated) {
      await recordEvent(tx, actor, {
        projectId: activated.project_id,
        type: 'app.activated',
        related: { table: 'app', id: appId },
        details: { changes: { status: { from: 'draft', to: 'activated' } } },
        at: activated.updated_at,
      });
    }
    return { app: { id: appId, status: 'activated' } };
  });
}
