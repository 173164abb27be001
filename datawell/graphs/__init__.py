"""LangGraph graphs: `nl2ql`, `assistant` (plan → query → answer) and `curator`.

Graphs know nothing of REST or A2A: they emit `events.GraphEvent`s through LangGraph's
custom stream, and the API and agent layers render those events for their clients."""
