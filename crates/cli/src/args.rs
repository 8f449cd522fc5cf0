//! The command line as typed (clap types).

use std::path::PathBuf;
use std::sync::LazyLock;

use clap::{Args, Parser, Subcommand};
use mcp_tasks_protocol::era::Era;
use mcp_tasks_protocol::modern::TASKS_EXTENSION;

/// What `--version` prints after the name: this build's version and the protocol revisions it
/// speaks, from the protocol crate's own constants.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    let revisions: Vec<&str> = Era::ALL.map(Era::revision).to_vec();
    format!(
        "{} (MCP {}; {} with the tasks extension {})",
        env!("CARGO_PKG_VERSION"),
        revisions.join(", "),
        Era::Modern.revision(),
        TASKS_EXTENSION
    )
});

/// A durable runtime for MCP Tasks: long tool calls become tasks that survive restarts.
#[derive(Debug, Parser)]
#[command(name = "mcp-tasks", version = VERSION.as_str(), about, long_about = None)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the tools of a TOML config as an MCP server with durable tasks.
    #[command(after_help = "Examples:\n  \
        mcp-tasks serve --config examples/demo.toml           # HTTP at http://127.0.0.1:8765/mcp\n  \
        mcp-tasks serve --config examples/demo.toml --stdio   # what a host starts")]
    Serve(ServeArgs),

    /// Give any MCP server durable tasks, in both MCP eras (a stdio command or an HTTP URL).
    ///
    /// Its tools (each a task when the client wants one), resources, prompts and completion
    /// are served.
    ///
    /// The upstream server is started (--upstream-cmd, split into words like a POSIX shell
    /// would but run without one, in a process group of its own) or reached over Streamable
    /// HTTP (--upstream-url), in the era it speaks (negotiated; --upstream-era pins one).
    /// Calls are tasks of mcp-tasks: stored before their id is shown, their results kept
    /// until their TTL, progress and questions (elicitation, sampling) passed through, a
    /// cancel passed upstream. A stdio upstream that dies is started again with backoff;
    /// calls then in flight end by their tool's on_restart (fail, or retry). After a proxy
    /// restart, a call the upstream ran as a task is resumed (polled again).
    ///
    /// Per-tool settings go in the --config file as [upstream.tools.NAME] (task_support,
    /// timeout, on_restart, max_attempts, max_concurrent, inline_wait); [server] as for serve.
    #[command(after_help = "Examples:\n  \
        mcp-tasks proxy --stdio --upstream-cmd \"npx -y @modelcontextprotocol/server-everything\"\n  \
        mcp-tasks proxy --listen 127.0.0.1:8766 --upstream-url http://127.0.0.1:3001/mcp --upstream-token T")]
    Proxy(ProxyArgs),

    /// Run the tasks of a shared store without serving clients (the job tier).
    ///
    /// The store is an SQLite file other processes serve, or PostgreSQL; the tools are those
    /// of the config. A worker backs replicas started with `serve --no-work`, or lends a hand
    /// beside replicas that run work too. It claims queued tasks as they arrive, takes over
    /// those of dead nodes by their tools' on_restart policy, and heartbeats its claims.
    #[command(after_help = "Example:\n  mcp-tasks worker --config tools.toml --store postgres://tasks@db/tasks")]
    Worker(WorkerArgs),

    /// Check a config file without serving: every problem is named with its line.
    ///
    /// Exit status 0 when the file is valid, 1 otherwise.
    CheckConfig(CheckArgs),

    /// Print a host's entry for `serve --stdio` on a config (Claude Code, Claude Desktop, VS Code, Cursor).
    ///
    /// The entry of the host's MCP config file (JSON), or for Claude Code the `claude mcp add`
    /// command. Paths are made absolute (the config's, the store's, and this binary's), so
    /// the host finds them from any directory.
    #[command(after_help = "Examples:\n  \
        mcp-tasks host-config claude-code --config tools.toml\n  \
        mcp-tasks host-config vscode --config tools.toml --name jobs")]
    HostConfig(HostConfigArgs),

    /// List the tools of an MCP server: their arguments, and whether each runs as a task.
    ///
    /// In MCP 2025-11-25 each tool says whether a call of it runs as a task (always, if the
    /// client asks, or never); in 2026-07-28 the server decides per call.
    #[command(after_help = "Example:\n  mcp-tasks tools --url http://127.0.0.1:8765/mcp")]
    Tools(ToolsArgs),

    /// Call a tool and wait for its result: as a task when it runs as one (or --detach).
    ///
    /// As a task when the tool allows it (in 2026-07-28: when the server makes one), driven
    /// to its end; a server that restarts meanwhile is waited for (up to 60 s) and the same
    /// wait goes on.
    ///
    /// Arguments: --arg KEY=VALUE (typed by the tool's input schema) and/or --args JSON.
    ///
    /// While it waits, a terminal shows the task's status message and the server's progress
    /// (a bar when it has a total), and asks the server's questions (elicitation forms).
    /// Ctrl-C on a terminal asks "cancel the task or detach?": detach leaves it running and
    /// prints the command that resumes the wait (mcp-tasks tasks wait ID); a second Ctrl-C
    /// cancels. Without a terminal (stdin or stderr not a TTY), Ctrl-C cancels the task.
    ///
    /// In MCP 2026-07-28 the server decides whether a call becomes a task: a quick one is
    /// answered at once (its questions asked in rounds before any task exists; Ctrl-C
    /// then abandons the call, there being no task to detach from), a slow one becomes a
    /// task, followed by polling its status (its status message is the progress shown).
    /// A question the CLI cannot answer (sampling without --sampling-cmd) cannot be sent
    /// back as an error in that era: a task's stays open for `tasks wait ID`.
    ///
    /// Exit status: 0 completed, 1 the tool or task failed (or a question could not be
    /// answered), 2 usage or connection error (and --detach of a call answered at once), 3
    /// cancelled or abandoned, 4 detached (Ctrl-C, then "detach").
    #[command(after_help = "Examples:\n  \
        mcp-tasks call slow --arg seconds=5 --url http://127.0.0.1:8765/mcp\n  \
        mcp-tasks call slow --arg seconds=600 --detach --url http://127.0.0.1:8765/mcp\n  \
        mcp-tasks call hello --arg name=Ada --cmd \"mcp-tasks serve --stdio --config tools.toml\"")]
    Call(CallArgs),

    /// Look at, cancel, or wait for the tasks of an MCP server.
    ///
    /// Exit status as for `call`: 0, 1 failed, 2 usage or connection error, 3 cancelled,
    /// 4 detached.
    Tasks(TasksArgs),
}

