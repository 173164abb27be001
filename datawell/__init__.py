"""Datawell: an open data platform for agents."""

__version__ = "0.1.0"
