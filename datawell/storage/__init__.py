"""Persistence: SQLAlchemy tables and repositories, object store, vector store. Knows nothing of HTTP."""