/// Where the MCP server is.
#[derive(Clone, Debug, Args)]
pub(crate) struct ConnectArgs {
    /// The server's Streamable HTTP endpoint, e.g. http://127.0.0.1:8765/mcp or
    /// https://mcp.example.com/mcp (its certificate verified against the system's roots, or
    /// --ca-file). Required unless --cmd is given (or, for `tasks wait`, the ledger knows
    /// where the task lives).
    #[arg(long, value_name = "URL", env = "MCP_TASKS_URL")]
    pub(crate) url: Option<String>,

    /// A PEM file of the CA certificates an https:// server's certificate is checked against,
    /// instead of the system's roots (a private CA).
    #[arg(long, value_name = "FILE", env = "MCP_TASKS_CA_FILE", conflicts_with = "cmd")]
    pub(crate) ca_file: Option<std::path::PathBuf>,

    /// Bearer token sent with every HTTP request (to --url, or to the URL the ledger
    /// recorded for the task; tokens are never recorded).
    #[arg(long, value_name = "TOKEN", env = "MCP_TASKS_TOKEN", hide_env_values = true, conflicts_with = "cmd")]
    pub(crate) token: Option<String>,

    /// Spawn a stdio server instead: the command and its arguments, split like a shell
    /// would (quotes, backslashes) but run without one; killed when the command ends.
    /// Example: --cmd "mcp-tasks serve --stdio --config tools.toml"
    #[arg(long, value_name = "COMMAND", conflicts_with = "url")]
    pub(crate) cmd: Option<String>,

    /// Show the log lines of the --cmd server as they come (otherwise they are kept back,
    /// and shown only if it fails).
    #[arg(short, long)]
    pub(crate) verbose: bool,

    /// Which MCP revision to speak: auto (the default: ask with server/discover, speak
    /// 2026-07-28 when the server serves it, else fall back to 2025-11-25), legacy
    /// (2025-11-25: initialize, then a session; the client decides which calls become tasks)
    /// or modern (2026-07-28 with the tasks extension: no session, the server decides which
    /// calls become tasks; fails against a server that does not serve it). `--json` output
    /// says which was spoken ("era"). For `tasks wait ID` through the ledger, auto speaks
    /// the era the task was made in.
    #[arg(long, value_enum, default_value = "auto", env = "MCP_TASKS_ERA")]
    pub(crate) era: EraArg,
}

/// The values of `--era`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum EraArg {
    /// Ask with server/discover; speak 2026-07-28 if the server serves it, else 2025-11-25.
    Auto,
    /// 2025-11-25 only.
    Legacy,
    /// 2026-07-28 only.
    Modern,
}

