"""Dataset-query tools shared by every graph: the catalog, the query language, semantic search, web search."""
