//! The load harness's command line (see `mcp_tasks_bench::load`):
//!
//! ```text
//! load --url http://127.0.0.1:PORT/mcp [--tasks N] [--concurrency C] [--mode poll|block|plain|modern]
//!      [--tool noop|sleep] [--ms MS] [--server-pid PID] [--metrics-url URL] [--samples FILE] [--json-only] [--json]
//! ```
//!
//! `--metrics-url` (our server's `http://HOST:PORT/metrics`) is scraped before and after the
//! run: the report then has the server's own lag from the commit of each completion to the
//! answer of the waiting `tasks/result` (`lag_from_commit`).
//! `--samples FILE` writes every checked call to FILE, one CSV line each (`start_us`,
//! `create_us`, `end_to_end_us`), to see when the slow ones ran.
//! `--json-only` accepts only `application/json` answers (no SSE). `--url` may name several
//! endpoints, comma-separated (replicas): the clients are spread over them evenly.
//! Prints a short table (or one JSON object with `--json`) and exits 1 if any call failed
//! its check, 2 on a usage error or when no session could be opened.

use std::process::ExitCode;

use mcp_tasks_bench::load::{self, Config, Mode, Tool};

const USAGE: &str = "usage: load --url URL [--tasks N] [--concurrency C] [--mode poll|block|plain|modern] \
[--tool noop|sleep] [--ms MS] [--server-pid PID] [--metrics-url URL] [--samples FILE] [--json-only] [--json]";

/// mimalloc, as our servers use: the driver shares the two cores with the server it measures,
/// and glibc's malloc and free were ~17 % of its instructions per lifecycle (callgrind, block
/// at c = 32), CPU taken from whichever server is measured.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let (config, as_json) = match parse(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("load: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // One thread: the driver shares the machine's cores with the server it measures, and a
    // multi-threaded runtime spent more CPU per lifecycle on wake-ups between its workers
    // (45-65 µs against 35-48 µs with ours, 85-105 against 70-73 with the rmcp peer;
    // docs/benchmarks/07-seventh-round.md) while one thread keeps up with every server here.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("load: {err}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(load::run(config)) {
        Ok(report) => {
            if as_json {
                println!("{}", report.json());
            } else {
                print!("{}", report.table());
            }
            if report.failures > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(err) => {
            eprintln!("load: {err}");
            ExitCode::from(2)
        }
    }
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<(Config, bool), String> {
    let mut config = Config {
        url: String::new(),
        tasks: 2000,
        concurrency: 1,
        mode: Mode::Poll,
        tool: Tool::Noop,
        server_pid: None,
        json_only: false,
        metrics_url: None,
        samples: None,
    };
    let mut sleep = false;
    let mut ms = 10;
    let mut as_json = false;
    while let Some(arg) = args.next() {
        if arg == "--json" {
            as_json = true;
            continue;
        }
        if arg == "--json-only" {
            config.json_only = true;
            continue;
        }
        if arg == "-h" || arg == "--help" {
            return Err("help requested".to_owned());
        }
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        let number = |value: &str| {
            value
                .parse::<u64>()
                .map_err(|err| format!("{arg} {value}: {err}"))
        };
        match arg.as_str() {
            "--url" => config.url = value,
            "--tasks" => {
                config.tasks = usize::try_from(number(&value)?).map_err(|err| err.to_string())?
            }
            "--concurrency" => {
                config.concurrency =
                    usize::try_from(number(&value)?.max(1)).map_err(|err| err.to_string())?
            }
            "--mode" => {
                config.mode = Mode::parse(&value)
                    .ok_or_else(|| format!("--mode {value}: poll, block, plain or modern"))?
            }
            "--tool" => {
                sleep = match value.as_str() {
                    "noop" => false,
                    "sleep" => true,
                    _ => return Err(format!("--tool {value}: noop or sleep")),
                }
            }
            "--ms" => ms = number(&value)?,
            "--metrics-url" => config.metrics_url = Some(value),
            "--samples" => config.samples = Some(value.into()),
            "--server-pid" => {
                config.server_pid =
                    Some(u32::try_from(number(&value)?).map_err(|err| err.to_string())?)
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if config.url.is_empty() {
        return Err("--url is required".to_owned());
    }
    if sleep {
        config.tool = Tool::Sleep(ms);
    }
    Ok((config, as_json))
}
