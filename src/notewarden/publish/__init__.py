"""Publishing notes to external HTTP services ("publish targets") named in configuration.

The credential a target needs never passes through the MCP client or the model: the user
types it on notewarden's own page (`web.connect`), it is stored encrypted at rest
(`publish.vault`), and only the server sends it, to that target alone (`publish.sender`).
"""
