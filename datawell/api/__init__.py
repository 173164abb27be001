"""The REST surface: one module per resource, each exposing a `router`."""
