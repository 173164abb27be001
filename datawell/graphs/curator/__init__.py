"""The link curator: candidates from the data, the model selects the meaningful ones, then
they are returned (and kept as suggestions) or activated into the ontology."""
