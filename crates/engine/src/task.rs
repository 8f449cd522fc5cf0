//! The task model: ids, statuses, the state a task is in, and the one transition function.
//!
//! Everything here is synchronous and pure; stores persist [`TaskState`] as JSON and the
//! engine decides every status change with [`TaskState::on`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::WorkError;
use crate::trace::TraceContext;

/// A task id: 128 bits from the operating system's CSPRNG, as 32 lowercase hex digits; a
/// task's id ([`TaskId::ordered`]) puts its creation time before them.
///
/// 2025-11-25 tasks: without an authorization context the receiver MUST use
/// cryptographically secure, high-entropy ids; with one, ids are still unguessable.
///
/// Shared text: an id is cloned a few dozen times in a task's life (the engine's maps, the
/// store's cache and feed, each session's routes), and a clone is a count, not a copy
/// (a `String` here was 2 % of a lifecycle's instructions;
/// docs/benchmarks/13-thirteenth-round.md).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskId(Arc<str>);

impl TaskId {
    /// Draws a fresh id from the operating system's random source.
    ///
    /// # Panics
    /// Only if the operating system has no random source at all, in which case no id
    /// could be safe and the process must not go on.
    pub fn random() -> TaskId {
        let mut hex = String::with_capacity(32);
        push_random_hex(&mut hex);
        TaskId(hex.into())
    }

    /// A new task's id: its creation time, 12 hex digits of milliseconds since the Unix
    /// epoch, then the 128 random bits of [`TaskId::random`] (44 digits in all).
    ///
    /// Why the time in front: every index keyed by the id (the tasks' primary key, the
    /// history's key) then grows at its right edge, so a group commit of many new tasks
    /// dirties a few shared pages instead of one random page per task and per index (each
    /// a WAL frame, two `pwrite`s, and a checksum; docs/benchmarks/04-fourth-round.md). The
    /// random part alone keeps the id unguessable; the time is no secret from whoever
    /// holds the id, whose task shows its `createdAt`.
    ///
    /// # Panics
    /// As [`TaskId::random`].
    pub fn ordered(created_at: Timestamp) -> TaskId {
        let ms = u64::try_from(created_at.0).unwrap_or(0) & 0xffff_ffff_ffff;
        let mut hex = String::with_capacity(44);
        for shift in (0..12).rev() {
            hex.push(char::from(HEX_DIGITS[((ms >> (shift * 4)) & 0xf) as usize]));
        }
        push_random_hex(&mut hex);
        TaskId(hex.into())
    }

    /// The id as it goes on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Lowercase hex digits, by nibble: ids are written by hand rather than with `format!` per
/// byte, whose 16 formatted strings per id showed in the lifecycle profile
/// (docs/benchmarks/02-second-round.md).
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Random bytes the operating system's CSPRNG gave, fetched [`RANDOM_AHEAD`] at a time: one
/// `getrandom` call per 32 ids instead of one per id (system calls are dear on the machines
/// this runs on; docs/benchmarks/10-tenth-round.md counts them). Per thread, each byte handed out
/// once and then zeroed. The bytes are the OS's own, so the ids are exactly as unguessable;
/// a process forked from this one would share what is left of the buffer, but ours only
/// forks to `exec` a command at once, and no id is made in between.
const RANDOM_AHEAD: usize = 512;

struct RandomAhead {
    bytes: [u8; RANDOM_AHEAD],
    /// How many of `bytes` were handed out (all of them at first: nothing fetched yet).
    used: usize,
}

thread_local! {
    static RANDOM: std::cell::RefCell<RandomAhead> =
        const { std::cell::RefCell::new(RandomAhead { bytes: [0; RANDOM_AHEAD], used: RANDOM_AHEAD }) };
}

/// 16 bytes from the operating system's CSPRNG (through [`RandomAhead`]).
fn random_16() -> [u8; 16] {
    RANDOM.with_borrow_mut(|ahead| {
        if ahead.used + 16 > RANDOM_AHEAD {
            #[allow(clippy::expect_used)] // see TaskId::random's # Panics: nothing is safe without it
            getrandom::fill(&mut ahead.bytes).expect("the OS random source is unavailable");
            ahead.used = 0;
        }
        let taken = &mut ahead.bytes[ahead.used..ahead.used + 16];
        let mut out = [0u8; 16];
        out.copy_from_slice(taken);
        taken.fill(0);
        ahead.used += 16;
        out
    })
}

/// Appends 128 bits from the operating system's CSPRNG as 32 lowercase hex digits.
fn push_random_hex(hex: &mut String) {
    for byte in random_16() {
        hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(HEX_DIGITS[usize::from(byte & 0x0f)]));
    }
}

