"""Live Memory: a persistent, cache-friendly codebase memory that coding agents ask over MCP."""

__version__ = "0.1.0"
