// The catalogue app endpoints resolve against. Types never change while a process runs, so they
// are read once per thread; categories resolve per request (their newest build may change).
import { queryFile, type Queryable } from '../lib/pool.ts';

interface TypeRow {
  kind: 'data' | 'instruction';
  id: string;
  name: string;
}

export interface Catalog {
  /** Data type by name or by identifier → identifier. */
  dataTypeId(nameOrId: string): string | undefined;
  isInstructionType(name: string): boolean;
}

let loaded: Promise<Catalog> | undefined;

export function catalog(db: Queryable): Promise<Catalog> {
  loaded ??= queryFile<TypeRow>(db, 'catalog_types').then((rows) => {
    const dataTypes = new Map<string, string>();
    const instructionTypes = new Set<string>();
    for (const row of rows) {
      if (row.kind === 'data') {
        dataTypes.set(row.name, row.id);
        dataTypes.set(row.id, row.id);
      } else {
        instructionTypes.add(row.name);
      }
    }
    return {
      dataTypeId: (nameOrId) => dataTypes.get(nameOrId),
      isInstructionType: (name) => instructionTypes.has(name),
    };
  }, (err) => {
    loaded = undefined;
    throw err;
  });
  return loaded;
}

export const IMAGE_DATA_TYPE_ID = 'mdti_1777f1beedfbd5cde030';

