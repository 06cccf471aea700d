//! The application layer's own rules, through its API: the kind every error keeps (what a
//! front door maps to an exit code or an HTTP status), the statuses every reader derives, and
//! what a cancellation of an ended run says.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "tests"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warrant_app::{
    App, AppError, Cancelled, Deciders, ErrorKind, Prepared, RunOptions, Supervisor,
};
use warrant_core::event::{Event, StoredEvent};
use warrant_core::ids::RunId;
use warrant_core::ports::{BoxFuture, EventStore, RunQuery};
use warrant_core::store::{
    ApprovalsIndex, IdempotencyKeys, Leases, LogReader, LogWriter, NoticeOutbox, RunsIndex,
    SpecCatalog, StoreHealth,
};
use warrant_core::store::{
    CancelRequest, Claim, Driver, EventFeed, PendingApproval, RunPage, RunSummary, StoreError,
};
use warrant_core::{RunKind, RunStatus};
use warrant_engine::Answer;
use warrant_store::MemoryStore;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cafe-gallery/spec.yaml")
}

/// Runs the cafe example to its end through `app`: its id.
async fn attained(app: &App) -> RunId {
    attained_with(app, RunOptions::default()).await
}

/// The same, with `options`.
async fn attained_with(app: &App, options: RunOptions) -> RunId {
    let path = example();
    let spec = warrant_app::load_spec(&path).unwrap();
    let prepared = Prepared::new(&Deciders::new(None), spec, &path, options)
        .await
        .unwrap();
    let result = prepared.drive(&app.engine_for(&prepared)).await.unwrap();
    prepared.shutdown().await;
    result.run_id
}

/// The cafe example, its order asked about.
async fn asking() -> Prepared {
    let path = example();
    let spec = warrant_app::load_spec(&path).unwrap();
    let options = RunOptions {
        ask_tools: vec!["order_latte".to_owned()],
        ..RunOptions::default()
    };
    Prepared::new(&Deciders::new(None), spec, &path, options)
        .await
        .unwrap()
}

/// Waits (boundedly) until `run` shows `status`.
async fn until(app: &App, run: &RunId, status: RunStatus) {
    for _ in 0..600 {
        if app.shown_status(run).await.is_ok_and(|s| s == status) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{run} never became {status}");
}

fn app_over(store: Arc<dyn EventStore>) -> App {
    App::new(store, Deciders::new(None))
}

#[tokio::test]
async fn a_run_is_listed_by_its_status_and_a_cancellation_of_an_ended_run_says_how_it_ended() {
    let app = app_over(Arc::new(MemoryStore::new()));
    let run = attained(&app).await;
    let only = |status| RunQuery {
        status: Some(status),
        ..RunQuery::default()
    };
    let listed = app.runs(only(RunStatus::Attained)).await.unwrap().runs;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].run_id, run);
    assert_eq!(listed[0].kind(), RunKind::Run);
    for other in [
        RunStatus::Running,
        RunStatus::Queued,
        RunStatus::Interrupted,
        RunStatus::Waiting,
    ] {
        assert!(
            app.runs(only(other)).await.unwrap().runs.is_empty(),
            "{other}"
        );
    }
    assert_eq!(app.shown_status(&run).await.unwrap(), RunStatus::Attained);
    let view = app.show(&run).await.unwrap();
    assert_eq!(view.status, RunStatus::Attained);
    let cancelled = app
        .cancel(&run, "op", "too late", std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(cancelled, Cancelled::AlreadyEnded(RunStatus::Attained));
}

