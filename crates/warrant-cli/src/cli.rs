//! The command line, defined once; help is generated from it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Exit codes:
  0  the run attained its objective (or the command succeeded)
  1  the run ended not attained, failed, cancelled or exhausted; or a check failed
  2  invalid input or usage: nothing was run or written
  3  the run is waiting for an approval or a reconciliation
  4  another process drives the run: nothing was done here
  5  the run stopped interrupted (a provider could not be started again): nothing is lost;
     `warrant resume RUN` carries it on

Deciders:
  scripted:PATH                      decisions read from a YAML or JSON script
  openai:MODEL                       OpenAI (OPENAI_API_KEY)
  anthropic:MODEL                    Anthropic (ANTHROPIC_API_KEY)
  gemini:MODEL                       Gemini (GEMINI_API_KEY or GOOGLE_API_KEY)
  openai-compatible:MODEL@BASE_URL   vLLM, Ollama, llama.cpp, LM Studio...
  Options after `?`: max_output_tokens=N (default 1024), reasoning=EFFORT|BUDGET,
  stream=false, attempts=N, base_url=URL, key_env=NAME. `warrant models` lists the models.

Examples:
  warrant run examples/cafe-gallery/spec.yaml
  warrant report last
  warrant explain approval_denied
  warrant serve --specs examples        # the API and the console at http://127.0.0.1:7800/
  warrant --store postgres://db/warrant store migrate   # a fleet: migrate once, then
  warrant --store postgres://db/warrant serve --specs examples   # queue runs, and
  warrant --store postgres://db/warrant worker          # drive them, on any machine
  warrant compare examples/cafe-gallery/spec.yaml \\
      --decider scripted:examples/cafe-gallery/script.yaml \\
      --decider scripted:examples/cafe-gallery/decline.yaml";

