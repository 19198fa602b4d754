// The text members of a body: each field's bound and errors, a rule for a creation (required)
// and one for an edit (may be left out, not blanked).
import { errors, type ApiError } from './errors.ts';

export interface TextField {
  /** Counted in characters (code points), not UTF-16 units: an emoji is one. */
  maxChars: number;
  required: () => ApiError;
  notString: () => ApiError;
  tooLong: () => ApiError;
  /** Given to an edit, but blank. */
  blank: () => ApiError;
}

export const KEY_NAME: TextField = {
  maxChars: 200, required: errors.keyNameRequired, notString: errors.keyNameType, tooLong: errors.keyNameLength,
  // Keys are never renamed: a blank name is only ever a creation's, and so missing.
  blank: errors.keyNameRequired,
};
export const APP_NAME: TextField = {
  maxChars: 200, required: errors.appNameRequired, notString: errors.appNameType, tooLong: errors.appNameLength, blank: errors.appNameEmpty,
};
export const APP_DESCRIPTION: TextField = {
  maxChars: 2000, required: errors.appDescriptionRequired, notString: errors.appDescriptionType,
  tooLong: errors.appDescriptionLength, blank: errors.appDescriptionEmpty,
};

const isBlank = (value: string) => value.trim() === '';
const chars = (value: string) => [...value].length;

/** A creation's member: missing, null or blank is `required`, then its type, then its length. */
export function requiredText(value: unknown, field: TextField): string {
  if (value === undefined || value === null || (typeof value === 'string' && isBlank(value))) throw field.required();
  if (typeof value !== 'string') throw field.notString();
  if (chars(value) > field.maxChars) throw field.tooLong();
  return value;
}

/** An edit's member, when given: its type, then blank, then its length. */
export function editedText(value: unknown, field: TextField): string {
  if (typeof value !== 'string') throw field.notString();
  if (isBlank(value)) throw field.blank();
  if (chars(value) > field.maxChars) throw field.tooLong();
  return value;
}
