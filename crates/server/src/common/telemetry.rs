//! Logs and traces: the tracing subscriber `missive serve` installs (lines on stderr as text or
//! JSON, filtered by `RUST_LOG`; with the `otel` feature, spans exported over OTLP), and the
//! span every request runs in.
//!
//! A request's span is `request{transport, rpc}` with `match_id` and `request_id` left empty
//! until the service knows them ([`record_match`], [`record_request_id`]): every line logged while the request runs then
//! carries them (in JSON under `span`), whichever transport it came by. Metrics are apart, in
//! `metrics.rs`; ids never become metric labels.

use tracing::Span;
use tracing::field::Empty;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::config::{LogFormat, Logs};

/// What must outlive the server for telemetry to be complete: with OTLP export on, the tracer
/// provider, whose batches are flushed when this is dropped.
#[derive(Debug)]
pub struct Guard {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("flushing the OpenTelemetry spans failed: {e}");
        }
    }
}

/// Installs the process's tracing subscriber; call once, inside the Tokio runtime.
pub fn init(logs: &Logs) -> anyhow::Result<Guard> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let lines = match logs.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            // Colours for a terminal, plain text for a file or a collector.
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            // The event's fields at the top level, the request's span fields under `span`.
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let registry = tracing_subscriber::registry().with(filter).with(lines);
    #[cfg(feature = "otel")]
    {
        let (otel, provider) = otel::layer()?;
        registry.with(otel).try_init()?;
        Ok(Guard { provider })
    }
    #[cfg(not(feature = "otel"))]
    {
        registry.try_init()?;
        Ok(Guard {})
    }
}

/// The span one request runs in; see the module's documentation.
pub fn request_span(transport: &'static str, rpc: &str) -> Span {
    tracing::info_span!(
        "request",
        transport,
        rpc,
        match_id = Empty,
        request_id = Empty
    )
}

/// Records the match a request is about on the current request span. Outside a request span
/// (the turn worker has its own) it does nothing.
pub fn record_match(id: missive_store::MatchId) {
    Span::current().record("match_id", tracing::field::display(id));
}

/// Records the client's request id on the current request span, if the request has one.
pub fn record_request_id(request_id: Option<&str>) {
    if let Some(request_id) = request_id {
        Span::current().record("request_id", request_id);
    }
}

/// OTLP export of the spans, configured by the standard `OTEL_*` environment variables.
#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::registry::LookupSpan;

    /// The exporting layer, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-only
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; nothing is exported otherwise. The
    /// service is named by `OTEL_SERVICE_NAME`, else `missive`.
    pub(super) fn layer<S>() -> anyhow::Result<(Option<impl Layer<S>>, Option<SdkTracerProvider>)>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        if !set("OTEL_EXPORTER_OTLP_ENDPOINT") && !set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            return Ok((None, None));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .build()?;
        let mut resource = Resource::builder();
        if !set("OTEL_SERVICE_NAME") {
            resource = resource.with_service_name("missive");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("missive");
        Ok((
            Some(tracing_opentelemetry::layer().with_tracer(tracer)),
            Some(provider),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_line_of_a_request_carries_its_ids() {
        use std::sync::{Arc, Mutex};

        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let _entered = request_span("http", "Act").entered();
            let id = uuid::Uuid::nil();
            record_match(id);
            record_request_id(None);
            record_request_id(Some("r-1"));
            tracing::info!(seat = 0, "action applied");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON line");
        assert_eq!(line["message"], "action applied");
        assert_eq!(line["seat"], 0);
        assert_eq!(
            line["span"]["match_id"],
            "00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(line["span"]["request_id"], "r-1");
        assert_eq!(line["span"]["rpc"], "Act");
        assert_eq!(line["span"]["transport"], "http");
    }
}
