"""Prompts for model-backed extractors: one module per prompt, each with its response schema.

A prompt module holds the text it sends, the JSON schema the endpoint is asked
to constrain the answer to, and the pydantic models the answer is validated
with. A changed prompt is a new module with a new ``VERSION``; claims record
the version that produced them.
"""
