"""The A2A 1.0 surface: one AgentExecutor per agent (thin adapters from graph events to A2A
events), their AgentCards, the `/a2a` list and the JSON-RPC endpoints, all built from the
registry in `datawell.agents.registry`."""
