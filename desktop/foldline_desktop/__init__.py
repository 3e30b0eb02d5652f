"""Foldline desktop shell."""
