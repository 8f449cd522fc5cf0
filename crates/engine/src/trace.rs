//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>) carried by a task: the
//! `traceparent` (and `tracestate`) of the request that created it, kept with the task so
//! that its spans and its command (`TRACEPARENT`, `TRACESTATE`) join the requestor's trace,
//! also when the task runs again after a restart.

use std::fmt;
use std::sync::OnceLock;

/// The longest `tracestate` kept (the W3C limit is 32 list members; 512 characters is what
/// the spec says a vendor may safely truncate to).
const MAX_TRACESTATE: usize = 512;

/// A valid `traceparent`, with the `tracestate` that came with it.
///
/// Built only by [`TraceContext::parse`], so its `traceparent` always has the W3C form
/// `VERSION-TRACEID-PARENTID-FLAGS` (lowercase hex, ids not all zeros).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// Reads a `traceparent` and its optional `tracestate`. A malformed `traceparent` gives
    /// `None` (trace context is advisory: it is ignored, never an error); a malformed or
    /// oversized `tracestate` is dropped on its own.
    ///
    /// Version `00` must be exactly `00-<32 hex>-<16 hex>-<2 hex>`; a later version (not
    /// `ff`) may carry more fields after a `-`, which are not kept.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        let traceparent = traceparent.trim();
        let head = traceparent.get(..55)?;
        let rest = &traceparent[55..];
        let mut parts = head.split('-');
        let (version, trace_id, parent_id, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex = |part: &str, len: usize| part.len() == len && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let zero = |part: &str| part.bytes().all(|b| b == b'0');
        let fields_ok = hex(version, 2) && hex(trace_id, 32) && hex(parent_id, 16) && hex(flags, 2);
        if !fields_ok || version == "ff" || zero(trace_id) || zero(parent_id) {
            return None;
        }
        let tail_ok = if version == "00" { rest.is_empty() } else { rest.is_empty() || rest.starts_with('-') };
        if !tail_ok {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|state| !state.is_empty() && state.len() <= MAX_TRACESTATE)
            .filter(|state| state.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .map(str::to_owned);
        Some(TraceContext { traceparent: head.to_owned(), tracestate })
    }

    /// The `traceparent` as received (its first four fields).
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` that came with it, if any (kept as received).
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The trace id: 32 lowercase hex digits.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The parent (span) id: 16 lowercase hex digits.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    /// The trace flags: 2 lowercase hex digits (`01`: sampled).
    pub fn flags(&self) -> &str {
        &self.traceparent[53..55]
    }

    /// A child of this context: the same trace id, flags and `tracestate`, a fresh random
    /// parent id (the span of the work that receives it), version `00`.
    ///
    /// # Panics
    /// If the OS random source is unavailable (as [`TaskId::random`](crate::TaskId::random)).
    pub fn child(&self) -> TraceContext {
        let mut bytes = [0u8; 8];
        #[allow(clippy::expect_used)] // see # Panics: as for task ids
        getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
        if bytes == [0; 8] {
            bytes[7] = 1;
        }
        let span: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        TraceContext {
            traceparent: format!("00-{}-{span}-{}", self.trace_id(), self.flags()),
            tracestate: self.tracestate.clone(),
        }
    }
}

/// What joins a span to its remote parent ([`set_span_parent`]).
type SpanParent = fn(&tracing::Span, &TraceContext);

static SPAN_PARENT: OnceLock<SpanParent> = OnceLock::new();

/// Installs what makes a span with a [`TraceContext`] a child of that remote span: an
/// OpenTelemetry bridge (the CLI's `otlp` feature) sets the span's parent context with it.
/// Without one, spans only carry the trace id as a field. Only the first hook set is kept;
/// returns whether this one was.
pub fn set_span_parent(hook: SpanParent) -> bool {
    SPAN_PARENT.set(hook).is_ok()
}

impl TraceContext {
    /// Makes `span` a child of this context: records its trace id in the span's `trace_id`
    /// field (if it declares one) and calls the hook of [`set_span_parent`], if installed.
    pub fn adopt(&self, span: &tracing::Span) {
        span.record("trace_id", self.trace_id());
        if let Some(hook) = SPAN_PARENT.get() {
            hook(span, self);
        }
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.traceparent)
    }
}

#[cfg(test)]
mod tests {
    use super::TraceContext;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_kept_with_its_tracestate() {
        let context = TraceContext::parse(VALID, Some("rojo=00f067aa0ba902b7")).expect("valid");
        assert_eq!(context.traceparent(), VALID);
        assert_eq!(context.tracestate(), Some("rojo=00f067aa0ba902b7"));
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.parent_id(), "00f067aa0ba902b7");
        assert_eq!(context.flags(), "01");
    }

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "garbage",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more";
        assert_eq!(TraceContext::parse(later, None).map(|c| c.traceparent().len()), Some(55));
    }

    #[test]
    fn a_bad_tracestate_is_dropped_alone() {
        let long = "a=".to_owned() + &"b".repeat(600);
        for bad in ["", "a=\u{7}", long.as_str()] {
            let context = TraceContext::parse(VALID, Some(bad)).expect("the traceparent stands");
            assert_eq!(context.tracestate(), None, "{bad:?}");
        }
    }

    #[test]
    fn a_child_keeps_the_trace_and_gets_a_new_parent() {
        let context = TraceContext::parse(VALID, Some("k=v")).expect("valid");
        let child = context.child();
        assert_eq!(child.trace_id(), context.trace_id());
        assert_eq!(child.flags(), "01");
        assert_ne!(child.parent_id(), context.parent_id());
        assert_eq!(child.tracestate(), Some("k=v"));
        assert_eq!(TraceContext::parse(child.traceparent(), None).as_ref().map(TraceContext::traceparent), Some(child.traceparent()));
    }
}
