"""The MCP tools: one module per family, the registry (schemas, argument checks, error table) and the
catalog. Each handler reads as the steps of docs/design.md: authorize, contain, find, ask, verify,
judge, commit.
"""
