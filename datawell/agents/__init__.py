"""The A2A 1.0 runtime: one AgentExecutor per agent (thin adapters from run events to A2A
events), their AgentCards and the JSON-RPC handlers, all built from the registry in
`datawell.agents.registry`. The routes that serve them are `datawell.api.a2a`."""
