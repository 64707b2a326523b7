"""Which workspace a call may touch: the strict `file:` URI parser, the grants (authorization), the
workspace root (every file through an open directory handle) and the Landlock sandbox. The only
layer that touches workspace files.
"""
