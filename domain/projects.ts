// Projects, their consumers and their plans: workspace actions (origin `workspace`), not part of the HTTP API.
import { newId } from '../lib/ids.ts';
import { queryFile, type Queryable } from '../lib/pool.ts';
import { recordEvent } from './audit.ts';
import { verifyChain } from './audit-chain.ts';
import { verifyLatestCheckpoint } from './checkpoints.ts';
import { insertKey, keyView, type NewKey } from './keys.ts';
import type { Actor } from './actor.ts';
import type { RateLimit } from './rate-limit.ts';
import { change, type Services } from './services.ts';

export class NotFound extends Error {}

/** A workspace command's target or input that the change cannot take (exit 1, like NotFound). */
export class Invalid extends Error {}

/** A new consumer, a project it owns, and a `*` key for it. The secret is returned once. */
export async function createProject(services: Services, actor: Actor, name: string) {
  return change(services, async (tx) => {
    const consumerId = newId('cons');
    const projectId = newId('proj');
    await queryFile(tx.client, 'consumer_insert', [consumerId, name]);
    const [project] = await queryFile<{ id: string; created_at: number }>(tx.client, 'project_insert', [projectId, name]);
    await queryFile(tx.client, 'membership_insert', [projectId, consumerId, 'owner']);
    await queryFile(tx.client, 'plan_insert', [projectId]);
    await recordEvent(tx, actor, {
      projectId,
      type: 'project.created',
      related: { table: 'project', id: projectId },
      details: { name, consumer_id: consumerId },
      at: project!.created_at,
    });
    const { row, secret } = await insertKey(tx, actor, projectId, consumerId, { name: 'Default key', scope: ['*'], expiresAt: null });
    return { project: { id: projectId }, consumer: { id: consumerId }, key: { id: row.id, key: secret } };
  });
}

/** The workspace's `key create`, as the project's owner; the caller validates (parseNewKey). */
export async function createProjectKey(services: Services, actor: Actor, projectId: string, input: NewKey) {
  const { row, secret } = await change(services, async (tx) => {
    const [owner] = await queryFile<{ consumer_id: string; project_status: string; consumer_status: string }>(tx.client, 'project_owner', [projectId]);
    if (!owner) throw new NotFound(`No project ${projectId}.`);
    // Its key could never authenticate: there is no command that enables either again.
    if (owner.project_status !== 'active') throw new Invalid(`Project ${projectId} is disabled.`);
    if (owner.consumer_status !== 'active') throw new Invalid(`Consumer ${owner.consumer_id}, the project's owner, is disabled.`);
    return insertKey(tx, actor, projectId, owner.consumer_id, input);
  });
  return { key: keyView(row, secret) };
}

export async function disableProject(services: Services, actor: Actor, projectId: string) {
  return change(services, async (tx) => {
    await projectMustExist(tx.client, projectId);
    await queryFile(tx.client, 'changes_hold', ['project', projectId]);
    const [disabled] = await queryFile<{ id: string; updated_at: number }>(tx.client, 'project_disable', [projectId]);
    // Already disabled: nothing changed, so nothing to record.
    if (disabled) {
      await recordEvent(tx, actor, {
        projectId,
        type: 'project.disabled',
        related: { table: 'project', id: projectId },
        at: disabled.updated_at,
      });
    }
    return { project: { id: projectId, status: 'disabled' } };
  });
}

export async function disableConsumer(services: Services, actor: Actor, consumerId: string) {
  return change(services, async (tx) => {
    const [exists] = await queryFile(tx.client, 'consumer_exists', [consumerId]);
    if (!exists) throw new NotFound(`No consumer ${consumerId}.`);
    await queryFile(tx.client, 'change_in_sequence');
    await queryFile(tx.client, 'changes_hold', ['consumer', consumerId]);
    const rows = await queryFile<{ id: string; project_id: string; updated_at: number }>(tx.client, 'consumer_disable', [consumerId]);
    await queryFile(tx.client, 'consumer_keys_disable', [consumerId]);
    for (const row of rows) {
      await recordEvent(tx, actor, {
        projectId: row.project_id,
        type: 'consumer.disabled',
        related: { table: 'consumer', id: consumerId },
        at: row.updated_at,
      });
    }
    return { consumer: { id: consumerId, status: 'disabled' } };
  });
}

/** The workspace's commands name projects by id: one that does not exist is NotFound. */
export async function projectMustExist(db: Queryable, projectId: string): Promise<void> {
  const [exists] = await queryFile(db, 'project_exists', [projectId]);
  if (!exists) throw new NotFound(`No project ${projectId}.`);
}

export async function countProjects(services: Services): Promise<number> {
  const [row] = await queryFile<{ total: number }>(services.pool, 'project_count');
  return row!.total;
}

/** The workspace's `events verify`: the project's whole hash chain recomputed. */
export async function verifyProjectChain(services: Services, projectId: string) {
  await projectMustExist(services.pool, projectId);
  const chain = await verifyChain(services.pool, projectId);
  const { checkpoint, reason } = await verifyLatestCheckpoint(services.pool, projectId);
  if (!chain.verified) return { project: { id: projectId }, ...chain, checkpoint };
  if (reason !== undefined) {
    return { project: { id: projectId }, events: chain.events, verified: false as const, sequence: checkpoint, reason: `checkpoint ${checkpoint}: ${reason}`, checkpoint };
  }
  return { project: { id: projectId }, ...chain, checkpoint };
}

/** `rateLimit`: the default of the project's keys created from now on; null for none, undefined to keep it. */
export async function setPlan(services: Services, actor: Actor, projectId: string, plan: { customApps?: boolean; appLimit?: number; rateLimit?: RateLimit | null }) {
  return change(services, async (tx) => {
    const [row] = await queryFile<{
      old_custom_apps: boolean; old_app_limit: number; old_rate_limit: RateLimit | null;
      custom_apps: boolean; app_limit: number; rate_limit: RateLimit | null; updated_at: number;
    }>(tx.client, 'plan_update', [projectId, plan.customApps ?? null, plan.appLimit ?? null, plan.rateLimit ?? null, plan.rateLimit !== undefined]);
    if (!row) throw new NotFound(`No project ${projectId}.`);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    if (row.old_custom_apps !== row.custom_apps) changes.custom_apps = { from: row.old_custom_apps, to: row.custom_apps };
    if (row.old_app_limit !== row.app_limit) changes.app_limit = { from: row.old_app_limit, to: row.app_limit };
    if (JSON.stringify(row.old_rate_limit) !== JSON.stringify(row.rate_limit)) changes.rate_limit = { from: row.old_rate_limit, to: row.rate_limit };
    if (Object.keys(changes).length > 0) {
      await recordEvent(tx, actor, { projectId, type: 'plan.changed', related: { table: 'project', id: projectId }, details: { changes }, at: row.updated_at });
    }
    return { project: { id: projectId }, plan: { custom_apps: row.custom_apps, app_limit: row.app_limit, rate_limit: row.rate_limit } };
  });
}
