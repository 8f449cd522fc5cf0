//! A small incremental parser of `text/event-stream` (the parts MCP uses: `id:`, `data:`,
//! `retry:`, comments). Bytes go in as they arrive; whole events come out.

/// One dispatched SSE event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// The event's `id`, if it set one.
    pub(crate) id: Option<String>,
    /// The `data` lines joined with `\n` (empty for a priming event).
    pub(crate) data: String,
    /// A `retry` field, in milliseconds.
    pub(crate) retry: Option<u64>,
}

/// Accumulates bytes and splits them into events at blank lines.
#[derive(Default)]
pub(crate) struct Parser {
    buffer: Vec<u8>,
    current: Event,
    has_data: bool,
    has_fields: bool,
}

impl Parser {
    /// Feeds `bytes` and returns every event they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line).into_owned();
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        events
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let fields = std::mem::take(&mut self.has_fields);
            self.has_data = false;
            let event = std::mem::take(&mut self.current);
            return fields.then_some(event);
        }
        if line.starts_with(':') {
            return None; // a comment (keep-alive)
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => self.current.id = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "retry" => self.current.retry = value.parse().ok(),
            _ => return None, // `event` and unknown fields: MCP does not use them
        }
        self.has_fields = true;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_chunks() {
        let mut parser = Parser::default();
        assert!(parser.push(b"id: 1-0\nretry: 1000\ndata: \n").is_empty());
        let events = parser.push(b"\n: keep-alive\n\nid: 1-1\ndata: {\"a\"");
        assert_eq!(events, vec![Event { id: Some("1-0".into()), data: String::new(), retry: Some(1000) }]);
        let events = parser.push(b":1}\r\n\r\n");
        assert_eq!(events, vec![Event { id: Some("1-1".into()), data: "{\"a\":1}".into(), retry: None }]);
    }

    #[test]
    fn joins_data_lines() {
        let mut parser = Parser::default();
        let events = parser.push(b"data: a\ndata:b\n\n");
        assert_eq!(events[0].data, "a\nb");
        assert_eq!(events[0].id, None);
    }
}