#[tokio::test]
async fn a_wait_for_a_person_ends_when_anyone_answers_and_not_before_its_time() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let app = app_over(store.clone());
    let path = example();
    let spec = warrant_app::load_spec(&path).unwrap();
    let options = RunOptions {
        ask_tools: vec!["order_latte".to_owned()],
        ..RunOptions::default()
    };
    let prepared = Prepared::new(&Deciders::new(None), spec, &path, options)
        .await
        .unwrap();
    let held = prepared.drive(&app.engine_for(&prepared)).await.unwrap();
    prepared.shutdown().await;
    assert!(held.outcome.is_none(), "the run waits for a person");
    let asked = app.approvals(Some(&held.run_id)).await.unwrap();
    let request = asked[0].request.clone();
    let now = warrant_core::ports::Clock::now_ms(&warrant_engine::SystemClock);
    // Nobody answers: the wait ends at its time, unsettled.
    let settled = app
        .wait_for_answer(&held.run_id, &request, now + 30)
        .await
        .unwrap();
    assert!(!settled);
    // Another process's answer (another App over the same store) ends a wait begun before it.
    let waiter = app_over(store.clone());
    let waiting = waiter.wait_for_answer(&held.run_id, &request, now + 60_000);
    let answering = async {
        tokio::task::yield_now().await;
        let deny = Answer::Deny {
            reason: "not today".to_owned(),
        };
        app_over(store.clone())
            .answer(&request, deny, "someone")
            .await
    };
    let (settled, answered) = tokio::join!(waiting, answering);
    answered.unwrap();
    assert!(settled.unwrap());
    // Settled already: at once.
    assert!(
        app.wait_for_answer(&held.run_id, &request, 0)
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn what_is_not_there_is_not_found_and_an_answer_nobody_asked_for_is_a_conflict() {
    let app = app_over(Arc::new(MemoryStore::new()));
    let run = attained(&app).await;
    let nowhere = RunId("r-nowhere".to_owned());
    assert_eq!(
        app.show(&nowhere).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        app.shown_status(&nowhere).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let deny = || Answer::Deny {
        reason: "no".to_owned(),
    };
    let e = app
        .answer(&format!("{run}-a9"), deny(), "op")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let e = app.answer("r-nowhere-a1", deny(), "op").await.unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Conflict),
        "{e}"
    );
}

#[tokio::test]
async fn a_store_that_cannot_be_reached_is_unavailable_wherever_it_is_met() {
    let app = app_over(Arc::new(Outage));
    let run = RunId("r-1".to_owned());
    let e = app.runs(RunQuery::default()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("the disk is gone"), "{e}");
    let deny = Answer::Deny {
        reason: "no".to_owned(),
    };
    // Answering an approval while the store is out: not the answer's fault.
    let e = app.answer("r-1-a1", deny, "op").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let e = app.shown_status(&run).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let e = app
        .cancel(&run, "op", "why", std::time::Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

#[test]
fn an_engines_and_a_stores_errors_keep_their_kind() {
    use warrant_engine::EngineError;
    let run = RunId("r".to_owned());
    let cases: [(AppError, ErrorKind); 8] = [
        (StoreError::Io("x".into()).into(), ErrorKind::Unavailable),
        (
            StoreError::Conflict {
                run: run.clone(),
                expected: 1,
                actual: 2,
            }
            .into(),
            ErrorKind::Conflict,
        ),
        (
            EngineError::UnknownRun(run.clone()).into(),
            ErrorKind::NotFound,
        ),
        // While a run is driven, a refusal or a lost lease is the drive's failure (events may
        // have been written before it); only an operator's input is refused as a conflict.
        (
            EngineError::Refused("a child".into()).into(),
            ErrorKind::Failed,
        ),
        (
            EngineError::Store(StoreError::Fenced {
                run: run.clone(),
                holder: String::new(),
                epoch: 2,
            })
            .into(),
            ErrorKind::Failed,
        ),
        (
            EngineError::Store(StoreError::Io("x".into())).into(),
            ErrorKind::Unavailable,
        ),
        (
            EngineError::Forbidden("self".into()).into(),
            ErrorKind::Forbidden,
        ),
        (
            EngineError::Held {
                run,
                holder: "pid 1@h".into(),
                age_ms: 1,
            }
            .into(),
            ErrorKind::Conflict,
        ),
    ];
    for (e, kind) in cases {
        assert_eq!(e.kind(), kind, "{e}");
    }
    let kept = AppError::NotFound("no run".into()).map_message(|m| format!("{m}!"));
    assert!(matches!(kept, AppError::NotFound(ref m) if m == "no run!"));
}

/// A store whose every operation fails as a store does when its disk or server is gone.
struct Outage;

fn gone<T: Send + 'static>() -> BoxFuture<'static, Result<T, StoreError>> {
    Box::pin(std::future::ready(Err(StoreError::Io(
        "the disk is gone".into(),
    ))))
}

struct NoFeed;

impl EventFeed for NoFeed {
    fn next(&mut self) -> BoxFuture<'_, Result<Option<StoredEvent>, StoreError>> {
        gone()
    }
}

impl LogWriter for Outage {
    fn append(
        &self,
        _: &RunId,
        _: u64,
        _: Vec<Arc<Event>>,
        _: Option<&Driver>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        gone()
    }
}

impl LogReader for Outage {
    fn read(&self, _: &RunId, _: u64) -> BoxFuture<'_, Result<Vec<StoredEvent>, StoreError>> {
        gone()
    }
    fn subscribe(&self, _: &RunId, _: u64) -> Box<dyn EventFeed> {
        Box::new(NoFeed)
    }
}

