//! No orphan (issue 45): the processes of a server's command tasks, their children and
//! grandchildren included, die within a second of the server's SIGKILL (its pid only, not its
//! group), with no server started again: the supervisor (`mcp-tasks __supervise`) that
//! leads each command's group ends it when its parent dies.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{CONFIG, Workdir, create_task, started_pid};
use crate::http::{Client, HttpServer};

/// How long the processes may outlive their server. The supervisor's grace after SIGTERM is
/// 500 ms at most, and these shells end at the SIGTERM; the margin is for a loaded machine.
const WITHIN: Duration = Duration::from_secs(1);
/// Tasks per server.
const TASKS: usize = 3;
/// Pids each task records: the command's shell, its child, the inner shell, its child.
const PIDS_PER_TASK: usize = 4;

/// A shell with a child (`sleep`) and a grandchild (a `sleep` of an inner shell), each pid
/// appended to the file `$1`.
const FAMILY: &str = r#"echo $$ >> "$1"
sleep 300 &
echo $! >> "$1"
sh -c 'echo $$ >> "$1"; sleep 300 & echo $! >> "$1"; wait' _ "$1" &
wait
"#;

/// The workdir's config with the `family` tool (its script written next to it).
fn family_config(work: &Workdir) {
    let script = work.path("family.sh");
    std::fs::write(&script, FAMILY).unwrap();
    let tool = format!(
        r#"
[[tools]]
name = "family"
command = ["sh", "{}", "{{pidfile}}"]
[tools.input_schema]
type = "object"
properties = {{ pidfile = {{ type = "string" }} }}
"#,
        script.display()
    );
    std::fs::write(work.config(), format!("{CONFIG}\n{tool}")).unwrap();
}

/// Waits until `pidfile` names [`PIDS_PER_TASK`] processes; returns them.
fn recorded(pidfile: &Path) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(pidfile).unwrap_or_default().lines().filter_map(|line| line.trim().parse().ok()).collect();
        if pids.len() == PIDS_PER_TASK {
            return pids;
        }
        assert!(Instant::now() < deadline, "the family never started: {pids:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` runs (a zombie, which only waits for whoever inherited it, does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')').and_then(|end| stat[end + 1..].split_whitespace().next()).is_some_and(|state| state != "Z")
    })
}

/// Polls `pids` until none runs; how long that took, or the ones still running after
/// [`WITHIN`] (polled a little longer, to say how late they were).
fn gone_within(pids: &[i32], since: Instant) -> Duration {
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&pid| running(pid)).collect();
        if left.is_empty() {
            return since.elapsed();
        }
        assert!(since.elapsed() < WITHIN, "still running {:?} after the server's SIGKILL: {left:?}", since.elapsed());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The pid files of the tasks.
fn pidfiles(work: &Workdir) -> Vec<PathBuf> {
    (0..TASKS).map(|n| work.path(&format!("family-{n}.pids"))).collect()
}

#[test]
fn a_sigkilled_stdio_servers_command_processes_die_within_a_second_with_no_server_started_again() {
    let work = Workdir::new();
    family_config(&work);
    let mut server = work.start();
    server.initialize();
    let mut pids = Vec::new();
    for pidfile in pidfiles(&work) {
        let id = create_task(&mut server, "family", json!({"pidfile": pidfile.to_str().unwrap()}));
        pids.push(started_pid(&mut server, &id).as_raw());
        pids.extend(recorded(&pidfile));
    }
    assert!(pids.iter().all(|&pid| running(pid)), "all running before the kill");
    server.kill();
    let took = gone_within(&pids, Instant::now());
    eprintln!("orphans: {} processes of {TASKS} stdio tasks gone {took:?} after the SIGKILL", pids.len());
}

