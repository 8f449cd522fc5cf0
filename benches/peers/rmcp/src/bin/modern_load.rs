//! A small load driver for the Modern (SEP-2663, protocol 2026-07-28) task lifecycle, written
//! before our load harness had `--mode modern` (which `benches/peers/rmcp-modern.sh` now uses
//! for both servers; this one stays as an independent cross-check): `N` lifecycles of the
//! `noop` tool from `C` concurrent workers, each on its own keep-alive HTTP/1.1 connection,
//! stateless (no `initialize`; every request
//! carries the protocol version, client info and the tasks extension in `_meta`, and the
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` headers). One lifecycle is `tools/call`
//! (→ a task, `resultType: "task"`), then `tasks/get` without pause until the task is
//! `completed`, whose inline result must be the text "ok". Used against the rmcp 3.11 peer to
//! reproduce the issue's rmcp task figures in the same run (against our bench server it needs
//! `--inline-wait-ms 0`, else `noop` answers inline and every call fails as "not a task").
//!
//! ```text
//! modern_load --url http://127.0.0.1:PORT/mcp [--tasks N] [--concurrency C]
//! ```
//!
//! Prints one JSON object (`per_second`, `end_to_end` p50/p99 in µs, `gets_per_task`,
//! `failures`, `first_failure`); exits 1 if any lifecycle failed, 2 on a usage or connect error.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Method, Request, header};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{Barrier, Mutex};

const VERSION: &str = "2026-07-28";

/// One worker's keep-alive connection.
struct Conn {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
    path: String,
    next_id: u64,
}

impl Conn {
    async fn open(authority: &str, path: &str) -> Result<Conn, String> {
        let stream = TcpStream::connect(authority)
            .await
            .map_err(|err| format!("connect {authority}: {err}"))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|err| format!("HTTP handshake: {err}"))?;
        tokio::spawn(connection);
        Ok(Conn {
            sender,
            authority: authority.to_owned(),
            path: path.to_owned(),
            next_id: 1,
        })
    }

    /// Sends a request and returns its `result` (from a JSON or an SSE answer).
    async fn call(&mut self, method: &str, name: &str, mut params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "mcp-tasks-bench-modern-load", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        });
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let request = Request::builder()
            .method(Method::POST)
            .uri(&self.path)
            .header(header::HOST, &self.authority)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", VERSION)
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(Full::new(Bytes::from(body)))
            .map_err(|err| err.to_string())?;
        self.sender.ready().await.map_err(|err| format!("connection: {err}"))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|err| format!("{method}: {err}"))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|err| format!("{method} body: {err}"))?
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            return Err(format!("{method}: HTTP {status}: {text}"));
        }
        let messages: Vec<&str> = if text.trim_start().starts_with('{') {
            vec![text.as_ref()]
        } else {
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .collect()
        };
        for message in messages {
            let Ok(value) = serde_json::from_str::<Value>(message) else {
                continue;
            };
            if value.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(result) = value.get("result") {
                    return Ok(result.clone());
                }
                return Err(format!("{method}: {value}"));
            }
        }
        Err(format!("{method}: no answer with id {id} in {text}"))
    }

    /// One lifecycle: create, then `tasks/get` until terminal; returns the number of gets.
    async fn lifecycle(&mut self) -> Result<u64, String> {
        let created = self
            .call("tools/call", "noop", json!({"name": "noop", "arguments": {}}))
            .await?;
        if created.get("resultType").and_then(Value::as_str) != Some("task") {
            return Err(format!("tools/call: not a task: {created}"));
        }
        let task_id = created
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or("tools/call: no taskId")?
            .to_owned();
        let mut gets = 0;
        loop {
            gets += 1;
            let task = self.call("tasks/get", &task_id, json!({"taskId": task_id})).await?;
            match task.get("status").and_then(Value::as_str) {
                Some("working") => continue,
                Some("completed") => {
                    let text = task.pointer("/result/content/0/text").and_then(Value::as_str);
                    return if text == Some("ok") {
                        Ok(gets)
                    } else {
                        Err(format!("unexpected result: {task}"))
                    };
                }
                _ => return Err(format!("tasks/get: {task}")),
            }
        }
    }
}

