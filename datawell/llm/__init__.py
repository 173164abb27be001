"""Chat models and embeddings: how a request's model choice becomes a model."""

import os

# litellm downloads its model price list on import unless told to use the copy it ships;
# Datawell must start with no network. A default only: an operator's own value wins.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
