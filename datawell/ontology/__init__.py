"""The ontology: links between fields of different datasets, their candidates and their graph."""