impl From<mcp_tasks_client::Era> for EraArg {
    fn from(era: mcp_tasks_client::Era) -> EraArg {
        match era {
            mcp_tasks_client::Era::Legacy => EraArg::Legacy,
            mcp_tasks_client::Era::Modern => EraArg::Modern,
        }
    }
}

impl EraArg {
    /// `--era` as given; for `auto`, the era a task was made in, when known.
    pub(crate) fn or_made_in(self, era: Option<mcp_tasks_client::Era>) -> EraArg {
        match (self, era) {
            (EraArg::Auto, Some(era)) => era.into(),
            (given, _) => given,
        }
    }
}

/// The server, and how to print.
#[derive(Debug, Args)]
pub(crate) struct RemoteArgs {
    #[command(flatten)]
    pub(crate) connect: ConnectArgs,

    /// Print machine-readable JSON on stdout (and no progress display).
    #[arg(long)]
    pub(crate) json: bool,
}

/// The local ledger of the tasks this CLI started.
#[derive(Debug, Args)]
pub(crate) struct LedgerArgs {
    /// The ledger file (SQLite) where started tasks are recorded. Default: ledger.sqlite3
    /// in the platform's data directory (e.g. ~/.local/share/mcp-tasks/).
    #[arg(long, value_name = "PATH", env = "MCP_TASKS_LEDGER")]
    pub(crate) ledger: Option<PathBuf>,

    /// Keep each finished task's result in the ledger (up to 1 MiB), so that `tasks result
    /// ID` answers after the server has forgotten the task (its TTL ran out). Off by
    /// default: the ledger keeps no argument or result text unless asked.
    #[arg(long, env = "MCP_TASKS_KEEP", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false)]
    pub(crate) keep: bool,
}

/// How to answer the server's requests (elicitation, sampling) while waiting.
#[derive(Debug, Args)]
pub(crate) struct AnswerArgs {
    /// Answer the server's questions (elicitation forms) with this JSON object, the form's
    /// content, e.g. '{"confirm": true}' (sent as {"action": "accept", "content": JSON}),
    /// instead of prompting. Without it, questions are asked on the terminal; without a
    /// terminal they are declined, with a sample --answer for the form on stderr.
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub(crate) answer: Option<serde_json::Value>,

    /// Answer the server's sampling requests (sampling/createMessage) with this command:
    /// split like a shell would but run without one, the request's params as JSON on its
    /// stdin; its stdout is the answer, a CreateMessageResult JSON object or plain text
    /// (sent as the text of an assistant message). Exit status not 0 or bad output: the
    /// server gets an error. Without it, sampling requests are declined with an error that
    /// says so. Example: --sampling-cmd "llm --no-stream"
    #[arg(long, value_name = "CMD")]
    pub(crate) sampling_cmd: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,

    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,

    /// At most this many tasks from the ledger, the newest.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub(crate) limit: u32,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool to call.
    #[arg(value_name = "TOOL")]
    pub(crate) tool: String,

    /// One argument, KEY=VALUE; the value takes the type the tool's input schema gives KEY
    /// (integer, number, boolean, string; JSON otherwise). Repeatable; wins over --args.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) arg: Vec<String>,

    /// The arguments as one JSON object.
    #[arg(long, value_name = "JSON", value_parser = json_object)]
    pub(crate) args: Option<serde_json::Value>,

    /// Start the task, print its id (with --json, the task), and exit without waiting. In
    /// 2025-11-25 the tool must support tasks (else exit 2 before calling); in 2026-07-28
    /// the server decides: a call it answers at once has no task, so its result is printed
    /// and the exit status is 2.
    #[arg(long)]
    pub(crate) detach: bool,

    /// While it waits, show the lines the task's command prints, on stderr as they come
    /// (read from the task's event stream, `tasks/stream`, which a 2026-07-28 server with
    /// the tasks extension may serve; mcp-tasks does).
    #[arg(long, conflicts_with = "detach")]
    pub(crate) follow: bool,

    #[command(flatten)]
    pub(crate) answer: AnswerArgs,

