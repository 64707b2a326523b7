"""HTTP around the SDK's transport: bearer and OAuth authentication, 401/403 challenges, the request
body read once, response framing, and the URL-mode connect pages.
"""
