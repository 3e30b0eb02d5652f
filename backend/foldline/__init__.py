"""Foldline: long conversations with LLMs in which nothing is ever lost."""

__version__ = "0.1.0"
