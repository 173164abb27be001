"""Ingestion: parsers per format, structuring into the dataset's schema, and the worker that
turns a queued attempt into published rows."""
