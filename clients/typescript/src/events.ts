// Following a run's events over Server-Sent Events, resuming from `Last-Event-ID`.

/** One event of a run's log: its place (`seq`, from 1, no gaps), when (`at_ms`), what
 * (`type`, e.g. `approval_requested`), and the rest of the record. */
export type WarrantEvent = { seq: number; type: string; at_ms: number; [field: string]: unknown };

/** One SSE message. */
export type Message = { id?: string; event: string; data: string };

/** Splits an SSE stream, fed a chunk of text at a time, into messages (the HTML standard's
 * `text/event-stream`): `field: value` lines, a blank line ends a message, `:` lines are
 * comments (the server's keep-alives). */
export class MessageReader {
  private buffer = "";
  private current: Message = { event: "message", data: "" };
  private data: string[] = [];

  /** The messages `chunk` completes. */
  feed(chunk: string): Message[] {
    this.buffer += chunk;
    const out: Message[] = [];
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, nl);
      const sep = this.buffer.startsWith("\r\n", nl) ? 2 : 1;
      this.buffer = this.buffer.slice(nl + sep);
      if (line === "") {
        if (this.data.length > 0) out.push({ ...this.current, data: this.data.join("\n") });
        this.current = { event: "message", data: "" };
        this.data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (name === "data") this.data.push(value);
      else if (name === "id") this.current.id = value;
      else if (name === "event") this.current.event = value;
    }
    return out;
  }
}

/** Parses an event's `data`. */
export function parseEvent(text: string): WarrantEvent {
  const data: unknown = JSON.parse(text);
  if (!data || typeof data !== "object") throw new SyntaxError("an event is a JSON object");
  const e = data as Record<string, unknown>;
  if (typeof e.seq !== "number" || typeof e.type !== "string") {
    throw new SyntaxError("an event has a numeric `seq` and a string `type`");
  }
  return { ...e, seq: e.seq, type: e.type, at_ms: typeof e.at_ms === "number" ? e.at_ms : 0 };
}