impl From<String> for TaskId {
    /// Wraps an id received from a peer; lookups of ids that never existed find nothing.
    fn from(id: String) -> TaskId {
        TaskId(id.into())
    }
}

impl From<&str> for TaskId {
    fn from(id: &str) -> TaskId {
        TaskId(id.into())
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who a task belongs to. Every read and write of a task is scoped to its principal.
///
/// Shared text, as [`TaskId`]: cloned with every request and record, never copied.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Principal(Arc<str>);

impl Principal {
    /// Wraps a principal name (a token's subject, or `local` for the stdio user).
    pub fn new(name: impl Into<String>) -> Principal {
        Principal(name.into().into())
    }

    /// The principal's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A requestor's idempotency key: names one submission of a call, so that a retry of the
/// same call (after a lost answer, a crash, a reconnect) gets the task the first attempt
/// made instead of a second one. Keys are scoped to a principal: the same key from two
/// principals names two different submissions.
///
/// The engine takes any string; the wire's rules (non-empty, at most 200 characters) are
/// checked by the server before a key gets here.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Wraps a key the requestor chose.
    pub fn new(key: impl Into<String>) -> IdempotencyKey {
        IdempotencyKey(key.into())
    }

    /// The key as the requestor sent it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The five statuses of the spec. Derived from [`TaskState`], never stored beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The work is running (every task starts here).
    Working,
    /// The work waits for an answer from the requestor.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Finished without success: an error, or a result the era counts as failure.
    Failed,
    /// Stopped by request.
    Cancelled,
}

impl Status {
    /// The spec's name: `working`, `input_required`, `completed`, `failed`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// Parses the spec's name.
    pub fn parse(name: &str) -> Option<Status> {
        Some(match name {
            "working" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }

    /// `completed`, `failed` and `cancelled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error outcome of the work behind a task, shaped like a JSON-RPC error object because
/// that is what the underlying request would have answered (both eras replay it as is).
/// The engine never makes one: its own failures are [`WorkError`]s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The JSON-RPC error code.
    pub code: i64,
    /// A message that says what went wrong.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// How the work behind a task ended: with a result, with the request's error, or with a
/// failure of the engine's own.
///
/// Stored as `{"result": …}`, `{"error": {…}}` or `{"failure": {"type": …}}`; rows written
/// before [`Outcome::Failure`] existed hold the engine's failures as `{"error": …}` and
/// still read back as [`Outcome::Error`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The request's result object (for `tools/call`, a `CallToolResult`).
    Result(Value),
    /// The request's error, as the handler (or the client it asked) gave it.
    Error(ErrorObject),
    /// The engine's own failure (interrupted, expired, crashed, …); each era renders it.
    Failure(WorkError),
}

/// What kind of input the work asks the requestor for. Era-neutral: each codec maps a kind
/// to its wire shape (2025-11-25: a server-to-client request method).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// Ask the user (a form or a URL).
    Elicitation,
    /// Ask the client's model.
    Sampling,
    /// Ask the client for its roots (the directories or files it exposes).
    Roots,
}

impl InputKind {
    /// The kind's era-neutral name: `elicitation`, `sampling` or `roots`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation",
            InputKind::Sampling => "sampling",
            InputKind::Roots => "roots",
        }
    }
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One outstanding question from the work to the requestor, era-neutral: its kind and its
/// params. Answered through the engine by key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// What is asked for.
    pub kind: InputKind,
    /// The request params.
    pub params: Value,
}

/// Outstanding input requests keyed by an id the engine chose.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The state of a task, with exactly the data that state needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TaskState {
    /// Running.
    Working,
    /// Waiting for answers to `requests`.
    InputRequired {
        /// What the work asked.
        requests: InputRequests,
    },
    /// Finished with `result`.
    Completed {
        /// The result of the underlying request.
        result: Value,
    },
    /// Finished without success.
    Failed {
        /// An error, or a result the era counts as failure (2025-11-25: `isError: true`).
        outcome: Outcome,
    },
    /// Cancelled by request; stays so even if the work later finishes.
    Cancelled,
}

