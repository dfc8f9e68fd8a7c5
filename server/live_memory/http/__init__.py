"""The HTTP surface: the ASGI app, its routes, the MCP endpoint, and what guards and stops them."""
