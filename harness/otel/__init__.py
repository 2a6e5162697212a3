"""OpenTelemetry as tracegrade writes and reads it: every span attribute name (`semconv`) and the
OTLP encoding shared by the exporter, the receiver and the trace readers (`otlp`)."""
