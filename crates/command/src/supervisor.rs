//! The supervisor a command may be started through, a process-wide setting: a program
//! (for the `mcp-tasks` binary, itself with a hidden subcommand) that holds a parent-death
//! signal and ends the command's process group when the process that started it dies,
//! however it died. See [`set_supervisor`].

use std::ffi::OsString;
use std::sync::OnceLock;
use std::time::Duration;

use crate::result::{End, Streams};

/// What a supervisor writes to the command's stderr, followed by the reason, when it could
/// not start the program (and then exits with code 127): the tool then reports `could not
/// start` as it does without a supervisor.
pub const SUPERVISED_SPAWN_FAILURE: &str = "mcp-tasks supervisor: could not start the program: ";

/// The longest a supervisor waits, once its parent died, between SIGTERM and SIGKILL to the
/// group: a tool's `kill_grace` if shorter, so that everything is gone within a second.
pub const DEATH_GRACE: Duration = Duration::from_millis(500);

/// The supervisor's argv prefix, if one was set.
static SUPERVISOR: OnceLock<Vec<OsString>> = OnceLock::new();

/// Starts every command of this process through a supervisor: `prefix` (a program and its
/// first arguments) followed by `--parent PID --grace-ms N -- PROGRAM ARGS…`, where PID is
/// this process and N the grace between SIGTERM and SIGKILL should this process die.
///
/// The supervisor is started as the leader of the command's process group, in place of the
/// command: it must keep the process group (it runs the command in its own), pass stdin,
/// stdout and stderr through, exit as the command did (its code, or by its signal), and
/// print [`SUPERVISED_SPAWN_FAILURE`] and the reason to stderr, then exit with 127, if the
/// command cannot start. The `mcp-tasks` binary sets itself (`mcp-tasks __supervise`) on
/// Linux. Set once; later calls are ignored (returns whether this one took). Without it a
/// command runs as it always did, and a process that dies by SIGKILL leaves its commands'
/// groups to the recovery of the next server.
pub fn set_supervisor(prefix: Vec<OsString>) -> bool {
    !prefix.is_empty() && SUPERVISOR.set(prefix).is_ok()
}

/// The program and arguments that start `program` with `args`: through the supervisor, if
/// one is set, with `grace` (capped at [`DEATH_GRACE`]) for the death of this process.
pub(crate) fn argv<'a>(program: &'a str, args: &'a [String], grace: Duration) -> (OsString, Vec<OsString>) {
    let Some((supervisor, first)) = SUPERVISOR.get().and_then(|prefix| prefix.split_first()) else {
        return (program.into(), args.iter().map(OsString::from).collect());
    };
    let grace = grace.min(DEATH_GRACE).as_millis().to_string();
    let mut all: Vec<OsString> = first.to_vec();
    all.extend(["--parent".into(), std::process::id().to_string().into(), "--grace-ms".into(), grace.into(), "--".into()]);
    all.push(program.into());
    all.extend(args.iter().map(OsString::from));
    (supervisor.clone(), all)
}

/// The reason a supervisor gave for not starting the program, if that is how the call
/// ended (code 127 and [`SUPERVISED_SPAWN_FAILURE`] on stderr).
pub(crate) fn spawn_failure(end: &End, streams: &Streams) -> Option<String> {
    SUPERVISOR.get()?;
    let End::Exited(Ok(status)) = end else { return None };
    if status.code() != Some(127) {
        return None;
    }
    let text = streams.stderr.text();
    text.strip_prefix(SUPERVISED_SPAWN_FAILURE).map(|reason| reason.trim_end().to_owned())
}