    #[command(flatten)]
    pub(crate) remote: RemoteArgs,

    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct TasksArgs {
    #[command(subcommand)]
    pub(crate) command: TasksCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// List your tasks with their live state: those this CLI started, or a server's.
    ///
    /// Without --url or --cmd: the tasks the ledger recorded, newest first, each unfinished
    /// one's state asked of its server. With --url or --cmd: the tasks that server lists for
    /// you (MCP 2025-11-25), or, in 2026-07-28 (which has no tasks/list), the ledger's tasks
    /// of that server, asked of it.
    List(ListArgs),
    /// Show one task's status (its server: --url or --cmd, else where the ledger says).
    Get(TaskArgs),
    /// Print the result of a task that has ended (its server: --url or --cmd, else where the
    /// ledger says).
    Result(TaskArgs),
    /// Cancel a task (its server: --url or --cmd, else where the ledger says).
    Cancel(TaskArgs),
    /// Wait for a task to end (answering its questions), then print its result.
    ///
    /// Without --url or --cmd, the server is the one the ledger recorded for the task.
    /// Progress, prompts and Ctrl-C as for `call` (the server's progress notifications go
    /// to the session that created the task: here only its status message is shown).
    Wait(WaitArgs),
    /// Follow a task's events as they happen; exit with its outcome as `tasks wait` does.
    ///
    /// The lines its command prints go to stdout, its progress and status changes to stderr.
    ///
    /// Reads the server's event stream of the task (`tasks/stream`, a draft of MCP 2026-07-28
    /// with the tasks extension): from the first event kept, so a finished task's whole story
    /// is shown too. A server restart is ridden out: the stream resumes after the last event
    /// shown. With --json, each event as a JSON line (`seq`, `type`, `payload`). Without
    /// --url or --cmd, the server is the one the ledger recorded for the task.
    Watch(TaskArgs),
    /// List the tasks this CLI started that were unfinished when last seen (the ledger only).
    ///
    /// Read from the ledger without asking any server (`tasks list` asks them), with where
    /// each lives, the MCP revision it was made in, and when it was last seen.
    Pending(PendingArgs),
    /// Remove a task from the ledger, without asking any server.
    ///
    /// For a task its server no longer knows, say. With --url or --cmd, only the entry of
    /// that server.
    Forget(ForgetArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ForgetArgs {
    /// The task id.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    #[command(flatten)]
    pub(crate) connect: ConnectArgs,

    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct PendingArgs {
    /// Print machine-readable JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,

    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    /// The task id.
    #[arg(value_name = "ID")]
    pub(crate) id: String,

    #[command(flatten)]
    pub(crate) remote: RemoteArgs,

    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
}

#[derive(Debug, Args)]
pub(crate) struct WaitArgs {
    #[command(flatten)]
    pub(crate) task: TaskArgs,

    #[command(flatten)]
    pub(crate) answer: AnswerArgs,
}

fn json_object(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!("expected a JSON object, got {other}")),
        Err(err) => Err(format!("not JSON: {err}")),
    }
}

/// The hosts `host-config` writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Host {
    /// Claude Code: the `claude mcp add` command (with --json, the `.mcp.json` entry).
    ClaudeCode,
    /// Claude Desktop: the `claude_desktop_config.json` entry.
    ClaudeDesktop,
    /// VS Code: the `.vscode/mcp.json` entry (top-level key `servers`).
    Vscode,
    /// Cursor: the `~/.cursor/mcp.json` (or `.cursor/mcp.json`) entry.
    Cursor,
}

/// `mcp-tasks host-config`.
#[derive(Debug, Args)]
pub(crate) struct HostConfigArgs {
    /// Which host.
    #[arg(value_enum)]
    pub(crate) host: Host,

    /// The TOML file of the tools to serve (checked first, as `serve` would).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// The server's name in the host (default: the config file's name without `.toml`).
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,

    /// Where its tasks are kept (default: the default store, which every host window and
    /// session shares).
    #[arg(long, value_name = "PATH|URL")]
    pub(crate) store: Option<String>,

    /// For Claude Code: print the `.mcp.json` entry instead of the command.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The TOML file to check.
    #[arg(value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// Print the result as one JSON object (for scripts).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct WorkerArgs {
    /// The TOML file that defines the tools ([[tools]]; [server] for limits and the lease).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// The store whose tasks to run: an SQLite file (the one `serve` uses) or a PostgreSQL
    /// database (postgres://user[:password]@host[:port]/db).
    #[arg(long, value_name = "URL", env = "MCP_TASKS_STORE")]
    pub(crate) store: String,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The TOML file that defines the server and its tools ([server], [[tools]]).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) config: PathBuf,

    /// Speak newline-delimited JSON-RPC on stdin/stdout (logs go to stderr) instead of
    /// Streamable HTTP.
    #[arg(long, conflicts_with = "listen")]
    pub(crate) stdio: bool,

    /// Serve Streamable HTTP at http://ADDR/mcp (default: [server] listen, else
    /// 127.0.0.1:8765). Port 0 picks a free port; the address is printed to stderr.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,

