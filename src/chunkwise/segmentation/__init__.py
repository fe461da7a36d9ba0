"""Segmentation: cutting text into the units that strategies count and pack (tokens, sentences)."""
