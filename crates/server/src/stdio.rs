//! The stdio transport: newline-delimited JSON-RPC over any reader and writer. Nothing but
//! MCP messages goes to the writer; logs go to stderr through `tracing`.

use std::io;

use mcp_tasks_engine::Principal;
use mcp_tasks_protocol::jsonrpc::RpcError;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::connection::{Connection, Listing, Outbound, Route};
use crate::dispatch::Peer;
use crate::server::Server;

/// The largest message accepted, in bytes; a longer line is refused and skipped.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The principal of a stdio connection: the local user who started the server. Whoever can
/// write to our stdin started us, so the process boundary identifies the requestor.
pub const LOCAL_PRINCIPAL: &str = "local";

/// How long answers already being worked on may still be written after the client closed
/// our stdin, before the requests still open (a blocking `tasks/result`, a long plain
/// call) are abandoned: the client has gone, nobody waits for them.
pub const DRAIN_AFTER_EOF: std::time::Duration = std::time::Duration::from_millis(500);

/// Serves one client on `reader`/`writer` until the reader reaches end of input; answers
/// already under way get [`DRAIN_AFTER_EOF`] to be written, then open requests are
/// abandoned (their tasks keep running and stay in the store).
///
/// # Errors
/// An I/O error reading input or writing output.
pub async fn serve(
    mut reader: impl AsyncBufRead + Unpin,
    mut writer: impl AsyncWrite + Unpin + Send + 'static,
    server: Server,
) -> io::Result<()> {
    let (out, mut outgoing) = mpsc::unbounded_channel::<Outbound>();
    let peer = Peer::new(Connection::new(server, Principal::new(LOCAL_PRINCIPAL), Listing::Principal, out));
    let write = tokio::spawn(async move {
        // Over stdio every route leads to stdout; a request that gets no reply needs nothing.
        while let Some(Outbound { message, route }) = outgoing.recv().await {
            if matches!(route, Route::NoReply(_)) {
                continue;
            }
            let mut line = Vec::with_capacity(256);
            message.write_json(&mut line).map_err(io::Error::other)?;
            line.push(b'\n');
            writer.write_all(&line).await?;
            writer.flush().await?;
        }
        Ok::<(), io::Error>(())
    });
    let mut line = Vec::new();
    let result = loop {
        line.clear();
        let read = (&mut reader).take(MAX_MESSAGE_BYTES as u64 + 1).read_until(b'\n', &mut line).await;
        match read {
            Ok(0) => break Ok(()),
            Ok(_) if line.len() > MAX_MESSAGE_BYTES && line.last() != Some(&b'\n') => {
                peer.conn.reject(
                    None,
                    &RpcError::invalid_request(format!("Message too large: the limit is {MAX_MESSAGE_BYTES} bytes per line")),
                );
                if let Err(err) = skip_line(&mut reader).await {
                    break Err(err);
                }
            }
            // JSON text is UTF-8 (RFC 8259): a line that is not is refused as HTTP refuses
            // such a body, never repaired into a message the client did not send.
            Ok(_) => match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => peer.handle_text(text.trim()),
                Err(_) => peer.conn.reject(None, &RpcError::parse_error("Parse error: the message is not valid UTF-8")),
            },
            Err(err) => break Err(err),
        }
    };
    peer.conn.close();
    // The writer ends once every sender (the connection and its handlers) is gone.
    let mut write = write;
    let written = match tokio::time::timeout(DRAIN_AFTER_EOF, &mut write).await {
        Ok(written) => written,
        Err(_) => {
            peer.conn.abort();
            drop(peer);
            write.await
        }
    };
    match written {
        Ok(written) => result.and(written),
        Err(join) => Err(io::Error::other(join)),
    }
}

/// Discards input up to and including the next newline.
async fn skip_line(reader: &mut (impl AsyncBufRead + Unpin)) -> io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        if let Some(at) = buffer.iter().position(|&byte| byte == b'\n') {
            reader.consume(at + 1);
            return Ok(());
        }
        let len = buffer.len();
        reader.consume(len);
    }
}