/// Warrant: governable agent execution. A decider proposes; Warrant mediates every call,
/// records the evidence, and judges from it whether the objective was reached.
#[derive(Debug, Parser)]
#[command(
    name = "warrant",
    version = crate::version::LONG,
    after_help = AFTER_HELP,
    max_term_width = 100
)]
pub struct Cli {
    /// The store: a SQLite file, or a PostgreSQL database's `postgres://` URL (a fleet's
    /// store; create its schema with `warrant store migrate`).
    #[arg(
        long,
        global = true,
        env = "WARRANT_STORE",
        hide_env_values = true,
        default_value = ".warrant/warrant.db",
        value_parser = crate::store::parse,
        value_name = "FILE|URL"
    )]
    pub store: crate::store::StoreAt,

    /// A model capability table (YAML) whose entries add to or replace the built-in ones
    /// (`warrant models` prints the built-in table).
    #[arg(long, global = true, env = "WARRANT_MODELS")]
    pub models: Option<PathBuf>,

    /// The operator's providers file (`warrant/providers/v1`): MCP servers, OpenAPI services,
    /// in-process providers with settings and model endpoints, each with its secrets, that a
    /// spec names as `registered: NAME` and `decider: model:NAME` (`warrant schema providers`
    /// prints its JSON Schema).
    #[arg(long, global = true, env = "WARRANT_PROVIDERS", value_name = "FILE")]
    pub providers: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a spec to its outcome, showing progress on stderr and a summary on stdout.
    Run(Box<RunArgs>),
    /// List the runs in the store, newest first.
    Runs {
        /// Only runs with this status: running, queued, interrupted, waiting, ready, or an outcome
        /// (attained, not_attained, failed, cancelled, exhausted, closed).
        #[arg(long, value_name = "STATUS")]
        status: Option<warrant_core::RunStatus>,
        /// Only runs of the spec with this id.
        #[arg(long, value_name = "ID")]
        spec: Option<String>,
        /// At most this many (the newest); 0 lists all.
        #[arg(long, value_name = "N", default_value_t = 0)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a run's current state.
    Show {
        /// A run id, a unique prefix of one, or `last`.
        run: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a run's events in order.
    Events {
        /// A run id, a unique prefix of one, or `last`.
        run: String,
        /// Keep printing new events until the run ends.
        #[arg(long)]
        follow: bool,
        /// Start at this sequence number.
        #[arg(long, default_value_t = 1)]
        from: u64,
        /// Print one JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Print a run's evidence report (`warrant.run-report/1`).
    Report {
        /// A run id, a unique prefix of one, or `last`.
        run: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-execute a run from its log, calling no provider and no decider.
    Replay {
        /// A run id, a unique prefix of one, or `last`.
        run: String,
        /// Exit 1 unless the regenerated events are identical to the recorded ones.
        #[arg(long)]
        verify: bool,
    },
    /// Run one frozen spec through several deciders and compare their routes.
    Compare {
        /// The spec file (YAML or JSON).
        spec: PathBuf,
        /// A decider: `scripted:PATH`, `openai:MODEL`, `anthropic:MODEL`, `gemini:MODEL` or
        /// `openai-compatible:MODEL@URL`, with options after `?` (default: the spec's).
        #[arg(long = "decider", num_args = 1)]
        deciders: Vec<String>,
        /// A lane each decider runs on (`reference`, `browser`; default: `reference`). Give
        /// two or more routes in all: deciders, lanes, or both (every decider on every lane).
        #[arg(long = "lane", num_args = 1, value_parser = ["reference", "browser"])]
        lanes: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Continue runs whose process stopped: from the log, without repeating any effect.
    Resume {
        /// A run id, a unique prefix of one, or `last`.
        run: Option<String>,
        /// Every run in the store that can go on: still running (its process died), answered, or
        /// asleep past its time.
        #[arg(long, conflicts_with = "run")]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Do not show progress on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// List approval requests: pending ones across the store, or all of one run's.
    Approvals {
        /// Only this run (a run id, a unique prefix of one, or `last`).
        #[arg(long)]
        run: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a request, bound to the exact arguments and schema it names.
    Approve {
        /// The request id (`<run>-a<n>`).
        request: String,
        /// `once` (this call) or `run` (this action for the rest of the run).
        #[arg(long, value_enum, default_value = "once")]
        scope: ScopeArg,
        /// Until when the approval holds: milliseconds since the epoch, or a time from now such
        /// as `+30m`, `+2h`, `+1d` (units ms, s, m, h, d). It must be in the future.
        #[arg(long, value_name = "MS|+DURATION", value_parser = parse_until)]
        until: Option<Until>,
        /// Approve these arguments (a JSON object) instead of the ones asked about: the call
        /// runs with them, validated and ruled on again, and the decider is shown both.
        #[arg(long, value_name = "JSON", value_parser = parse_edit)]
        edit: Option<serde_json::Value>,
        /// Who approves (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
        /// Always allow this: approve it once and keep a standing grant for this tool with
        /// these very arguments (each equal to its value now) for the run's user; with
        /// `--until`, the grant's expiry.
        #[arg(long, conflicts_with_all = ["edit", "scope"])]
        always: bool,
        /// With `--always`: for every user of the run's tenant.
        #[arg(long, requires = "always")]
        whole_tenant: bool,
    },
    /// Deny a request; the same effect stays denied for the rest of the run.
    Deny {
        /// The request id (`<run>-a<n>`).
        request: String,
        /// Why.
        #[arg(long)]
        reason: String,
        /// Who denies (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
    },
    /// List the questions runs asked that wait for an answer: across the store, or one run's.
    Questions {
        /// Only this run (a run id, a unique prefix of one, or `last`).
        #[arg(long)]
        run: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer a question a run asked (`warrant questions`): the answer must fit the question's
    /// schema, and enters the run as your words, trusted as the objective is.
    Answer {
        /// The question id (`<run>-q<n>`).
        question: String,
        /// The answer as JSON (`'"DE89..."'`, `42`, `'{"month": "december"}'`).
        #[arg(long, value_name = "JSON", value_parser = parse_json_answer, conflicts_with = "text", required_unless_present = "text")]
        json: Option<serde_json::Value>,
        /// The answer as text (a JSON string).
        #[arg(long, value_name = "TEXT")]
        text: Option<String>,
        /// Who answers (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
    },
    /// Cancel a running or waiting run, from any process sharing the store.
    Cancel {
        /// A run id, a unique prefix of one, or `last`.
        run: String,
        /// Why.
        #[arg(long, default_value = "cancelled by an operator")]
        reason: String,
        /// Who cancels (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
        /// Seconds to wait for the process running it to end it.
        #[arg(long, default_value_t = 10)]
        wait: u64,
    },
    /// Say whether an effect in doubt happened, as an authorised operator.
    Reconcile {
        /// A run id, a unique prefix of one, or `last`.
        run: String,
        /// The call in doubt, e.g. `c3`.
        call: String,
        /// The effect happened.
        #[arg(long)]
        happened: bool,
        /// The effect did not happen.
        #[arg(long)]
        did_not_happen: bool,
        /// With --did-not-happen: have the call sent again when the run is resumed (a new
        /// call with the same arguments, ruled on again, under a new idempotency key).
        #[arg(long, requires = "did_not_happen")]
        resend: bool,
        /// Why you believe so.
        #[arg(long, default_value = "")]
        note: String,
        /// Who reconciles (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
    },
    /// Check a spec (and its default script and policies) without running it.
    Validate {
        /// The spec file (YAML or JSON).
        spec: PathBuf,
        /// Also start or reach every provider and check that each step's tools are offered and
        /// that every grant names only arguments its tool takes (a warning when a grant leaves
        /// a commit's text arguments open).
        #[arg(long)]
        connect: bool,
        /// Check it as `warrant serve` checks an inline spec an `author` sends: only the
        /// providers and models the operator registered (`--providers`), files only inside
        /// the catalog (`--specs`), no program, URL, environment variable, header or key of
        /// its own. Nothing is started, read or fetched.
        #[arg(long, conflicts_with = "connect")]
        as_author: bool,
        /// The operator's catalog, for `--as-author`.
        #[arg(long, value_name = "DIR", requires = "as_author")]
        specs: Option<PathBuf>,
    },
    /// Explain a fault code (`warrant explain policy_denied`), or list them all.
    Explain {
        /// The code.
        code: Option<String>,
    },
    /// Connect to each provider of a spec and list what it offers (tools, effect classes) and
    /// what it has but does not offer, and why (an OpenAPI operation with a file upload, say).
    /// For an MCP server's tools that declare no effect, it proposes one from the tool's name
    /// and arguments (a lookup with no content or recipient argument: a read), with the reason
    /// and the `effects:` line that confirms the reads; grants naming arguments their tools do
    /// not take are errors.
    Providers {
        /// The spec file (YAML or JSON).
        spec: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A governed MCP gateway: an MCP server (stdio, or Streamable HTTP with `--http`) in
    /// front of the MCP servers CONFIG names. Every `tools/call` an outside client makes
    /// passes Warrant's Bridge (schema, provenance, policy, approval, the durable intent,
    /// evidence); each client session is a run (`warrant runs`, `show`, `report`, `replay`).
    /// `warrant schema gateway` prints CONFIG's JSON Schema.
    Gateway {
        /// The gateway's configuration (YAML or JSON): upstream servers, policies, principal,
        /// tokens, approvals, limits.
        config: PathBuf,
        /// Serve stdio (the default): for clients that launch their servers.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Serve Streamable HTTP at `http://ADDR/mcp` instead (loopback, e.g. `127.0.0.1:3003`;
        /// port 0 picks a free one, printed on stderr).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Keep the sessions' logs in this process's memory instead of the store: nothing
        /// outlives the process (for trials and benchmarks, not for evidence).
        #[arg(long)]
        memory_store: bool,
        /// The operator's policy floor (repeatable): Cedar files or folders every session
        /// obeys besides the config's own policies (which can narrow it, never widen it).
        #[arg(long = "policy", value_name = "FILE|DIR")]
        floor: Vec<PathBuf>,
        /// Answer Prometheus' `/metrics` on this address (e.g. `127.0.0.1:9465`): the fleet's
        /// state as the store has it, with the names `warrant serve` uses.
        #[arg(long, value_name = "ADDR")]
        metrics: Option<std::net::SocketAddr>,
        /// The operator's webhooks (YAML), told of the sessions' approvals, waits, ends and
        /// calls in doubt (as `warrant serve --webhooks`).
        #[arg(long, value_name = "FILE")]
        webhooks: Option<PathBuf>,
    },
    /// Serve one of Warrant's in-process providers as an MCP server, on stdio or over
    /// Streamable HTTP, for any MCP client to drive (e.g. `warrant mcp-serve cafe`). It is a
    /// gateway over that provider: every call is governed and recorded, each session a run.
    McpServe {
        /// The provider: `cafe`, `gallery`, `bakery`, `bank`, `mailbox` or `ledger`.
        provider: String,
        /// The provider's settings as JSON (e.g. the ledger's `{"file": "ledger.jsonl"}`).
        #[arg(long)]
        config: Option<String>,
        /// Serve Streamable HTTP at `http://ADDR/mcp` instead of stdio (e.g. `127.0.0.1:3002`;
        /// port 0 picks a free one, printed on stderr).
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
    /// Serve in-process providers as WebMCP web apps on a loopback address: each at
    /// `http://ADDR/<provider>/`, a page that registers the provider's very tools through
    /// `document.modelContext` (the browser lane's pages; `GET /ledger` counts what they did).
    /// Until Ctrl-C.
    WebmcpServe {
        /// The providers: any of `cafe`, `gallery`, `bakery`, `bank`, `mailbox` (default: all
        /// of them).
        #[arg(value_name = "PROVIDER")]
        names: Vec<String>,
        /// Where to listen (loopback only; port 0 picks a free one, printed on stderr).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8700")]
        listen: String,
    },
    /// Serve the control and observation API (`/v1`, documented at `/v1/openapi.json`) and the
    /// web console (`/`) over the store, executing runs in this process (on a PostgreSQL
    /// store, runs are queued for `warrant worker` instead). Interrupted runs are re-entered
    /// at start; SIGTERM or Ctrl-C stops it gracefully.
    Serve(ServeArgs),
    /// Drive runs from a shared PostgreSQL store, as one worker of a fleet: new runs a server
    /// queued, runs answered or reconciled, runs whose driver stopped. Each run is driven by
    /// one worker at a time (a lease with an epoch fences a worker that stalled past it).
    /// SIGTERM or Ctrl-C stops it gracefully.
    Worker(WorkerArgs),
    /// Manage the store itself.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// The operator's schedules: runs of a catalog spec started at the ticks of a cron
    /// expression in a time zone, by `warrant serve` and `warrant worker` (each tick once
    /// across a fleet).
    Schedules {
        #[command(subcommand)]
        command: SchedulesCommand,
    },
    /// People's standing grants: "always allow" a provider's tool, with constraints on its
    /// arguments, for a user or a tenant, until they expire or are revoked. A call a live
    /// grant covers is approved at once (the run records which grant); any other is asked.
    Grants {
        #[command(subcommand)]
        command: GrantsCommand,
    },
    /// The store's outbox of notices and what became of their delivery to the operator's
    /// webhooks; and a check of a webhooks file.
    Webhooks {
        #[command(subcommand)]
        command: WebhooksCommand,
    },
    /// The operator's catalog kept in the store (a fleet's): the specs runners may start by
    /// id (`{"spec_id": ...}` in `POST /v1/runs`), each version kept by its digest.
    Specs {
        #[command(subcommand)]
        command: SpecsCommand,
    },
    /// Print the model capability table live deciders are checked against (the built-in one
    /// with `--models` applied).
    Models,
    /// Print a JSON Schema.
    Schema {
        /// Which document.
        #[arg(value_enum)]
        which: SchemaKind,
    },
    /// Measure the engine on the "tool loop" benchmark workload.
    Bench(BenchArgs),
    /// Print a shell's completion script for `warrant`, e.g.
    /// `warrant completions bash > ~/.local/share/bash-completion/completions/warrant`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print `warrant`'s manual page (roff: `warrant man | man -l -`); with `--dir`, write one
    /// page for it and one for each command there (`warrant.1`, `warrant-run.1`, ...).
    Man {
        /// The folder to write the pages to.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on. Anything but loopback needs `--principals`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7800")]
    pub listen: std::net::SocketAddr,
    /// Bearer tokens (as `sha256:` digests) mapped to principals: tenant, user, roles
    /// (viewer, runner, author, approver, operator); and per tenant, its part of the policy
    /// floor and its quotas. Without it: one local principal, loopback only.
    #[arg(long, value_name = "FILE")]
    pub principals: Option<PathBuf>,
    /// The operator's catalog: the folder the specs, scripts and policies that requests name
    /// are read from (a path that leads out of it, through `..` or a link, is refused).
    #[arg(long, value_name = "DIR")]
    pub specs: Option<PathBuf>,
    /// The operator's policy floor (repeatable): Cedar files or folders every run obeys
    /// besides its own rules; a spec or a request can narrow it, never widen it. A tenant's
    /// own part is in the principals file (`tenants: {NAME: {policy: [...]}}`).
    #[arg(long = "policy", value_name = "FILE|DIR")]
    pub floor: Vec<PathBuf>,
    /// Let the principal a run acts for approve its own run's requests (by default another
    /// person must: an approver is never the runner it checks).
    #[arg(long)]
    pub allow_self_approval: bool,
    /// Most runs held at once, driving or waiting (a waiting run let go is not held); more
    /// are refused with 503.
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=u64::MAX))]
    pub max_runs: usize,
    /// Seconds a waiting run is held with its providers connected (an answer goes on at
    /// once); then it is let go, costing nothing but its row in the store, and its answer
    /// re-enters it (its providers started again: an MCP server's session is new).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub hold_waiting: u64,
    /// Largest request body, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub body_limit: usize,
    /// Seconds the runs in flight get to settle at shutdown (the rest are re-entered at the
    /// next start).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub grace: u64,
    /// Seconds a client has to send a request's headers, and then its body; a slower one
    /// is disconnected (or answered 408).
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub client_timeout: u64,
    /// Print the `sha256:` digest of the token read from stdin (for a principals file), and
    /// exit.
    #[arg(long)]
    pub hash_token: bool,
    /// The operator's webhooks (YAML): endpoints told of approvals asked, answered and about
    /// to expire, runs waiting and finished, and calls in doubt, from the store's outbox, at
    /// least once, signed (Standard Webhooks); `links` adds signed approve and deny links.
    /// `warrant webhooks check FILE` checks one.
    #[arg(long, value_name = "FILE")]
    pub webhooks: Option<PathBuf>,
    #[command(flatten)]
    pub logs: LogArgs,
    #[cfg(feature = "otlp")]
    #[command(flatten)]
    pub otlp: OtlpArgs,
}

/// Where a long-running command (`serve`, `worker`) exports the traces of the runs it drives.
#[cfg(feature = "otlp")]
#[derive(Debug, Args)]
pub struct OtlpArgs {
    /// Export traces of the runs this process drives to this OTLP/HTTP collector
    /// (`http://127.0.0.1:4318`), following the GenAI semantic conventions; a run taken over
    /// from another process continues its trace. Off by default: nothing leaves the machine
    /// unless this or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL) or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the traces URL) is set. Also read:
    /// `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` (`key=value,...`), `OTEL_SERVICE_NAME`,
    /// `OTEL_SDK_DISABLED=true`, and `OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` (`http/json` only).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Put calls' arguments and results in the exported spans (left out by default).
    #[arg(long)]
    pub otlp_content: bool,
}

#[cfg(feature = "otlp")]
impl OtlpArgs {
    /// The exporter's settings from the flags and the standard `OTEL_*` variables, when an
    /// endpoint was given.
    #[expect(
        clippy::disallowed_methods,
        reason = "the CLI owns the environment: the standard `OTEL_*` variables configure export"
    )]
    pub fn settings(self) -> Result<Option<warrant_server::otlp::Settings>, String> {
        warrant_server::otlp::Settings::resolve(self.otlp_endpoint, self.otlp_content, |name| {
            std::env::var(name).ok()
        })
    }
}

/// How a long-running command (`serve`, `worker`) writes its logs.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// How the logs (on stderr) are written.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Which logs are written: a level (`info`, the default; `debug` adds every request a
    /// server answered) or `TARGET=LEVEL,...`.
    #[arg(long, value_name = "FILTER", env = "WARRANT_LOG")]
    pub log: Option<String>,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Most runs this worker drives at once.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub max_runs: u64,
    /// A name for this worker, shown with its process on the leases it holds.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The operator's policy floor (repeatable): a run that did not record every policy of
    /// it when it started (a server that queued it without the floor) is not driven here.
    #[arg(long = "policy", value_name = "FILE|DIR")]
    pub floor: Vec<PathBuf>,
    /// Most runs of one tenant driven at once by the whole fleet (0: no limit); a tenant's
    /// runs past it wait in the queue, with the reason in `warrant show`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub tenant_runs: u64,
    /// A tenant with this many approvals pending gets no new run started until some are
    /// answered (0: no limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub tenant_approvals: u64,
    /// Seconds the runs in flight get to reach a wait or an end at shutdown (the rest are
    /// taken up by other workers when their leases lapse).
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub grace: u64,
    #[command(flatten)]
    pub logs: LogArgs,
    /// Answer Prometheus' `/metrics` on this address (e.g. `127.0.0.1:9464`): what the runs
    /// this worker drove did, and the fleet's state as the store has it, with the names
    /// `warrant serve` uses.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// The operator's webhooks (YAML): endpoints told of approvals asked, answered and about
    /// to expire, runs waiting and finished, and calls in doubt, from the store's outbox, at
    /// least once, signed (Standard Webhooks); `links` adds signed approve and deny links.
    /// `warrant webhooks check FILE` checks one.
    #[arg(long, value_name = "FILE")]
    pub webhooks: Option<PathBuf>,
    #[cfg(feature = "otlp")]
    #[command(flatten)]
    pub otlp: OtlpArgs,
}

#[derive(Debug, Subcommand)]
pub enum SpecsCommand {
    /// Add a spec to the catalog, frozen as it is now (its relative paths resolved against
    /// its folder: a worker that starts it needs the files it names at those paths).
    Add {
        /// The spec file.
        spec: PathBuf,
        /// Who adds it (default: the user running the command).
        #[arg(long = "as", value_name = "WHO")]
        by: Option<String>,
    },
    /// List the catalog: each spec's versions, newest first.
    List {
        /// Include retired versions.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Retire a spec (every version, or one): it starts no new run; runs of it go on.
    Retire {
        /// The spec's id.
        id: String,
        /// Only this version (its digest, or a prefix of it).
        #[arg(long, value_name = "DIGEST")]
        digest: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per process: the size of a command line's value does not matter"
)]
pub enum GrantsCommand {
    /// Give a standing grant.
    Add {
        /// The provider.
        #[arg(long)]
        provider: String,
        /// The tool.
        #[arg(long)]
        tool: String,
        /// An argument that must equal this value (repeatable): `NAME=VALUE`, read as JSON
        /// when it parses as JSON, else as a string.
        #[arg(long = "equal", value_name = "NAME=VALUE", value_parser = parse_input)]
        equal: Vec<(String, serde_json::Value)>,
        /// An argument that must be one of these (repeatable): `NAME=[V1, V2, ...]` (JSON).
        #[arg(long = "one-of", value_name = "NAME=JSON_LIST", value_parser = parse_input)]
        one_of: Vec<(String, serde_json::Value)>,
        /// A number argument that must be at most this (repeatable): `NAME=N`.
        #[arg(long = "at-most", value_name = "NAME=N", value_parser = parse_input)]
        at_most: Vec<(String, serde_json::Value)>,
        /// Where an argument's value must come from (repeatable): `NAME=SOURCE[,SOURCE]`, each
        /// `objective`, `input`, `carried`, `trusted_output` or `decider`.
        #[arg(long = "from", value_name = "NAME=SOURCES", value_parser = parse_input)]
        from: Vec<(String, serde_json::Value)>,
        /// The tenant whose runs it covers.
        #[arg(long, default_value = "local")]
        tenant: String,
        /// The user whose runs it covers (default: every user of the tenant).
        #[arg(long)]
        user: Option<String>,
        /// Until when: milliseconds since the epoch, or a time from now such as `+30d`.
        #[arg(long, value_name = "MS|+DURATION", value_parser = parse_until)]
        until: Option<Until>,
        /// Why it is given.
        #[arg(long, default_value = "")]
        note: String,
        /// Who gives it (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
    },
    /// List the standing grants, newest first (revoked and expired ones with `--all`).
    List {
        /// Include revoked and expired grants.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a standing grant: it covers nothing from now on.
    Revoke {
        /// The grant's id.
        id: String,
        /// Who revokes it (default: $USER).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        by: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SchedulesCommand {
    /// Add a schedule (or replace the one with its id): the catalog spec `--spec` started at
    /// each tick of `--cron` in `--tz`, from now on.
    Add {
        /// Its name.
        id: String,
        /// When: a five-field cron expression (minute hour day month weekday), e.g.
        /// `"30 2 * * MON-FRI"`.
        #[arg(long, value_name = "EXPR")]
        cron: String,
        /// In which time zone (IANA: `Europe/Berlin`; `UTC`).
        #[arg(long = "tz", value_name = "ZONE", default_value = "UTC")]
        time_zone: String,
        /// The catalog spec each tick starts (`warrant specs add`): its newest version then.
        #[arg(long = "spec", value_name = "SPEC_ID")]
        spec_id: String,
        /// Exactly this version of it (a digest).
        #[arg(long, value_name = "DIGEST")]
        digest: Option<String>,
        /// A value of one of the spec's inputs (repeatable): `NAME=VALUE`, read as JSON when
        /// it parses as JSON, else as a string.
        #[arg(long = "input", value_name = "NAME=VALUE", value_parser = parse_input)]
        inputs: Vec<(String, serde_json::Value)>,
        /// What a tick does while the previous run goes on.
        #[arg(long, value_enum, default_value_t = OverlapArg::Skip)]
        overlap: OverlapArg,
        /// Which ticks missed while no process looked are run.
        #[arg(long = "catch-up", value_enum, default_value_t = CatchUpArg::Latest)]
        catch_up: CatchUpArg,
        /// The user the runs act for (default: $USER).
        #[arg(long = "as", value_name = "WHO")]
        by: Option<String>,
        /// The tenant the runs act for.
        #[arg(long, value_name = "TENANT", default_value = "local")]
        tenant: String,
        /// Count its ticks from this time (RFC 3339, e.g. `2026-12-01T00:00:00Z`, or ms since
        /// the epoch; default: now). A past time makes the ticks since then due at once, run as
        /// `--catch-up` says (a backfill).
        #[arg(long, value_name = "TIME")]
        from: Option<String>,
    },
    /// List the schedules: each one's next tick and its last.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Pause a schedule: no tick starts anything until it is resumed.
    Pause {
        /// The schedule.
        id: String,
    },
    /// Resume a paused schedule: from its next tick (the ticks missed while paused are not
    /// run).
    Resume {
        /// The schedule.
        id: String,
    },
    /// Remove a schedule and the record of its ticks (its runs stay).
    Remove {
        /// The schedule.
        id: String,
    },
    /// A schedule's ticks, newest first: each one's run, or why it started none.
    Ticks {
        /// The schedule.
        id: String,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `--overlap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OverlapArg {
    /// The tick starts nothing.
    Skip,
    /// The tick's run starts when the previous one ends.
    Queue,
    /// The previous run is cancelled.
    Cancel,
}

/// `--catch-up`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CatchUpArg {
    /// Only the most recent missed tick.
    Latest,
    /// Every missed tick (at most 100).
    All,
    /// None.
    None,
}

#[derive(Debug, Subcommand)]
pub enum WebhooksCommand {
    /// List the notices and their deliveries, newest first: each one's state (pending,
    /// delivered, failed), attempts, the endpoints that took it and the last error.
    Deliveries {
        /// Only notices in this state: pending, delivered or failed.
        #[arg(long, value_name = "STATE")]
        state: Option<String>,
        /// Only the notices of this run.
        #[arg(long, value_name = "RUN")]
        run: Option<String>,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a webhooks file: every error names its field.
    Check {
        /// The webhooks file.
        file: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create or bring the store's schema up to this build's (a PostgreSQL store is only
    /// changed by this command; a SQLite file is brought up to date when opened).
    Migrate,
}

/// How `warrant serve` writes its logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text an event.
    Text,
    /// One JSON object a line.
    Json,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The spec file (YAML or JSON).
    pub spec: PathBuf,
    /// The decider: `scripted:PATH`, `openai:MODEL`, `anthropic:MODEL`, `gemini:MODEL` or
    /// `openai-compatible:MODEL@URL`, with options after `?` (e.g.
    /// `openai:gpt-4.1?max_output_tokens=800`; see README); defaults to the spec's `decider`.
    #[arg(long)]
    pub decider: Option<String>,
    /// Deny every call to this tool (repeatable): a rule-list authority.
    #[arg(long = "deny-tool", value_name = "TOOL")]
    pub deny_tools: Vec<String>,
    /// Require a person's approval for every call to this tool (repeatable).
    #[arg(long = "ask-tool", value_name = "TOOL")]
    pub ask_tools: Vec<String>,
    /// Cedar policy file or folder of `.cedar` files (repeatable), besides the spec's `policy`.
    #[arg(long = "policy", value_name = "FILE|DIR")]
    pub policies: Vec<PathBuf>,
    /// A value of one of the spec's inputs (repeatable): `NAME=VALUE`, the value read as JSON
    /// when it is JSON (`amount=950`, `tags=["a"]`) and as text otherwise (`to=DE89...`).
    #[arg(long = "input", value_name = "NAME=VALUE", value_parser = parse_input)]
    pub inputs: Vec<(String, serde_json::Value)>,
    /// The user the run acts for (default: $USER); policies see it.
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// The tenant the run acts for; policies see it.
    #[arg(long, value_name = "TENANT", default_value = "local")]
    pub tenant: String,
    /// Require every commit call to be allowed by this execution-control endpoint
    /// (`http://host:port/path`), besides what the spec requires.
    #[arg(long = "execution-control", value_name = "URL")]
    pub execution_control: Option<String>,
    /// A security profile, instead of the spec's: `untrusted-input` asks a person before a
    /// commit the decider proposed after reading untrusted text, or whose arguments came
    /// from it, and before a read to an address no trusted source gave (a step's `grant`
    /// covers what its objective needs without asking).
    #[arg(long, value_name = "PROFILE", value_parser = ["untrusted-input"])]
    pub profile: Option<String>,
    /// Where the spec's in-process (`reference`) providers are reached: `reference` (in
    /// process) or `browser` (as WebMCP pages this process serves, in a headless Chromium).
    /// The spec is the same on both.
    #[arg(long, value_name = "LANE", default_value = "reference", value_parser = ["reference", "browser"])]
    pub lane: String,
    /// Print one JSON object on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Do not show progress on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Ask for approvals in place even when standard input is not a terminal.
    #[arg(long, conflicts_with = "no_prompt")]
    pub prompt: bool,
    /// Never ask in place: a run that needs an approval waits durably (exit 3).
    #[arg(long)]
    pub no_prompt: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Limits that override the spec's (the run records the spec it actually ran).
#[derive(Debug, Args, Default)]
pub struct LimitArgs {
    /// Most decisions in the run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub decisions_max: Option<u32>,
    /// Most tool calls in the run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub calls_max: Option<u32>,
    /// Most tokens the decider may use (when it reports them).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub tokens_max: Option<u64>,
    /// Most the decisions may cost, in micro-dollars (when the decider reports cost).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub cost_micro_usd_max: Option<u64>,
    /// The run's driving time in milliseconds (deciding, calling, starting providers); time
    /// spent waiting for a person is not counted.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub deadline_ms: Option<u64>,
    /// Longest each wait for a person or an operator may last, in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub wait_max_ms: Option<u64>,
    /// Longest wait for one provider call in milliseconds.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=u64::MAX))]
    pub call_timeout_ms: Option<u64>,
}

impl LimitArgs {
    /// Applies the overrides; a zero is refused.
    pub fn apply(&self, limits: &mut warrant_core::spec::Limits) -> Result<(), String> {
        let nonzero = |name: &str, v: u64| {
            if v == 0 {
                Err(format!("--{name} must be at least 1"))
            } else {
                Ok(())
            }
        };
        if let Some(v) = self.decisions_max {
            nonzero("decisions-max", u64::from(v))?;
            limits.decisions_max = v;
        }
        if let Some(v) = self.calls_max {
            nonzero("calls-max", u64::from(v))?;
            limits.calls_max = Some(v);
        }
        if let Some(v) = self.tokens_max {
            nonzero("tokens-max", v)?;
            limits.tokens_max = Some(v);
        }
        if let Some(v) = self.cost_micro_usd_max {
            nonzero("cost-micro-usd-max", v)?;
            limits.cost_micro_usd_max = Some(v);
        }
        if let Some(v) = self.deadline_ms {
            nonzero("deadline-ms", v)?;
            limits.deadline_ms = v;
        }
        if let Some(v) = self.call_timeout_ms {
            nonzero("call-timeout-ms", v)?;
            limits.call_timeout_ms = v;
        }
        if let Some(v) = self.wait_max_ms {
            nonzero("wait-max-ms", v)?;
            limits.wait_max_ms = Some(v);
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Tool calls per run (K).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub steps: u32,
    /// Runs executing at once (R).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Record every commit durably (group commit): to a SQLite file beside the store's, or
    /// to a schema of its own in the `--store` PostgreSQL database (dropped after).
    #[arg(long)]
    pub durable: bool,
    /// Workers sharing the PostgreSQL store (each with its own connections and group
    /// commit); the runs are split between them.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: u32,
    /// Timed repetitions (default: 1 when R >= 1000, else enough for 1,000 steps and at least
    /// 3); the median is reported.
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Delegate: each run is a parent whose one step hands the K-call loop to N child runs
    /// (at most 16 at once): measures what a child costs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub children: Option<u32>,
    /// Approvals held at once instead: the R runs each ask for an approval of their first
    /// call and wait (memory is measured while all wait); each is then approved and the R
    /// runs resumed at once to the end (how long that takes is measured).
    #[arg(long, conflicts_with_all = ["children", "workers"])]
    pub waiting: bool,
    /// Async threads driving the runs: 1 (the default) drives every run on one thread, as an
    /// event loop does; a durable store's writer has a thread of its own either way.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    /// `browser`: the tool served as a WebMCP page and called in a headless Chromium (one
    /// run of `--steps` calls; prints the p50 and p99 of the page's own `invokeTool` round
    /// trip, of each step through Warrant, and of their difference).
    #[arg(long, default_value = "reference", value_parser = ["reference", "browser"], conflicts_with_all = ["durable", "workers", "children", "waiting", "repeat"])]
    pub lane: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    /// The `warrant/v1` spec.
    Spec,
    /// The `warrant.run-report/1` report.
    Report,
    /// One event of the `warrant.events/1` log.
    Events,
    /// The Cedar schema policies are validated against (Cedar schema syntax, not JSON).
    Cedar,
    /// The `warrant/gateway/v1` configuration of `warrant gateway`.
    Gateway,
    /// The `warrant/providers/v1` file of `--providers`: the operator's registered
    /// providers, models and secrets.
    Providers,
}

/// When an approval ends: a time, or a time from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Milliseconds since the epoch.
    At(u64),
    /// Milliseconds from now.
    In(u64),
}

/// `MS` (since the epoch) or `+N<unit>` (from now; ms, s, m, h, d).
fn parse_until(text: &str) -> Result<Until, String> {
    let Some(rest) = text.strip_prefix('+') else {
        return text.parse::<u64>().map(Until::At).map_err(|_| {
            format!("`{text}` is neither milliseconds since the epoch nor `+DURATION` (e.g. +30m)")
        });
    };
    let split = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (number, unit) = rest.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}`: give a number after `+`, e.g. +30m"))?;
    let scale = match unit {
        "ms" => 1,
        "s" | "" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (ms, s, m, h or d)"
            ));
        }
    };
    if n == 0 {
        return Err(format!("`{text}` is no time at all"));
    }
    n.checked_mul(scale)
        .map(Until::In)
        .ok_or_else(|| format!("`{text}` is too far away"))
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScopeArg {
    /// This call, these arguments, once.
    Once,
    /// This action for the rest of the run.
    Run,
    /// This call, and the run's plan as a whole (`plan_first`): later commits within it go on
    /// without asking.
    Plan,
}

impl From<ScopeArg> for warrant_core::event::ApprovalScope {
    fn from(s: ScopeArg) -> Self {
        match s {
            ScopeArg::Once => warrant_core::event::ApprovalScope::Once,
            ScopeArg::Run => warrant_core::event::ApprovalScope::Run,
            ScopeArg::Plan => warrant_core::event::ApprovalScope::Plan,
        }
    }
}

/// `--edit`: a JSON object of arguments, at most 64 KiB.
fn parse_edit(text: &str) -> Result<serde_json::Value, String> {
    if text.len() > 64 << 10 {
        return Err("the edited arguments are over 64 KiB".to_owned());
    }
    match serde_json::from_str(text) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(_) => Err("the edited arguments must be a JSON object".to_owned()),
        Err(e) => Err(format!("the edited arguments are not JSON: {e}")),
    }
}

/// An answer to a question, as JSON (at most 64 KiB).
fn parse_json_answer(text: &str) -> Result<serde_json::Value, String> {
    if text.len() > 64 << 10 {
        return Err("the answer is over 64 KiB".to_owned());
    }
    serde_json::from_str(text).map_err(|e| {
        format!("the answer is not JSON: {e} (a text answer: --text, or quote it: '\"...\"')")
    })
}

/// `NAME=VALUE`: the value as JSON when it parses as JSON, else as text.
fn parse_input(text: &str) -> Result<(String, serde_json::Value), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: write NAME=VALUE"))?;
    if name.is_empty() {
        return Err(format!("`{text}`: the input's name is empty"));
    }
    let value =
        serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_owned()));
    Ok((name.to_owned(), value))
}

#[cfg(test)]
mod tests {
    /// Every command, argument and global option is defined consistently: no two arguments of
    /// a command share a name (a global option included), which clap would otherwise only
    /// find when a user runs that command.
    #[test]
    fn the_command_line_is_consistent() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }

    /// A command's positional arguments do not collide with a global option of the same name
    /// (`webmcp-serve`'s providers and `--providers FILE`), which clap finds only on use.
    #[test]
    fn webmcp_serve_parses_its_providers() {
        let cli = <super::Cli as clap::Parser>::try_parse_from([
            "warrant",
            "webmcp-serve",
            "cafe",
            "gallery",
        ])
        .unwrap();
        match cli.command {
            super::Command::WebmcpServe { names, listen } => {
                assert_eq!(names, ["cafe", "gallery"]);
                assert_eq!(listen, "127.0.0.1:8700");
            }
            _ => panic!("not webmcp-serve"),
        }
    }
}
