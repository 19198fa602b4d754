// Whether a file is an image logo is judged by its first bytes, never by its name.
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff]);
const RIFF = Buffer.from('RIFF', 'latin1');
const WEBP = Buffer.from('WEBP', 'latin1');

export function isImage(bytes: Buffer): boolean {
  if (bytes.subarray(0, PNG.length).equals(PNG)) return true;
  if (bytes.subarray(0, JPEG.length).equals(JPEG)) return true;
  return bytes.length >= 12 && bytes.subarray(0, 4).equals(RIFF) && bytes.subarray(8, 12).equals(WEBP);
}
