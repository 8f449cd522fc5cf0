//! A test host of its own for a process: a network namespace (`ip netns`) joined to this
//! host by a veth pair, each end with an address of a /24 of `10.0.0.0/8` that is unique to
//! the run, so that a test can cut the link (`ip link set … down`: packets go nowhere, nobody
//! is told, as in a partition) and heal it. The namespace and the veth pair are deleted when
//! the guard is dropped, also when the test fails.
//!
//! It needs root and `ip` (iproute2): without them [`TestHost::create`] says so and returns
//! `None`, except under `CI=true`, where it panics.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// How many test hosts this process made: part of the names and addresses of the next.
static MADE: AtomicU32 = AtomicU32::new(0);

/// A network namespace linked to this host by a veth pair; removed when dropped.
pub(crate) struct TestHost {
    name: String,
    /// The host's end of the veth pair (deleting it deletes the pair).
    link: String,
    /// This host's address on the link, e.g. `10.201.37.1`.
    pub(crate) host_address: String,
    /// The namespace's address on the link, e.g. `10.201.37.2`.
    pub(crate) address: String,
    /// The link's network, e.g. `10.201.37.0/24`.
    pub(crate) network: String,
}

impl TestHost {
    /// Creates the namespace and the link, both up. `None` (after saying why) when this
    /// process may not, and `CI` is not `true`.
    pub(crate) fn create() -> Option<TestHost> {
        let n = MADE.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        let name = format!("mcpt{}x{n}", pid % 100_000);
        let added = Command::new("ip").args(["netns", "add", &name]).output();
        if let Err(why) = added.as_ref().map_err(ToString::to_string).and_then(|out| {
            if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).trim().to_owned()) }
        }) {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: a network namespace is needed (run as root): {why}");
            eprintln!("skipped: cannot add a network namespace (needs root and iproute2): {why}");
            return None;
        }
        let prefix = format!("10.{}.{}", 200 + n % 50, pid % 250);
        let host = TestHost {
            link: format!("mt{}x{n}a", pid % 100_000),
            host_address: format!("{prefix}.1"),
            address: format!("{prefix}.2"),
            network: format!("{prefix}.0/24"),
            name,
        };
        let peer = format!("{}b", host.link.trim_end_matches('a'));
        ip(&["link", "add", &host.link, "type", "veth", "peer", "name", &peer]);
        ip(&["link", "set", &peer, "netns", &host.name]);
        ip(&["addr", "add", &format!("{}/24", host.host_address), "dev", &host.link]);
        ip(&["link", "set", &host.link, "up"]);
        ip(&["netns", "exec", &host.name, "ip", "addr", "add", &format!("{}/24", host.address), "dev", &peer]);
        ip(&["netns", "exec", &host.name, "ip", "link", "set", &peer, "up"]);
        ip(&["netns", "exec", &host.name, "ip", "link", "set", "lo", "up"]);
        Some(host)
    }

    /// `program` to be run on the test host (`ip netns exec NAME program`).
    pub(crate) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// Takes the link down (a partition: what is sent either way is lost) or up again.
    pub(crate) fn set_link(&self, up: bool) {
        ip(&["link", "set", &self.link, if up { "up" } else { "down" }]);
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.link]).output();
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// Runs `ip args…`, which must succeed.
fn ip(args: &[&str]) {
    let output = Command::new("ip").args(args).output().expect("run ip");
    assert!(output.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr));
}