impl RunsIndex for Outage {
    fn runs(&self, _: RunQuery) -> BoxFuture<'_, Result<RunPage, StoreError>> {
        gone()
    }
    fn summary(&self, _: &RunId) -> BoxFuture<'_, Result<Option<RunSummary>, StoreError>> {
        gone()
    }
}

impl ApprovalsIndex for Outage {
    fn pending_approvals(
        &self,
        _: Option<&RunId>,
    ) -> BoxFuture<'_, Result<Vec<PendingApproval>, StoreError>> {
        gone()
    }
}

impl Leases for Outage {
    fn request_cancel(&self, _: &RunId, _: CancelRequest) -> BoxFuture<'_, Result<(), StoreError>> {
        gone()
    }
    fn cancel_request(
        &self,
        _: &RunId,
    ) -> BoxFuture<'_, Result<Option<CancelRequest>, StoreError>> {
        gone()
    }
    fn claim(&self, _: &RunId, _: &Driver) -> BoxFuture<'_, Result<Claim, StoreError>> {
        gone()
    }
    fn heartbeat(&self, _: Vec<(RunId, Driver)>) -> BoxFuture<'_, Result<(), StoreError>> {
        gone()
    }
    fn release(&self, _: &RunId, _: &Driver) -> BoxFuture<'_, Result<(), StoreError>> {
        gone()
    }
}

impl SpecCatalog for Outage {}

impl IdempotencyKeys for Outage {}

impl NoticeOutbox for Outage {}

impl warrant_core::store::Schedules for Outage {}

impl warrant_core::store::Grants for Outage {}

impl StoreHealth for Outage {}

