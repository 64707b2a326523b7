"""`notewarden client`: a terminal MCP client on the official SDK client (stdio or HTTP), for trying
the tools by hand.
"""
