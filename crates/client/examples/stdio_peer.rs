//! A minimal stdio MCP server for the client's tests of `Client::close`: it answers
//! `initialize` and `ping` and nothing else.
//!
//! When its stdin ends it writes `stdin closed` to the file given with `--marker PATH`, then
//! exits 0 (or, with `--ignore-eof`, keeps running). With `--ignore-term` it also survives
//! SIGTERM, so only SIGKILL ends it.
//!
//! ```text
//! stdio_peer --marker /tmp/m [--ignore-eof] [--ignore-term]
//! ```

use std::path::PathBuf;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let marker = args.iter().position(|arg| arg == "--marker").and_then(|i| args.get(i + 1)).map(PathBuf::from);
    let ignore_eof = args.iter().any(|arg| arg == "--ignore-eof");
    if args.iter().any(|arg| arg == "--ignore-term") {
        // Without this listener SIGTERM keeps its default action: the process dies of it.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::spawn(async move {
            while term.recv().await.is_some() {
                eprintln!("stdio_peer: SIGTERM ignored");
            }
        });
    }
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "stdio_peer", "version": "0"},
            }),
            Some("ping") => json!({}),
            _ => continue,
        };
        let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": result});
        stdout.write_all(format!("{answer}\n").as_bytes()).await?;
        stdout.flush().await?;
    }
    if let Some(marker) = marker {
        std::fs::write(marker, "stdin closed")?;
    }
    if ignore_eof {
        std::future::pending::<()>().await;
    }
    Ok(())
}
