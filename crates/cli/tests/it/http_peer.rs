//! A wire-level HTTP/1.1 peer for the Streamable HTTP tests: exact headers in, exact status,
//! headers and JSON out, SSE events read one at a time from a connection the test may drop.
//! Hand-written on purpose: tests need to send foreign Host headers and to cut a stream at
//! a chosen event, which a full client library hides.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

/// A complete HTTP response.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|err| panic!("body is not JSON ({err}): {}", self.body))
    }
}

/// One SSE event.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub(crate) id: Option<String>,
    pub(crate) data: String,
}

/// An open response whose body is an SSE stream.
pub(crate) struct EventStream {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    pending: String,
    remaining_in_chunk: usize,
}

impl EventStream {
    /// The next event (skipping comments); `None` when the stream ends.
    pub(crate) fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(at) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..at + 2).collect();
                let mut event = SseEvent { id: None, data: String::new() };
                let mut has_field = false;
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id:") {
                        event.id = Some(id.trim_start().to_owned());
                        has_field = true;
                    } else if let Some(data) = line.strip_prefix("data:") {
                        if !event.data.is_empty() {
                            event.data.push('\n');
                        }
                        event.data.push_str(data.strip_prefix(' ').unwrap_or(data));
                        has_field = true;
                    }
                }
                if has_field {
                    return Some(event);
                }
                continue;
            }
            let bytes = self.read_some()?;
            self.pending.push_str(&String::from_utf8_lossy(&bytes).replace("\r\n", "\n"));
        }
    }

    /// The next event whose data is a JSON message (skips the priming event).
    pub(crate) fn next_message(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            let event = self.next_event()?;
            if event.data.trim().is_empty() {
                continue;
            }
            let value = serde_json::from_str(&event.data).expect("event data is JSON");
            return Some((event.id, value));
        }
    }

    fn read_some(&mut self) -> Option<Vec<u8>> {
        if !self.chunked {
            let mut buf = vec![0u8; 4096];
            let n = self.reader.read(&mut buf).ok()?;
            return (n > 0).then(|| buf[..n].to_vec());
        }
        if self.remaining_in_chunk == 0 {
            let mut size = String::new();
            loop {
                size.clear();
                if self.reader.read_line(&mut size).ok()? == 0 {
                    return None;
                }
                if !size.trim().is_empty() {
                    break;
                }
            }
            let len = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).ok()?;
            if len == 0 {
                return None;
            }
            self.remaining_in_chunk = len;
        }
        let mut buf = vec![0u8; self.remaining_in_chunk];
        let n = self.reader.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        self.remaining_in_chunk -= n;
        Some(buf[..n].to_vec())
    }
}

/// Sends one request for `path` on a fresh connection; returns the open connection after
/// the head.
fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, Vec<(String, String)>, BufReader<TcpStream>) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("write head");
    if let Some(body) = body {
        stream.write_all(body.as_bytes()).expect("write body");
    }
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header line");
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        if let Some((name, value)) = trimmed.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    (status, headers, reader)
}

/// A request to `/mcp` answered completely (JSON or empty body; SSE bodies are read to the end).
pub(crate) fn request(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    request_to(addr, method, "/mcp", headers, body)
}

/// A request to `path` answered completely, as [`request`].
pub(crate) fn request_to(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    let (status, headers, reader) = send(addr, method, path, headers, body);
    let chunked = headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let length = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.parse::<usize>().ok());
    let mut stream = EventStream { status, headers, reader, chunked, pending: String::new(), remaining_in_chunk: 0 };
    let mut body = Vec::new();
    match length {
        Some(len) => {
            body.resize(len, 0);
            stream.reader.read_exact(&mut body).expect("body");
        }
        None => {
            while let Some(bytes) = stream.read_some() {
                body.extend(bytes);
            }
        }
    }
    Reply { status: stream.status, headers: stream.headers, body: String::from_utf8_lossy(&body).into_owned() }
}

/// A request whose answer is an SSE stream, left open for the test to read or drop.
pub(crate) fn open(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> EventStream {
    open_to(addr, method, "/mcp", headers, body)
}

/// As [`open`], for `path`.
pub(crate) fn open_to(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> EventStream {
    let (status, headers, reader) = send(addr, method, path, headers, body);
    let chunked = headers.iter().any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    EventStream { status, headers, reader, chunked, pending: String::new(), remaining_in_chunk: 0 }
}