#[tokio::test]
async fn a_tenant_sees_its_own_runs_only_and_anothers_is_not_found() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let app = app_over(store.clone());
    let acme = RunOptions {
        tenant: "acme".to_owned(),
        user: "ann".to_owned(),
        ..RunOptions::default()
    };
    let run = attained_with(&app, acme).await;
    // Read from the run's log by a process that did not start it.
    let other = app_over(store);
    assert_eq!(
        other.tenant_of(&run).await.unwrap().as_deref(),
        Some("acme")
    );
    assert_eq!(other.visible(&run.0, "acme").await.unwrap(), run);
    let hidden = other.visible(&run.0, "globex").await.unwrap_err();
    let absent = other.visible("r-nowhere", "globex").await.unwrap_err();
    assert_eq!(hidden.kind(), ErrorKind::NotFound);
    // Another tenant's run reads exactly as an absent one, but for the id it names.
    assert_eq!(
        hidden.to_string().replace(&run.0, "ID"),
        absent.to_string().replace("r-nowhere", "ID")
    );
    assert_eq!(
        other.tenant_of(&RunId("r-nowhere".into())).await.unwrap(),
        None
    );
    assert_eq!(
        other.visible("", "acme").await.unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

/// The supervisor's rules: a run that waits is held, its providers connected, until it is
/// woken — here by the sweep, which finds it answered by another process — and then driven to
/// its end; no more runs are held than its room; a supervisor that lets runs go gives a
/// waiting run back at once, for whoever claims it when it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_supervisor_holds_a_waiting_run_until_it_is_answered_and_no_more_than_its_room() {
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let app = app_over(store.clone());
    let supervisor = Arc::new(Supervisor::new(app.clone(), 1));
    let run = supervisor.new_run_id();
    assert_eq!(
        supervisor.start(asking().await, run.clone()).await.unwrap(),
        run
    );
    until(&app, &run, RunStatus::Waiting).await;
    assert!(supervisor.holds(&run), "a waiting run stays held");
    assert_eq!(supervisor.room(), 0);
    let refused = supervisor
        .start(asking().await, supervisor.new_run_id())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unavailable, "{refused}");

    // Answered by another process: the sweep wakes the run that holds it.
    let request = app.approvals(Some(&run)).await.unwrap()[0].request.clone();
    let approve = Answer::Approve {
        scope: warrant_core::event::ApprovalScope::Once,
        until_ms: None,
        edited: None,
    };
    app_over(store.clone())
        .answer(&request, approve, "someone")
        .await
        .unwrap();
    supervisor.sweep().await.unwrap();
    assert!(
        supervisor
            .released(&run, std::time::Duration::from_secs(60))
            .await
    );
    assert_eq!(app.shown_status(&run).await.unwrap(), RunStatus::Attained);
    assert_eq!(supervisor.room(), 1);

    // A supervisor that lets runs go holds none that waits.
    let letting_go = Arc::new(Supervisor::new(app.clone(), 1).letting_go());
    let run = letting_go.new_run_id();
    letting_go.start(asking().await, run.clone()).await.unwrap();
    assert!(
        letting_go
            .released(&run, std::time::Duration::from_secs(60))
            .await
    );
    assert_eq!(app.shown_status(&run).await.unwrap(), RunStatus::Waiting);
    letting_go.stop(std::time::Duration::from_secs(5)).await;
    supervisor.stop(std::time::Duration::from_secs(5)).await;
    assert_eq!(supervisor.room(), 0, "a stopping supervisor takes no run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_about_to_expire_is_told_once_and_a_notice_nobody_takes_is_retried_then_given_up()
{
    use warrant_core::notice::{NoticeKind, NoticeQuery, NoticeState};
    let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
    let app = app_over(store.clone());
    let prepared = asking().await;
    let held = prepared.drive(&app.engine_for(&prepared)).await.unwrap();
    prepared.shutdown().await;
    let asked = app.approvals(Some(&held.run_id)).await.unwrap();
    let expires = asked[0].expires_at_ms;
    // An endpoint nothing listens on: every post fails.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hooks = warrant_app::webhooks::Webhooks::parse(
        &format!(
            "endpoints: [{{name: ops, url: 'http://127.0.0.1:{port}/', secret: 0123456789abcdef}}]
retry: {{attempts: 3, first_seconds: 1}}
expiring_seconds: 60
max_age_seconds: 100000000"
        ),
        "hooks.yaml",
    )
    .unwrap();
    let deliverer =
        Arc::new(warrant_app::webhooks::Deliverer::new(app.clone(), Arc::new(hooks)).unwrap());
    let kinds = |notices: &[warrant_core::notice::Notice]| {
        let mut k: Vec<NoticeKind> = notices.iter().map(|n| n.kind).collect();
        k.sort();
        k
    };
    // Long before the expiry: no warning. Within a minute of it: one, however often it looks.
    deliverer.round(expires - 120_000).await.unwrap();
    let before = app.outbox().notices(NoticeQuery::default()).await.unwrap();
    assert_eq!(
        kinds(&before),
        vec![NoticeKind::ApprovalRequested, NoticeKind::RunWaiting]
    );
    deliverer.round(expires - 30_000).await.unwrap();
    deliverer.round(expires - 29_990).await.unwrap();
    let after = app.outbox().notices(NoticeQuery::default()).await.unwrap();
    assert_eq!(
        kinds(&after),
        vec![
            NoticeKind::ApprovalRequested,
            NoticeKind::ApprovalExpiring,
            NoticeKind::RunWaiting
        ]
    );
    // Every post failed: each notice is pending with its error, until its attempts run out.
    assert!(
        after.iter().all(|n| n.state == NoticeState::Pending),
        "{after:#?}"
    );
    assert!(
        after.iter().all(|n| n
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("ops: cannot post"))),
        "{after:#?}"
    );
    deliverer.round(expires + 3_600_000).await.unwrap();
    deliverer.round(expires + 3_700_000).await.unwrap();
    let given_up = app.outbox().notices(NoticeQuery::default()).await.unwrap();
    assert!(
        given_up
            .iter()
            .all(|n| n.state == NoticeState::Failed && n.attempts == 3),
        "{given_up:#?}"
    );
    assert_eq!(
        app.deliveries
            .given_up
            .rows()
            .iter()
            .map(|(_, n)| *n)
            .sum::<u64>(),
        3
    );
}
