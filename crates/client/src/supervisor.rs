//! The supervisor a stdio server may be started through, a process-wide setting: a program
//! (for the `mcp-tasks` binary, itself with a hidden subcommand) that holds a parent-death
//! signal and ends the server's process group when this process dies, however it died. See
//! [`set_supervisor`].

use std::ffi::OsString;
use std::path::Path;
use std::sync::OnceLock;

/// How long a supervisor waits, once this process died, between SIGTERM and SIGKILL to the
/// server's group.
const DEATH_GRACE_MS: u32 = 500;

/// The supervisor's argv prefix, if one was set.
static SUPERVISOR: OnceLock<Vec<OsString>> = OnceLock::new();

/// Starts every stdio server of this process (a `--cmd` server, a proxy's stdio upstream)
/// through a supervisor: `prefix` (a program and its first arguments) followed by `--parent
/// PID --grace-ms N -- PROGRAM ARGS…`, where PID is this process and N the grace between
/// SIGTERM and SIGKILL to the server's group should this process die.
///
/// The supervisor leads the server's process group in its place: it must keep the group
/// (it runs the server in it), pass stdin, stdout and stderr through, and exit as the server
/// did. The client then signals the whole group (SIGTERM when closing, SIGKILL when dropped)
/// rather than the one process. The `mcp-tasks` binary sets itself (`mcp-tasks
/// __supervise`) on Linux. Set once; later calls are ignored (returns whether this one
/// took). Without it a server is started as it always was.
pub fn set_supervisor(prefix: Vec<OsString>) -> bool {
    !prefix.is_empty() && SUPERVISOR.set(prefix).is_ok()
}

/// Whether servers are started through a supervisor.
pub(crate) fn is_set() -> bool {
    SUPERVISOR.get().is_some()
}

/// The program and arguments that start `program` with `args`: through the supervisor, if
/// one is set.
pub(crate) fn argv<S: AsRef<std::ffi::OsStr>>(program: &str, args: &[S]) -> (OsString, Vec<OsString>) {
    let args = args.iter().map(|arg| arg.as_ref().to_owned());
    let Some((supervisor, first)) = SUPERVISOR.get().and_then(|prefix| prefix.split_first()) else {
        return (program.into(), args.collect());
    };
    let mut all: Vec<OsString> = first.to_vec();
    all.extend(["--parent".into(), std::process::id().to_string().into(), "--grace-ms".into(), DEATH_GRACE_MS.to_string().into(), "--".into()]);
    all.push(program.into());
    all.extend(args);
    (supervisor.clone(), all)
}

/// Whether `program` can be found as the supervisor will look for it (a path as it is, a
/// name on `PATH`): a program that cannot is reported as a failure to spawn, as without a
/// supervisor, instead of as a server that exits at once.
pub(crate) fn findable(program: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &Path| std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        return std::fs::metadata(program).map(|_| ());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    if std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(nix::libc::ENOENT))
    }
}