#[derive(Default)]
struct Totals {
    durations: Vec<u64>,
    gets: u64,
    failures: usize,
    first_failure: Option<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let (mut url, mut tasks, mut concurrency) = (String::new(), 2000usize, 1usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value) {
            ("--url", Some(value)) => url = value,
            ("--tasks", Some(value)) if value.parse::<usize>().is_ok_and(|n| n > 0) => {
                tasks = value.parse().unwrap_or(1)
            }
            ("--concurrency", Some(value)) if value.parse::<usize>().is_ok_and(|n| n > 0) => {
                concurrency = value.parse().unwrap_or(1);
            }
            _ => {
                eprintln!("usage: modern_load --url http://HOST:PORT/PATH [--tasks N] [--concurrency C]");
                return ExitCode::from(2);
            }
        }
    }
    let Some((authority, path)) = url.strip_prefix("http://").map(|rest| match rest.find('/') {
        Some(slash) => (rest[..slash].to_owned(), rest[slash..].to_owned()),
        None => (rest.to_owned(), "/".to_owned()),
    }) else {
        eprintln!("modern_load: --url http://HOST:PORT/PATH is required");
        return ExitCode::from(2);
    };
    let mut conns = Vec::new();
    for _ in 0..concurrency {
        match Conn::open(&authority, &path).await {
            Ok(conn) => conns.push(conn),
            Err(err) => {
                eprintln!("modern_load: {err}");
                return ExitCode::from(2);
            }
        }
    }
    let next = Arc::new(AtomicUsize::new(0));
    let totals = Arc::new(Mutex::new(Totals::default()));
    let barrier = Arc::new(Barrier::new(concurrency + 1));
    let mut workers = Vec::new();
    for mut conn in conns {
        let (next, totals, barrier) = (next.clone(), totals.clone(), barrier.clone());
        workers.push(tokio::spawn(async move {
            let mut mine = Totals::default();
            barrier.wait().await;
            while next.fetch_add(1, Ordering::Relaxed) < tasks {
                let start = Instant::now();
                match conn.lifecycle().await {
                    Ok(gets) => {
                        mine.durations
                            .push(u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX));
                        mine.gets += gets;
                    }
                    Err(err) => {
                        mine.failures += 1;
                        mine.first_failure.get_or_insert(err);
                    }
                }
            }
            let mut all = totals.lock().await;
            all.durations.extend(mine.durations);
            all.gets += mine.gets;
            all.failures += mine.failures;
            if all.first_failure.is_none() {
                all.first_failure = mine.first_failure;
            }
        }));
    }
    barrier.wait().await;
    let start = Instant::now();
    for worker in workers {
        let _ = worker.await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let mut totals = std::mem::take(&mut *totals.lock().await);
    totals.durations.sort_unstable();
    let ok = totals.durations.len();
    let rank = |q: f64| {
        let index = ((q * ok as f64).ceil() as usize).clamp(1, ok.max(1)) - 1;
        totals.durations.get(index).copied()
    };
    let report = json!({
        "mode": "modern-poll",
        "tool": "noop",
        "tasks": tasks,
        "concurrency": concurrency,
        "ok": ok,
        "failures": totals.failures,
        "first_failure": totals.first_failure,
        "elapsed_s": elapsed,
        "per_second": ok as f64 / elapsed,
        "gets_per_task": if ok > 0 { Some(totals.gets as f64 / ok as f64) } else { None },
        "end_to_end": {"p50_us": rank(0.5), "p99_us": rank(0.99), "max_us": totals.durations.last()},
    });
    println!("{report}");
    if totals.failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
