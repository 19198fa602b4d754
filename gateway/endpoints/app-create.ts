import { admitApp, createApp } from '../../domain/apps.ts';
import { errors } from '../../domain/errors.ts';
import type { PoolEndpoint } from './endpoint.ts';
import { NON_BLANK, ref } from './schemas.ts';

export const appCreate = {
  method: 'POST',
  path: '/v1/app/create',
  scope: 'app:write',
  summary: 'Creates an app (code 200); `data` and `instruction` come back keyed by their new ids.',
  runs: 'pool',
  request: {
    body: {
      type: 'object',
      required: ['name', 'description', 'data', 'instruction'],
      properties: {
        name: { type: 'string', maxLength: 200, pattern: NON_BLANK },
        description: { type: 'string', maxLength: 2000, pattern: NON_BLANK },
        category: { type: ['string', 'null'], default: 'general', description: 'Also accepted as `task_type` or `model_task_type`; null for the default.' },
        data: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['type', 'name'],
            properties: {
              type: { type: 'string', pattern: NON_BLANK, description: 'A data type name (input, text area, number, email, document, image) or its mdti_ id.' },
              name: { type: 'string', pattern: NON_BLANK },
              placeholder: { type: ['string', 'null'], default: '' },
              required: { type: ['boolean', 'null'], default: false },
            },
          },
        },
        instruction: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['type'],
            properties: {
              type: { const: 'system' },
              instruction: { type: ['string', 'null'] },
              prompt: { type: 'string', description: 'The instruction, read when `instruction` is absent or null.' },
            },
            anyOf: [
              { required: ['instruction'], properties: { instruction: { type: 'string', pattern: NON_BLANK } } },
              { required: ['prompt'], properties: { instruction: { type: 'null' }, prompt: { pattern: NON_BLANK } } },
            ],
          },
        },
        status: { enum: ['draft', 'activated', null], default: 'activated' },
        type: { enum: ['private', 'public', null], default: 'private' },
      },
    },
  },
  success: { status: 200, schema: ref('AppCreated') },
  errors: [
    errors.planNoCustomApps, errors.planAppLimit,
    errors.appNameRequired, errors.appNameType, errors.appNameLength,
    errors.appDescriptionRequired, errors.appDescriptionType, errors.appDescriptionLength,
    errors.dataNotArray, errors.dataFieldShape, errors.dataFieldPlaceholder, errors.dataFieldRequiredFlag,
    errors.dataTypeUnknown, errors.dataNamesUnique, errors.dataNoneRequired,
    errors.instructionNotArray, errors.instructionShape, errors.instructionTypeUnknown,
    errors.appStatus, errors.appType, errors.categoryUnknown, errors.categoryNoImageModel,
  ],
  handler: createApp,
  admit: admitApp,
} as const satisfies PoolEndpoint;
