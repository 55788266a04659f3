/** A valid dotted-quad IPv4 address as one 32-bit number. */
export const ipv4Number = (dotted: string): number => dotted.split('.').reduce((n, octet) => n * 256 + Number(octet), 0);

/** Eight 16-bit groups of a valid IPv6 address (zone id already removed), as one 128-bit number. */
export function ipv6Number(address: string): bigint {
  let text = address;
  // A trailing dotted quad (::ffff:1.2.3.4, ::1.2.3.4) becomes its two hex groups.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const n = ipv4Number(quad[1]);
    text = `${text.slice(0, quad.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}
