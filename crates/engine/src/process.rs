//! The process group a task's work started (a command tool), as the store records it, and
//! ending the groups a crashed server left running ([`Engine::recover`](crate::Engine::recover)).
//!
//! A group is named by its leader's pid (the pgid) and the leader's start time, so that a
//! pid the kernel gave to an unrelated process since is not signalled. Linux only (the start
//! time comes from `/proc/PID/stat`); elsewhere nothing is recorded and nothing is ended.

use std::collections::HashMap;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::time::Instant;

/// How long recovery waits for a SIGKILLed leftover group to be gone before it resolves
/// the task anyway (with a warning).
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How often to look whether a SIGKILLed group is gone: its processes are not our children
/// (init reaps them, or not: zombies count as gone), so no exit is announced to us.
const GROUP_POLL: Duration = Duration::from_millis(10);

/// The environment variable that carries the task's id into its command's processes (and,
/// inherited, their children): what finds a crashed server's processes that it had no time
/// to record ([`WorkStore::set_process_group`](crate::WorkStore::set_process_group) comes
/// right after the spawn).
pub const TASK_ID_ENV: &str = "MCP_TASKS_TASK_ID";

/// The processes that carry [`TASK_ID_ENV`], by its value (the task id), from
/// `/proc/PID/environ` (only this user's processes are readable; empty off Linux).
pub(crate) fn tagged_processes() -> HashMap<String, Vec<u32>> {
    let mut tagged: HashMap<String, Vec<u32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return tagged;
    };
    let prefix = format!("{TASK_ID_ENV}=");
    for pid in entries.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let tag = environ
            .split(|&byte| byte == 0)
            .find_map(|pair| pair.strip_prefix(prefix.as_bytes()))
            .and_then(|id| std::str::from_utf8(id).ok());
        if let Some(id) = tag {
            tagged.entry(id.to_owned()).or_default().push(pid);
        }
    }
    tagged
}

/// SIGKILLs `pids` (processes found carrying a task's id, see [`tagged_processes`]) and
/// waits up to 2 s for them to be gone (zombies count as gone). Whether they are.
pub(crate) async fn end_tagged(pids: &[u32]) -> bool {
    let alive = |pid: &u32| Stat::read(*pid).is_some_and(|stat| stat.state != 'Z');
    for pid in pids {
        if let Ok(raw) = i32::try_from(*pid) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
        }
    }
    let deadline = Instant::now() + KILL_WAIT;
    while pids.iter().any(alive) {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(GROUP_POLL).await;
    }
    true
}

/// What identifies the process group a task's work started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
    /// The group's id: its leader's pid.
    pub pgid: u32,
    /// The leader's start time, in clock ticks after boot (field 22 of `/proc/PID/stat`).
    pub start_time: u64,
}

/// What [`ProcessGroup::end_leftover`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Nothing of the group was running.
    Gone,
    /// The group was running and got SIGKILL; it is gone now.
    Killed,
    /// The group was running and got SIGTERM
    /// ([`ProcessGroup::terminate_leftover`]); it was gone within the grace.
    Terminated,
    /// The group was running and got SIGKILL, but some of it was still there after the wait.
    Survived,
    /// The pid is some other process's now: left alone.
    Reused,
}

impl ProcessGroup {
    /// The group led by `pid` (a process just started in a group of its own), read from
    /// `/proc`. `None` off Linux, or if the process is already gone.
    pub fn led_by(pid: u32) -> Option<ProcessGroup> {
        let stat = Stat::read(pid)?;
        (stat.pgrp == pid).then_some(ProcessGroup { pgid: pid, start_time: stat.start_time })
    }

    /// Ends what is left of this group, recorded by a server that is gone, and waits (up to
    /// 2 s) for it to be gone.
    ///
    /// - The leader runs with the recorded start time: the group is ours, SIGKILL it.
    /// - The leader runs with another start time: its pid was reused, and a pid is not
    ///   reused while a group of that id exists, so none of ours is left. Left alone.
    /// - The leader is gone but its group is not (processes it started): the kernel keeps a
    ///   group's id from reuse while the group has members, so they are ours unless the pid
    ///   was freed, reused by a new group leader, and that leader died, all between the crash
    ///   and now. They are killed if none of them started before the recorded leader did.
    pub async fn end_leftover(&self) -> Leftover {
        self.end(None).await
    }

    /// [`ProcessGroup::end_leftover`], but gracefully: the group (if it is ours, by the same
    /// rules) first gets SIGTERM, and SIGKILL only if some of it is still there after `grace`.
    pub async fn terminate_leftover(&self, grace: Duration) -> Leftover {
        self.end(Some(grace)).await
    }

