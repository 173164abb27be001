"""Commands of the `datawell` CLI that live outside `datawell/cli.py`: the client commands
(upload, datasets, attempts, retry, clear, update, rename, rename-namespace, delete, rows, export,
ask), which talk to a running server through
`datawell.client`, and the in-process runners the operator commands share."""
