"""notewarden: an MCP server for notes whose destructive tools are safe by construction."""

__version__ = "0.1.0"
