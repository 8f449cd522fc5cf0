//! A private PostgreSQL cluster for the fault tests, never the shared server: `initdb` into a
//! temp dir owned by the `postgres` OS user, `pg_ctl start` on a free port of 127.0.0.1 (and
//! of any further address given, e.g. a veth's) with `fsync=on`, so that the test may restart
//! or crash it. Stopped (`-m immediate`) and removed when dropped, also when the test fails.
//!
//! It needs root (to run the server binaries as `postgres` through `runuser`) and the
//! PostgreSQL binaries (`PG_BIN`, or the newest `/usr/lib/postgresql/*/bin`): without them
//! [`Cluster::start`] says so and returns `None`, except under `CI=true`, where it panics.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running private cluster; stopped and deleted when dropped.
pub(crate) struct Cluster {
    bin: PathBuf,
    /// The temp dir (owned by `postgres`): `data/`, the server log and its Unix socket.
    dir: tempfile::TempDir,
    /// The TCP port it listens on, on every address.
    pub(crate) port: u16,
}

impl Cluster {
    /// Creates and starts a cluster listening on 127.0.0.1 and on each of `also_listen`
    /// (addresses that must exist already), which trusts logins from loopback and from the
    /// networks `trusted` (`10.1.2.0/24`, …). `None` (after saying why) when this machine
    /// cannot run one and `CI` is not `true`.
    pub(crate) fn start(also_listen: &[&str], trusted: &[&str]) -> Option<Cluster> {
        Cluster::start_with(also_listen, trusted, None)
    }

    /// A cluster on 127.0.0.1 with `ssl = on`, serving the PEM certificate chain `cert` with
    /// its key `key` (and still accepting connections without TLS).
    pub(crate) fn start_tls(cert: &str, key: &str) -> Option<Cluster> {
        Cluster::start_with(&[], &[], Some((cert, key)))
    }

    fn start_with(also_listen: &[&str], trusted: &[&str], tls: Option<(&str, &str)>) -> Option<Cluster> {
        let bin = match usable_binaries() {
            Ok(bin) => bin,
            Err(why) => {
                assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: a private PostgreSQL cluster is needed: {why}");
                eprintln!("skipped: no private PostgreSQL cluster: {why}");
                return None;
            }
        };
        let dir = tempfile::Builder::new().prefix("mcp-tasks-pg-").tempdir().expect("temp dir");
        run_ok(Command::new("chown").args(["postgres:", &dir.path().display().to_string()]));
        let data = dir.path().join("data");
        run_ok(as_postgres(&bin, "initdb").args(["--auth=trust", "--username=postgres", "--encoding=UTF8", "--no-sync", "-D"]).arg(&data));
        let mut listen = vec!["127.0.0.1"];
        listen.extend_from_slice(also_listen);
        let port = free_port();
        let settings = format!(
            "listen_addresses = '{}'\nport = {port}\nunix_socket_directories = '{}'\nfsync = on\n\
             synchronous_commit = on\nmax_connections = 200\nlog_min_messages = warning\n",
            listen.join(","),
            dir.path().display()
        );
        append(&data.join("postgresql.conf"), &settings);
        if let Some((cert, key)) = tls {
            for (name, pem) in [("server.crt", cert), ("server.key", key)] {
                std::fs::write(data.join(name), pem).expect("write the server's certificate");
                run_ok(Command::new("chown").args(["postgres:", &data.join(name).display().to_string()]));
                run_ok(Command::new("chmod").args(["600", &data.join(name).display().to_string()]));
            }
            append(&data.join("postgresql.conf"), "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
        }
        let hba: String = trusted.iter().map(|net| format!("host all all {net} trust\n")).collect();
        append(&data.join("pg_hba.conf"), &hba);
        let cluster = Cluster { bin, dir, port };
        run_ok(cluster.pg_ctl(&["start", "-w", "-t", "60", "-l"]).arg(cluster.dir.path().join("server.log")));
        Some(cluster)
    }

    /// The URL of its `postgres` database, as the superuser `postgres`, on `host`.
    pub(crate) fn url_on(&self, host: &str) -> String {
        format!("postgres://postgres@{host}:{}/postgres", self.port)
    }

    /// The URL of its `postgres` database on 127.0.0.1.
    pub(crate) fn url(&self) -> String {
        self.url_on("127.0.0.1")
    }

    /// `pg_ctl restart -m mode` (`fast`: clients are disconnected and the server shuts down
    /// cleanly; `immediate`: a crash, recovered from the WAL at start), waiting until it
    /// accepts connections again.
    pub(crate) fn restart(&self, mode: &str) {
        run_ok(self.pg_ctl(&["restart", "-w", "-t", "60", "-m", mode, "-l"]).arg(self.dir.path().join("server.log")));
    }

    /// The server's log so far (for a failure's message).
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn pg_ctl(&self, args: &[&str]) -> Command {
        let mut command = as_postgres(&self.bin, "pg_ctl");
        command.arg("-D").arg(self.dir.path().join("data")).args(args);
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w"]).output();
        // The temp dir removes itself (root may delete what `postgres` owns).
    }
}

/// The directory of the PostgreSQL server binaries, if this process can run them as the
/// `postgres` user; otherwise why not.
fn usable_binaries() -> Result<PathBuf, String> {
    let uid = Command::new("id").arg("-u").output().map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    if uid.as_deref().ok() != Some("0") {
        return Err("the test is not run as root (it runs the server as the postgres user)".to_owned());
    }
    let bin = match std::env::var_os("PG_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => newest_installed().ok_or("no /usr/lib/postgresql/*/bin/initdb (set PG_BIN)")?,
    };
    for tool in ["initdb", "pg_ctl", "postgres"] {
        if !bin.join(tool).exists() {
            return Err(format!("no {} in {}", tool, bin.display()));
        }
    }
    let user = Command::new("id").args(["-u", "postgres"]).output();
    if !user.is_ok_and(|out| out.status.success()) {
        return Err("no postgres OS user".to_owned());
    }
    Ok(bin)
}

/// `/usr/lib/postgresql/<newest>/bin`, if one holds `initdb`.
fn newest_installed() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// `tool` of `bin`, run as the `postgres` OS user.
fn as_postgres(bin: &Path, tool: &str) -> Command {
    let mut command = Command::new("runuser");
    command.args(["-u", "postgres", "--"]).arg(bin.join(tool)).current_dir("/");
    command
}

/// Runs `command`, which must succeed; its output.
fn run_ok(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|err| panic!("cannot run {command:?}: {err}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).expect("open a file of the cluster");
    file.write_all(text.as_bytes()).expect("append to a file of the cluster");
}

/// A TCP port that was free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}