/// Something that happened to a task.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The work asks the requestor for input.
    NeedInput(InputRequests),
    /// Every outstanding input request has been answered.
    InputAnswered,
    /// The work finished with a result that counts as success.
    Complete(Value),
    /// The work finished without success.
    Fail(Outcome),
    /// The requestor cancelled the task.
    Cancel,
    /// The task's TTL ran out before it finished.
    Expire,
    /// A new process runs the unfinished task again (restart recovery). The state goes back
    /// to `working` (outstanding input requests are dropped: the new attempt asks afresh);
    /// the caller bumps the attempt with the same write.
    Restart,
}

/// The kind of an [`Event`], for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// [`Event::Cancel`]
    Cancel,
    /// [`Event::Complete`]
    Complete,
    /// [`Event::Expire`]
    Expire,
    /// [`Event::Fail`]
    Fail,
    /// [`Event::InputAnswered`]
    InputAnswered,
    /// [`Event::NeedInput`]
    NeedInput,
    /// [`Event::Restart`]
    Restart,
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventKind::Cancel => "be cancelled",
            EventKind::Complete => "complete",
            EventKind::Expire => "expire",
            EventKind::Fail => "fail",
            EventKind::InputAnswered => "take an answer",
            EventKind::NeedInput => "ask for input",
            EventKind::Restart => "restart",
        })
    }
}

impl Event {
    /// The kind of this event.
    pub fn kind(&self) -> EventKind {
        match self {
            Event::NeedInput(_) => EventKind::NeedInput,
            Event::InputAnswered => EventKind::InputAnswered,
            Event::Complete(_) => EventKind::Complete,
            Event::Fail(_) => EventKind::Fail,
            Event::Cancel => EventKind::Cancel,
            Event::Expire => EventKind::Expire,
            Event::Restart => EventKind::Restart,
        }
    }
}

/// A transition the rules do not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a {from} task cannot {event}")]
pub struct Refused {
    /// The status the task was in.
    pub from: Status,
    /// What was tried.
    pub event: EventKind,
}

impl TaskState {
    /// The status this state has.
    pub fn status(&self) -> Status {
        match self {
            TaskState::Working => Status::Working,
            TaskState::InputRequired { .. } => Status::InputRequired,
            TaskState::Completed { .. } => Status::Completed,
            TaskState::Failed { .. } => Status::Failed,
            TaskState::Cancelled => Status::Cancelled,
        }
    }

    /// Applies `event`: the only place a task's status is decided.
    ///
    /// 2025-11-25 tasks: `working` may go to `input_required`, `completed`, `failed` or
    /// `cancelled`; `input_required` may go back to `working` or to any terminal status;
    /// terminal statuses MUST NOT change. A restart (recovery in a new process) puts an
    /// unfinished task back in `working`.
    ///
    /// # Errors
    /// [`Refused`] for every event on a terminal task, and for `InputAnswered` on a task
    /// that was not waiting.
    pub fn on(self, event: Event) -> Result<TaskState, Refused> {
        use TaskState::{Cancelled, Completed, Failed, InputRequired, Working};
        Ok(match (self, event) {
            (Working | InputRequired { .. }, Event::NeedInput(requests)) => {
                InputRequired { requests }
            }
            (InputRequired { .. }, Event::InputAnswered) => Working,
            (Working | InputRequired { .. }, Event::Complete(result)) => Completed { result },
            (Working | InputRequired { .. }, Event::Fail(outcome)) => Failed { outcome },
            (Working | InputRequired { .. }, Event::Cancel) => Cancelled,
            (Working | InputRequired { .. }, Event::Expire) => {
                Failed { outcome: Outcome::Failure(WorkError::Expired) }
            }
            (Working | InputRequired { .. }, Event::Restart) => Working,
            (state, event) => {
                return Err(Refused { from: state.status(), event: event.kind() });
            }
        })
    }

    /// The status an operator is told of a task in this state ([`TaskRecord::outcome`]): its
    /// status, except that a result with `isError: true` is `failed` in every era.
    pub fn operator_status(&self) -> Status {
        match self {
            TaskState::Completed { result } if result.get("isError") == Some(&serde_json::Value::Bool(true)) => Status::Failed,
            state => state.status(),
        }
    }

    /// The outcome a finished task replays: its result, its error, or nothing yet.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            TaskState::Completed { result } => Some(Outcome::Result(result.clone())),
            TaskState::Failed { outcome } => Some(outcome.clone()),
            _ => None,
        }
    }
}

/// Milliseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// `self` plus `ms` milliseconds, saturating.
    pub fn plus_ms(self, ms: u64) -> Timestamp {
        Timestamp(self.0.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)))
    }
}