    async fn end(&self, grace: Option<Duration>) -> Leftover {
        let Ok(raw) = i32::try_from(self.pgid) else {
            return Leftover::Reused;
        };
        let group = Pid::from_raw(raw);
        match Stat::read(self.pgid) {
            Some(leader) if leader.start_time != self.start_time || leader.pgrp != self.pgid => {
                return Leftover::Reused;
            }
            Some(_) => {}
            None if !running(self.pgid) => return Leftover::Gone,
            None if members(self.pgid).iter().any(|member| member.start_time < self.start_time) => {
                return Leftover::Reused;
            }
            None => {}
        }
        if let Some(grace) = grace {
            let _ = killpg(group, Signal::SIGTERM);
            if gone_within(self.pgid, grace).await {
                return Leftover::Terminated;
            }
        }
        let _ = killpg(group, Signal::SIGKILL);
        if gone_within(self.pgid, KILL_WAIT).await { Leftover::Killed } else { Leftover::Survived }
    }
}

/// A process group a server keeps running beside its tasks (a proxy's stdio upstream), as
/// [`WorkStore::set_kept_group`](crate::WorkStore::set_kept_group) records it: the group,
/// and the process that keeps it (its pid and start time), so that a server finding the
/// record can tell a keeper that still runs (another replica on this machine: its group is
/// left alone) from one that is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeptGroup {
    /// The group.
    pub group: ProcessGroup,
    /// The keeper's pid.
    pub keeper_pid: u32,
    /// The keeper's start time, in clock ticks after boot.
    pub keeper_start: u64,
}

impl KeptGroup {
    /// `group`, kept by this process. `None` off Linux.
    pub fn by_this_process(group: ProcessGroup) -> Option<KeptGroup> {
        let pid = std::process::id();
        let stat = Stat::read(pid)?;
        Some(KeptGroup { group, keeper_pid: pid, keeper_start: stat.start_time })
    }

    /// Whether the keeper still runs: its pid with the recorded start time, not a zombie.
    pub fn keeper_runs(&self) -> bool {
        Stat::read(self.keeper_pid).is_some_and(|stat| stat.start_time == self.keeper_start && stat.state != 'Z')
    }
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): start times count from the boot, so a
/// record of a process is only meaningful within the boot (and on the machine) that wrote it.
/// `None` off Linux.
pub(crate) fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// Waits up to `wait` for every process of group `pgid` to be gone; whether they are.
async fn gone_within(pgid: u32, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    while running(pgid) {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(GROUP_POLL).await;
    }
    true
}

/// Whether any process of group `pgid` still runs (zombies do not: they only wait to be
/// reaped by whoever inherited them).
fn running(pgid: u32) -> bool {
    let Ok(raw) = i32::try_from(pgid) else {
        return false;
    };
    // Cheap first: no process at all in the group.
    if matches!(killpg(Pid::from_raw(raw), None), Err(Errno::ESRCH)) {
        return false;
    }
    members(pgid).iter().any(|member| member.state != 'Z')
}

/// The processes of group `pgid` (from `/proc`; empty off Linux).
fn members(pgid: u32) -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(Stat::read)
        .filter(|stat| stat.pgrp == pgid)
        .collect()
}

/// The fields of `/proc/PID/stat` this module reads.
struct Stat {
    /// `R`, `S`, `Z` (zombie)…
    state: char,
    pgrp: u32,
    start_time: u64,
}

impl Stat {
    /// `None` if the process is gone (or off Linux).
    fn read(pid: u32) -> Option<Stat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Stat::parse(&text)
    }

    /// Parses `pid (comm) state ppid pgrp … starttime …`. The command name may hold spaces
    /// and parentheses, so fields are counted from the last `)`.
    fn parse(text: &str) -> Option<Stat> {
        let rest = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // After the name: state (field 3) is fields[0], pgrp (5) fields[2], starttime (22) fields[19].
        Some(Stat {
            state: fields.first()?.chars().next()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start_time: fields.get(19)?.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let text = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let stat = Stat::parse(text).expect("parses");
        assert_eq!((stat.state, stat.pgrp, stat.start_time), ('S', 4242, 987_654));
        assert!(Stat::parse("12 (x) S 1").is_none());
    }

    #[test]
    fn this_process_has_a_start_time() {
        let stat = Stat::read(std::process::id()).expect("/proc is mounted");
        assert!(stat.start_time > 0);
    }
}
