// `Warrant`: the API of `warrant serve` for a program, typed by what @hey-api/openapi-ts
// generated from its OpenAPI document (`./gen`), with what a generator does not write: the
// event stream followed across disconnections, approvals checked against the digest shown,
// problems as typed errors.

import { createClient, createConfig, type Client } from "./gen/client/index.js";
import * as sdk from "./gen/sdk.gen.js";
import type {
  AnswerResult, ApprovalRow, ListRunsData, RunRef, RunReport, RunsPage, RunView, StartRun,
} from "./gen/types.gen.js";
import { canonicalJson, digest, parseLossless, type Lossless } from "./digest.js";
import { DigestMismatch, WarrantError, problemFrom } from "./errors.js";
import { MessageReader, parseEvent, type WarrantEvent } from "./events.js";

export * from "./errors.js";
export { canonicalJson, digest, parseLossless, LosslessNumber } from "./digest.js";
export { MessageReader, parseEvent, type WarrantEvent } from "./events.js";
export type * from "./gen/types.gen.js";

/** Options of a `Warrant` client. */
export type WarrantOptions = {
  /** The principal's bearer token (none for a server on loopback without a principals file). */
  token?: string;
  /** Another `fetch` (a test's, a proxy's). */
  fetch?: typeof fetch;
};

/** Options of `events()`. */
export type FollowOptions = {
  /** Start after this event (what a previous follower saw last). */
  lastEventId?: number;
  /** Give up after this many failed connections in a row (default 8). */
  retries?: number;
  /** Silence for this long means the connection is dead (default 45 s; the server sends a
   * keep-alive every 15 s). */
  readTimeoutMs?: number;
  /** Stops following. */
  signal?: AbortSignal;
};

type Answer<T> = { data?: T; error?: unknown; response?: Response };

/** What the server held when an approval row was fetched: the digest of its arguments as
 * written, and their canonical form as JavaScript read them (to see later edits). */
const shown = new WeakMap<ApprovalRow, { digest: string; canonical: string }>();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A client of one Warrant server. Every method throws a `ProblemError` subclass for a
 * problem the server answers (`NotFound`, `Invalid`, `DigestMismatch`, `QuotaReached`, ...)
 * and `fetch`'s own error when the server cannot be reached. */
export class Warrant {
  /** The generated client, for any operation not wrapped here (`sdk.*({client: w.api})`). */
  readonly api: Client;
  private readonly base: string;
  private readonly token?: string;
  private readonly fetcher: typeof fetch;

  constructor(baseUrl: string, options: WarrantOptions = {}) {
    this.base = baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.fetcher = options.fetch ?? globalThis.fetch;
    this.api = createClient(
      createConfig({ baseUrl: this.base, auth: this.token, fetch: this.fetcher }),
    );
  }

  /** Starts a run of a spec: inline (`spec`), a file under the server's specs folder
   * (`spec_path`) or a catalog spec (`spec_id`). With an `idempotencyKey`, asking again
   * gives the same run, never a second one. */
  async startRun(body: StartRun, options: { idempotencyKey?: string } = {}): Promise<RunRef> {
    const headers = options.idempotencyKey ? { "Idempotency-Key": options.idempotencyKey } : undefined;
    return ok(await sdk.startRun({ client: this.api, body, headers }));
  }

  /** The run as `warrant show` has it. */
  async run(id: string): Promise<RunView> {
    return ok(await sdk.getRun({ client: this.api, path: { id } }));
  }

  /** A page of runs, newest first. */
  async runs(query: ListRunsData["query"] = {}): Promise<RunsPage> {
    return ok(await sdk.listRuns({ client: this.api, query }));
  }

  /** The run's evidence report. */
  async report(id: string): Promise<RunReport> {
    return ok(await sdk.getRunReport({ client: this.api, path: { id } }));
  }

  /** Ends the run `cancelled` (operator). */
  async cancel(id: string, reason = ""): Promise<void> {
    ok(await sdk.cancelRun({ client: this.api, path: { id }, body: { reason } }));
  }

  /** Settles a call whose effect is in doubt with what was found out (operator). */
  async reconcile(id: string, call: string, body: { happened: boolean; resend?: boolean; note?: string }): Promise<RunRef> {
    return ok(await sdk.reconcileCall({ client: this.api, path: { id, call }, body }));
  }

  /** Follows the run until it ends; then the run as it ended. */
  async wait(id: string, options: FollowOptions = {}): Promise<RunView> {
    for await (const e of this.events(id, options)) if (e.type === "run_finished") break;
    return this.run(id);
  }