/// The version of a stored task; every write bumps it, and writes compare-and-set on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(pub u64);

/// What to do with a task that was running when its server died.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartPolicy {
    /// Fail it with an error that says execution was interrupted by a restart.
    #[default]
    Fail,
    /// Run it again (for idempotent tools).
    Retry,
}

/// A task as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// Unguessable id.
    pub id: TaskId,
    /// Who created it; nobody else can see it.
    pub owner: Principal,
    /// The tool (handler) that runs it.
    pub tool: String,
    /// The arguments it was called with, kept so that a retry can run it again.
    pub arguments: Value,
    /// Current state.
    pub state: TaskState,
    /// Human-readable detail about the current state.
    pub status_message: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Time of the last change of state or message.
    pub updated_at: Timestamp,
    /// Granted retention from creation in ms; `None` is unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested poll interval in ms.
    pub poll_interval_ms: Option<u64>,
    /// The runner's claim: bumped each time the work is (re)started. Runner writes carry
    /// it, and a write from an older attempt is rejected.
    pub attempt: u32,
    /// Bumped by every write; writes compare-and-set on it.
    pub version: Version,
    /// Whether a result that the tool's handler reports as a failure
    /// ([`Handler::reported_failure`](crate::Handler::reported_failure), e.g. `isError:
    /// true`) ends the task `failed` rather than `completed` (set per task by the dialect
    /// that created it).
    pub error_result_fails: bool,
    /// The kinds of input the requestor declared it can answer; the work may ask for
    /// nothing else.
    pub input_kinds: Vec<InputKind>,
    /// The requestor's idempotency key, if the task was created with one: while the task
    /// is retained (until its TTL runs out), its owner's calls with this key get this task
    /// instead of a new one. At most one task of an owner holds a given key.
    pub idempotency_key: Option<IdempotencyKey>,
    /// The W3C trace context of the request that created it, if it carried a valid one:
    /// the task's spans and its work (a command's `TRACEPARENT`) join that trace, in every
    /// attempt.
    pub trace: Option<TraceContext>,
}

impl TaskRecord {
    /// The task's status.
    pub fn status(&self) -> Status {
        self.state.status()
    }

    /// The status an operator is told (metrics, webhooks): the task's status, except that a
    /// task whose tool reported an error is failed, whatever era created it. On the wire a
    /// 2026-07-28 tool error is a `completed` task with an `isError` result (and stays so
    /// there); a 2025-11-25 one is `failed`.
    pub fn outcome(&self) -> Status {
        self.state.operator_status()
    }

    /// When the task may be purged, if ever.
    pub fn expires_at(&self) -> Option<Timestamp> {
        self.ttl_ms.map(|ttl| self.created_at.plus_ms(ttl))
    }