#[test]
fn a_sigkilled_http_servers_command_processes_die_within_a_second_with_no_server_started_again() {
    let work = Workdir::new();
    family_config(&work);
    let mut server = HttpServer::start(&work);
    let mut client = Client::new(&server, None);
    client.initialize();
    let mut pids = Vec::new();
    for pidfile in pidfiles(&work) {
        let arguments = json!({"pidfile": pidfile.to_str().unwrap()});
        let created = client.result("tools/call", json!({"name": "family", "arguments": arguments, "task": {}}));
        assert!(created["task"]["taskId"].is_string(), "{created}");
        pids.extend(recorded(&pidfile));
    }
    assert!(pids.iter().all(|&pid| running(pid)), "all running before the kill");
    server.kill();
    let took = gone_within(&pids, Instant::now());
    eprintln!("orphans: {} processes of {TASKS} HTTP tasks gone {took:?} after the SIGKILL", pids.len());
}

/// Every descendant of `pid` now, from `/proc` (parent links).
fn descendants(pid: i32) -> Vec<i32> {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        let Some(parent) = stat.rfind(')').and_then(|end| stat[end + 1..].split_whitespace().nth(1)?.parse::<i32>().ok()) else { continue };
        parents.push((child, parent));
    }
    let mut found = vec![pid];
    let mut next = 0;
    while next < found.len() {
        let of = found[next];
        found.extend(parents.iter().filter(|&&(_, parent)| parent == of).map(|&(child, _)| child));
        next += 1;
    }
    found.remove(0);
    found
}

/// Waits until the family in `pidfile` has started; then SIGKILLs `child` (its pid only) and
/// checks that it and every process it started are gone within [`WITHIN`].
fn kill_and_check(pid: u32, kill: impl FnOnce(), pidfile: &Path, what: &str) {
    let mut pids = recorded(pidfile);
    pids.extend(descendants(i32::try_from(pid).unwrap()));
    pids.sort_unstable();
    pids.dedup();
    assert!(pids.iter().all(|&pid| running(pid)), "all running before the kill: {pids:?}");
    let killed = Instant::now();
    kill();
    let took = gone_within(&pids, killed);
    eprintln!("orphans: {} processes of {what} gone {took:?} after the SIGKILL", pids.len());
}

/// `mcp-tasks serve --stdio` on the workdir's config and `store`, as a command line.
fn serve_cmd(work: &Workdir, store: &str) -> String {
    format!("{} serve --stdio --config {} --store {}", env!("CARGO_BIN_EXE_mcp-tasks"), work.config().display(), work.path(store).display())
}

#[test]
fn a_sigkilled_proxys_stdio_upstream_and_its_children_die_within_a_second() {
    let work = Workdir::new();
    family_config(&work);
    let pidfile = work.path("upstream.pids");
    // The upstream: a shell with a child and a grandchild, which then becomes the server.
    let upstream = format!(
        "sh -c 'sh \"$1\" \"$2\" & exec \"$0\" serve --stdio --config \"$3\" --store \"$4\"' {} {} {} {} {}",
        env!("CARGO_BIN_EXE_mcp-tasks"),
        work.path("family.sh").display(),
        pidfile.display(),
        work.config().display(),
        work.path("upstream.sqlite3").display(),
    );
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"));
    command.args(["proxy", "--stdio", "--store"]).arg(work.path("proxy.sqlite3")).args(["--upstream-cmd", &upstream]);
    let mut proxy = crate::harness::Server::spawn(command);
    proxy.initialize();
    let pid = proxy.pid();
    kill_and_check(pid, || proxy.kill(), &pidfile, "a proxy's stdio upstream");
}

#[test]
fn a_sigkilled_call_with_cmd_ends_its_server_and_the_servers_command_within_a_second() {
    let work = Workdir::new();
    family_config(&work);
    let pidfile = work.path("call.pids");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(["call", "family", "--arg"])
        .arg(format!("pidfile={}", pidfile.display()))
        .args(["--cmd", &serve_cmd(&work, "call.sqlite3")])
        .env("MCP_TASKS_LEDGER", work.path("ledger.json"))
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let kill = || {
        child.kill().unwrap();
        child.wait().unwrap();
    };
    kill_and_check(pid, kill, &pidfile, "`mcp-tasks call --cmd`");
}
