"""`tracegrade receive`: traces graded as they arrive over OTLP/HTTP (ingest, assembly into
complete traces, the growing monitor run, forwarding, alerts, the receiver itself). The archive
side (reading trace files, pairing, grading) is the folder above, which this one builds on."""