  /** The run's events in order, each once, from the first (or after `lastEventId`) through
   * its last (`run_finished`). When the connection drops or the server restarts it connects
   * again with `Last-Event-ID`, so nothing is missed or repeated; it gives up after
   * `retries` failed connections in a row. */
  async *events(id: string, options: FollowOptions = {}): AsyncGenerator<WarrantEvent> {
    let last = options.lastEventId;
    const retries = options.retries ?? 8;
    const silence = options.readTimeoutMs ?? 45_000;
    let failures = 0;
    for (;;) {
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      if (last !== undefined) headers["Last-Event-ID"] = String(last);
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
      const abort = new AbortController();
      const stop = () => abort.abort();
      options.signal?.addEventListener("abort", stop);
      let timer = setTimeout(stop, silence);
      let reason: unknown = "the server closed the stream before the run's last event";
      try {
        const answer = await this.fetcher(`${this.base}/v1/runs/${encodeURIComponent(id)}/events`, {
          headers,
          signal: abort.signal,
        });
        if (answer.status >= 400) {
          throw problemFrom(answer.status, await answer.text(), answer.headers.get("retry-after"));
        }
        if (!answer.body) throw new WarrantError("the event stream has no body");
        const reader = answer.body.getReader();
        const text = new TextDecoder();
        const messages = new MessageReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          clearTimeout(timer);
          timer = setTimeout(stop, silence);
          for (const m of messages.feed(text.decode(value, { stream: true }))) {
            if (m.event === "error") throw new WarrantError(`the event stream of ${id} failed: ${m.data}`);
            const e = parseEvent(m.data);
            if (last !== undefined && e.seq <= last) continue;
            failures = 0;
            last = e.seq;
            yield e;
            if (e.type === "run_finished") {
              abort.abort();
              return;
            }
          }
        }
      } catch (e) {
        if (e instanceof WarrantError || options.signal?.aborted) throw e;
        reason = e;
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", stop);
      }
      failures += 1;
      if (failures > retries) {
        throw new WarrantError(
          `lost the event stream of ${id} ${failures} times in a row (last event ${last}): ${String(reason)}`,
        );
      }
      await sleep(Math.min(5000, 100 * 2 ** (failures - 1)));
    }
  }

  /** Pending approval requests (of `run`, or of every run the caller may see). Each row's
   * arguments are digested as the server wrote them, for `approve` and `deny` to check. */
  async approvals(run?: string): Promise<ApprovalRow[]> {
    const answer = await sdk.listApprovals({ client: this.api, query: { run }, parseAs: "text" });
    const text = ok(answer as Answer<unknown>);
    if (typeof text !== "string") throw new WarrantError("the approvals came as no text");
    const rows = JSON.parse(text) as ApprovalRow[];
    const written = parseLossless(text) as Lossless[];
    for (let k = 0; k < rows.length; k++) {
      const args = (written[k] as { [key: string]: Lossless }).args;
      shown.set(rows[k], { digest: await digest(args), canonical: canonicalJson(rows[k].args) });
    }
    return rows;
  }

  /** Follows the run until it asks for an approval; that request. Throws when the run ends
   * without asking. */
  async waitForApproval(id: string, options: FollowOptions = {}): Promise<ApprovalRow> {
    for await (const e of this.events(id, options)) {
      if (e.type === "approval_requested") {
        const row = (await this.approvals(id)).find((a) => a.request === e.request);
        if (row) return row;
      }
      if (e.type === "run_finished") break;
    }
    throw new WarrantError(`run ${id} ended without asking for an approval`);
  }

  /** Approves the request as it was shown: its arguments must hash to its digest (checked
   * here first), and the server lets the call through only if they are still the ones it
   * holds (`DigestMismatch` otherwise). `scope`: `once` or `run`; `args`: approve these
   * arguments instead (validated and ruled on again). */
  async approve(
    row: ApprovalRow,
    options: { scope?: "once" | "run"; untilMs?: number; args?: unknown } = {},
  ): Promise<AnswerResult> {
    await checkShown(row);
    const body = { args_digest: row.args_digest, scope: options.scope ?? "once", until_ms: options.untilMs, args: options.args };
    return ok(await sdk.approve({ client: this.api, path: { id: row.request }, body }));
  }

  /** Denies the request as it was shown (the same digest check as `approve`). */
  async deny(row: ApprovalRow, reason = ""): Promise<AnswerResult> {
    await checkShown(row);
    return ok(await sdk.deny({ client: this.api, path: { id: row.request }, body: { args_digest: row.args_digest, reason } }));
  }
}

/** The arguments shown hash to the digest that will be sent. */
async function checkShown(row: ApprovalRow): Promise<void> {
  const seen = shown.get(row);
  const found = seen && seen.canonical === canonicalJson(row.args) ? seen.digest : await digest(row.args);
  if (found !== row.args_digest) {
    throw new DigestMismatch({
      type: "urn:warrant:problem:digest-mismatch",
      title: "Conflict",
      status: 409,
      detail: `the arguments shown for ${row.request} hash to ${found}, not to the digest shown (${row.args_digest}): nothing was sent`,
    });
  }
}

/** The answer's data, or the typed problem. */
function ok<T>(answer: Answer<T>): T {
  const response = answer.response;
  if (!response) throw answer.error ?? new WarrantError("no answer");
  if (response.status >= 400) throw problemFrom(response.status, answer.error, response.headers.get("retry-after"));
  return answer.data as T;
}
