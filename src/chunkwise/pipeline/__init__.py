"""The pipeline's vocabulary: :class:`~chunkwise.pipeline.config.PipelineConfig`, the one run configuration."""

from __future__ import annotations

from .config import PipelineConfig

__all__ = ["PipelineConfig"]