    /// HTTPS: the PEM file of the listener's certificate chain (with --tls-key; default:
    /// [server] tls_cert). Read again on SIGHUP, so a renewed certificate needs no restart.
    #[arg(long, value_name = "FILE", requires = "tls_key", conflicts_with = "stdio")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// HTTPS: the PEM file of the certificate's private key (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert", conflicts_with = "stdio")]
    pub(crate) tls_key: Option<PathBuf>,

    /// Where tasks are kept: an SQLite file path (or sqlite://PATH), which any number of
    /// processes on this machine may share, or a PostgreSQL database
    /// (postgres://user[:password]@host[:port]/db[?sslmode=verify-full]), which any number of replicas
    /// and workers on any machines may share. Default: tasks.sqlite3 in the platform's data directory (e.g.
    /// ~/.local/share/mcp-tasks/).
    #[arg(long, value_name = "PATH|URL", env = "MCP_TASKS_STORE")]
    pub(crate) store: Option<String>,

    /// Serve clients only: new tasks are queued in the shared store for `mcp-tasks worker`
    /// (and servers without this flag) to run; this one runs no work and takes none over.
    #[arg(long)]
    pub(crate) no_work: bool,
}

/// `mcp-tasks proxy`.
#[derive(Debug, Args)]
pub(crate) struct ProxyArgs {
    /// The upstream MCP server to start and speak to over stdio, e.g. "node server.js
    /// --flag". Split into words as a POSIX shell would (quotes, backslashes), run without a
    /// shell: no variables, globs, pipes or redirections.
    #[arg(long, value_name = "COMMAND", conflicts_with = "upstream_url", required_unless_present = "upstream_url")]
    pub(crate) upstream_cmd: Option<String>,

    /// The upstream MCP server's Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp
    /// (its certificate verified against the system's roots, or --upstream-ca-file) or
    /// http://127.0.0.1:3001/mcp.
    #[arg(long, value_name = "URL")]
    pub(crate) upstream_url: Option<String>,

    /// A PEM file of the CA certificates an https:// upstream's certificate is checked
    /// against, instead of the system's roots (a private CA).
    #[arg(long, value_name = "FILE", requires = "upstream_url")]
    pub(crate) upstream_ca_file: Option<std::path::PathBuf>,

    /// Bearer token for the HTTP upstream (sent as Authorization: Bearer TOKEN).
    #[arg(long, value_name = "TOKEN", env = "MCP_TASKS_UPSTREAM_TOKEN", hide_env_values = true, requires = "upstream_url")]
    pub(crate) upstream_token: Option<String>,

    /// An HTTP header for every request to the HTTP upstream, as NAME:VALUE (repeatable).
    #[arg(long = "upstream-header", value_name = "NAME:VALUE", value_parser = header, requires = "upstream_url")]
    pub(crate) upstream_headers: Vec<(String, String)>,

    /// Which MCP revision to speak upstream: auto (the default: 2026-07-28 if the upstream
    /// serves it, else 2025-11-25), legacy or modern. Downstream both are served.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) upstream_era: EraArg,

    /// A TOML file with [server] settings and [upstream.tools.NAME] per-tool settings
    /// (optional: without it every upstream tool may run as a task, fails after a restart,
    /// and the [server] defaults apply).
    #[arg(long, short, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,

    /// Speak newline-delimited JSON-RPC on stdin/stdout (logs go to stderr) instead of
    /// Streamable HTTP: how a host starts it in place of the upstream's own command.
    #[arg(long, conflicts_with = "listen")]
    pub(crate) stdio: bool,

    /// Serve Streamable HTTP at http://ADDR/mcp (default: [server] listen, else
    /// 127.0.0.1:8765). Port 0 picks a free port; the address is printed to stderr.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,

    /// HTTPS: the PEM file of the listener's certificate chain (with --tls-key; default:
    /// [server] tls_cert). Read again on SIGHUP, so a renewed certificate needs no restart.
    #[arg(long, value_name = "FILE", requires = "tls_key", conflicts_with = "stdio")]
    pub(crate) tls_cert: Option<PathBuf>,

    /// HTTPS: the PEM file of the certificate's private key (with --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert", conflicts_with = "stdio")]
    pub(crate) tls_key: Option<PathBuf>,

    /// Where tasks are kept, as for serve (default: tasks.sqlite3 in the platform's data
    /// directory).
    #[arg(long, value_name = "PATH|URL", env = "MCP_TASKS_STORE")]
    pub(crate) store: Option<String>,
}

/// A NAME:VALUE header.
fn header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once(':').ok_or_else(|| format!("{text:?} is not NAME:VALUE"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{text:?} has no header name before the ':'"));
    }
    Ok((name.to_owned(), value.trim().to_owned()))
}
