"""What a deployment shows of itself: Prometheus metrics (`metrics`), OpenTelemetry spans
(`tracing`), the record of every run (`recorder`), and log lines that carry the trace id
(`logs`).

One source of records: a run's `RunRecorder` receives each event once (a graph node starts or
ends, a model call ends, a query ran) and turns it into a metric sample, a span and a line
of the run record together; HTTP requests and ingestions report the same way through
`metrics` and `tracing`. Nothing here imports the rest of Datawell but `config`."""
