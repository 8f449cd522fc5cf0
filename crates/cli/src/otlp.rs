//! Trace export over OTLP/HTTP (protobuf) to an OpenTelemetry collector, when the binary is
//! built with the `otlp` feature and `[server.tracing] otlp_endpoint` is set. The request and
//! task spans become OpenTelemetry spans; a span whose request carried a W3C `traceparent` is
//! a child of that remote span ([`mcp_tasks_engine::set_span_parent`]). Spans are sent by the
//! SDK's batch processor on a thread of its own, through a small blocking HTTP/1.1 client
//! (plain `http://`, as the rest of this build: no TLS, no reqwest, no gRPC).
//!
//! Without the feature, a config that sets `otlp_endpoint` is refused at start, saying so.

#[cfg(not(feature = "otlp"))]
use mcp_tasks_config::TracingConfig;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::Layer;

/// A layer for the log subscriber, boxed (it is one type with or without the feature).
pub(crate) type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Keeps the exporter alive; [`Exporter::shutdown`] sends what is still buffered.
pub(crate) struct Exporter {
    #[cfg(feature = "otlp")]
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
}

#[cfg(not(feature = "otlp"))]
impl Exporter {
    /// Nothing to send without the feature.
    pub(crate) fn shutdown(self) {}
}

/// The exporting layer for `config`, if it sets an endpoint.
///
/// # Errors
/// `otlp_endpoint` set in a binary built without the `otlp` feature.
#[cfg(not(feature = "otlp"))]
pub(crate) fn layer(config: &TracingConfig) -> anyhow::Result<Option<(BoxedLayer, Exporter)>> {
    match &config.otlp_endpoint {
        None => Ok(None),
        Some(endpoint) => anyhow::bail!(
            "[server.tracing] otlp_endpoint = {endpoint:?} is set, but this mcp-tasks was built without OTLP \
             support; rebuild with `cargo build --features otlp`, or remove the setting"
        ),
    }
}

#[cfg(feature = "otlp")]
pub(crate) use exporting::layer;

#[cfg(feature = "otlp")]
mod exporting {
    use std::io::{Read, Write};
    use std::net::{TcpStream, ToSocketAddrs};
    use std::str::FromStr;
    use std::time::Duration;

    use anyhow::Context as _;
    use async_trait::async_trait;
    use mcp_tasks_config::TracingConfig;
    use mcp_tasks_engine::TraceContext;
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider};
    use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::Layer;

    use super::{BoxedLayer, Exporter};

    /// How long one export may take to connect, and then to send or read.
    const IO_TIMEOUT: Duration = Duration::from_secs(10);

    /// The exporting layer for `config`, if it sets an endpoint.
    ///
    /// # Errors
    /// The exporter cannot be built (an endpoint that is no URI).
    pub(crate) fn layer(config: &TracingConfig) -> anyhow::Result<Option<(BoxedLayer, Exporter)>> {
        let Some(endpoint) = &config.otlp_endpoint else { return Ok(None) };
        let endpoint = traces_url(endpoint);
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(BlockingHttp)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint.clone())
            .build()
            .with_context(|| format!("building the OTLP exporter for {endpoint}"))?;
        let resource = Resource::builder().with_service_name(config.service_name.clone()).build();
        let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        let tracer = provider.tracer("mcp-tasks");
        mcp_tasks_engine::set_span_parent(adopt_remote);
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(LevelFilter::INFO).boxed();
        Ok(Some((layer, Exporter { provider })))
    }

    impl Exporter {
        /// Sends the spans still buffered (bounded by the exporter's timeouts).
        pub(crate) fn shutdown(self) {
            if let Err(err) = self.provider.shutdown() {
                eprintln!("mcp-tasks: stopping the OTLP exporter: {err}");
            }
        }
    }

    /// The collector's traces URL: `/v1/traces` under the base URL, unless it names it.
    fn traces_url(endpoint: &str) -> String {
        if endpoint.trim_end_matches('/').ends_with("/v1/traces") {
            endpoint.to_owned()
        } else {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        }
    }

    /// Makes `span` a child of the remote span `trace` names.
    fn adopt_remote(span: &tracing::Span, trace: &TraceContext) {
        let (Ok(trace_id), Ok(span_id), Ok(flags)) = (
            TraceId::from_hex(trace.trace_id()),
            SpanId::from_hex(trace.parent_id()),
            u8::from_str_radix(trace.flags(), 16),
        ) else {
            return;
        };
        let state = trace.tracestate().and_then(|state| TraceState::from_str(state).ok()).unwrap_or_default();
        let remote = SpanContext::new(trace_id, span_id, TraceFlags::new(flags), true, state);
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    }

    /// A blocking HTTP/1.1 client for plain `http://`: one connection per export,
    /// `Connection: close`; only the reply's status is read. By hand because the batch
    /// processor calls it on its own thread, outside any Tokio runtime, so the hyper client
    /// the server uses elsewhere (webhooks, JWK Sets) cannot run there, and the one ready-made
    /// blocking client (`opentelemetry-http`'s `reqwest-blocking`) would bring reqwest in.
    #[derive(Debug)]
    struct BlockingHttp;

    #[async_trait]
    impl HttpClient for BlockingHttp {
        async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
            let uri = request.uri();
            if uri.scheme_str() != Some("http") {
                return Err(format!("{uri}: only http:// is supported (this build sends no TLS)").into());
            }
            let host = uri.host().ok_or_else(|| format!("{uri}: no host"))?;
            let port = uri.port_u16().unwrap_or(80);
            let path = uri.path_and_query().map_or("/", |path| path.as_str());
            let address = (host, port).to_socket_addrs()?.next().ok_or_else(|| format!("{host}: no address"))?;
            let mut stream = TcpStream::connect_timeout(&address, IO_TIMEOUT)?;
            stream.set_read_timeout(Some(IO_TIMEOUT))?;
            stream.set_write_timeout(Some(IO_TIMEOUT))?;
            let body = request.body();
            let mut head = format!(
                "{} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {}\r\nConnection: close\r\n",
                request.method(),
                body.len()
            );
            for (name, value) in request.headers() {
                if name != http::header::CONTENT_LENGTH && name != http::header::HOST && name != http::header::CONNECTION {
                    head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap_or("")));
                }
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes())?;
            stream.write_all(body)?;
            let mut reply = Vec::new();
            stream.read_to_end(&mut reply)?;
            let split = reply.windows(4).position(|window| window == b"\r\n\r\n").ok_or("the collector's reply has no header end")?;
            let status_line = reply[..split].split(|&b| b == b'\r').next().unwrap_or_default();
            let status = std::str::from_utf8(status_line)
                .ok()
                .and_then(|line| line.split(' ').nth(1))
                .and_then(|code| code.parse::<u16>().ok())
                .ok_or("the collector's reply has no status")?;
            let response = Response::builder().status(status).body(Bytes::copy_from_slice(&reply[split + 4..]))?;
            Ok(response)
        }
    }
}
