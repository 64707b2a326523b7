"""The form definitions notewarden sends and `lint_form`, which checks any form against the 2026-07-28
elicitation schema.
"""
