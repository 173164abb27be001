"""Chat models and embeddings: how a request's model choice becomes a model."""
