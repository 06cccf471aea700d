// The digest an approval binds, computed here as the server computes it: SHA-256 over the
// canonical JSON of the arguments (object keys sorted by their UTF-8 bytes, no spaces,
// numbers as the server writes them), written `sha256:<hex>`. An approval sends the digest
// of the arguments the person was shown; checking first that those arguments hash to it
// catches a display that altered them before anything is approved.
//
// JavaScript's numbers forget how they were written (`2.0` reads as `2`, which the server
// writes `2.0`), so the arguments are digested from the answer's text (`parseLossless`).

/** A number as it was written in JSON. */
export class LosslessNumber {
  constructor(readonly text: string) {}
}

/** A JSON value with each number kept as written. */
export type Lossless = null | boolean | string | LosslessNumber | Lossless[] | { [key: string]: Lossless };

/** Parses JSON text keeping each number as written. Throws `SyntaxError` on bad JSON. */
export function parseLossless(text: string): Lossless {
  let i = 0;
  const fail = (what: string): never => {
    throw new SyntaxError(`JSON: ${what} at offset ${i}`);
  };
  const space = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const value = (): Lossless => {
    space();
    const c = text[i];
    if (c === "{") {
      i++;
      const out: { [key: string]: Lossless } = {};
      space();
      if (text[i] === "}") return i++, out;
      for (;;) {
        space();
        if (text[i] !== '"') fail("expected a key");
        const key = string();
        space();
        if (text[i++] !== ":") fail("expected `:`");
        out[key] = value();
        space();
        if (text[i] === ",") { i++; continue; }
        if (text[i++] === "}") return out;
        fail("expected `,` or `}`");
      }
    }
    if (c === "[") {
      i++;
      const out: Lossless[] = [];
      space();
      if (text[i] === "]") return i++, out;
      for (;;) {
        out.push(value());
        space();
        if (text[i] === ",") { i++; continue; }
        if (text[i++] === "]") return out;
        fail("expected `,` or `]`");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) return (i += word.length), v;
    }
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 512));
    if (!m) return fail("expected a value");
    i += m[0].length;
    return new LosslessNumber(m[0]);
  };
  const string = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const v = value();
  space();
  if (i !== text.length) fail("trailing text");
  return v;
}

/** A finite double in the server's layout: shortest digits, `1e+16`, `1.5e-7`, `0.0001`, `123.0`. */
function float(x: number): string {
  if (!Number.isFinite(x)) return "null";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mantissa, exp] = Math.abs(x).toExponential().split("e");
  const digits = mantissa.replace(".", "").replace(/0+$/, "") || "0";
  const point = Number(exp) + 1; // value = 0.DIGITS × 10^point
  const n = digits.length;
  if (n <= point && point <= 16) return sign + digits + "0".repeat(point - n) + ".0";
  if (0 < point && point <= 16) return sign + digits.slice(0, point) + "." + digits.slice(point);
  if (-5 < point && point <= 0) return sign + "0." + "0".repeat(-point) + digits;
  const e = point - 1;
  return sign + digits[0] + (n > 1 ? "." + digits.slice(1) : "") + "e" + (e > 0 ? "+" : "") + e;
}

const U64_MAX = 18446744073709551615n;
const I64_MIN = -9223372036854775808n;

/** A number as written, as the server reads then writes it: an integer that fits 64 bits
 * stays one; anything else is a double. */
function numberText(text: string): string {
  if (/^-?\d+$/.test(text)) {
    const n = BigInt(text);
    if (n >= I64_MIN && n <= U64_MAX) return n.toString();
  }
  return float(Number(text));
}

const utf8 = new TextEncoder();
function byBytes(a: string, b: string): number {
  const x = utf8.encode(a), y = utf8.encode(b);
  for (let k = 0; k < Math.min(x.length, y.length); k++) if (x[k] !== y[k]) return x[k] - y[k];
  return x.length - y.length;
}

/** `value` as compact JSON with object keys sorted, recursively. Numbers: as written for a
 * `LosslessNumber`; a JavaScript number that is whole is written as an integer. */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (value instanceof LosslessNumber) return numberText(value.text);
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      return Number.isInteger(value) && Math.abs(value) < 1e21 ? BigInt(value).toString() : float(value);
    case "string":
      return JSON.stringify(value);
    case "object": {
      if (Array.isArray(value)) return "[" + value.map(canonicalJson).join(",") + "]";
      const o = value as Record<string, unknown>;
      const keys = Object.keys(o).sort(byBytes);
      return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonicalJson(o[k])).join(",") + "}";
    }
    default:
      throw new TypeError(`not a JSON value: ${typeof value}`);
  }
}

/** `sha256:<hex>` of the canonical form of `value`. */
export async function digest(value: unknown): Promise<string> {
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8.encode(canonicalJson(value))));
  return "sha256:" + Array.from(sum, (b) => b.toString(16).padStart(2, "0")).join("");
}