    /// Whether the task is still retained at `now`: its TTL has not run out (a task whose
    /// expiry is exactly `now` is not). Only a retained task holds its idempotency key.
    pub fn retained_at(&self, now: Timestamp) -> bool {
        self.expires_at().is_none_or(|at| at > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn states() -> Vec<TaskState> {
        vec![
            TaskState::Working,
            TaskState::InputRequired { requests: InputRequests::new() },
            TaskState::Completed { result: json!({"content": []}) },
            TaskState::Failed { outcome: Outcome::Failure(WorkError::HandlerCrashed) },
            TaskState::Cancelled,
        ]
    }

    fn events() -> Vec<Event> {
        vec![
            Event::NeedInput(InputRequests::new()),
            Event::InputAnswered,
            Event::Complete(json!({"content": []})),
            Event::Fail(Outcome::Error(ErrorObject { code: -32000, message: "boom".into(), data: None })),
            Event::Cancel,
            Event::Expire,
            Event::Restart,
        ]
    }

    /// legacy_23_24: the whole table, state by event, against the spec's allowed moves.
    #[test]
    fn legacy_23_24_transition_table_is_exactly_the_spec() {
        use Status::*;
        let expected: [[Option<Status>; 7]; 5] = [
            // NeedInput, InputAnswered, Complete, Fail, Cancel, Expire, Restart
            [Some(InputRequired), None, Some(Completed), Some(Failed), Some(Cancelled), Some(Failed), Some(Working)],
            [Some(InputRequired), Some(Working), Some(Completed), Some(Failed), Some(Cancelled), Some(Failed), Some(Working)],
            [None; 7],
            [None; 7],
            [None; 7],
        ];
        for (s, state) in states().into_iter().enumerate() {
            for (e, event) in events().into_iter().enumerate() {
                let got = state.clone().on(event).ok().map(|next| next.status());
                assert_eq!(got, expected[s][e], "state {:?} event #{e}", state.status());
            }
        }
    }

    #[test]
    fn legacy_18_task_ids_are_128_bit_hex_and_distinct() {
        let a = TaskId::random();
        let b = TaskId::random();
        assert_eq!(a.as_str().len(), 32);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        // Every digit turns up over a few ids, lowercase only: the encoding maps each nibble.
        let digits: std::collections::BTreeSet<char> = (0..64).flat_map(|_| TaskId::random().0.chars().collect::<Vec<_>>()).collect();
        assert_eq!(digits.into_iter().collect::<String>(), "0123456789abcdef");
    }

    #[test]
    fn legacy_18_ids_made_across_many_fetches_of_random_bytes_never_repeat() {
        // 100 fetches of RANDOM_AHEAD bytes, on two threads: no two ids share their 128
        // random bits, and none is the zeros a handed-out byte is overwritten with.
        let ids = |n: usize| (0..n).map(|_| TaskId::random().0).collect::<Vec<_>>();
        let n = 100 * RANDOM_AHEAD / 16;
        let other = std::thread::spawn(move || ids(n));
        let mut all = ids(n);
        all.extend(other.join().unwrap());
        let distinct: std::collections::HashSet<&Arc<str>> = all.iter().collect();
        assert_eq!(distinct.len(), 2 * n);
        assert!(!all.iter().any(|id| **id == *"0".repeat(32)));
    }

    #[test]
    fn legacy_18_a_new_tasks_id_is_its_creation_time_then_128_random_bits() {
        let at = Timestamp(1_796_000_000_123);
        let a = TaskId::ordered(at);
        let b = TaskId::ordered(at);
        assert_eq!(a.as_str().len(), 44);
        assert!(a.as_str().bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
        assert_eq!(&a.as_str()[..12], format!("{:012x}", at.0));
        assert_eq!(&a.as_str()[..12], &b.as_str()[..12]);
        assert_ne!(a.as_str()[12..], b.as_str()[12..], "the random part differs at the same time");
        // Later tasks sort after earlier ones, so id indexes grow at their right edge.
        assert!(TaskId::ordered(Timestamp(at.0 + 1)) > a);
        assert!(TaskId::ordered(Timestamp(0xfff)) < TaskId::ordered(Timestamp(0x1000)));
        let digits: std::collections::BTreeSet<char> = (0..64).flat_map(|_| TaskId::ordered(at).0[12..].chars().collect::<Vec<_>>()).collect();
        assert_eq!(digits.len(), 16, "every nibble of the random part turns up");
    }

    fn any_event() -> impl Strategy<Value = Event> {
        prop_oneof![
            Just(Event::NeedInput(InputRequests::new())),
            Just(Event::InputAnswered),
            Just(Event::Complete(json!({"content": []}))),
            Just(Event::Fail(Outcome::Failure(WorkError::HandlerCrashed))),
            Just(Event::Cancel),
            Just(Event::Expire),
            Just(Event::Restart),
        ]
    }

    proptest! {
        /// legacy_22_25: from `working`, no sequence of events leaves a terminal state, and
        /// every accepted move is one the spec allows (`working` to `working` only by a
        /// restart, which is recovery, not a status change).
        #[test]
        fn legacy_22_25_no_sequence_leaves_a_terminal_state(seq in proptest::collection::vec(any_event(), 0..40)) {
            let mut state = TaskState::Working;
            let mut terminal: Option<TaskState> = None;
            for event in seq {
                let before = state.status();
                match state.clone().on(event.clone()) {
                    Ok(next) => {
                        prop_assert!(terminal.is_none(), "a terminal state accepted {:?}", event);
                        let allowed = match (before, next.status()) {
                            (Status::Working, Status::Working) => event.kind() == EventKind::Restart,
                            (Status::Working | Status::InputRequired, _) => true,
                            _ => false,
                        };
                        prop_assert!(allowed, "{before} -> {} is not allowed", next.status());
                        if next.status().is_terminal() { terminal = Some(next.clone()); }
                        state = next;
                    }
                    Err(refused) => {
                        prop_assert_eq!(refused.from, before);
                        prop_assert!(before.is_terminal() || event.kind() == EventKind::InputAnswered);
                    }
                }
            }
            if let Some(t) = terminal { prop_assert_eq!(t, state); }
        }
    }
}
